// The allocator stress workload, a reproduction of ITHare's alloc-test (node-dot-cpp/alloc-test, written
// here from its description; no code copied): each thread owns a set of slots; every operation picks a slot
// and either mallocs a block into it (empty slot) or frees the block it holds (full slot). Slot law
// (six-level 80/20 with the hot slots at the lowest indices, or a continuous 80/20 rank law scattered by a
// permutation) and size law (power-of-two bands, or p ~ 1/size) are parameters; the original's are the
// defaults. Blocks are really used (written after malloc, read back before free: verified, or summed
// unchecked as the original does with touch "original"), so page
// faults, cache and TLB misses and huge pages all show in the time. A "void" allocator runs the identical
// loop without any real malloc/free, so the harness cost (RNG, slot choice, memset/read) can be subtracted:
// in a separate process (this project's design, a pre-touched block) or, as the original does, in the
// same process right after the real run (a 16 MiB block from the allocator under test, not pre-touched).
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

enum class Touch { none, write_read, full, original };
enum class AllocatorMode { malloc, new_array, void_ };
enum class VoidRun { separate, in_process };

Touch parse_touch(const std::string& name);  // "none" | "write-read" | "full" | "original"
AllocatorMode parse_allocator_mode(const std::string& name);  // "malloc" | "new" | "void"
VoidRun parse_void_run(const std::string& name);              // "separate" | "in-process"

// No defaults here: the Python registry (hugebench/workloads.py) holds them and the binding passes
// every field.
struct Params {
    ThreadCount threads{};                // 1 .. 2 x hardware threads
    int64_t iterations{};                 // slot picks (operations) in the timed phase, see iterations_per
    std::string iterations_per;           // "thread": iterations (and warmup) per thread; "total": over all
    int64_t warmup_iterations{};          // picks after the fill, before the timed phase (own phase)
    int64_t slots{};                      // see slots_per; 0: derived from total_bytes (over all threads)
    std::string slots_per;                // "total": slots split evenly over the threads; "thread": each
    int64_t total_bytes{};                // steady-state live bytes over all threads (when slots == 0)
    std::string size_law;                 // "bands" (the original's) | "inverse" (p ~ 1/size)
    std::string slot_law;                 // "pareto6" (the original's) | "powerlaw"
    std::string hot_slots;                // "contiguous" (lowest indices hottest) | "scattered"
    int64_t min_size{};                   // inverse: smallest block; bands: must be 5 (the law's own)
    int64_t max_size{};                   // bands: a power of two >= 16
    // none: blocks never touched; write-read: memset after malloc, read back and verified before free;
    // full: write-read plus a verifying read right after the memset (every cache line touched twice at
    // malloc time, once more before free); original: what the original program does (memset with the size's
    // low byte after malloc, an unchecked sum of the block before free; nothing verified).
    std::string touch;
    // malloc: the process's malloc/free (whatever LD_PRELOAD put there); void: every malloc returns the
    // thread's one pre-touched max_size buffer and free does nothing, i.e. the harness cost alone.
    std::string allocator_mode;
    // separate: nothing more here (a sweep's `void` cell is another process); in-process: after the real
    // run, the same run again with the original's void allocator, and the net figures computed here.
    std::string void_run;
    int64_t chunks{};                     // per-thread timing slices of the timed phase (1: no clock read
                                          // inside the timed loop)
    uint64_t seed{};
    std::vector<CounterSpec> counters;    // enabled only around the timed phase
};

// The original's figure: the whole test (thread start, fill, warmup, main loop, free-all, join) in ms per
// million operations (all threads' operations of the fill-free phases, warmup + main loop).
struct WholeRun {
    double seconds = 0;
    uint64_t ops = 0;
    double ms_per_mop = 0;
};

struct Result {
    std::vector<std::pair<std::string, double>> phases;  // setup, warmup, run, teardown -> seconds
    ThreadCount threads = 0;
    unsigned cores = 0;                // std::thread::hardware_concurrency()
    bool oversubscribed = false;       // threads > cores
    std::string allocator_mode;
    std::string touch;
    std::string size_law, slot_law, hot_slots, void_run;
    uint64_t slots = 0;                // actually used (slots_per_thread * threads)
    uint64_t slots_per_thread = 0;
    double pareto_exponent = 0;        // powerlaw: s of p(rank) ~ rank^-s fitted to 80/20; pareto6: NaN
    double mean_size = 0;              // of the size law
    double realised_mean_size = 0;     // requested bytes / mallocs over the timed phase
    double hot_share = 0;              // timed picks that went to the hottest kHotFraction (0.16%) of slots
    uint64_t iterations = 0;           // timed phase, all threads
    uint64_t mallocs = 0;              // timed phase
    uint64_t frees = 0;                // timed phase
    double pairs = 0;                  // (mallocs + frees) / 2: each iteration is one malloc or one free
    double ns_per_pair_wall = 0;       // run-phase wall seconds * 1e9 / pairs (throughput of all threads)
    double ns_per_pair_thread = 0;     // sum of each thread's own loop seconds * 1e9 / pairs (cost of one
                                       // pair to the thread doing it; excludes thread wake-up latency)
    double ns_per_op = 0;              // ns_per_pair_thread / 2
    ChunkStats chunk_ns;               // over all chunks of all threads, ns per pair within the chunk
    WholeRun whole;
    // in-process void run only (NaN otherwise): the void run's figures and real minus void.
    WholeRun void_whole;
    double void_ns_per_op = 0, ns_per_op_net = 0, ns_per_pair_net = 0, ms_per_mop_net = 0;
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
    int64_t mismatches = 0;            // blocks whose read-back differed; -1 when nothing is verified
                                       // (void mode's shared buffer, touch "original")
    std::vector<CounterReading> counters;
};

// Throws std::invalid_argument naming the bad parameter.
void validate(const Params& params);

// Phases, each between hook(name, "begin") and hook(name, "end"), all from the calling thread:
// setup (tables, slots, fill to steady state), warmup, run (timed), teardown (verify and free all).
Result run(const Params& params, const Hook& hook = {});

// The laws exactly as the workload draws them, for tests. One thread's worth of `slots`.
struct LawChoice {
    std::string size_law, slot_law, hot_slots;
};
struct Distributions {
    std::vector<uint64_t> slot_counts;  // picks per slot id (after the scattering permutation, if any)
    std::vector<uint64_t> rank_counts;  // picks per popularity rank (rank 0 most popular)
    std::vector<uint32_t> sizes;        // one size per draw
    double pareto_exponent = 0;
    double mean_size = 0;
    double hot_share = 0;               // as Result::hot_share
    uint64_t hot_slots = 0;             // how many slots that is
};
Distributions distributions(uint64_t draws, uint64_t slots, uint32_t min_size, uint32_t max_size, uint64_t seed,
                            const LawChoice& laws);

}  // namespace hb::alloctest
