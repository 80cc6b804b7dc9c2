// A slot of the alloctest workload, how its block is filled and verified, and the compile-time modes.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "workloads/alloctest.h"

namespace hb::alloctest {

struct Slot {
    unsigned char* block = nullptr;  // null: the slot is empty
    uint32_t size = 0;
    uint32_t generation = 0;         // mallocs into this slot so far; varies the fill byte
};

// Never 0 (so no compiler can turn malloc+memset into calloc), and different for each (slot, generation),
// so a block that is read back with another block's bytes (a use-after-free, an overlap) is caught.
inline unsigned char fill_byte(uint32_t slot, uint32_t generation) {
    const uint64_t h = ((static_cast<uint64_t>(slot) << 32) | generation) * 0x9E3779B97F4A7C15ull;
    return static_cast<unsigned char>(1 + (h >> 32) % 255);
}

struct ReadBack {
    uint64_t sum = 0;
    bool intact = true;
};

// Reads every byte of the block once: sums it (so the read cannot be optimised away) and checks it.
// Four independent accumulators keep the loop bound by loads, not by the add chain.
inline ReadBack read_back(const unsigned char* block, size_t size, unsigned char expected) {
    const uint64_t pattern = expected * 0x0101010101010101ull;
    uint64_t sums[4] = {0, 0, 0, 0};
    uint64_t diff = 0;
    size_t i = 0;
    for (; i + 32 <= size; i += 32) {
        uint64_t w[4];
        std::memcpy(w, block + i, sizeof w);
        sums[0] += w[0], sums[1] += w[1], sums[2] += w[2], sums[3] += w[3];
        diff |= (w[0] ^ pattern) | (w[1] ^ pattern) | (w[2] ^ pattern) | (w[3] ^ pattern);
    }
    for (; i + 8 <= size; i += 8) {
        uint64_t w;
        std::memcpy(&w, block + i, sizeof w);
        sums[0] += w;
        diff |= w ^ pattern;
    }
    for (; i < size; ++i) {
        sums[1] += block[i];
        diff |= static_cast<uint64_t>(block[i] ^ expected);
    }
    return {sums[0] + sums[1] + sums[2] + sums[3], diff == 0};
}

// The original's read-back: every 64-bit word of the block, then its tail bytes, added to one sum,
// nothing compared. The sum goes into the caller's tally, so the loads cannot be optimised away.
inline uint64_t sum_block(const unsigned char* block, size_t size) {
    uint64_t sum = 0;
    size_t i = 0;
    for (; i + 8 <= size; i += 8) {
        uint64_t w;
        std::memcpy(&w, block + i, sizeof w);
        sum += w;
    }
    for (; i < size; ++i) sum += block[i];
    return sum;
}

// Calls body(mode, touch) with both as compile-time constants (std::integral_constant), so the hot loop
// never branches on them.
template <class Body>
void with_modes(AllocatorMode mode, Touch touch, Body&& body) {
    auto with_touch = [&](auto how) {
        switch (touch) {
            case Touch::none: return body(how, std::integral_constant<Touch, Touch::none>{});
            case Touch::write_read: return body(how, std::integral_constant<Touch, Touch::write_read>{});
            case Touch::full: return body(how, std::integral_constant<Touch, Touch::full>{});
            case Touch::original: return body(how, std::integral_constant<Touch, Touch::original>{});
        }
    };
    switch (mode) {
        case AllocatorMode::malloc: return with_touch(std::integral_constant<AllocatorMode, AllocatorMode::malloc>{});
        case AllocatorMode::new_array:
            return with_touch(std::integral_constant<AllocatorMode, AllocatorMode::new_array>{});
        case AllocatorMode::void_: return with_touch(std::integral_constant<AllocatorMode, AllocatorMode::void_>{});
    }
}

}  // namespace hb::alloctest
