// Open-addressing string set: a small array of 16-byte control groups and a separate array of
// std::string slots, 15 slots per group. Insert-only: no erase, hence no tombstones.
//
// A group's control bytes 0..14 hold one tag per slot (0 = empty, else the hash's low byte, 0 mapped to 1);
// byte 15 is an overflow mask: bit (hash >> 8) % 8 is set in every full group an insert had to pass, so a
// lookup for an absent key stops at the first group whose bit for it is clear. A key's home group comes
// from the hash's high bits; a lookup loads the group's 16 control bytes, matches its tag against all 15
// at once (SSE2), prefetches the group's slots on a match, and compares the matching slots' keys. Groups are
// probed with triangular steps; the table doubles when it would exceed 7/8 full.
//
// Why this layout (issue 13; README "Hash sets side by side"). A lookup in a 10M-key table costs a
// slot miss (and a heap miss for keys over 15 bytes, which libstdc++ keeps out of line) whatever the
// table; what differs is the control bytes. At about 1 byte per slot and 7/8 maximum load they can stay
// cache-resident (16 MiB at 10M keys; L3 here is 32 MiB), as can the page-table entries that map them.
// The previous `flat` had 1 byte per slot but grew at half load: 33 MiB of control bytes and a slot
// array twice the size of Boost's. A variant with the control bytes and 15 slots in one 512-byte block
// (one page walk per lookup instead of two) was not faster than Boost in our runs: every control read
// then goes to memory. This is the layout of Boost's unordered_flat_set (groups of 15 plus an overflow
// byte, 7/8 load), written for hugebench from its documented design.
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "common/hash.h"

#ifdef __SSE2__
#include <emmintrin.h>
#endif

namespace hb {

template <class Hash = OwnHash>
class FlatStringSet {
public:
    static constexpr size_t kGroupSlots = 15;

    FlatStringSet() { allocate(1); }
    ~FlatStringSet() { release(groups_, slots_, mask_ + 1); }
    FlatStringSet(const FlatStringSet&) = delete;
    FlatStringSet& operator=(const FlatStringSet&) = delete;

    bool insert(const std::string& key) { return insert_impl(key); }
    bool insert(std::string&& key) { return insert_impl(std::move(key)); }

    // The stored copy equal to `key`, or nullptr.
    const std::string* find(std::string_view key) const {
        const uint64_t hash = Hash{}(key);
        const uint8_t tag = tag_of(hash);
        size_t g = home(hash);
        for (size_t step = 1;; ++step) {
            const Group& group = groups_[g];
            uint32_t m = match(group, tag);
            if (m != 0) {
                prefetch_slots(g);
                do {
                    const std::string& s = slot(g, static_cast<size_t>(__builtin_ctz(m)));
                    if (std::string_view(s) == key) return &s;
                    m &= m - 1;
                } while (m != 0);
            }
            if ((group.ctrl[kOverflow] & overflow_bit(hash)) == 0) return nullptr;
            g = (g + step) & mask_;
        }
    }
    bool contains(std::string_view key) const { return find(key) != nullptr; }

    size_t size() const { return size_; }
    size_t capacity() const { return (mask_ + 1) * kGroupSlots; }

private:
    static constexpr uint8_t kEmpty = 0;
    static constexpr size_t kOverflow = 15;  // the control byte that is not a slot's tag

    struct alignas(16) Group {
        uint8_t ctrl[16];
    };
    // Raw until a key moves in. 32 bytes aligned to 32, so no slot straddles two cache lines (a plain
    // new[] of this size returns page + 16 from glibc, which splits every other std::string in two).
    struct alignas(32) Slot {
        unsigned char bytes[sizeof(std::string)];
    };
    static_assert(sizeof(Slot) == 32 && sizeof(std::string) == 32, "one slot is half a cache line");

    static uint8_t tag_of(uint64_t hash) {
        const auto low = static_cast<uint8_t>(hash);
        return low == kEmpty ? uint8_t{1} : low;
    }
    static uint8_t overflow_bit(uint64_t hash) { return static_cast<uint8_t>(1u << ((hash >> 8) & 7)); }
    size_t home(uint64_t hash) const { return static_cast<size_t>(hash >> shift_) & mask_; }
    size_t max_load() const { return capacity() / 8 * 7; }

    std::string& slot(size_t g, size_t i) const {
        return *std::launder(reinterpret_cast<std::string*>(slots_[g * kGroupSlots + i].bytes));
    }

    // All 8 cache lines of a group's slots, once a tag matched. Measured (10M keys, paired with Boost in
    // one process): no prefetch 1.12x Boost's lookup time, prefetching the matching slot only 1.21x, the
    // whole group 0.95-1.02x; prefetching the group before the tag match (overlapping the control
    // read) 1.05-1.07x.
    void prefetch_slots(size_t g) const {
        const auto* first = reinterpret_cast<const char*>(&slots_[g * kGroupSlots]);
        for (size_t line = 0; line < kGroupSlots * sizeof(Slot) / 64 + 1; ++line) __builtin_prefetch(first + 64 * line);
    }

