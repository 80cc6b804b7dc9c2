// Anonymous mappings whose start and length are both multiples of 2 MiB, so that a transparent huge page
// can back every part of them (or, with MADV_NOHUGEPAGE, a 4 KiB buffer laid out exactly like the THP one).
// The workloads that want such a buffer (tlbprobe's 4k/thp, faultstorm's madv-hugepage) get it here;
// plain mmap calls with their own error texts stay in the workload.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <string>

// glibc's <sys/mman.h> has MAP_HUGE_SHIFT but not the per-size names of <linux/mman.h>.
#ifndef MAP_HUGE_2MB
#define MAP_HUGE_2MB (21 << MAP_HUGE_SHIFT)
#endif
#ifndef MAP_HUGE_1GB
#define MAP_HUGE_1GB (30 << MAP_HUGE_SHIFT)
#endif

namespace hb {

constexpr size_t kHugePageBytes = size_t{2} << 20;

struct AlignedMapping {
    char* base = nullptr;  // 2 MiB aligned; munmap(base, length) gives it back
    size_t length = 0;     // the bytes asked for, rounded up to 2 MiB
    // What was done, as results report it: "mmap(MAP_PRIVATE|MAP_ANONYMOUS, 2 MiB aligned)+madvise(MADV_HUGEPAGE)"
    std::string flags;
};

// Over-maps by 2 MiB, trims both ends and applies madvise(advice) (MADV_HUGEPAGE or MADV_NOHUGEPAGE) to
// all of it. Throws std::runtime_error naming the call that failed; nothing stays mapped then.
AlignedMapping map_2m_aligned(size_t bytes, int advice);

}  // namespace hb
