/* The measured program of benchmarks/folio_cost.py: maps GIB GiB ("huge": madvised for 2 MiB pages),
   touches every page, says "ready", then writes 8 bytes at pseudo-random places and prints how many it did
   in each 100 ms (one line each) until its stdin closes. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

int main(int argc, char **argv) {
    size_t len = (size_t)(argc > 1 ? atof(argv[1]) : 4) * (1UL << 30);
    int huge = argc > 2 && strcmp(argv[2], "huge") == 0;
    char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) return 1;
    madvise(p, len, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
    printf("ready\n");
    fflush(stdout);
    fcntl(0, F_SETFL, O_NONBLOCK);
    unsigned long x = 88172645463325252UL, ops = 0;
    size_t words = len / 8;
    double next = now() + 0.1;
    char c;
    for (;;) {
        for (int i = 0; i < 4096; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            ((unsigned long *)p)[x % words] += 1;
        }
        ops += 4096;
        if (now() >= next) {
            printf("%lu\n", ops);
            fflush(stdout);
            ops = 0;
            next += 0.1;
            if (read(0, &c, 1) == 0) break;
        }
    }
    return 0;
}
