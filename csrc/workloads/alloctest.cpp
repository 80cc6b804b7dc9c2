#include "workloads/alloctest.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <limits>
#include <memory>
#include <new>
#include <stdexcept>

#include "common/rng.h"
#include "common/timing.h"
#include "workloads/alloctest_blocks.h"
#include "workloads/alloctest_crew.h"
#include "workloads/alloctest_laws.h"

namespace hb::alloctest {
namespace {

constexpr int64_t kMaxBlockSize = int64_t{1} << 30;
constexpr uint64_t kMinSlotsPerThread = 10;  // so that "the hottest 20%" is at least two slots
constexpr uint64_t kPublishEvery = 256;      // ops between two publications of a thread's live bytes

// Separate random streams per thread and purpose, so e.g. the permutation never shifts the op sequence.
constexpr uint64_t kOpsStream = 1;
constexpr uint64_t kPermutationStream = 1u << 20;

struct Plan {
    ThreadCount threads = 1;
    uint64_t slots_per_thread = 0;
    uint32_t min_size = 0;
    uint32_t max_size = 0;
    Touch touch = Touch::write_read;
    AllocatorMode mode = AllocatorMode::malloc;
    uint64_t chunks = 1;
    uint64_t seed = 0;
};

uint64_t share_of(uint64_t total, const Plan& plan, int worker) {
    return slice_size(total, static_cast<uint64_t>(plan.threads), static_cast<uint64_t>(worker));
}

struct Tally {
    uint64_t mallocs = 0, frees = 0;
    uint64_t bytes_written = 0, bytes_read = 0;
    uint64_t checksum = 0, broken_blocks = 0;
};

// One thread's slots and everything its loop needs. Built, used and emptied on its own thread.
class alignas(64) Worker {
public:
    Worker(const Plan& plan, int index, LiveBoard& board)
        : plan_(plan), index_(index), board_(board), rng_(plan.seed, kOpsStream + static_cast<uint64_t>(index)) {}
    ~Worker() { release_all(); }  // after an error the blocks still go back (possibly from another thread)
    Worker(const Worker&) = delete;
    Worker& operator=(const Worker&) = delete;

    void perform(Phase phase, uint64_t ops) {
        try {
            if (phase == Phase::setup) setup();
            if (phase == Phase::warmup) steps(ops);
            if (phase == Phase::run) timed_run(ops);
            if (phase == Phase::teardown) release_all();
        } catch (...) {
            error = std::current_exception();
        }
    }

    Tally tally;
    Tally at_run_start;
    int64_t live = 0;
    uint64_t live_blocks = 0;
    int64_t peak = 0;          // exact, this thread only
    int64_t sampled_peak = 0;  // max of the published global sum seen by this thread
    std::vector<double> chunk_ns_per_pair;
    double run_seconds = 0;
    std::exception_ptr error;

private:
    void setup();
    void steps(uint64_t ops);
    void timed_run(uint64_t ops);
    void release_all();
    void publish_and_sample();

    template <bool kVoid, Touch kTouch>
    void fill_as();
    template <bool kVoid, Touch kTouch>
    void steps_as(uint64_t ops);
    template <bool kVoid, Touch kTouch>
    void acquire(Slot& slot, uint32_t id, uint32_t size);
    template <bool kVoid, Touch kTouch>
    void release(Slot& slot, uint32_t id);
    void check(const Slot& slot, uint32_t id);

