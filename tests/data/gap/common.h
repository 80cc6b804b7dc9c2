/* Shared by the coverage-gap test programs: each sets its memory up, says "ready" on stdout and waits
   until its stdin closes, so the test reads its mappings while it lives. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define MIB (1UL << 20)

static void ready_then_wait(void) {
    char c;
    printf("ready\n");
    fflush(stdout);
    while (read(0, &c, 1) > 0) {
    }
}

/* An anonymous mapping of len bytes starting on a 2 MiB boundary (the rest of a larger mapping unmapped). */
static char *aligned_map(size_t len) {
    size_t huge = 2 * MIB;
    char *raw = mmap(NULL, len + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) {
        perror("mmap");
        exit(1);
    }
    char *base = (char *)(((unsigned long)raw + huge - 1) & ~(huge - 1));
    if (base > raw) munmap(raw, base - raw);
    munmap(base + len, raw + len + huge - (base + len));
    return base;
}

static void touch(char *p, size_t len) {
    for (size_t i = 0; i < len; i += 4096) p[i] = 1;
}
