/* THP disabled for the process by prctl, then 8 MiB aligned and madvised (the "prctl" bucket). */
#include <sys/prctl.h>
#include "common.h"

int main(void) {
    if (prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0)) {
        perror("prctl");
        return 1;
    }
    char *p = aligned_map(8 * MIB);
    madvise(p, 8 * MIB, MADV_HUGEPAGE);
    touch(p, 8 * MIB);
    ready_then_wait();
    return 0;
}
