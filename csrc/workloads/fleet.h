// fleet: a request loop over a live object set, after Google's "Beyond malloc efficiency to fleet
// efficiency" (Temeraire). It ranks allocators by what the application gets (requests/s, latency, peak
// memory) beside the time spent in malloc/free, which is measured in the same run by sampling.
//
// Each thread owns objects/threads live objects (sizes from `size_mix`). A request allocates
// `temporaries` short-lived blocks, does `lookups` reads into random live objects (the header and one
// 64-byte line inside: the application work that gains from huge pages), replaces `replacements`
// objects (free a victim, allocate and initialise a new one) and frees its temporaries. K = 0 leaves
// only the allocator work: the microbenchmark view of the same allocator.
//
// Phases, each between hook(name,"begin") and hook(name,"end"):
//   grow      every thread allocates and initialises its objects (the peak live set)
//   peak      requests for peak_share * duration_s
//   shrink    every thread frees a random shrink_fraction of its objects
//   churn     requests over the smaller set for the rest of duration_s
//   teardown  free everything
// During peak, shrink and churn the calling thread calls hook(phase, "sample") every sample_interval_s
// (the worker reads smaps_rollup there) and records the live bytes and requests at that moment.
//
// Time in the allocator: one malloc/free call in `alloc_sample_every` (a random gap, uniform on
// [1, 2*every-1], so the sample cannot lock onto the request's fixed call pattern) is timed with rdtsc;
// the sum is scaled by calls/timed and the clock's own cost (the median of back-to-back reads) is
// taken off each timed call. Untimed calls pay one decrement and a predictable branch.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "common/checks.h"
#include "common/perf_counters.h"
#include "common/phases.h"
#include "common/timing.h"

namespace hb::fleet {

struct Params {
    ThreadCount threads{};
    uint64_t objects{};               // live objects at the peak, over all threads
    std::string size_mix;             // "max_bytes:weight,..." classes, sizes uniform in (previous max, max]
    uint64_t lookups{};               // K per request
    uint64_t replacements{};          // R per request
    uint64_t temporaries{};           // short-lived blocks per request
    uint64_t temp_max_bytes{};        // temporaries are uniform in [16, temp_max_bytes]
    double duration_s{};              // peak + churn
    double peak_share{};              // share of duration_s before the shrink
    double shrink_fraction{};         // share of the objects freed by the shrink
    uint64_t alloc_sample_every{};    // 0: do not time allocator calls
    double sample_interval_s{};       // hook(phase, "sample") period
    int64_t chunks{};                 // time slices of each steady phase, per thread
    uint64_t seed{};
    std::vector<CounterSpec> counters;
};

// Latency histogram: 32 linear buckets, then 32 per power of two (~3% resolution).
class Histogram {
public:
    Histogram() : counts_(kBuckets, 0) {}
    static int bucket(uint64_t ns);
    static double value(int bucket);  // the middle of the bucket
    void add(uint64_t ns) { ++counts_[bucket(ns)]; ++total_; }
    void merge(const Histogram& other);
    double percentile(double q) const;  // q in [0, 100]; NaN when empty
    uint64_t total() const { return total_; }

private:
    static constexpr int kBuckets = 32 + 59 * 32;
    std::vector<uint64_t> counts_;
    uint64_t total_ = 0;
};

struct Result {
    std::vector<std::pair<std::string, double>> phases;
    ThreadCount threads = 0;
    double mean_size = 0;
    uint64_t requests = 0, requests_peak = 0, requests_churn = 0;
    double steady_s = 0;  // peak + churn wall time
    double requests_per_s = 0;
    double request_ns_mean = 0, request_ns_p50 = 0, request_ns_p90 = 0, request_ns_p99 = 0, request_ns_p999 = 0;
    ChunkStats chunk_ns;  // ns per request within each time chunk
    uint64_t mallocs = 0, frees = 0;                 // all phases
    uint64_t steady_mallocs = 0, steady_frees = 0;   // peak + churn
    uint64_t lookups = 0, replacements = 0, temporaries = 0;
    uint64_t alloc_calls = 0, alloc_calls_timed = 0;  // steady phases
    double alloc_time_s = 0;        // estimated, over all threads
    double alloc_time_share = 0;    // of the threads' steady time
    double alloc_clock_overhead_ns = 0;
    double tsc_ghz = 0;
    uint64_t objects_peak = 0, objects_after_shrink = 0;
    uint64_t peak_live_bytes = 0, live_bytes_after_shrink = 0, live_bytes_end = 0;
    std::vector<double> series_t_s;
    std::vector<std::string> series_phase;
    std::vector<uint64_t> series_live_bytes, series_requests;
    uint64_t checksum = 0, mismatches = 0;
    std::vector<CounterReading> counters;
};

void validate(const Params& params);
Result run(const Params& params, const Hook& hook);

}  // namespace hb::fleet
