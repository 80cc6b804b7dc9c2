// Open-addressing string set in the SwissTable style: a 1-byte control array (7-bit hash fingerprint,
// or "empty") scanned 16 slots at a time with SSE2, and a parallel array of std::string slots.
// Capacity is a power of two, groups are aligned (no cloned control bytes), probing is triangular over
// groups, and the table doubles once it would pass 7/8 full. Insert-only: no erase, hence no tombstones,
// so a probe may stop at the first group that has an empty slot.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "common/hash.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace hb {

class FlatStringSet {
public:
    static constexpr size_t kGroupWidth = 16;

    FlatStringSet() { reset(kGroupWidth); }

    bool insert(const std::string& key) { return insert_impl(key); }
    bool insert(std::string&& key) { return insert_impl(std::move(key)); }

    // The stored copy equal to `key`, or nullptr.
    const std::string* find(std::string_view key) const { return find_hashed(key, hash_string(key)); }
    bool contains(std::string_view key) const { return find(key) != nullptr; }

    size_t size() const { return size_; }
    size_t capacity() const { return slots_.size(); }

private:
    static constexpr int8_t kEmpty = -128;  // the only negative control byte; full slots hold 0..127

    static int8_t fingerprint(uint64_t hash) { return static_cast<int8_t>(hash & 0x7F); }
    size_t home_group(uint64_t hash) const { return static_cast<size_t>(hash >> 7) & group_mask_; }
    size_t max_load() const { return capacity() - capacity() / 8; }

    static uint32_t match_fingerprint(const int8_t* group, int8_t fp) {
#ifdef __SSE2__
        const __m128i bytes = _mm_loadu_si128(reinterpret_cast<const __m128i*>(group));
        return static_cast<uint32_t>(_mm_movemask_epi8(_mm_cmpeq_epi8(bytes, _mm_set1_epi8(fp))));
#else
        uint32_t bits = 0;
        for (size_t i = 0; i < kGroupWidth; ++i) bits |= uint32_t{group[i] == fp} << i;
        return bits;
#endif
    }

    static uint32_t match_empty(const int8_t* group) {
#ifdef __SSE2__
        // Empty is the only control value with the sign bit set, so movemask alone finds them.
        return static_cast<uint32_t>(_mm_movemask_epi8(_mm_loadu_si128(reinterpret_cast<const __m128i*>(group))));
#else
        uint32_t bits = 0;
        for (size_t i = 0; i < kGroupWidth; ++i) bits |= uint32_t{group[i] == kEmpty} << i;
        return bits;
#endif
    }

    const std::string* find_hashed(std::string_view key, uint64_t hash) const {
        const int8_t fp = fingerprint(hash);
        size_t group = home_group(hash);
        for (size_t step = 1;; ++step) {
            const size_t base = group * kGroupWidth;
            for (uint32_t m = match_fingerprint(&ctrl_[base], fp); m != 0; m &= m - 1) {
                const std::string& slot = slots_[base + static_cast<size_t>(__builtin_ctz(m))];
                if (std::string_view(slot) == key) return &slot;
            }
            if (match_empty(&ctrl_[base]) != 0) return nullptr;
            group = (group + step) & group_mask_;  // triangular steps visit every group of a 2^k table
        }
    }

    template <class Key>
    bool insert_impl(Key&& key) {
        const uint64_t hash = hash_string(key);
        if (find_hashed(key, hash) != nullptr) return false;
        if (size_ + 1 > max_load()) grow();
        place(std::forward<Key>(key), hash);
        ++size_;
        return true;
    }

    // Puts a key known to be absent into the first empty slot of its probe sequence.
    template <class Key>
    void place(Key&& key, uint64_t hash) {
        size_t group = home_group(hash);
        for (size_t step = 1;; ++step) {
            const size_t base = group * kGroupWidth;
            const uint32_t empty = match_empty(&ctrl_[base]);
            if (empty != 0) {
                const size_t slot = base + static_cast<size_t>(__builtin_ctz(empty));
                ctrl_[slot] = fingerprint(hash);
                slots_[slot] = std::forward<Key>(key);
                return;
            }
            group = (group + step) & group_mask_;
        }
    }

    void reset(size_t capacity) {
        ctrl_.assign(capacity, kEmpty);
        slots_ = std::vector<std::string>(capacity);
        group_mask_ = capacity / kGroupWidth - 1;
    }

    void grow() {
        std::vector<int8_t> old_ctrl = std::move(ctrl_);
        std::vector<std::string> old_slots = std::move(slots_);
        reset(old_slots.size() * 2);
        for (size_t i = 0; i < old_slots.size(); ++i) {
            if (old_ctrl[i] == kEmpty) continue;
            const uint64_t hash = hash_string(old_slots[i]);
            place(std::move(old_slots[i]), hash);
        }
    }

    std::vector<int8_t> ctrl_;
    std::vector<std::string> slots_;
    size_t group_mask_ = 0;
    size_t size_ = 0;
};

}  // namespace hb
