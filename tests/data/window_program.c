/* A measured program for the timed-window tests: burns `outside` seconds of CPU around a window in which
 * it burns `inside` seconds, and prints CLOCK_MONOTONIC (Python's time.monotonic) at each edge. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "hugebench_window.h"

static double now(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* CPU time, not wall time: task-clock then counts exactly this much even on a VM with steal */
static void burn(double seconds) {
    volatile unsigned long spins = 0;
    double end = now(CLOCK_PROCESS_CPUTIME_ID) + seconds;
    while (now(CLOCK_PROCESS_CPUTIME_ID) < end) spins++;
}

int main(int argc, char **argv) {
    double outside = argc > 1 ? atof(argv[1]) : 0.3, inside = argc > 2 ? atof(argv[2]) : 0.1;
    burn(outside / 2);
    hugebench_window_enable();
    printf("enabled %.6f\n", now(CLOCK_MONOTONIC));
    burn(inside);
    printf("disabling %.6f\n", now(CLOCK_MONOTONIC));
    hugebench_window_disable();
    printf("disabled %.6f\n", now(CLOCK_MONOTONIC));
    burn(outside / 2);
    return 0;
}
