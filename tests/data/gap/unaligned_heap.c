/* glibc mmaps each block above its mmap threshold (128 KiB) by itself: 256 KiB blocks, madvised for huge
   pages, can never be backed by a 2 MiB page (the "unaligned" bucket). */
#include "common.h"

int main(void) {
    for (int i = 0; i < 64; i++) {
        char *block = malloc(256 * 1024);
        unsigned long start = ((unsigned long)block + 4095) & ~4095UL;
        madvise((void *)start, 252 * 1024, MADV_HUGEPAGE);
        touch(block, 256 * 1024);
    }
    ready_then_wait();
    return 0;
}
