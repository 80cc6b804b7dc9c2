// The set kinds of the hashlookup workload, each behind the same small interface as FlatStringSet:
// insert(key) -> newly added?, find(key) -> the stored copy or nullptr, size(), capacity().
// The library tables are optional: CMake defines HB_HAVE_<LIBRARY> for each one it found, and the
// build records the list (HB_SET_KINDS / HB_HASHES, read back by _core.build_info()).
#pragma once

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

}  // namespace hb::hashlookup
