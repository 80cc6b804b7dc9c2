#include "workloads/fleet.h"
#include "workloads/fleet_params.h"

#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <thread>

#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#include "common/rng.h"
#include "common/thread_team.h"

namespace hb::fleet {

// ---- histogram --------------------------------------------------------------------------------------

int Histogram::bucket(uint64_t ns) {
    if (ns < 32) return static_cast<int>(ns);
    const int e = 63 - __builtin_clzll(ns);  // >= 5
    return 32 + (e - 5) * 32 + static_cast<int>((ns >> (e - 5)) & 31);
}

double Histogram::value(int b) {
    if (b < 32) return b;
    const int e = (b - 32) / 32 + 5;
    return (32.0 + (b - 32) % 32 + 0.5) * std::ldexp(1.0, e - 5);
}

void Histogram::merge(const Histogram& other) {
    for (size_t i = 0; i < counts_.size(); ++i) counts_[i] += other.counts_[i];
    total_ += other.total_;
}

double Histogram::percentile(double q) const {
    if (total_ == 0) return std::nan("");
    const double rank = std::clamp(q, 0.0, 100.0) / 100.0 * static_cast<double>(total_ - 1);
    uint64_t seen = 0;
    for (size_t i = 0; i < counts_.size(); ++i) {
        seen += counts_[i];
        if (static_cast<double>(seen) > rank) return value(static_cast<int>(i));
    }
    return value(kBuckets - 1);
}

namespace {

inline uint64_t ticks() {
#if defined(__x86_64__) || defined(__i386__)
    return __rdtsc();
#else
    return now_ns();
#endif
}

inline uint64_t pattern(uint64_t id, uint64_t line) { return id * 0x9E3779B97F4A7C15ull + line; }

// Draws object sizes from the mix: a class by weight, then uniform inside it.
class SizeDraw {
public:
    explicit SizeDraw(const std::vector<SizeClass>& mix) : mix_(mix) {
        double total = 0;
        for (const auto& c : mix) cumulative_.push_back(total += c.weight);
        for (auto& c : cumulative_) c /= total;
    }
    uint64_t operator()(Rng& rng) const {
        const double u = rng.uniform();
        size_t k = 0;
        while (k + 1 < cumulative_.size() && u >= cumulative_[k]) ++k;
        return static_cast<uint64_t>(rng.between(static_cast<int64_t>(mix_[k].lo), static_cast<int64_t>(mix_[k].hi)));
    }
    const std::vector<SizeClass>& mix() const { return mix_; }

private:
    std::vector<SizeClass> mix_;
    std::vector<double> cumulative_;
};

// Samples one allocator call in `every`, at random gaps (uniform on [1, 2*every-1]).
struct Meter {
    uint64_t every = 0, countdown = 0, calls = 0, timed = 0, ticks = 0;
    Rng rng;
    Meter(uint64_t every_, uint64_t seed) : every(every_), rng(seed, 77) { countdown = gap(); }
    uint64_t gap() { return every == 0 ? ~uint64_t{0} : 1 + rng.bounded(2 * every - 1); }
};

struct Obj {
    char* p = nullptr;
    uint64_t size = 0;
    uint64_t id = 0;
};

struct alignas(64) Worker {
    Worker(const Params& p, int index, const SizeDraw& draw)
        : params(p), sizes(draw), rng(p.seed, 100 + static_cast<uint64_t>(index)),
          meter(p.alloc_sample_every, p.seed * 1000 + static_cast<uint64_t>(index)),
          next_id(static_cast<uint64_t>(index) << 40) {}

    const Params& params;
    const SizeDraw& sizes;
    Rng rng;
    Meter meter;
    uint64_t next_id;
    std::vector<Obj> objects;
    std::vector<void*> temps;
    std::atomic<uint64_t> live_bytes{0};
    std::atomic<uint64_t> requests{0};
    uint64_t peak_live = 0, mallocs = 0, frees = 0, lookups = 0, replacements = 0, temporaries = 0;
    uint64_t checksum = 0, mismatches = 0;
    bool out_of_memory = false;
    Histogram latency;
    std::vector<double> chunk_ns;

    void* allocate(size_t n) {
        ++mallocs;
        ++meter.calls;
        if (--meter.countdown != 0) return std::malloc(n);
        meter.countdown = meter.gap();
        const uint64_t t0 = ticks();
        void* p = std::malloc(n);
        meter.ticks += ticks() - t0;
        ++meter.timed;
        return p;
    }

