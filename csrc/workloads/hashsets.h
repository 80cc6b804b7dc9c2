// Every hash set kind side by side in ONE process: the same keys inserted into each kind in turn, then
// rounds of lookups in which every kind takes one chunk, the kinds' order rotating from round to round.
//
// Why a workload of its own (issue 13). Across separate processes a minute apart, this machine drifts
// 10-40%, so a 10% difference between two tables needs many repetitions of hashlookup to resolve. Here
// each round's chunks are a few hundred milliseconds apart, so a drift hits every kind of the round alike
// and the per-round ratio kind/baseline cancels it. Each chunk is the next stretch of the shuffled keys
// (wrapping around), so a kind never looks up the keys another kind has just pulled into the cache.
// What it cannot tell: how a table fares alone in a process (its pages placed after nobody else's, a
// cache and TLB shared with no other table); hashlookup, one kind per run, measures that.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/perf_counters.h"
#include "common/phases.h"
#include "common/timing.h"

namespace hb::hashsets {

// No defaults here: the Python registry (hugebench/workloads.py) holds them and the binding passes every field.
struct Params {
    int64_t keys{};
    std::string set_kinds;  // comma-separated kinds of hashlookup (flat, node, robin, absl, boost); the first is
                            // the baseline of the ratios, each at most once
    std::string hash;       // "own" or "xxh3", for every kind
    int64_t lookups{};      // per kind; 0: one per key
    int64_t key_min{};
    int64_t key_max{};
    int64_t rounds{};       // every kind takes one chunk per round: lookups / rounds lookups each
    std::string build_order;  // "listed" (set_kinds' order) or "reversed": is it better to be built first?
    uint64_t seed{};
    std::vector<CounterSpec> counters;  // per kind, enabled only around that kind's chunks
};

struct KindResult {
    std::string set_kind;
    double insert_s = 0;
    uint64_t set_size = 0;
    uint64_t capacity = 0;  // slots, or buckets for node
    uint64_t lookups = 0;
    uint64_t found = 0;
    uint64_t checksum = 0;  // sum of the lengths of the found keys, as stored: equal across kinds
    double ns_per_lookup = 0;  // over all of this kind's chunks
    std::vector<double> round_ns;  // ns per lookup of this kind's chunk in each round, in round order
    std::vector<CounterReading> counters;
};

struct Result {
    std::vector<std::pair<std::string, double>> phases;  // generate, insert.<kind> per kind, shuffle, lookup
    uint64_t keys = 0;
    std::string hash;
    uint64_t rounds = 0;
    std::vector<KindResult> kinds;  // in the order of set_kinds
};

// Throws std::invalid_argument naming the bad parameter (an unknown or unbuilt kind with its package).
void validate(const Params& params);

// The set kinds of params.set_kinds, in order (validate() has checked them).
std::vector<std::string> kinds_of(const std::string& set_kinds);

// Phases between hook(name, "begin"/"end"): generate, insert.<kind> for each kind in build order, shuffle,
// lookup (all kinds' chunks; its wall time includes the clock reads and counter switches between chunks).
Result run(const Params& params, const Hook& hook = {});

}  // namespace hb::hashsets
