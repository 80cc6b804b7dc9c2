// A fast 64-bit byte-string hash built on the 64x64->128 "multiply and fold" (mum) mix.
// Short keys (the common case here: 10-19 bytes) take one or two unaligned loads and two multiplies.
// Written for hugebench; same family as wyhash/rapidhash but not their code or constants.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace hb {
namespace hash_detail {

// Odd constants with roughly half their bits set (digits of pi, e and sqrt(2), forced odd).
constexpr uint64_t kMixA = 0x243F6A8885A308D3ull;
constexpr uint64_t kMixB = 0xB7E151628AED2A6Bull;
constexpr uint64_t kMixC = 0x6A09E667F3BCC909ull;

inline uint64_t fold_multiply(uint64_t a, uint64_t b) {
    const __uint128_t product = static_cast<__uint128_t>(a) * b;
    return static_cast<uint64_t>(product) ^ static_cast<uint64_t>(product >> 64);
}

inline uint64_t load64(const unsigned char* p) {
    uint64_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

inline uint64_t load32(const unsigned char* p) {
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    return v;
}

// Reads 0..16 bytes as two words without touching memory outside [p, p+len): overlapping loads
// from both ends cover every byte once or twice, which keeps the branch count at three.
inline void load_short(const unsigned char* p, size_t len, uint64_t& a, uint64_t& b) {
    if (len >= 8) {
        a = load64(p);
        b = load64(p + len - 8);
    } else if (len >= 4) {
        a = load32(p);
        b = load32(p + len - 4);
    } else if (len > 0) {
        a = (uint64_t{p[0]} << 16) | (uint64_t{p[len / 2]} << 8) | p[len - 1];
        b = 0;
    } else {
        a = b = 0;
    }
}

}  // namespace hash_detail

inline uint64_t hash_bytes(const void* data, size_t len, uint64_t seed = 0) {
    using namespace hash_detail;
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t state = fold_multiply(seed ^ kMixA, kMixB ^ len);
    uint64_t a, b;
    if (len <= 16) {
        load_short(p, len, a, b);
    } else {
        size_t remaining = len;
        while (remaining > 16) {  // absorb 16 bytes per round into the running state
            state = fold_multiply(load64(p) ^ kMixB, load64(p + 8) ^ state);
            p += 16;
            remaining -= 16;
        }
        // The final 16 bytes of the input, overlapping the last round when len is not a multiple of 16.
        a = load64(p + remaining - 16);
        b = load64(p + remaining - 8);
    }
    // Two rounds so every input bit reaches every output bit (the table uses both high and low bits).
    const uint64_t mixed = fold_multiply(a ^ kMixA, b ^ state);
    return fold_multiply(mixed ^ kMixC, state ^ kMixB ^ len);
}

inline uint64_t hash_string(std::string_view s, uint64_t seed = 0) { return hash_bytes(s.data(), s.size(), seed); }

// hash_string as the hash functor of a set (set kinds take `hash`: "own" is this one).
// Deliberately not noexcept: libstdc++ then stores each node's hash, exactly as it does for
// std::hash<std::string>, so std::unordered_set has the memory layout of a default one.
struct OwnHash {
    using is_avalanching = void;  // every output bit depends on every input bit: Boost adds no mixing step
    size_t operator()(std::string_view s) const { return hash_string(s); }
};

}  // namespace hb
