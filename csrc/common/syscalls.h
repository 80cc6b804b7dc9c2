// The two helpers of every piece of code that calls the kernel directly (mmap, madvise, perf_event_open):
// the text of an errno for an error message, and rounding a size up to a page (or any) multiple.
#pragma once

#include <cstring>
#include <string>

namespace hb {

// "Cannot allocate memory (errno 12)"
inline std::string errno_text(int err) {
    return std::string(std::strerror(err)) + " (errno " + std::to_string(err) + ")";
}

// The smallest multiple of `multiple` (> 0) that is >= value.
template <class T>
constexpr T round_up(T value, T multiple) {
    return (value + multiple - 1) / multiple * multiple;
}

}  // namespace hb
