/* 8 MiB, 2 MiB-aligned, marked MADV_NOHUGEPAGE before it is touched (the "nohugepage" bucket). */
#include "common.h"

int main(void) {
    char *p = aligned_map(8 * MIB);
    madvise(p, 8 * MIB, MADV_NOHUGEPAGE);
    touch(p, 8 * MIB);
    ready_then_wait();
    return 0;
}
