// Seeded, fast 64-bit PRNG shared by all workloads: xoshiro256** seeded through splitmix64.
// Workloads need reproducible inputs (same seed -> same keys/sizes/addresses), not crypto quality,
// and generating tens of millions of values must stay cheap next to the phase being measured.
#pragma once

#include <cstdint>
#include <limits>

namespace hb {

// One splitmix64 step: turns any seed (even 0 or 1) into well-spread state words.
inline uint64_t splitmix64(uint64_t& state) {
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

class Rng {
public:
    using result_type = uint64_t;  // satisfies UniformRandomBitGenerator, so <algorithm> accepts it

    // `stream` lets one seed feed independent sequences (keys, shuffle, sampling) that do not shift
    // when another phase draws a different number of values.
    explicit Rng(uint64_t seed, uint64_t stream = 0) {
        uint64_t sm = seed ^ (stream * 0xD1B54A32D192ED03ull);
        for (auto& word : s_) word = splitmix64(sm);
    }

    static constexpr uint64_t min() { return 0; }
    static constexpr uint64_t max() { return std::numeric_limits<uint64_t>::max(); }

    uint64_t operator()() { return next(); }

    uint64_t next() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }

    // Unbiased draw in [0, bound) by Lemire's multiply-and-reject; bound must be > 0.
    uint64_t bounded(uint64_t bound) {
        __uint128_t product = static_cast<__uint128_t>(next()) * bound;
        uint64_t low = static_cast<uint64_t>(product);
        if (low < bound) {
            const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
            while (low < threshold) {
                product = static_cast<__uint128_t>(next()) * bound;
                low = static_cast<uint64_t>(product);
            }
        }
        return static_cast<uint64_t>(product >> 64);
    }

    // Uniform in [lo, hi] inclusive.
    int64_t between(int64_t lo, int64_t hi) {
        return lo + static_cast<int64_t>(bounded(static_cast<uint64_t>(hi - lo) + 1));
    }

    // Uniform double in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

}  // namespace hb
