#include "workloads/hashlookup.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>
#include <memory>
#include <stdexcept>

#include "common/choice.h"
#include "common/rng.h"
#include "common/thread_team.h"
#include "common/timing.h"
#include "common/zipf.h"
#include "workloads/hashlookup_sets.h"

namespace hb::hashlookup {
namespace {

// Separate random streams, so e.g. changing the lookup order never changes the keys (keys and shuffle:
// hashlookup_keys.cpp).
constexpr uint64_t kZipfStream = 3;

constexpr int64_t kMaxKeyLength = 4096;

enum class Order { uniform, zipf };
constexpr Choice<Order> kOrders[] = {{"uniform", Order::uniform}, {"zipf", Order::zipf}};

Order parse_order(const std::string& name) { return parse_choice("order", name, kOrders); }

// What becomes of the set and the keys after the timed phase: freed here, or left to the process's exit
// (the kernel drops the whole address space at once, where freeing 60M strings one by one takes seconds).
enum class Teardown { free, exit };
constexpr Choice<Teardown> kTeardowns[] = {{"free", Teardown::free}, {"exit", Teardown::exit}};

Teardown parse_teardown(const std::string& name) { return parse_choice("teardown", name, kTeardowns); }

// Teardown "exit": drop ownership without destroying, on purpose (the memory stays until the process exits).
template <class T>
void abandon(std::unique_ptr<T>& owner) {
    static_cast<void>(owner.release());
}

uint64_t lookup_count(const Params& p) {
    return p.lookups == 0 ? static_cast<uint64_t>(p.keys) : static_cast<uint64_t>(p.lookups);
}

// How much of the keys the shuffle must reach: the uniform order looks up the first lookup_count() keys
// (all of them, cycled, when there are more lookups than keys); Zipf ranks index every shuffled key.
uint64_t shuffle_prefix(const Params& p) {
    return parse_order(p.order) == Order::zipf ? static_cast<uint64_t>(p.keys) : lookup_count(p);
}

// The uniform order: the shuffled keys front to back, wrapping around when lookups > keys.
class CyclicCursor {
public:
    CyclicCursor(const std::vector<std::string>& keys, uint64_t start)
        : keys_(keys.data()), size_(keys.size()), next_(start % keys.size()) {}
    const std::string& next() {
        const std::string& key = keys_[next_];
        if (++next_ == size_) next_ = 0;
        return key;
    }

private:
    const std::string* keys_;
    size_t size_;
    size_t next_;
};

// The Zipf order: key indices drawn before the timed phase.
class IndexedCursor {
public:
    IndexedCursor(const std::vector<std::string>& keys, const std::vector<uint32_t>& indices, uint64_t start)
        : keys_(keys.data()), next_(indices.data() + start) {}
    const std::string& next() { return keys_[*next_++]; }

private:
    const std::string* keys_;
    const uint32_t* next_;
};

// Per-thread results, cache-line aligned so that neighbouring threads never share a line.
struct alignas(64) WorkerOutput {
    uint64_t found = 0;
    uint64_t checksum = 0;
    std::vector<double> chunk_ns;  // ns per lookup of each non-empty chunk
    std::exception_ptr error;
};

template <class Set, class Cursor>
void lookup_chunks(const Set& set, Cursor cursor, uint64_t count, uint64_t chunks, WorkerOutput& out) {
    uint64_t found = 0;
    uint64_t checksum = 0;
    for (uint64_t c = 0; c < chunks; ++c) {
        const uint64_t todo = slice_size(count, chunks, c);
        if (todo == 0) continue;
        const uint64_t start = now_ns();
        for (uint64_t i = 0; i < todo; ++i) {
            const std::string* hit = set.find(cursor.next());
            if (hit != nullptr) {
                ++found;
                checksum += hit->size();
            }
        }
        const uint64_t stop = now_ns();
        out.chunk_ns.push_back(static_cast<double>(stop - start) / static_cast<double>(todo));
    }
    do_not_optimize(found);
    do_not_optimize(checksum);
    out.found = found;
    out.checksum = checksum;
}

struct LookupPlan {
    const std::vector<std::string>& keys;
    const std::vector<uint32_t>& zipf_indices;  // empty for the uniform order
    uint64_t lookups;
    uint64_t threads;
    uint64_t chunks;
};

template <class Set>
void lookup_share(const Set& set, const LookupPlan& plan, int worker, WorkerOutput& out) {
    const uint64_t begin = slice_begin(plan.lookups, plan.threads, static_cast<uint64_t>(worker));
    const uint64_t count = slice_size(plan.lookups, plan.threads, static_cast<uint64_t>(worker));
    out.chunk_ns.reserve(plan.chunks);  // no allocation inside the timed loop
    if (plan.zipf_indices.empty())
        lookup_chunks(set, CyclicCursor(plan.keys, begin), count, plan.chunks, out);
    else
        lookup_chunks(set, IndexedCursor(plan.keys, plan.zipf_indices, begin), count, plan.chunks, out);
}

// Workers exist and wait at the barrier before the phase begins; the timer spans release to last join.
template <class Set>
double timed_lookups(const Set& set, const LookupPlan& plan, const Hook& hook, PerfCounters& counters,
                     std::vector<WorkerOutput>& outputs) {
    ThreadTeam team(static_cast<ThreadCount>(plan.threads), [&](int worker) {
        try {
            lookup_share(set, plan, worker, outputs[static_cast<size_t>(worker)]);
        } catch (...) {
            outputs[static_cast<size_t>(worker)].error = std::current_exception();
        }
    });
    team.wait_until_ready();
    const double seconds = run_phase(hook, "lookup", [&] { team.start_and_join(); }, &counters);
    for (const auto& out : outputs)
        if (out.error) std::rethrow_exception(out.error);
    return seconds;
}

std::vector<uint32_t> draw_zipf_indices(uint64_t keys, uint64_t lookups, double s, uint64_t seed) {
    Rng rng(seed, kZipfStream);
    const ZipfSampler zipf(keys, s);
    std::vector<uint32_t> indices(lookups);
    for (auto& index : indices) index = static_cast<uint32_t>(zipf(rng) - 1);  // rank 1 -> first shuffled key
    return indices;
}

void summarise(const std::vector<WorkerOutput>& outputs, double lookup_seconds, Result& r) {
    std::vector<double> all_chunks;
    for (const auto& out : outputs) {
        r.found += out.found;
        r.checksum += out.checksum;
        all_chunks.insert(all_chunks.end(), out.chunk_ns.begin(), out.chunk_ns.end());
    }
    r.ns_per_lookup = lookup_seconds * 1e9 / static_cast<double>(r.lookups);
    r.chunk_ns = chunk_stats(all_chunks);
}

template <class Set>
Result run_with(const Params& p, const Hook& hook, PerfCounters& counters) {
    Result r;
    r.keys = static_cast<uint64_t>(p.keys);
    r.lookups = lookup_count(p);
    r.threads = p.threads;
    r.set_kind = p.set_kind;
    r.hash = p.hash;

    // On the heap so that teardown "exit" can abandon them; "free" destroys them on return as before.
    auto keys_owner = std::make_unique<std::vector<std::string>>();
    auto set_owner = std::make_unique<Set>();
    std::vector<std::string>& keys = *keys_owner;
    Set& set = *set_owner;
    r.phases.emplace_back("generate", run_phase(hook, "generate", [&] {
        keys = generate_keys(r.keys, p.seed, p.key_min, p.key_max);
    }));
    r.phases.emplace_back("insert", run_phase(hook, "insert", [&] {
        for (const auto& key : keys) set.insert(key);  // the set owns copies; `keys` become the queries
    }));
    std::vector<uint32_t> zipf_indices;
    r.phases.emplace_back("shuffle", run_phase(hook, "shuffle", [&] {
        shuffle_keys(keys, p.seed, shuffle_prefix(p));
        if (parse_order(p.order) == Order::zipf) zipf_indices = draw_zipf_indices(r.keys, r.lookups, p.zipf_s, p.seed);
    }));

    std::vector<WorkerOutput> outputs(static_cast<size_t>(p.threads));
    const LookupPlan plan{keys, zipf_indices, r.lookups, static_cast<uint64_t>(p.threads),
                          static_cast<uint64_t>(p.chunks)};
    const double lookup_seconds = timed_lookups(set, plan, hook, counters, outputs);
    r.phases.emplace_back("lookup", lookup_seconds);

    summarise(outputs, lookup_seconds, r);
    r.set_size = set.size();
    r.capacity = set.capacity();
    r.counters = counters.results();
    if (parse_teardown(p.teardown) == Teardown::exit) {
        abandon(set_owner);
        abandon(keys_owner);
    }
    return r;
}

}  // namespace

void validate_keys(int64_t keys, int64_t key_min, int64_t key_max) {
    require(keys >= 1 && keys <= std::numeric_limits<uint32_t>::max(),
            "keys must be in [1, 2^32-1], got " + std::to_string(keys));
    require(key_min >= 1 && key_max <= kMaxKeyLength,
            "key lengths must be within [1, " + std::to_string(kMaxKeyLength) + "]");
    require(key_min <= key_max,
            "key_min (" + std::to_string(key_min) + ") must be <= key_max (" + std::to_string(key_max) + ")");
}

void validate(const Params& p) {
    parse_set_kind(p.set_kind);
    parse_hash(p.hash);
    parse_order(p.order);
    parse_teardown(p.teardown);
    validate_keys(p.keys, p.key_min, p.key_max);
    require_threads(p.threads);
    require(p.lookups >= 0, "lookups must be >= 0 (0 means one per key), got " + std::to_string(p.lookups));
    require(std::isfinite(p.zipf_s) && p.zipf_s >= 0, "zipf_s must be finite and >= 0");
    require_chunks(p.chunks);
}

Result run(const Params& params, const Hook& hook) {
    validate(params);
    PerfCounters counters(params.counters);  // opened before any worker exists, so inherit covers them
    return with_set(params.set_kind, params.hash,
                    [&](auto set_type) {
        return run_with<typename decltype(set_type)::type>(params, hook, counters);
    });
}

std::vector<std::string> uniform_queries(uint64_t keys, uint64_t lookups, uint64_t seed, int64_t key_min,
                                         int64_t key_max) {
    validate_keys(static_cast<int64_t>(keys), key_min, key_max);
    std::vector<std::string> pool = generate_keys(keys, seed, key_min, key_max);
    const uint64_t count = lookups == 0 ? keys : lookups;
    shuffle_keys(pool, seed, count);
    std::vector<std::string> out;
    out.reserve(count);
    CyclicCursor cursor(pool, 0);
    for (uint64_t i = 0; i < count; ++i) out.push_back(cursor.next());
    return out;
}

Membership membership(const std::string& set_kind, const std::string& hash, const std::vector<std::string>& keys,
                      const std::vector<std::string>& queries) {
    return with_set(set_kind, hash, [&](auto set_type) {
        typename decltype(set_type)::type set;
        for (const auto& key : keys) set.insert(key);
        Membership out;
        out.set_size = set.size();
        out.found.reserve(queries.size());
        for (const auto& query : queries) {
            const std::string* hit = set.find(query);
            if (hit != nullptr && *hit != query) throw std::logic_error("find returned a different key");
            out.found.push_back(hit != nullptr);
        }
        return out;
    });
}

}  // namespace hb::hashlookup
