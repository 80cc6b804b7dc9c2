/* A program with one hot and one cold region (issue 56): HOT MiB read at random, COLD MiB touched once,
 * one word per 64 KiB. Both come from malloc (glibc maps each with its own mmap).
 *
 *   regions_program HOT_MIB COLD_MIB READS [hold]
 *
 * Prints "hot ADDR SIZE" and "cold ADDR SIZE", then reads READS random words of the hot region; with "hold"
 * it then prints "done" and waits until its stdin ends, so that its smaps can be read. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: %s HOT_MIB COLD_MIB READS [hold]\n", argv[0]);
        return 2;
    }
    size_t hot_size = strtoull(argv[1], 0, 10) << 20, cold_size = strtoull(argv[2], 0, 10) << 20;
    long long reads = strtoll(argv[3], 0, 10);
    uint64_t *hot = malloc(hot_size);
    char *cold = malloc(cold_size);
    if (!hot || !cold) return 1;
    printf("hot %lx %zu\ncold %lx %zu\n", (unsigned long)hot, hot_size, (unsigned long)cold, cold_size);
    fflush(stdout);
    size_t words = hot_size / 8;
    for (size_t i = 0; i < words; i++) hot[i] = i * 2654435761u;
    for (size_t i = 0; i < cold_size; i += 65536) cold[i] = 1;
    uint64_t x = 88172645463325252ull, sum = 0;
    for (long long i = 0; i < reads; i++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        sum += hot[x % words];
    }
    printf("sum %llu\n", (unsigned long long)sum);
    if (argc > 4 && strcmp(argv[4], "hold") == 0) {
        printf("done\n");
        fflush(stdout);
        char c;
        while (read(0, &c, 1) > 0) {}
    }
    return 0;
}
