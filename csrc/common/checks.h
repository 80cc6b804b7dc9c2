// Parameter checks shared by every workload's validate(): the limits that are the same everywhere and
// the one way to refuse a value (std::invalid_argument, which pybind11 turns into ValueError).
// Limits that belong to one workload (e.g. faultstorm's slots per page) stay in that workload.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace hb {

// Every workload counts its threads in this type; Python ints arrive in it unnarrowed, so an absurd
// count is a ValueError from validate() rather than a TypeError from the binding.
using ThreadCount = int64_t;

constexpr ThreadCount kMaxThreads = 1024;
constexpr int64_t kMaxChunks = 1000000;  // per-thread timing slices

inline void require(bool condition, const std::string& message) {
    if (!condition) throw std::invalid_argument(message);
}

// "<name> must be in [lo, hi], got <value>"
inline void require_in_range(const char* name, int64_t value, int64_t lo, int64_t hi) {
    require(value >= lo && value <= hi, std::string(name) + " must be in [" + std::to_string(lo) + ", " +
                                            std::to_string(hi) + "], got " + std::to_string(value));
}

inline void require_threads(ThreadCount threads, ThreadCount max = kMaxThreads) {
    require_in_range("threads", threads, 1, max);
}

inline void require_chunks(int64_t chunks) { require_in_range("chunks", chunks, 1, kMaxChunks); }

}  // namespace hb
