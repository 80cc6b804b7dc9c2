// Open-addressing string set: one array of std::string slots, linear probing, no metadata beside the
// keys. Insert-only: no erase, hence no tombstones.
//
// A slot holding the empty string is vacant; the empty key itself, the one key that would look vacant,
// is kept aside in a flag. A key's home slot comes from the hash's high bits; a lookup walks forward from
// there until it finds the key or a vacant slot. The table doubles when it would be over 3/4 full, so a
// hit probes 1.3-2.5 slots on average and a miss 1.8-8.5 (Knuth's linear-probing estimates at 3/8-3/4 load), all in
// adjacent 32-byte slots: usually the home slot's cache line, sometimes the next one.
//
// Why this layout (issue 13; README "Hash sets side by side"). The benchmark's lookups are independent, so
// the core overlaps several of them and what a lookup costs is how many cache lines and pages it touches
// and how many instructions hold the reorder buffer meanwhile, not one lookup's latency (with lookups
// made dependent on each other every table here takes the same ~700 ns at 30M keys). A SwissTable-style
// group layout (the previous `flat`, Boost's layout: a separate array of 16-byte control groups, 15 tags
// each) touches a control line and then the slot lines, on two pages; tsl::robin_set touches one 40-byte
// bucket (probe distance + string). Here a lookup touches the key's own line (sometimes the next) and no
// metadata elsewhere: a std::string is its own fingerprint, since its size is compared before its bytes
// and keys of up to 15 bytes sit inside the slot (libstdc++'s short-string buffer). Measured in one process
// by the hashsets workload (experiments/sets-paired.yaml: 10-19 letters, own hash, n = 9 runs; README "Hash
// sets side by side"): robin took 1.19x and Boost 1.26x this table's time at 10M keys, 1.07x and 1.14x at
// 30M, every ratio resolved; the group layout took 1.36x at 10M (a scratch program, before hashsets). In
// experiments/sets.yaml (one process per run) Boost is 1.11x slower at 10M and not resolved either way at
// 30M. Memory is Boost's: 32 bytes a slot at 3/8-3/4 load, 512 MiB at 10M keys (robin: 40 bytes at 1/4-1/2,
// 1.2 GiB).
// The price: keys over 15 bytes that all have one length are no longer told apart by their size, so each
// probe past another key reads that key's heap bytes (tsl::robin_set shares this; tag tables do not):
// with 10M keys of 24 letters this table took 1.12x Boost's time, robin 0.97x this table's
// (experiments/sets-longkeys.yaml); the group layout took 1.05x Boost's (a scratch program).
#pragma once

#include <cstdint>
#include <cstring>
#include <new>
#include <string>
#include <string_view>
#include <utility>

#include "common/hash.h"

namespace hb {

template <class Hash = OwnHash>
class FlatStringSet {
public:
    FlatStringSet() { allocate(kMinSlots); }
    ~FlatStringSet() { release(slots_, mask_ + 1); }
    FlatStringSet(const FlatStringSet&) = delete;
    FlatStringSet& operator=(const FlatStringSet&) = delete;

    bool insert(const std::string& key) { return insert_impl(key); }
    bool insert(std::string&& key) { return insert_impl(std::move(key)); }

    // The stored copy equal to `key`, or nullptr.
    const std::string* find(std::string_view key) const {
        if (key.empty()) return has_empty_ ? &empty_key_ : nullptr;
        for (size_t i = home(key);; i = (i + 1) & mask_) {
            const std::string& s = slots_[i];
            if (s.size() == key.size() && std::memcmp(s.data(), key.data(), key.size()) == 0) return &s;
            if (s.empty()) return nullptr;
        }
    }
    bool contains(std::string_view key) const { return find(key) != nullptr; }

    size_t size() const { return size_; }
    size_t capacity() const { return mask_ + 1; }

private:
    static constexpr size_t kMinSlots = 16;
    static constexpr std::align_val_t kAlign{64};  // two slots per cache line, none split across two
    // libstdc++'s string is 32 bytes: a slot is half a cache line. libc++'s (the binary wheel's) is 24, so
    // some slots straddle two lines; _core.build_info() records string_bytes with every sweep's context.
    static_assert(sizeof(std::string) == 32 || sizeof(std::string) == 24, "a slot is 24 or 32 bytes");

    size_t home(std::string_view key) const { return static_cast<size_t>(Hash{}(key) >> shift_); }
    bool over_max_load(size_t count) const { return count * 4 > capacity() * 3; }

    // One pass: the walk that proves the key absent ends at the vacant slot it then takes.
    template <class Key>
    bool insert_impl(Key&& key) {
        if (key.empty()) {
            const bool added = !has_empty_;
            has_empty_ = true;
            size_ += added;
            return added;
        }
        size_t i = home(key);
        for (; !slots_[i].empty(); i = (i + 1) & mask_)
            if (slots_[i] == key) return false;
        if (over_max_load(size_ + 1)) {
            grow();
            place(std::string(std::forward<Key>(key)));
        } else {
            occupy(i, std::forward<Key>(key));
        }
        ++size_;
        return true;
    }

    // Puts a non-empty key known to be absent into the first vacant slot from its home.
    void place(std::string&& key) {
        size_t i = home(key);
        while (!slots_[i].empty()) i = (i + 1) & mask_;
        occupy(i, std::move(key));
    }

    // Constructs rather than assigns: a copy-assigned long key would get libstdc++'s doubled capacity
    // (31 bytes for a 16-byte key), a copy-constructed one exactly its size, as in the library tables.
    template <class Key>
    void occupy(size_t i, Key&& key) {
        slots_[i].~basic_string();  // vacant, so nothing to free
        new (&slots_[i]) std::string(std::forward<Key>(key));
    }

    // From operator new, so the allocator under test serves the table; every slot starts as an empty
    // (vacant) string, which libstdc++ keeps without allocating.
    void allocate(size_t slots) {
        slots_ = static_cast<std::string*>(::operator new(slots * sizeof(std::string), kAlign));
        for (size_t i = 0; i < slots; ++i) new (&slots_[i]) std::string();
        mask_ = slots - 1;
        shift_ = 64 - static_cast<unsigned>(__builtin_ctzll(slots));
    }

    static void release(std::string* slots, size_t count) {
        for (size_t i = 0; i < count; ++i) slots[i].~basic_string();
        ::operator delete(slots, kAlign);
    }

    void grow() {
        std::string* old = slots_;
        const size_t old_count = mask_ + 1;
        allocate(old_count * 2);
        for (size_t i = 0; i < old_count; ++i)
            if (!old[i].empty()) place(std::move(old[i]));
        release(old, old_count);
    }

    std::string* slots_ = nullptr;
    size_t mask_ = 0;
    unsigned shift_ = 64;
    size_t size_ = 0;
    bool has_empty_ = false;
    std::string empty_key_;
};

}  // namespace hb
