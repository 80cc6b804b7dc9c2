// faultstorm: T threads hit a big buffer at random page-granular offsets, so a buffer whose pages are
// not yet mapped turns the timed ("steady") phase into a storm of minor page faults taken concurrently.
// The backing decides where the faults land: at obtain (populate, vector's zero-fill), at first touch,
// or inside the steady phase (lazy mmap/malloc/new).
//
// Phases, each between hook(name,"begin") and hook(name,"end"):
//   obtain       get the buffer (incl. MAP_POPULATE / MADV_POPULATE_WRITE / vector's zeroing)
//   first_touch  only when params.first_touch: one thread writes one byte per page
//   steady       the timed phase: threads released together at a barrier, timer stops at the last join
//   release      munmap / free
// Data check (outside every phase): each thread owns one 8-byte slot per page and writes there a tag
// derived from (page, thread); a replay of every thread's op stream then says which slots must hold a
// tag and which must still be 0 — `mismatches` counts the slots that disagree.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/checks.h"
#include "common/perf_counters.h"
#include "common/phases.h"
#include "common/timing.h"

namespace hb::faultstorm {

// No defaults here: the Python registry (hugebench/workloads.py) holds them and the binding passes
// every field.
struct Params {
    std::string backing;
    uint64_t buffer_bytes{};
    ThreadCount threads{};
    uint64_t ops_per_thread{};            // ops mode: page accesses per thread
    double write_ratio{};                 // share of accesses (ops mode) or requests that write
    bool first_touch{};
    uint64_t requests_per_thread{};       // > 0 selects requests mode (ops_per_thread is then unused)
    uint64_t request_bytes{};
    int64_t chunks{};
    uint64_t seed{};
    std::vector<CounterSpec> counters;
};

// Sums over the steady-phase worker threads of their own clocks (CLOCK_THREAD_CPUTIME_ID, RUSAGE_THREAD).
struct ThreadTotals {
    double cpu_s = 0;
    double utime_s = 0;
    double stime_s = 0;
    uint64_t minflt = 0;
    uint64_t majflt = 0;
    double wall_max_s = 0;
};

struct Result {
    std::vector<std::pair<std::string, double>> phases;  // name -> seconds, in execution order
    std::string backing;
    std::string map_flags;
    uint64_t buffer_bytes = 0;
    uint64_t page_size = 0;          // access granularity (the base page)
    uint64_t mapping_page_size = 0;  // 2 MiB for hugetlb, else the base page
    uint64_t pages = 0;
    ThreadCount threads = 0;
    std::string op_unit;             // "page-access" (ops mode) or "request" (requests mode)
    uint64_t ops = 0;                // total over threads, in op_unit
    uint64_t requests = 0;
    uint64_t pages_per_request = 0;
    double steady_s = 0;
    double ns_per_op = 0;
    int64_t chunks = 0;              // per thread
    ChunkStats chunk_ns;             // over all chunks of all threads, ns per op within the chunk
    // Latency of single requests, all threads' samples merged (NaN outside requests mode).
    double request_ns_p50 = 0;
    double request_ns_p90 = 0;
    double request_ns_p99 = 0;
    double request_ns_max = 0;
    ThreadTotals steady_thread;
    uint64_t checksum = 0;
    uint64_t mismatches = 0;
    std::vector<CounterReading> counters;
};

// Throws std::invalid_argument naming the bad parameter (run() calls it too).
void validate(const Params& params);

// Throws std::invalid_argument for bad parameters, std::runtime_error when the kernel refuses a backing.
Result run(const Params& params, const Hook& hook);

// For tests that inspect /proc/self/smaps: a buffer obtained like run() does, every page written once,
// and kept until probe_release(handle).
struct Probe {
    uint64_t handle = 0;
    uint64_t address = 0;            // start of the buffer
    uint64_t length = 0;             // buffer bytes
    uint64_t mapped_bytes = 0;       // length of our own mapping; 0 when the allocator owns it
    uint64_t mapping_page_size = 0;
    std::string map_flags;
};
Probe probe(const std::string& backing, uint64_t buffer_bytes);
void probe_release(uint64_t handle);  // std::invalid_argument for an unknown (or released) handle

}  // namespace hb::faultstorm