    void release(void* p) {
        ++frees;
        ++meter.calls;
        if (--meter.countdown != 0) return std::free(p);
        meter.countdown = meter.gap();
        const uint64_t t0 = ticks();
        std::free(p);
        meter.ticks += ticks() - t0;
        ++meter.timed;
    }

    void add_live(int64_t delta) {
        const uint64_t now = live_bytes.load(std::memory_order_relaxed) + static_cast<uint64_t>(delta);
        live_bytes.store(now, std::memory_order_relaxed);
        peak_live = std::max(peak_live, now);
    }

    // A new object: the header (id, size) and a pattern word at the start of every further 64-byte line.
    Obj make_object() {
        Obj o{nullptr, sizes(rng), next_id++};
        o.p = static_cast<char*>(allocate(o.size));
        if (o.p == nullptr) {
            out_of_memory = true;
            o.size = 0;
            return o;
        }
        auto* header = reinterpret_cast<uint64_t*>(o.p);
        header[0] = o.id;
        header[1] = o.size;
        for (uint64_t line = 1; line * 64 + 8 <= o.size; ++line)
            *reinterpret_cast<uint64_t*>(o.p + line * 64) = pattern(o.id, line);
        do_not_optimize(o.p);
        add_live(static_cast<int64_t>(o.size));
        return o;
    }

    void drop(Obj& o) {
        if (o.p == nullptr) return;
        add_live(-static_cast<int64_t>(o.size));
        release(o.p);
        o.p = nullptr;
    }

    void lookup() {
        const Obj& o = objects[rng.bounded(objects.size())];
        if (o.p == nullptr) return;
        const auto* header = reinterpret_cast<const uint64_t*>(o.p);
        mismatches += (header[0] != o.id) + (header[1] != o.size);
        checksum += header[0];
        const uint64_t lines = (o.size - 8) / 64;  // pattern lines 1..lines
        if (lines > 0) {
            const uint64_t line = 1 + rng.bounded(lines);
            const uint64_t value = *reinterpret_cast<const uint64_t*>(o.p + line * 64);
            mismatches += value != pattern(o.id, line);
            checksum += value;
        }
        ++lookups;
    }

    void request() {
        const Params& p = params;
        for (uint64_t i = 0; i < p.temporaries; ++i) {
            const uint64_t size = static_cast<uint64_t>(rng.between(16, static_cast<int64_t>(p.temp_max_bytes)));
            auto* t = static_cast<uint64_t*>(allocate(size));
            if (t == nullptr) {
                out_of_memory = true;
                continue;
            }
            t[0] = size;
            t[1] = i;
            do_not_optimize(t);
            temps.push_back(t);
            add_live(static_cast<int64_t>(size));
        }
        for (uint64_t k = 0; k < p.lookups; ++k) lookup();
        for (uint64_t r = 0; r < p.replacements; ++r) {
            Obj& victim = objects[rng.bounded(objects.size())];
            drop(victim);
            victim = make_object();
        }
        temporaries += temps.size();
        replacements += p.replacements;
        while (!temps.empty()) {
            auto* t = static_cast<uint64_t*>(temps.back());
            temps.pop_back();
            checksum += t[1];
            add_live(-static_cast<int64_t>(t[0]));
            release(t);
        }
    }

    // Requests until end_ns; latency per request into the histogram, ns per request per time chunk.
    void serve(uint64_t start_ns, uint64_t end_ns, int64_t chunks) {
        const uint64_t chunk_len = std::max<uint64_t>((end_ns - start_ns) / static_cast<uint64_t>(chunks), 1);
        uint64_t chunk_end = start_ns + chunk_len, chunk_start = now_ns(), in_chunk = 0;
        uint64_t t0 = chunk_start;
        while (t0 < end_ns && !out_of_memory) {
            request();
            const uint64_t t1 = now_ns();
            latency.add(t1 - t0);
            ++in_chunk;
            requests.store(requests.load(std::memory_order_relaxed) + 1, std::memory_order_relaxed);
            if (t1 >= chunk_end) {
                chunk_ns.push_back(static_cast<double>(t1 - chunk_start) / static_cast<double>(in_chunk));
                chunk_start = t1;
                in_chunk = 0;
                while (chunk_end <= t1) chunk_end += chunk_len;
            }
            t0 = t1;
        }
    }

