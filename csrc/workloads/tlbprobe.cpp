#include "workloads/tlbprobe.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <memory>
#include <stdexcept>
#include <utility>

#include "common/choice.h"
#include "common/mapping.h"
#include "common/rng.h"
#include "common/syscalls.h"

namespace hb::tlbprobe {
namespace {

constexpr uint64_t kLine = 64;
constexpr uint64_t kSmallPage = 4096;
constexpr int64_t kMaxChains = 64;

enum class Backing { small, thp, hugetlb_2m, hugetlb_1g };
constexpr Choice<Backing> kBackings[] = {{"4k", Backing::small},
                                         {"thp", Backing::thp},
                                         {"hugetlb-2m", Backing::hugetlb_2m},
                                         {"hugetlb-1g", Backing::hugetlb_1g}};

enum class Pattern { chase, mlp, reach };
constexpr Choice<Pattern> kPatterns[] = {{"chase", Pattern::chase}, {"mlp", Pattern::mlp}, {"reach", Pattern::reach}};

// The buffer: an anonymous mapping of the asked page size, unmapped on destruction.
class Mapping {
public:
    Mapping(const std::string& backing, uint64_t bytes) {
        const Backing kind = parse_choice("backing", backing, kBackings);
        if (kind == Backing::hugetlb_2m || kind == Backing::hugetlb_1g) {
            map_hugetlb(kind == Backing::hugetlb_1g, bytes, backing);
            return;
        }
        // 2 MiB-aligned for both, so the 4k and thp buffers differ only by the advice.
        AlignedMapping m = map_2m_aligned(bytes, kind == Backing::thp ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
        base_ = m.base;
        length_ = m.length;
        page_ = kSmallPage;
        flags_ = std::move(m.flags);
    }
    Mapping(const Mapping&) = delete;
    Mapping& operator=(const Mapping&) = delete;
    ~Mapping() {
        if (base_ != nullptr) munmap(base_, length_);
    }

    char* base() const { return base_; }
    uint64_t length() const { return length_; }
    uint64_t page() const { return page_; }
    const std::string& flags() const { return flags_; }

private:
    void map_hugetlb(bool gig, uint64_t bytes, const std::string& backing) {
        page_ = gig ? uint64_t{1} << 30 : kHugePageBytes;
        length_ = round_up(bytes, page_);
        const int flags = MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB | (gig ? MAP_HUGE_1GB : MAP_HUGE_2MB);
        flags_ = std::string("mmap(MAP_PRIVATE|MAP_ANONYMOUS|MAP_HUGETLB|") + (gig ? "MAP_HUGE_1GB)" : "MAP_HUGE_2MB)");
        void* address = mmap(nullptr, length_, PROT_READ | PROT_WRITE, flags, -1, 0);
        if (address == MAP_FAILED) {
            const int err = errno;
            std::string hint;
            if (err == ENOMEM)
                hint = ": the " + std::string(gig ? "hugetlb.1GB" : "hugetlb.2MB") +
                       " pool is too small (hugebench probe sizes it; in a YAML set it under system)";
            throw std::runtime_error("mmap of " + std::to_string(length_) + " bytes (" + backing +
                                     ") failed: " + errno_text(err) + hint);
        }
        base_ = static_cast<char*>(address);
    }

    char* base_ = nullptr;
    uint64_t length_ = 0;
    uint64_t page_ = 0;
    std::string flags_;
};

// The order in which the cycle visits the nodes: node 0 first, the rest shuffled (Fisher-Yates), so
// linking order[i] -> order[i+1] and the last back to node 0 is one cycle through every node.
std::vector<uint32_t> cycle_order(uint64_t nodes, uint64_t seed) {
    std::vector<uint32_t> order(nodes);
    for (uint64_t i = 0; i < nodes; ++i) order[i] = static_cast<uint32_t>(i);
    Rng rng(seed, 1);
    for (uint64_t i = nodes - 1; i > 1; --i) std::swap(order[i], order[1 + rng.bounded(i)]);
    return order;
}

// Where node i lives: a random unit (line, or page for reach) of its stratum; reach uses line (unit % 64).
struct Layout {
    char* base;
    uint64_t unit;
    uint64_t stride_units;
    bool reach;

