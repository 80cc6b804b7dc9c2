// Clock, optimisation barriers, chunking and percentiles for the timed regions of every workload.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <ctime>
#include <limits>
#include <type_traits>
#include <vector>

namespace hb {

// CLOCK_MONOTONIC: never jumps with NTP steps, and through the vDSO costs ~20 ns, cheap enough per chunk.
inline uint64_t now_ns() {
    timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Makes the compiler believe `value` is read (and, for the non-const overload, possibly changed),
// so a result computed only to be measured is not deleted, hoisted or folded away.
template <class T>
inline void do_not_optimize(const T& value) {
    asm volatile("" : : "r,m"(value) : "memory");
}

template <class T>
inline void do_not_optimize(T& value) {
#if defined(__clang__)
    if constexpr (std::is_trivially_copyable_v<T> && sizeof(T) <= sizeof(void*)) {
        asm volatile("" : "+r,m"(value) : : "memory");
    } else {
        asm volatile("" : "+m"(value) : : "memory");
    }
#else
    // Memory only on GCC: given "+r,m", recent GCC may take the register alternative and then treat the
    // stores to `value` before the barrier as dead (google/benchmark made the same change for GCC).
    asm volatile("" : "+m"(value) : : "memory");
#endif
}

// Forces all pending memory writes to be treated as observed at this point.
inline void clobber() { asm volatile("" : : : "memory"); }

// Percentile q in [0, 100] with linear interpolation between order statistics (numpy's default),
// NaN for no data. Takes a copy because it reorders.
inline double percentile(std::vector<double> values, double q) {
    if (values.empty()) return std::numeric_limits<double>::quiet_NaN();
    std::sort(values.begin(), values.end());
    const double position = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(values.size() - 1);
    const auto below = static_cast<size_t>(std::floor(position));
    const size_t above = std::min(below + 1, values.size() - 1);
    const double fraction = position - static_cast<double>(below);
    return values[below] + (values[above] - values[below]) * fraction;
}

// Start of part `index` when `total` items are split into `parts` near-equal contiguous parts
// (exact for any total: the product is taken in 128 bits).
inline uint64_t slice_begin(uint64_t total, uint64_t parts, uint64_t index) {
    return static_cast<uint64_t>(static_cast<__uint128_t>(total) * index / parts);
}

// Size of part `index` of that split.
inline uint64_t slice_size(uint64_t total, uint64_t parts, uint64_t index) {
    return slice_begin(total, parts, index + 1) - slice_begin(total, parts, index);
}

// The spread of the per-chunk times of a timed phase (ns per op within each chunk, all threads' chunks
// together): a burst from a neighbour on a shared machine shows as spread, not as bias.
struct ChunkStats {
    double median = 0;
    double p10 = 0;
    double p90 = 0;
};

inline ChunkStats chunk_stats(const std::vector<double>& chunk_ns) {
    return {percentile(chunk_ns, 50), percentile(chunk_ns, 10), percentile(chunk_ns, 90)};
}

}  // namespace hb