    void grow(uint64_t count) {
        objects.reserve(count);
        for (uint64_t i = 0; i < count && !out_of_memory; ++i) objects.push_back(make_object());
    }

    // Frees a random `fraction` of the objects, keeping at least one.
    void shrink(double fraction) {
        const uint64_t n = objects.size();
        const uint64_t k = std::min<uint64_t>(static_cast<uint64_t>(std::llround(fraction * static_cast<double>(n))), n - 1);
        for (uint64_t i = 0; i < k; ++i) {
            std::swap(objects[i], objects[i + rng.bounded(n - i)]);
            drop(objects[i]);
        }
        objects.erase(objects.begin(), objects.begin() + static_cast<int64_t>(k));
    }

    void teardown() {
        for (auto& o : objects) drop(o);
        objects.clear();
    }
};

// The median cost of two back-to-back tick reads: what a timed call adds to its own measurement.
uint64_t clock_overhead_ticks() {
    std::vector<double> diffs(1001);
    for (auto& d : diffs) {
        const uint64_t a = ticks();
        const uint64_t b = ticks();
        d = static_cast<double>(b - a);
    }
    return static_cast<uint64_t>(percentile(diffs, 50));
}

class Fleet {
public:
    Fleet(const Params& p, const Hook& hook) : p_(p), hook_(hook), draw_(parse_size_mix(p.size_mix)) {
        for (int i = 0; i < p.threads; ++i) workers_.push_back(std::make_unique<Worker>(p, i, draw_));
        const double steady_ns = p.duration_s * 1e9;
        // At most ~60 samples over the run: the row keeps short lists only.
        interval_ns_ = static_cast<uint64_t>(std::max(p.sample_interval_s * 1e9, steady_ns / 60));
    }

    Result run() {
        Result r;
        PerfCounters counters(p_.counters);
        overhead_ticks_ = clock_overhead_ticks();
        origin_ns_ = now_ns();
        team_phase(r, "grow", [this](Worker& w, int i) {
            w.grow(slice_size(p_.objects, static_cast<uint64_t>(p_.threads), static_cast<uint64_t>(i)));
        });
        for (auto& w : workers_) r.objects_peak += w->objects.size();
        const auto peak_ns = static_cast<uint64_t>(p_.duration_s * p_.peak_share * 1e9);
        const auto churn_ns = static_cast<uint64_t>(p_.duration_s * 1e9) - peak_ns;
        steady_phase(r, "peak", peak_ns, &counters);
        r.requests_peak = total_requests();
        team_phase(r, "shrink", [this](Worker& w, int) { w.shrink(p_.shrink_fraction); }, true);
        for (auto& w : workers_) {
            r.objects_after_shrink += w->objects.size();
            r.live_bytes_after_shrink += w->live_bytes.load();
        }
        steady_phase(r, "churn", churn_ns, &counters);
        r.requests_churn = total_requests() - r.requests_peak;
        for (auto& w : workers_) r.live_bytes_end += w->live_bytes.load();
        team_phase(r, "teardown", [](Worker& w, int) { w.teardown(); });
        r.counters = counters.results();
        summarise(r);
        return r;
    }

private:
    uint64_t total_requests() const {
        uint64_t n = 0;
        for (auto& w : workers_) n += w->requests.load(std::memory_order_relaxed);
        return n;
    }

    void sample(Result& r, const char* phase) {
        if (hook_) hook_(phase, "sample");
        uint64_t live = 0;
        for (auto& w : workers_) live += w->live_bytes.load(std::memory_order_relaxed);
        r.series_t_s.push_back(static_cast<double>(now_ns() - origin_ns_) * 1e-9);
        r.series_phase.emplace_back(phase);
        r.series_live_bytes.push_back(live);
        r.series_requests.push_back(total_requests());
    }

    template <class Work>
    void team_phase(Result& r, const char* name, Work work, bool sample_after = false) {
        ThreadTeam team(p_.threads, [&](int i) { work(*workers_[static_cast<size_t>(i)], i); });
        team.wait_until_ready();
        r.phases.emplace_back(name, run_phase(hook_, name, [&] {
            team.start_and_join();
            if (sample_after) sample(r, name);
        }));
    }