    char* node(uint64_t i, Rng& rng) const {
        const uint64_t u = i * stride_units + (stride_units > 1 ? rng.bounded(stride_units) : 0);
        return base + u * unit + (reach ? (u % (kSmallPage / kLine)) * kLine : 0);
    }
};

void link(const Layout& layout, const std::vector<uint32_t>& order, uint64_t seed, std::vector<char*>& cycle_nodes) {
    const uint64_t n = order.size();
    std::vector<char*> address(n);
    Rng rng(seed, 2);
    for (uint64_t i = 0; i < n; ++i) address[i] = layout.node(i, rng);
    cycle_nodes.resize(n);
    for (uint64_t i = 0; i < n; ++i) cycle_nodes[i] = address[order[i]];
    for (uint64_t i = 0; i < n; ++i) *reinterpret_cast<char**>(cycle_nodes[i]) = cycle_nodes[(i + 1) % n];
}

// `steps` dependent steps of every chain; the pointers stay in `heads`.
template <int kChains>
inline void walk(char** heads, uint64_t steps) {
    char* p[kChains];
    for (int c = 0; c < kChains; ++c) p[c] = heads[c];
    for (uint64_t s = 0; s < steps; ++s)
        for (int c = 0; c < kChains; ++c) p[c] = *reinterpret_cast<char**>(p[c]);
    for (int c = 0; c < kChains; ++c) heads[c] = p[c];
}

void walk_any(char** heads, int64_t chains, uint64_t steps) {
    switch (chains) {
        case 1: return walk<1>(heads, steps);
        case 2: return walk<2>(heads, steps);
        case 4: return walk<4>(heads, steps);
        case 8: return walk<8>(heads, steps);
        case 16: return walk<16>(heads, steps);
        case 32: return walk<32>(heads, steps);
        default:
            for (uint64_t s = 0; s < steps; ++s)
                for (int64_t c = 0; c < chains; ++c) heads[c] = *reinterpret_cast<char**>(heads[c]);
    }
}

}  // namespace

void validate(const Params& p) {
    parse_choice("backing", p.backing, kBackings);
    parse_choice("pattern", p.pattern, kPatterns);
    require(p.working_set_bytes >= 64 * kSmallPage && p.working_set_bytes % kSmallPage == 0,
            "working_set_bytes must be a multiple of 4 KiB and at least 256 KiB, got " +
                std::to_string(p.working_set_bytes));
    require(p.working_set_bytes <= (uint64_t{1} << 46), "working_set_bytes must be at most 64 TiB");
    require_in_range("chains", p.chains, 1, kMaxChains);
    require(p.accesses >= 1 && p.accesses <= (uint64_t{1} << 40), "accesses must be in [1, 2^40]");
    require(p.max_nodes >= 2 && p.max_nodes <= (uint64_t{1} << 31), "max_nodes must be in [2, 2^31]");
    require_chunks(p.chunks);
}

std::vector<uint32_t> cycle(uint64_t nodes, uint64_t seed) {
    require(nodes >= 2 && nodes <= (uint64_t{1} << 31), "nodes must be in [2, 2^31]");
    const auto order = cycle_order(nodes, seed);
    std::vector<uint32_t> next(nodes);
    for (uint64_t i = 0; i < nodes; ++i) next[order[i]] = order[(i + 1) % nodes];
    return next;
}

Result run(const Params& p, const Hook& hook) {
    validate(p);
    Result r;
    r.backing = p.backing;
    r.pattern = p.pattern;
    r.working_set_bytes = p.working_set_bytes;
    const Pattern pattern = parse_choice("pattern", p.pattern, kPatterns);
    r.chains = pattern == Pattern::mlp ? p.chains : 1;
    PerfCounters counters(p.counters);
    std::unique_ptr<Mapping> buffer;
    r.phases.emplace_back("populate", run_phase(hook, "populate", [&] {
        buffer = std::make_unique<Mapping>(p.backing, p.working_set_bytes);
        for (uint64_t off = 0; off < p.working_set_bytes; off += kSmallPage) buffer->base()[off] = 1;
    }));
    r.map_flags = buffer->flags();
    r.mapped_bytes = buffer->length();
    r.mapping_page_size = buffer->page();

    const bool reach = pattern == Pattern::reach;
    const uint64_t unit = reach ? kSmallPage : kLine;
    const uint64_t units = p.working_set_bytes / unit;
    const uint64_t nodes = std::min(units, p.max_nodes);
    const Layout layout{buffer->base(), unit, units / nodes, reach};
    r.nodes = nodes;
    r.node_stride_bytes = layout.stride_units * unit;

    std::vector<char*> heads(static_cast<size_t>(r.chains));
    const uint64_t steps = std::max<uint64_t>(1, p.accesses / static_cast<uint64_t>(r.chains));
    r.phases.emplace_back("build", run_phase(hook, "build", [&] {
        std::vector<char*> cycle_nodes;
        link(layout, cycle_order(nodes, p.seed), p.seed, cycle_nodes);
        for (int64_t c = 0; c < r.chains; ++c)  // evenly spaced along the cycle: the chains never meet
            heads[c] = cycle_nodes[slice_begin(nodes, static_cast<uint64_t>(r.chains), static_cast<uint64_t>(c))];
        walk_any(heads.data(), r.chains, std::max<uint64_t>(1, steps / 4));
    }));

    const uint64_t chunks = std::min<uint64_t>(static_cast<uint64_t>(p.chunks), steps);
    std::vector<double> chunk_ns;
    const double seconds = run_phase(hook, "chase", [&] {
        for (uint64_t c = 0; c < chunks; ++c) {
            const uint64_t n = slice_size(steps, chunks, c);
            const uint64_t start = now_ns();
            walk_any(heads.data(), r.chains, n);
            const uint64_t stop = now_ns();
            chunk_ns.push_back(static_cast<double>(stop - start) / static_cast<double>(n * r.chains));
        }
        do_not_optimize(heads);
    }, &counters);
    r.phases.emplace_back("chase", seconds);
    r.accesses = steps * static_cast<uint64_t>(r.chains);
    r.ns_per_access = seconds * 1e9 / static_cast<double>(r.accesses);
    r.chunks = static_cast<int64_t>(chunks);
    r.chunk_ns = chunk_stats(chunk_ns);
    for (char* h : heads) r.checksum += static_cast<uint64_t>(h - buffer->base()) % r.node_stride_bytes;
    r.counters = counters.results();
    return r;
}

}  // namespace hb::tlbprobe