    const Plan& plan_;
    const int index_;
    LiveBoard& board_;
    Rng rng_;
    std::unique_ptr<RankLaw> ranks_;
    std::unique_ptr<SizeLaw> sizes_;
    std::vector<uint32_t> slot_of_rank_;  // random permutation: hot ranks land on scattered slots
    std::vector<Slot> slots_;
    unsigned char* void_block_ = nullptr;  // the void allocator's only block, max_size bytes, pre-touched
};

void Worker::setup() {
    ranks_ = std::make_unique<RankLaw>(plan_.slots_per_thread);
    sizes_ = std::make_unique<SizeLaw>(plan_.min_size, plan_.max_size);
    slot_of_rank_ = scattering_permutation(plan_.slots_per_thread, Rng(plan_.seed, kPermutationStream + index_));
    slots_.assign(plan_.slots_per_thread, Slot{});
    if (plan_.mode == AllocatorMode::void_) {
        void_block_ = static_cast<unsigned char*>(std::malloc(plan_.max_size));
        if (void_block_ == nullptr) throw std::bad_alloc();
        std::memset(void_block_, 0xA5, plan_.max_size);
    }
    with_modes(plan_.mode, plan_.touch, [this](auto is_void, auto touch) {
        this->template fill_as<decltype(is_void)::value, decltype(touch)::value>();
    });
}

// Every slot toggles on each pick, so in steady state each is full with probability 1/2 whatever its
// popularity: filling a random half of the slots starts the loop in that steady state at once.
template <bool kVoid, Touch kTouch>
void Worker::fill_as() {
    uint64_t bits = 0;
    for (uint32_t id = 0; id < slots_.size(); ++id) {
        if (id % 64 == 0) bits = rng_.next();
        if ((bits >> (id % 64)) & 1) acquire<kVoid, kTouch>(slots_[id], id, sizes_->draw(static_cast<uint32_t>(rng_.next())));
        if (id % kPublishEvery == 0) publish_and_sample();
    }
    publish_and_sample();
}

void Worker::steps(uint64_t ops) {
    with_modes(plan_.mode, plan_.touch, [this, ops](auto is_void, auto touch) {
        this->template steps_as<decltype(is_void)::value, decltype(touch)::value>(ops);
    });
}

template <bool kVoid, Touch kTouch>
void Worker::steps_as(uint64_t ops) {
    for (uint64_t done = 0; done < ops;) {
        const uint64_t batch = std::min(ops - done, kPublishEvery);
        for (uint64_t i = 0; i < batch; ++i) {
            const uint64_t bits = rng_.next();  // low half: the slot, high half: the size
            const uint32_t id = slot_of_rank_[ranks_->draw(static_cast<uint32_t>(bits))];
            Slot& slot = slots_[id];
            if (slot.block != nullptr)
                release<kVoid, kTouch>(slot, id);
            else
                acquire<kVoid, kTouch>(slot, id, sizes_->draw(static_cast<uint32_t>(bits >> 32)));
        }
        done += batch;
        publish_and_sample();
    }
}

template <bool kVoid, Touch kTouch>
void Worker::acquire(Slot& slot, uint32_t id, uint32_t size) {
    unsigned char* block = kVoid ? void_block_ : static_cast<unsigned char*>(std::malloc(size));
    if (block == nullptr) throw std::bad_alloc();
    slot = Slot{block, size, slot.generation + 1};
    if constexpr (kTouch != Touch::none) {
        std::memset(block, fill_byte(id, slot.generation), size);
        tally.bytes_written += size;
    }
    if constexpr (kTouch == Touch::full) check(slot, id);  // second touch of every line, while still hot
    ++tally.mallocs;
    ++live_blocks;
    live += size;
    if (live > peak) peak = live;
}

template <bool kVoid, Touch kTouch>
void Worker::release(Slot& slot, uint32_t id) {
    if constexpr (kTouch != Touch::none) check(slot, id);
    if constexpr (!kVoid) std::free(slot.block);
    ++tally.frees;
    --live_blocks;
    live -= slot.size;
    slot.block = nullptr;
}

void Worker::check(const Slot& slot, uint32_t id) {
    const ReadBack got = read_back(slot.block, slot.size, fill_byte(id, slot.generation));
    tally.checksum += got.sum;
    tally.bytes_read += slot.size;
    tally.broken_blocks += got.intact ? 0 : 1;
}

void Worker::timed_run(uint64_t ops) {
    at_run_start = tally;
    chunk_ns_per_pair.reserve(plan_.chunks);
    const uint64_t start = now_ns();
    for (uint64_t c = 0; c < plan_.chunks; ++c) {
        const uint64_t todo = slice_size(ops, plan_.chunks, c);
        if (todo == 0) continue;
        const uint64_t chunk_start = now_ns();
        steps(todo);
        // Each op is half of a malloc/free pair.
        chunk_ns_per_pair.push_back(static_cast<double>(now_ns() - chunk_start) * 2.0 / static_cast<double>(todo));
    }
    run_seconds = static_cast<double>(now_ns() - start) * 1e-9;
    do_not_optimize(tally.checksum);
}

// Teardown reads back every block before freeing it (unless touch is "none"), so that every byte
// written is read back exactly once per read pass.
void Worker::release_all() {
    const bool is_void = plan_.mode == AllocatorMode::void_;
    for (uint32_t id = 0; id < slots_.size(); ++id) {
        Slot& slot = slots_[id];
        if (slot.block == nullptr) continue;
        if (plan_.touch != Touch::none) check(slot, id);
        if (!is_void) std::free(slot.block);
        ++tally.frees;
        --live_blocks;
        live -= slot.size;
        slot.block = nullptr;
    }
    std::free(void_block_);
    void_block_ = nullptr;
    std::vector<Slot>().swap(slots_);
    std::vector<uint32_t>().swap(slot_of_rank_);
}

void Worker::publish_and_sample() {
    board_.publish(index_, live);
    if (plan_.threads == 1) return;  // the exact per-thread peak is the global one
    const int64_t global = board_.sum();
    if (global > sampled_peak) sampled_peak = global;
}

uint64_t slots_per_thread(const Params& p) {
    const double mean = SizeLaw::mean_of(static_cast<uint32_t>(p.min_size), static_cast<uint32_t>(p.max_size));
    const double total = p.slots > 0 ? static_cast<double>(p.slots) : std::round(2.0 * static_cast<double>(p.total_bytes) / mean);
    return static_cast<uint64_t>(total) / static_cast<uint64_t>(p.threads);
}

Plan make_plan(const Params& p) {
    Plan plan;
    plan.threads = p.threads;
    plan.slots_per_thread = slots_per_thread(p);
    plan.min_size = static_cast<uint32_t>(p.min_size);
    plan.max_size = static_cast<uint32_t>(p.max_size);
    plan.touch = parse_touch(p.touch);
    plan.mode = parse_allocator_mode(p.allocator_mode);
    plan.chunks = static_cast<uint64_t>(p.chunks);
    plan.seed = p.seed;
    return plan;
}

void rethrow_first_error(const std::vector<std::unique_ptr<Worker>>& workers) {
    for (const auto& w : workers)
        if (w->error) std::rethrow_exception(w->error);
}

void summarise(const std::vector<std::unique_ptr<Worker>>& workers, double run_seconds, Result& r) {
    std::vector<double> chunks;
    double thread_seconds = 0;
    int64_t sampled_peak = 0, exact_peak = 0;
    for (const auto& w : workers) {
        chunks.insert(chunks.end(), w->chunk_ns_per_pair.begin(), w->chunk_ns_per_pair.end());
        thread_seconds += w->run_seconds;
        sampled_peak = std::max(sampled_peak, w->sampled_peak);
        exact_peak = std::max(exact_peak, w->peak);
        r.peak_requested_bytes_bound += static_cast<uint64_t>(w->peak);
    }
    r.peak_requested_bytes = static_cast<uint64_t>(std::max(sampled_peak, exact_peak));
    r.ns_per_pair_wall = run_seconds * 1e9 / r.pairs;
    r.ns_per_pair_thread = thread_seconds * 1e9 / r.pairs;
    r.chunk_ns = chunk_stats(chunks);
}

}  // namespace

Touch parse_touch(const std::string& name) {
    if (name == "none") return Touch::none;
    if (name == "write-read") return Touch::write_read;
    if (name == "full") return Touch::full;
    throw std::invalid_argument("touch must be 'none', 'write-read' or 'full', got '" + name + "'");
}

AllocatorMode parse_allocator_mode(const std::string& name) {
    if (name == "malloc") return AllocatorMode::malloc;
    if (name == "void") return AllocatorMode::void_;
    throw std::invalid_argument("allocator_mode must be 'malloc' or 'void', got '" + name + "'");
}

void validate(const Params& p) {
    parse_touch(p.touch);
    parse_allocator_mode(p.allocator_mode);
    require_threads(p.threads);
    require(p.iterations >= 1, "iterations must be >= 1, got " + std::to_string(p.iterations));
    require(p.warmup_iterations >= 0, "warmup_iterations must be >= 0, got " + std::to_string(p.warmup_iterations));
    require_chunks(p.chunks);
    require(p.min_size >= 1, "min_size must be >= 1, got " + std::to_string(p.min_size));
    require(p.max_size >= p.min_size && p.max_size <= kMaxBlockSize,
            "max_size must be in [min_size, 2^30], got " + std::to_string(p.max_size));
    require(p.slots >= 0, "slots must be >= 0 (0: derived from total_bytes), got " + std::to_string(p.slots));
    require(p.slots > 0 || p.total_bytes >= 1, "total_bytes must be >= 1 when slots is 0 (derived from it)");
    const uint64_t per_thread = slots_per_thread(p);
    require(per_thread >= kMinSlotsPerThread,
            "too few slots: " + std::to_string(per_thread) + " per thread, need >= " +
                std::to_string(kMinSlotsPerThread) + " (raise slots or total_bytes, or lower threads)");
    require(per_thread <= std::numeric_limits<uint32_t>::max(), "too many slots per thread (max 2^32-1)");
}

Result run(const Params& params, const Hook& hook) {
    validate(params);
    const Plan plan = make_plan(params);
    PerfCounters counters(params.counters);  // opened before any worker exists, so inherit covers them
    LiveBoard board(plan.threads);
    std::vector<std::unique_ptr<Worker>> workers;
    for (int i = 0; i < plan.threads; ++i) workers.push_back(std::make_unique<Worker>(plan, i, board));
    const auto warmup_ops = static_cast<uint64_t>(params.warmup_iterations);
    const auto run_ops = static_cast<uint64_t>(params.iterations);
    Crew crew(plan.threads, [&](int i, Phase phase) {
        const uint64_t total = phase == Phase::warmup ? warmup_ops : phase == Phase::run ? run_ops : 0;
        workers[static_cast<size_t>(i)]->perform(phase, share_of(total, plan, i));
    });

    Result r;
    auto phase = [&](const char* name, Phase which, PerfCounters* pc) {
        r.phases.emplace_back(name, run_phase(hook, name, [&] { crew.run(which); }, pc));
        rethrow_first_error(workers);  // the workers' destructors free what is left
    };
    phase("setup", Phase::setup, nullptr);
    phase("warmup", Phase::warmup, nullptr);
    phase("run", Phase::run, &counters);
    for (const auto& w : workers) {
        r.mallocs += w->tally.mallocs - w->at_run_start.mallocs;
        r.frees += w->tally.frees - w->at_run_start.frees;
        r.bytes_touched += (w->tally.bytes_written - w->at_run_start.bytes_written) +
                           (w->tally.bytes_read - w->at_run_start.bytes_read);
        r.live_bytes_end += static_cast<uint64_t>(w->live);
        r.live_blocks_end += w->live_blocks;
    }
    phase("teardown", Phase::teardown, nullptr);

    r.threads = plan.threads;
    r.allocator_mode = params.allocator_mode;
    r.touch = params.touch;
    r.slots_per_thread = plan.slots_per_thread;
    r.slots = plan.slots_per_thread * static_cast<uint64_t>(plan.threads);
    r.pareto_exponent = RankLaw(plan.slots_per_thread).exponent();
    r.mean_size = SizeLaw::mean_of(plan.min_size, plan.max_size);
    r.iterations = r.mallocs + r.frees;
    r.pairs = static_cast<double>(r.iterations) / 2.0;
    uint64_t broken = 0;
    for (const auto& w : workers) {
        r.bytes_written += w->tally.bytes_written;
        r.bytes_read += w->tally.bytes_read;
        r.checksum += w->tally.checksum;
        broken += w->tally.broken_blocks;
    }
    // The void allocator hands every slot the same block, so read-backs see later blocks' bytes by design.
    r.mismatches = plan.mode == AllocatorMode::void_ ? -1 : static_cast<int64_t>(broken);
    summarise(workers, r.phases[2].second, r);
    r.counters = counters.results();
    return r;
}

Distributions distributions(uint64_t draws, uint64_t slots, uint32_t min_size, uint32_t max_size, uint64_t seed) {
    require(slots >= kMinSlotsPerThread && slots <= std::numeric_limits<uint32_t>::max(),
            "slots must be in [" + std::to_string(kMinSlotsPerThread) + ", 2^32-1]");
    require(min_size >= 1 && max_size >= min_size && max_size <= kMaxBlockSize,
            "need 1 <= min_size <= max_size <= 2^30");
    const RankLaw ranks(slots);
    const SizeLaw sizes(min_size, max_size);
    const std::vector<uint32_t> slot_of_rank = scattering_permutation(slots, Rng(seed, kPermutationStream));
    Rng rng(seed, kOpsStream);
    Distributions d;
    d.slot_counts.assign(slots, 0);
    d.rank_counts.assign(slots, 0);
    d.sizes.reserve(draws);
    for (uint64_t i = 0; i < draws; ++i) {
        const uint64_t bits = rng.next();  // split exactly as the workload splits it
        const uint32_t rank = ranks.draw(static_cast<uint32_t>(bits));
        ++d.rank_counts[rank];
        ++d.slot_counts[slot_of_rank[rank]];
        d.sizes.push_back(sizes.draw(static_cast<uint32_t>(bits >> 32)));
    }
    d.pareto_exponent = ranks.exponent();
    d.mean_size = SizeLaw::mean_of(min_size, max_size);
    return d;
}

}  // namespace hb::alloctest
