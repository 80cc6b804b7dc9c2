#include "common/mapping.h"

#include <cerrno>
#include <cstdint>
#include <stdexcept>

#include "common/syscalls.h"

namespace hb {

AlignedMapping map_2m_aligned(size_t bytes, int advice) {
    const size_t length = round_up(bytes, kHugePageBytes);
    const size_t reserve = length + kHugePageBytes;
    void* raw = mmap(nullptr, reserve, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        throw std::runtime_error("mmap(MAP_PRIVATE|MAP_ANONYMOUS) of " + std::to_string(reserve) +
                                 " bytes failed: " + errno_text(errno));
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = round_up<uintptr_t>(start, kHugePageBytes);
    if (aligned > start) munmap(raw, aligned - start);
    const size_t tail = start + reserve - (aligned + length);
    if (tail > 0) munmap(reinterpret_cast<void*>(aligned + length), tail);
    AlignedMapping out;
    out.base = reinterpret_cast<char*>(aligned);
    out.length = length;
    const std::string advice_name = advice == MADV_HUGEPAGE ? "MADV_HUGEPAGE" : "MADV_NOHUGEPAGE";
    if (madvise(out.base, length, advice) != 0) {
        const int err = errno;
        munmap(out.base, length);
        throw std::runtime_error("madvise(" + advice_name + ") failed: " + errno_text(err) +
                                 " (kernel built without CONFIG_TRANSPARENT_HUGEPAGE?)");
    }
    out.flags = "mmap(MAP_PRIVATE|MAP_ANONYMOUS, 2 MiB aligned)+madvise(" + advice_name + ")";
    return out;
}

}  // namespace hb
