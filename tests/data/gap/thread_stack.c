/* A thread that uses 6 MiB of its (8 MiB, MAP_STACK) stack, then blocks (the "stack" bucket). */
#include <pthread.h>
#include "common.h"

static int hold[2];

static void *deep(void *arg) {
    volatile char frame[6 * 1024 * 1024];
    (void)arg;
    for (size_t i = 0; i < sizeof frame; i += 4096) frame[i] = 1;
    char c;
    (void)!read(hold[0], &c, 1); /* blocks until main closes the pipe */
    return NULL;
}

int main(void) {
    pthread_t t;
    pthread_attr_t attr;
    if (pipe(hold)) return 1;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 8 * MIB);
    pthread_create(&t, &attr, deep, NULL);
    usleep(300000); /* the thread has faulted its frame */
    ready_then_wait();
    close(hold[1]);
    pthread_join(t, NULL);
    return 0;
}
