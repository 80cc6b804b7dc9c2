/* 8 MiB, 2 MiB-aligned and madvised: on 2 MiB pages when the kernel has free blocks, else it falls back
   (the "fallback" bucket); with "late" it is touched before the madvise, so its 4 KiB pages were faulted
   before THP applied (eligible, aligned, not huge: "fallback" as well); with "mthp" it is not madvised
   (for a per-size mode "always"); a second argument gives the size in MiB instead of 8. */
#include "common.h"

int main(int argc, char **argv) {
    const char *how = argc > 1 ? argv[1] : "";
    size_t len = (argc > 2 ? strtoul(argv[2], NULL, 10) : 8) * MIB;
    char *p = aligned_map(len);
    if (strcmp(how, "late") == 0) touch(p, len);
    if (strcmp(how, "mthp") != 0) madvise(p, len, MADV_HUGEPAGE);
    touch(p, len);
    ready_then_wait();
    return 0;
}
