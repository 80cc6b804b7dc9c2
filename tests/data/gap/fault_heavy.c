/* A fault-heavy program: maps N MiB (argument, default 256), writes one byte per 4 KiB page, unmaps;
   four rounds. Most of its time is page faults: what fewer, larger folios save. */
#include "common.h"

int main(int argc, char **argv) {
    size_t len = (argc > 1 ? strtoul(argv[1], NULL, 10) : 256) * MIB;
    unsigned long sum = 0;
    for (int round = 0; round < 4; round++) {
        char *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) return 1;
        touch(p, len);
        for (size_t i = 0; i < len; i += 4096) sum += (unsigned char)p[i];
        munmap(p, len);
    }
    printf("%lu\n", sum);
    return 0;
}
