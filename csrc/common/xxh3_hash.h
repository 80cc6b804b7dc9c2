// XXH3-64 (libxxhash, header-only use) as a set's hash functor: the article's xxHash family.
// Only built where CMake found xxhash.h (HB_HAVE_XXHASH).
#pragma once

#include <cstddef>
#include <string_view>

#define XXH_INLINE_ALL  // inlined, as the article's benchmark used it: no call into libxxhash.so
#include <xxhash.h>

namespace hb {

// Not noexcept, for the same reason as OwnHash (std::unordered_set keeps each node's hash).
struct Xxh3Hash {
    using is_avalanching = void;
    size_t operator()(std::string_view s) const { return XXH3_64bits(s.data(), s.size()); }
};

}  // namespace hb
