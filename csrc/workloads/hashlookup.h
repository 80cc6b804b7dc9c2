// The TLB / huge-page / malloc hash-lookup benchmark: N random short strings in a hash set, then time
// only point lookups of those keys in a shuffled (or Zipf-skewed) order, from T threads.
// Keys shorter than 16 bytes live inside std::string (SSO); longer ones are separate malloc blocks,
// which is why the allocator and huge pages both show up in the lookup time.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/checks.h"
#include "common/perf_counters.h"
#include "common/phases.h"
#include "common/timing.h"

namespace hb::hashlookup {

// No defaults here: the Python registry (hugebench/workloads.py) holds them and the binding passes
// every field.
struct Params {
    int64_t keys{};
    std::string set_kind;            // "flat" (open addressing, written here), "node" (std::unordered_set),
                                     // "robin" (tsl::robin_set), "absl" (absl::flat_hash_set),
                                     // "boost" (boost::unordered_flat_set); the last three only where built
    std::string hash;                // "own" (common/hash.h) or "xxh3" (libxxhash, where built)
    ThreadCount threads{};
    int64_t lookups{};               // 0: one lookup per key
    int64_t key_min{};
    int64_t key_max{};
    std::string order;               // "uniform" (shuffled keys, cycled) or "zipf"
    double zipf_s{};
    int64_t chunks{};                // per-thread timing slices, to expose bursts of noise
    uint64_t seed{};
    std::string teardown;            // "free": destroy the set and the keys before returning; "exit": leave
                                     // them allocated for the process's exit to reclaim (a worker that is one
                                     // run and exits right after; each call leaks them)
    std::vector<CounterSpec> counters;  // enabled only around the lookup loop
};

struct Result {
    std::vector<std::pair<std::string, double>> phases;  // name -> seconds, in execution order
    uint64_t keys = 0;
    uint64_t set_size = 0;       // distinct keys stored
    uint64_t lookups = 0;
    uint64_t found = 0;
    uint64_t checksum = 0;       // sum of the lengths of the found keys, as stored in the set
    double ns_per_lookup = 0;
    ChunkStats chunk_ns;         // over all chunks of all threads, ns per lookup within the chunk
    ThreadCount threads = 0;
    std::string set_kind;
    std::string hash;
    uint64_t capacity = 0;       // slots, or buckets for node
    std::vector<CounterReading> counters;
};

// Throws std::invalid_argument naming the bad parameter.
void validate(const Params& params);

// The key count and lengths check of validate(), shared with hashsets.
void validate_keys(int64_t keys, int64_t key_min, int64_t key_max);

// Phases, each between hook(name, "begin") and hook(name, "end"): generate, insert, shuffle, lookup.
// The hook is only ever called from the calling thread. After the last phase the set and the keys are
// freed (teardown "free") or abandoned (teardown "exit"); either way outside every phase.
Result run(const Params& params, const Hook& hook = {});

// For tests: a set of `set_kind` with `keys` inserted, then which of `queries` it finds.
struct Membership {
    uint64_t set_size = 0;
    std::vector<bool> found;
};
Membership membership(const std::string& set_kind, const std::string& hash, const std::vector<std::string>& keys,
                      const std::vector<std::string>& queries);

// The keys run() generates for the same arguments (before shuffling): their lengths uniform in
// [key_min, key_max], their letters uniform over a-z/A-Z, from the seed's own streams per block of keys.
// The letters are written on `threads` threads (0: every core this process may run on), the strings
// allocated on the calling thread in key order; the keys are the same for any thread count
// (hashlookup_keys.cpp).
std::vector<std::string> generate_keys(uint64_t count, uint64_t seed, int64_t key_min, int64_t key_max,
                                       unsigned threads = 0);

// The cores this process may run on (its affinity mask), at least 1.
unsigned usable_cores();

// The uniform lookup order of run(): a seeded forward Fisher-Yates shuffle stopped after `prefix` steps,
// so that the first `prefix` keys are a uniform random sample of the keys without replacement, in random
// order (the sample run() looks up when lookups < keys); a prefix of keys.size() or more shuffles them all.
void shuffle_keys(std::vector<std::string>& keys, uint64_t seed, uint64_t prefix = UINT64_MAX);

// For tests: the keys run() looks up in the uniform order, in that order (cycling when lookups > keys).
std::vector<std::string> uniform_queries(uint64_t keys, uint64_t lookups, uint64_t seed, int64_t key_min,
                                         int64_t key_max);

}  // namespace hb::hashlookup
