// alloctest outside the timed loop: the parameters' names parsed, the checks run before any thread
// starts, the slot count derived from them, and distributions() (the laws sampled alone). The worker
// loop, its phases and the result stay in alloctest.cpp.
#include "workloads/alloctest_params.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <thread>

#include "common/choice.h"
#include "common/rng.h"
#include "workloads/alloctest_laws.h"

namespace hb::alloctest {

namespace {
constexpr Choice<bool> kPerThread[] = {{"thread", true}, {"total", false}};
}  // namespace

bool per_thread(const std::string& scope, const char* name) { return parse_choice(name, scope, kPerThread); }

uint64_t slots_per_thread(const Params& p) {
    if (p.slots > 0 && per_thread(p.slots_per, "slots_per")) return static_cast<uint64_t>(p.slots);
    const double mean = Laws::mean_size(parse_size_law(p.size_law), static_cast<uint32_t>(p.min_size),
                                        static_cast<uint32_t>(p.max_size));
    const double total = p.slots > 0 ? static_cast<double>(p.slots) : std::round(2.0 * static_cast<double>(p.total_bytes) / mean);
    return static_cast<uint64_t>(total) / static_cast<uint64_t>(p.threads);
}

unsigned hardware_threads() { return std::max(1u, std::thread::hardware_concurrency()); }

namespace {
constexpr Choice<Touch> kTouches[] = {{"none", Touch::none},
                                      {"write-read", Touch::write_read},
                                      {"full", Touch::full},
                                      {"original", Touch::original}};
constexpr Choice<AllocatorMode> kAllocatorModes[] = {
    {"malloc", AllocatorMode::malloc}, {"new", AllocatorMode::new_array}, {"void", AllocatorMode::void_}};
constexpr Choice<VoidRun> kVoidRuns[] = {{"separate", VoidRun::separate}, {"in-process", VoidRun::in_process}};
constexpr Choice<SizeLawKind> kSizeLaws[] = {{"bands", SizeLawKind::bands}, {"inverse", SizeLawKind::inverse}};
constexpr Choice<SlotLawKind> kSlotLaws[] = {{"pareto6", SlotLawKind::pareto6}, {"powerlaw", SlotLawKind::powerlaw}};
constexpr Choice<bool> kHotSlotsScattered[] = {{"contiguous", false}, {"scattered", true}};
}  // namespace

Touch parse_touch(const std::string& name) { return parse_choice("touch", name, kTouches); }
AllocatorMode parse_allocator_mode(const std::string& name) {
    return parse_choice("allocator_mode", name, kAllocatorModes);
}
VoidRun parse_void_run(const std::string& name) { return parse_choice("void_run", name, kVoidRuns); }
SizeLawKind parse_size_law(const std::string& name) { return parse_choice("size_law", name, kSizeLaws); }
SlotLawKind parse_slot_law(const std::string& name) { return parse_choice("slot_law", name, kSlotLaws); }
bool parse_hot_slots_scattered(const std::string& name) {
    return parse_choice("hot_slots", name, kHotSlotsScattered);
}

namespace {
void validate_sizes(SizeLawKind law, int64_t min_size, int64_t max_size) {
    if (law == SizeLawKind::bands) {
        require(BandSizeLaw::valid_max(static_cast<uint64_t>(std::max<int64_t>(max_size, 0))),
                "size_law 'bands' needs max_size a power of two in [16, 2^30], got " + std::to_string(max_size));
        require(min_size == BandSizeLaw::kMinSize,
                "size_law 'bands' draws sizes from 5 B (its first band is (4, 8]): min_size must be 5, got " +
                    std::to_string(min_size) + " (min_size applies to size_law 'inverse')");
        return;
    }
    require(min_size >= 1, "min_size must be >= 1, got " + std::to_string(min_size));
    require(max_size >= min_size && max_size <= kMaxBlockSize,
            "max_size must be in [min_size, 2^30], got " + std::to_string(max_size));
}
}  // namespace

void validate(const Params& p) {
    parse_touch(p.touch);
    parse_allocator_mode(p.allocator_mode);
    parse_void_run(p.void_run);
    parse_slot_law(p.slot_law);
    parse_hot_slots_scattered(p.hot_slots);
    per_thread(p.iterations_per, "iterations_per");
    per_thread(p.slots_per, "slots_per");
    const auto cores = static_cast<ThreadCount>(hardware_threads());
    require(p.threads >= 1 && p.threads <= 2 * cores,
            "threads must be in [1, " + std::to_string(2 * cores) + "] (up to twice the " + std::to_string(cores) +
                " hardware threads), got " + std::to_string(p.threads));
    require(p.iterations >= 1, "iterations must be >= 1, got " + std::to_string(p.iterations));
    require(p.warmup_iterations >= 0, "warmup_iterations must be >= 0, got " + std::to_string(p.warmup_iterations));
    require(p.iterations_per == "thread" || p.iterations >= p.threads,
            "iterations (over all threads) must be >= threads, got " + std::to_string(p.iterations));
    require_chunks(p.chunks);
    validate_sizes(parse_size_law(p.size_law), p.min_size, p.max_size);
    require(p.allocator_mode != "void" || p.void_run == "separate",
            "void_run 'in-process' runs its own void pass: use it with allocator_mode 'malloc' or 'new'");
    require(p.slots >= 0, "slots must be >= 0 (0: derived from total_bytes), got " + std::to_string(p.slots));
    require(p.slots > 0 || p.total_bytes >= 1, "total_bytes must be >= 1 when slots is 0 (derived from it)");
    const uint64_t per_thread_slots = slots_per_thread(p);
    require(per_thread_slots >= kMinSlotsPerThread,
            "too few slots: " + std::to_string(per_thread_slots) + " per thread, need >= " +
                std::to_string(kMinSlotsPerThread) + " (raise slots or total_bytes, or lower threads)");
    require(per_thread_slots <= std::numeric_limits<uint32_t>::max(), "too many slots per thread (max 2^32-1)");
}

Distributions distributions(uint64_t draws, uint64_t slots, uint32_t min_size, uint32_t max_size, uint64_t seed,
                            const LawChoice& choice) {
    require(slots >= kMinSlotsPerThread && slots <= std::numeric_limits<uint32_t>::max(),
            "slots must be in [" + std::to_string(kMinSlotsPerThread) + ", 2^32-1]");
    const SizeLawKind size_law = parse_size_law(choice.size_law);
    validate_sizes(size_law, min_size, max_size);
    const Laws laws(size_law, parse_slot_law(choice.slot_law), parse_hot_slots_scattered(choice.hot_slots), slots,
                    min_size, max_size, Rng(seed, kPermutationStream));
    Rng rng(seed, kOpsStream);
    Distributions d;
    d.slot_counts.assign(slots, 0);
    d.rank_counts.assign(slots, 0);
    d.sizes.reserve(draws);
    uint64_t hot = 0;
    for (uint64_t i = 0; i < draws; ++i) {
        const Pick pick = laws.pick(rng.next());  // drawn as the workload draws them
        ++d.rank_counts[pick.rank];
        ++d.slot_counts[pick.slot];
        hot += laws.is_hot(pick) ? 1 : 0;
        d.sizes.push_back(laws.size(rng.next()));
    }
    d.pareto_exponent = laws.exponent();
    d.mean_size = Laws::mean_size(size_law, min_size, max_size);
    d.hot_share = draws ? static_cast<double>(hot) / static_cast<double>(draws) : 0.0;
    d.hot_slots = laws.hot_limit();
    return d;
}

}  // namespace hb::alloctest
