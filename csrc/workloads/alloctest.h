// The allocator stress workload (in the spirit of ITHare's alloc-test): each thread owns a set of slots;
// every iteration picks a slot by an 80/20 (Pareto) law and either mallocs a block into it (empty slot,
// size drawn with p ~ 1/size) or frees the block it holds (full slot). Blocks are really used (written
// after malloc, read back and verified before free), so page faults, cache and TLB misses and huge
// pages all show in the time. A "void" allocator runs the identical loop without any real malloc/free,
// so the harness cost (RNG, slot choice, memset/read) can be subtracted by the caller.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/checks.h"
#include "common/perf_counters.h"
#include "common/phases.h"
#include "common/timing.h"

namespace hb::alloctest {

enum class Touch { none, write_read, full };
enum class AllocatorMode { malloc, void_ };

Touch parse_touch(const std::string& name);                   // "none" | "write-read" | "full"
AllocatorMode parse_allocator_mode(const std::string& name);  // "malloc" | "void"

// No defaults here: the Python registry (hugebench/workloads.py) holds them and the binding passes
// every field.
struct Params {
    ThreadCount threads{};
    int64_t iterations{};                 // slot picks in the timed phase, over all threads
    int64_t warmup_iterations{};          // picks after the fill, before the timed phase (own phase)
    int64_t slots{};                      // over all threads; 0: derived from total_bytes
    int64_t total_bytes{};                // steady-state live bytes over all threads (when slots == 0)
    int64_t min_size{};
    int64_t max_size{};
    // none: blocks never touched; write-read: memset after malloc, read back and verified before free;
    // full: write-read plus a verifying read right after the memset (every cache line touched twice at
    // malloc time, once more before free).
    std::string touch;
    // malloc: the process's malloc/free (whatever LD_PRELOAD put there); void: every malloc returns the
    // thread's one pre-touched max_size buffer and free does nothing, i.e. the harness cost alone.
    std::string allocator_mode;
    int64_t chunks{};                     // per-thread timing slices of the timed phase
    uint64_t seed{};
    std::vector<CounterSpec> counters;    // enabled only around the timed phase
};

struct Result {
    std::vector<std::pair<std::string, double>> phases;  // setup, warmup, run, teardown -> seconds
    ThreadCount threads = 0;
    std::string allocator_mode;
    std::string touch;
    uint64_t slots = 0;                // actually used (slots_per_thread * threads)
    uint64_t slots_per_thread = 0;
    double pareto_exponent = 0;        // s of the rank law p(rank) ~ rank^-s fitted to 80/20
    double mean_size = 0;              // of the size law
    uint64_t iterations = 0;           // timed phase, all threads
    uint64_t mallocs = 0;              // timed phase
    uint64_t frees = 0;                // timed phase
    double pairs = 0;                  // (mallocs + frees) / 2: each iteration is one malloc or one free
    double ns_per_pair_wall = 0;       // run-phase wall seconds * 1e9 / pairs (throughput of all threads)
    double ns_per_pair_thread = 0;     // sum of each thread's own loop seconds * 1e9 / pairs (cost of one
                                       // pair to the thread doing it; excludes thread wake-up latency)
    ChunkStats chunk_ns;               // over all chunks of all threads, ns per pair within the chunk
    // Max over setup, warmup and run of the requested bytes live in all threads together. One thread:
    // exact (checked after every malloc). More: each thread publishes its live bytes every 256 of its ops
    // and then sums everyone's last publication; the max of those sums (and of each thread's exact peak),
    // so it may miss the true peak by what ~256 ops per thread can add (a few MB next to GBs).
    uint64_t peak_requested_bytes = 0;
    uint64_t peak_requested_bytes_bound = 0;  // sum of per-thread exact peaks (>= the true global peak)
    uint64_t live_bytes_end = 0;       // requested bytes live at the end of the timed phase
    uint64_t live_blocks_end = 0;
    uint64_t bytes_touched = 0;        // timed phase: bytes written + bytes read
    uint64_t bytes_written = 0;        // all phases
    uint64_t bytes_read = 0;           // all phases (teardown reads back every block it frees)
    uint64_t checksum = 0;             // all phases: sum of every 64-bit word (and tail byte) read back
    int64_t mismatches = 0;            // blocks whose read-back differed; -1 in void mode (shared buffer)
    std::vector<CounterReading> counters;
};

// Throws std::invalid_argument naming the bad parameter.
void validate(const Params& params);

// Phases, each between hook(name, "begin") and hook(name, "end"), all from the calling thread:
// setup (tables, slots, fill to steady state), warmup, run (timed), teardown (verify and free all).
Result run(const Params& params, const Hook& hook = {});

// The two laws exactly as the workload draws them, for tests. One thread's worth of `slots`.
struct Distributions {
    std::vector<uint64_t> slot_counts;  // picks per slot id (after the scattering permutation)
    std::vector<uint64_t> rank_counts;  // picks per popularity rank (rank 0 most popular)
    std::vector<uint32_t> sizes;        // one size per draw
    double pareto_exponent = 0;
    double mean_size = 0;
};
Distributions distributions(uint64_t draws, uint64_t slots, uint32_t min_size, uint32_t max_size, uint64_t seed);

}  // namespace hb::alloctest