    // Workers serve requests until the deadline while this thread samples every interval.
    void steady_phase(Result& r, const char* name, uint64_t length_ns, PerfCounters* counters) {
        uint64_t mallocs0 = 0, frees0 = 0;
        for (auto& w : workers_) {
            w->meter.calls = w->meter.timed = w->meter.ticks = 0;
            mallocs0 += w->mallocs;
            frees0 += w->frees;
        }
        uint64_t start = 0, end = 0;
        ThreadTeam team(p_.threads, [&](int i) { workers_[static_cast<size_t>(i)]->serve(start, end, p_.chunks); });
        team.wait_until_ready();
        uint64_t tick0 = 0, tick1 = 0;
        const double seconds = run_phase(hook_, name, [&] {
            tick0 = ticks();
            start = now_ns();
            end = start + length_ns;
            std::thread runner([&] { team.start_and_join(); });
            for (uint64_t next = start; next < end; next += interval_ns_) {
                const uint64_t now = now_ns();
                if (next > now) std::this_thread::sleep_for(std::chrono::nanoseconds(next - now));
                sample(r, name);
            }
            runner.join();
            tick1 = ticks();
        }, counters);
        r.phases.emplace_back(name, seconds);
        r.steady_s += seconds;
        steady_ticks_ += tick1 - tick0;
        steady_ns_ += seconds * 1e9;
        for (auto& w : workers_) {
            r.alloc_calls += w->meter.calls;
            r.alloc_calls_timed += w->meter.timed;
            timed_ticks_ += w->meter.ticks;
            r.steady_mallocs += w->mallocs;
            r.steady_frees += w->frees;
        }
        r.steady_mallocs -= mallocs0;
        r.steady_frees -= frees0;
    }

    void summarise(Result& r) {
        Histogram all;
        for (auto& w : workers_) {
            all.merge(w->latency);
            chunks_.insert(chunks_.end(), w->chunk_ns.begin(), w->chunk_ns.end());
            r.mallocs += w->mallocs;
            r.frees += w->frees;
            r.lookups += w->lookups;
            r.replacements += w->replacements;
            r.temporaries += w->temporaries;
            r.peak_live_bytes += w->peak_live;
            r.checksum += w->checksum;
            r.mismatches += w->mismatches;
            if (w->out_of_memory) throw std::runtime_error("fleet: malloc returned NULL (out of memory)");
        }
        r.threads = p_.threads;
        r.mean_size = mean_size(draw_.mix());
        r.requests = r.requests_peak + r.requests_churn;
        r.requests_per_s = r.steady_s > 0 ? static_cast<double>(r.requests) / r.steady_s : 0;
        r.request_ns_p50 = all.percentile(50);
        r.request_ns_p90 = all.percentile(90);
        r.request_ns_p99 = all.percentile(99);
        r.request_ns_p999 = all.percentile(99.9);
        r.request_ns_mean = r.requests ? r.steady_s * 1e9 * static_cast<double>(p_.threads) / static_cast<double>(r.requests) : 0;
        r.chunk_ns = chunk_stats(chunks_);
        const double ticks_per_ns = steady_ns_ > 0 ? static_cast<double>(steady_ticks_) / steady_ns_ : 1.0;
        r.tsc_ghz = ticks_per_ns;
        r.alloc_clock_overhead_ns = static_cast<double>(overhead_ticks_) / ticks_per_ns;
        if (r.alloc_calls_timed > 0) {
            const double timed_ns = std::max(0.0, static_cast<double>(timed_ticks_) / ticks_per_ns -
                                                      static_cast<double>(r.alloc_calls_timed) * r.alloc_clock_overhead_ns);
            r.alloc_time_s = timed_ns * 1e-9 * static_cast<double>(r.alloc_calls) / static_cast<double>(r.alloc_calls_timed);
            r.alloc_time_share = r.alloc_time_s / (r.steady_s * static_cast<double>(p_.threads));
        } else {
            r.alloc_time_s = r.alloc_time_share = std::nan("");
        }
    }

    const Params& p_;
    const Hook& hook_;
    SizeDraw draw_;
    std::vector<std::unique_ptr<Worker>> workers_;
    std::vector<double> chunks_;
    uint64_t interval_ns_ = 0, origin_ns_ = 0, overhead_ticks_ = 0, steady_ticks_ = 0, timed_ticks_ = 0;
    double steady_ns_ = 0;
};

}  // namespace

Result run(const Params& params, const Hook& hook) {
    validate(params);
    return Fleet(params, hook).run();
}

}  // namespace hb::fleet
