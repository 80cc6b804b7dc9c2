#include "workloads/hashsets.h"

#include <algorithm>
#include <memory>
#include <stdexcept>

#include "common/checks.h"
#include "common/choice.h"
#include "workloads/hashlookup.h"
#include "workloads/hashlookup_sets.h"

namespace hb::hashsets {
namespace {

constexpr int64_t kMaxRounds = 4096;

// One set of any kind, its lookup loop compiled for its own type: one virtual call per chunk, none per lookup.
class AnySet {
public:
    virtual ~AnySet() = default;
    virtual void insert_all(const std::vector<std::string>& keys) = 0;
    // Looks up queries[begin, begin + count) (indices taken modulo queries.size()).
    virtual void lookup(const std::vector<std::string>& queries, uint64_t begin, uint64_t count, uint64_t& found,
                        uint64_t& checksum) const = 0;
    virtual uint64_t size() const = 0;
    virtual uint64_t capacity() const = 0;
};

template <class Set>
class SetOf final : public AnySet {
public:
    void insert_all(const std::vector<std::string>& keys) override {
        for (const auto& key : keys) set_.insert(key);  // the set owns copies, as in hashlookup
    }
    void lookup(const std::vector<std::string>& queries, uint64_t begin, uint64_t count, uint64_t& found,
                uint64_t& checksum) const override {
        const std::string* keys = queries.data();
        const size_t size = queries.size();
        size_t next = static_cast<size_t>(begin % size);
        uint64_t hits = 0;
        uint64_t sum = 0;
        for (uint64_t i = 0; i < count; ++i) {
            const std::string* hit = set_.find(keys[next]);
            if (++next == size) next = 0;
            if (hit != nullptr) {
                ++hits;
                sum += hit->size();
            }
        }
        do_not_optimize(hits);
        do_not_optimize(sum);
        found += hits;
        checksum += sum;
    }
    uint64_t size() const override { return set_.size(); }
    uint64_t capacity() const override { return set_.capacity(); }

private:
    Set set_;
};

std::unique_ptr<AnySet> make_set(const std::string& kind, const std::string& hash) {
    return hashlookup::with_set(kind, hash, [](auto set_type) -> std::unique_ptr<AnySet> {
        return std::make_unique<SetOf<typename decltype(set_type)::type>>();
    });
}

constexpr Choice<bool> kBuildOrders[] = {{"listed", false}, {"reversed", true}};

bool build_reversed(const Params& p) { return parse_choice("build_order", p.build_order, kBuildOrders); }

uint64_t lookups_per_kind(const Params& p) {
    return p.lookups == 0 ? static_cast<uint64_t>(p.keys) : static_cast<uint64_t>(p.lookups);
}

}  // namespace

std::vector<std::string> kinds_of(const std::string& set_kinds) {
    std::vector<std::string> kinds;
    size_t start = 0;
    while (start <= set_kinds.size()) {
        const size_t comma = std::min(set_kinds.find(',', start), set_kinds.size());
        std::string kind = set_kinds.substr(start, comma - start);
        const size_t first = kind.find_first_not_of(' ');
        const size_t last = kind.find_last_not_of(' ');
        kinds.push_back(first == std::string::npos ? std::string() : kind.substr(first, last - first + 1));
        start = comma + 1;
    }
    return kinds;
}

void validate(const Params& p) {
    const auto kinds = kinds_of(p.set_kinds);
    require(kinds.size() >= 2, "set_kinds needs at least two kinds, comma-separated (the first is the baseline); got '" +
                                   p.set_kinds + "'");
    for (size_t i = 0; i < kinds.size(); ++i) {
        hashlookup::parse_set_kind(kinds[i]);
        for (size_t j = 0; j < i; ++j)
            require(kinds[j] != kinds[i], "set_kinds names '" + kinds[i] + "' twice");
    }
    hashlookup::parse_hash(p.hash);
    hashlookup::validate_keys(p.keys, p.key_min, p.key_max);
    require(p.lookups >= 0, "lookups must be >= 0 (0 means one per key), got " + std::to_string(p.lookups));
    build_reversed(p);
    require(p.rounds >= 2 && p.rounds <= kMaxRounds,
            "rounds must be in [2, " + std::to_string(kMaxRounds) + "], got " + std::to_string(p.rounds));
    require(static_cast<uint64_t>(p.rounds) <= lookups_per_kind(p),
            "rounds (" + std::to_string(p.rounds) + ") must not exceed the lookups per kind");
}

Result run(const Params& p, const Hook& hook) {
    validate(p);
    const auto names = kinds_of(p.set_kinds);
    const size_t kinds = names.size();
    const auto rounds = static_cast<uint64_t>(p.rounds);
    const uint64_t per_kind = lookups_per_kind(p);

    Result r;
    r.keys = static_cast<uint64_t>(p.keys);
    r.hash = p.hash;
    r.rounds = rounds;
    r.kinds.resize(kinds);
    // Opened before the sets exist; each kind's counters count only that kind's chunks.
    std::vector<std::unique_ptr<PerfCounters>> counters;
    for (size_t k = 0; k < kinds; ++k) counters.push_back(std::make_unique<PerfCounters>(p.counters));

    std::vector<std::string> keys;
    r.phases.emplace_back("generate", run_phase(hook, "generate", [&] {
        keys = hashlookup::generate_keys(r.keys, p.seed, p.key_min, p.key_max);
    }));
    std::vector<std::unique_ptr<AnySet>> sets(kinds);
    const bool reversed = build_reversed(p);
    for (size_t i = 0; i < kinds; ++i) {
        const size_t k = reversed ? kinds - 1 - i : i;
        sets[k] = make_set(names[k], p.hash);
        const std::string phase = "insert." + names[k];
        r.kinds[k].set_kind = names[k];
        r.kinds[k].insert_s = run_phase(hook, phase.c_str(), [&] { sets[k]->insert_all(keys); });
        r.phases.emplace_back(phase, r.kinds[k].insert_s);
    }
    r.phases.emplace_back("shuffle", run_phase(hook, "shuffle", [&] { hashlookup::shuffle_keys(keys, p.seed); }));

    for (auto& kind : r.kinds) kind.round_ns.assign(rounds, 0.0);
    std::vector<uint64_t> elapsed_ns(kinds, 0);
    r.phases.emplace_back("lookup", run_phase(hook, "lookup", [&] {
        uint64_t begin = 0;  // chunks follow each other through the shuffled keys, wrapping at the end
        for (uint64_t round = 0; round < rounds; ++round) {
            const uint64_t count = slice_size(per_kind, rounds, round);
            for (size_t position = 0; position < kinds; ++position) {
                const size_t k = (round + position) % kinds;  // the first kind of a round rotates
                KindResult& out = r.kinds[k];
                counters[k]->enable();
                const uint64_t start = now_ns();
                sets[k]->lookup(keys, begin, count, out.found, out.checksum);
                const uint64_t stop = now_ns();
                counters[k]->disable();
                out.lookups += count;
                elapsed_ns[k] += stop - start;
                out.round_ns[round] = static_cast<double>(stop - start) / static_cast<double>(count);
                begin += count;
            }
        }
    }));

    for (size_t k = 0; k < kinds; ++k) {
        KindResult& out = r.kinds[k];
        out.ns_per_lookup = static_cast<double>(elapsed_ns[k]) / static_cast<double>(out.lookups);
        out.set_size = sets[k]->size();
        out.capacity = sets[k]->capacity();
        out.counters = counters[k]->results();
    }
    return r;
}

}  // namespace hb::hashsets
