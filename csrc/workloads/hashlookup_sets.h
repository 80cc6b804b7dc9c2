// The set kinds of the hashlookup workload, each behind the same small interface as FlatStringSet:
// insert(key) -> newly added?, find(key) -> the stored copy or nullptr, size(), capacity(); and the one
// dispatch from a (set_kind, hash) pair of names to the set type, for hashlookup and hashsets alike.
// The library tables are optional: CMake defines HB_HAVE_<LIBRARY> for each one it found, and the
// build records the list (HB_SET_KINDS / HB_HASHES, read back by _core.build_info() and checked here).
#pragma once

#include <stdexcept>
#include <string>
#include <unordered_set>

#include "common/flat_string_set.h"
#include "common/hash.h"

#ifdef HB_HAVE_XXHASH
#include "common/xxh3_hash.h"
#endif
#ifdef HB_HAVE_ROBIN
#include <tsl/robin_set.h>
#endif
#ifdef HB_HAVE_ABSL
#include <absl/container/flat_hash_set.h>
#endif
#ifdef HB_HAVE_BOOST_UNORDERED
#include <boost/unordered/unordered_flat_set.hpp>
#endif

namespace hb::hashlookup {

// Adapts a library set of std::string (insert returning a pair, find returning an iterator).
template <class Table>
class LibrarySet {
public:
    bool insert(const std::string& key) { return table_.insert(key).second; }
    const std::string* find(const std::string& key) const {
        const auto it = table_.find(key);
        return it == table_.end() ? nullptr : &*it;
    }
    size_t size() const { return table_.size(); }
    size_t capacity() const { return table_.bucket_count(); }  // slots, or buckets for "node"

private:
    Table table_;
};

// Each kind as a template over the hash functor; all use the table's own defaults otherwise (load
// factor, growth), as a user's program would.
template <class Hash>
using NodeSet = LibrarySet<std::unordered_set<std::string, Hash>>;  // "node": buckets of linked nodes
#ifdef HB_HAVE_ROBIN
template <class Hash>
using RobinSet = LibrarySet<tsl::robin_set<std::string, Hash>>;  // "robin": Robin Hood, max load 0.5
#endif
#ifdef HB_HAVE_ABSL
template <class Hash>
using AbslSet = LibrarySet<absl::flat_hash_set<std::string, Hash>>;  // "absl": SwissTable, max load 7/8
#endif
#ifdef HB_HAVE_BOOST_UNORDERED
template <class Hash>
using BoostSet = LibrarySet<boost::unordered_flat_set<std::string, Hash>>;  // "boost": 15-slot groups, 7/8
#endif

enum class SetKind { flat, node, robin, absl, boost };
enum class HashKind { own, xxh3 };

// Throw std::invalid_argument naming the valid names or, for a library this build lacks, the package
// that adds it (hashlookup_sets.cpp holds the tables).
SetKind parse_set_kind(const std::string& name);
HashKind parse_hash(const std::string& name);

template <class Set>
struct SetType {
    using type = Set;
};

// Calls f(SetType<Set>{}) with the Set type of (kind, hash).
template <template <class> class SetOf, class F>
decltype(auto) with_hash(HashKind hash, F&& f) {
#ifdef HB_HAVE_XXHASH
    if (hash == HashKind::xxh3) return f(SetType<SetOf<Xxh3Hash>>{});
#endif
    (void)hash;
    return f(SetType<SetOf<OwnHash>>{});
}

// Calls f(SetType<Set>{}) with the set type named by (set_kind, hash_name); throws as the parsers do.
template <class F>
decltype(auto) with_set(const std::string& set_kind, const std::string& hash_name, F&& f) {
    const HashKind hash = parse_hash(hash_name);
    switch (parse_set_kind(set_kind)) {
#ifdef HB_HAVE_ROBIN
        case SetKind::robin: return with_hash<RobinSet>(hash, f);
#endif
#ifdef HB_HAVE_ABSL
        case SetKind::absl: return with_hash<AbslSet>(hash, f);
#endif
#ifdef HB_HAVE_BOOST_UNORDERED
        case SetKind::boost: return with_hash<BoostSet>(hash, f);
#endif
        case SetKind::node: return with_hash<NodeSet>(hash, f);
        default: return with_hash<FlatStringSet>(hash, f);  // flat (parse_set_kind refused the unbuilt ones)
    }
}

}  // namespace hb::hashlookup