    // Bit i set when slot i's tag is `value` (bit 15, the overflow byte, is masked off).
    static uint32_t match(const Group& group, uint8_t value) {
#ifdef __SSE2__
        const __m128i ctrl = _mm_load_si128(reinterpret_cast<const __m128i*>(group.ctrl));
        const auto bits = static_cast<uint32_t>(
            _mm_movemask_epi8(_mm_cmpeq_epi8(ctrl, _mm_set1_epi8(static_cast<char>(value)))));
        return bits & 0x7FFF;
#else
        uint32_t bits = 0;
        for (size_t i = 0; i < kGroupSlots; ++i) bits |= uint32_t{group.ctrl[i] == value} << i;
        return bits;
#endif
    }

    // One pass: a group without the key but with an empty slot proves the key absent (every key went to
    // the first group of its probe sequence with room, and slots never empty again). Full groups passed
    // on the way get the key's overflow bit (harmless if the key turns out to be present: its own insert
    // set the same bit there).
    template <class Key>
    bool insert_impl(Key&& key) {
        const uint64_t hash = Hash{}(key);
        const uint8_t tag = tag_of(hash);
        size_t g = home(hash);
        for (size_t step = 1;; ++step) {
            Group& group = groups_[g];
            for (uint32_t m = match(group, tag); m != 0; m &= m - 1)
                if (std::string_view(slot(g, static_cast<size_t>(__builtin_ctz(m)))) == key) return false;
            const uint32_t empty = match(group, kEmpty);
            if (empty != 0) {
                if (size_ + 1 > max_load()) {
                    grow();
                    place(std::forward<Key>(key), hash);
                } else {
                    fill(g, static_cast<size_t>(__builtin_ctz(empty)), std::forward<Key>(key), tag);
                }
                ++size_;
                return true;
            }
            group.ctrl[kOverflow] |= overflow_bit(hash);
            g = (g + step) & mask_;
        }
    }

    // Puts a key known to be absent into the first group of its probe sequence with an empty slot.
    template <class Key>
    void place(Key&& key, uint64_t hash) {
        size_t g = home(hash);
        for (size_t step = 1;; ++step) {
            const uint32_t empty = match(groups_[g], kEmpty);
            if (empty != 0) {
                fill(g, static_cast<size_t>(__builtin_ctz(empty)), std::forward<Key>(key), tag_of(hash));
                return;
            }
            groups_[g].ctrl[kOverflow] |= overflow_bit(hash);
            g = (g + step) & mask_;
        }
    }

    template <class Key>
    void fill(size_t g, size_t i, Key&& key, uint8_t tag) {
        new (slots_[g * kGroupSlots + i].bytes) std::string(std::forward<Key>(key));
        groups_[g].ctrl[i] = tag;
    }

    // Both arrays come from operator new, so the allocator under test serves the table. Only the control
    // bytes are initialised; a slot's string is constructed when a key moves in.
    void allocate(size_t groups) {
        groups_ = new Group[groups];
        std::memset(static_cast<void*>(groups_), 0, groups * sizeof(Group));
        slots_ = new Slot[groups * kGroupSlots];
        mask_ = groups - 1;
        shift_ = groups == 1 ? 63 : 64 - static_cast<unsigned>(__builtin_ctzll(groups));  // x >> 64 is undefined
    }

    static void release(Group* groups, Slot* slots, size_t count) {
        for (size_t g = 0; g < count; ++g)
            for (size_t i = 0; i < kGroupSlots; ++i)
                if (groups[g].ctrl[i] != kEmpty)
                    std::launder(reinterpret_cast<std::string*>(slots[g * kGroupSlots + i].bytes))->~basic_string();
        delete[] groups;
        delete[] slots;
    }

    void grow() {
        Group* old_groups = groups_;
        Slot* old_slots = slots_;
        const size_t old_count = mask_ + 1;
        allocate(old_count * 2);
        for (size_t g = 0; g < old_count; ++g) {
            for (size_t i = 0; i < kGroupSlots; ++i) {
                if (old_groups[g].ctrl[i] == kEmpty) continue;
                std::string& key = *std::launder(reinterpret_cast<std::string*>(old_slots[g * kGroupSlots + i].bytes));
                const uint64_t hash = Hash{}(key);
                place(std::move(key), hash);  // leaves `key` empty; release() destroys it
            }
        }
        release(old_groups, old_slots, old_count);
    }

    Group* groups_ = nullptr;
    Slot* slots_ = nullptr;
    size_t mask_ = 0;
    unsigned shift_ = 63;
    size_t size_ = 0;
};

}  // namespace hb
