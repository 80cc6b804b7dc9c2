// tlbprobe: what a random access costs on this machine, per page size, as the working set grows — the
// ceiling of what huge pages can buy here. A chain of nodes linked in ONE random cycle is walked with
// dependent loads (each address comes from the previous load), so the time per step is the full latency
// of a miss: caches, TLB and the page walk.
//
// Patterns:
//   chase  one chain; a node is a random 64-byte line in each of `nodes` equal strata of the buffer
//   mlp    the same cycle walked from `chains` points spaced evenly along it, all advanced together:
//          independent misses overlap (memory-level parallelism), the cost per access drops
//   reach  one node per 4 KiB page, at line (page % 64) of it, so the nodes' lines fit in the caches while
//          the pages do not fit in the TLB: what remains is the translation cost (the TLB-reach test)
// Backings: 4k (MADV_NOHUGEPAGE), thp (2 MiB-aligned, MADV_HUGEPAGE), hugetlb-2m, hugetlb-1g (MAP_HUGETLB
// from the pool, which the caller sizes). Coverage is not checked here: the worker reads smaps after the run.
//
// Phases, each between hook(name,"begin") and hook(name,"end"):
//   populate  map the buffer and write one byte per 4 KiB (page faults, huge page allocation)
//   build     link the nodes into the cycle, then walk a quarter of `accesses` untimed (warm caches/TLB)
//   chase     the timed phase: `accesses` loads in `chunks` timed slices
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/checks.h"
#include "common/perf_counters.h"
#include "common/phases.h"
#include "common/timing.h"

namespace hb::tlbprobe {

// No defaults here: the Python registry (hugebench/workloads.py) holds them.
struct Params {
    std::string backing;
    uint64_t working_set_bytes{};
    std::string pattern;
    int64_t chains{};      // mlp only
    uint64_t accesses{};   // timed loads over all chains
    uint64_t max_nodes{};  // nodes at most (larger working sets sample one node per stratum)
    int64_t chunks{};
    uint64_t seed{};
    std::vector<CounterSpec> counters;
};

struct Result {
    std::vector<std::pair<std::string, double>> phases;
    std::string backing;
    std::string pattern;
    std::string map_flags;
    uint64_t working_set_bytes = 0;
    uint64_t mapped_bytes = 0;
    uint64_t mapping_page_size = 0;  // the page size asked for (4 KiB for 4k and thp: THP is checked after)
    uint64_t nodes = 0;
    uint64_t node_stride_bytes = 0;  // bytes of buffer per node (one node per stratum)
    int64_t chains = 0;
    uint64_t accesses = 0;
    double ns_per_access = 0;
    int64_t chunks = 0;
    ChunkStats chunk_ns;
    uint64_t checksum = 0;  // low bits of the final node addresses' offsets, for tests
    std::vector<CounterReading> counters;
};

void validate(const Params& params);
Result run(const Params& params, const Hook& hook);

// The cycle run() links for `nodes` nodes and `seed`, as next[i] (for tests: it must be one cycle).
std::vector<uint32_t> cycle(uint64_t nodes, uint64_t seed);

}  // namespace hb::tlbprobe
