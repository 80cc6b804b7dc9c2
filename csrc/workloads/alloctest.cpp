#include "workloads/alloctest.h"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <new>
#include <stdexcept>

#include "common/rng.h"
#include "common/timing.h"
#include "workloads/alloctest_blocks.h"
#include "workloads/alloctest_crew.h"
#include "workloads/alloctest_laws.h"
#include "workloads/alloctest_params.h"

namespace hb::alloctest {
namespace {

constexpr uint64_t kPublishEvery = 256;      // ops between two publications of a thread's live bytes
constexpr uint32_t kInProcessVoidBlock = 16u << 20;  // the original's void allocator: one 16 MiB block

struct Plan {
    ThreadCount threads = 1;
    uint64_t slots_per_thread = 0;
    bool ops_per_thread = true;  // iterations and warmup are per thread (else split over the threads)
    uint32_t min_size = 0;
    uint32_t max_size = 0;
    SizeLawKind size_law = SizeLawKind::bands;
    SlotLawKind slot_law = SlotLawKind::pareto6;
    bool scattered = false;
    Touch touch = Touch::write_read;
    AllocatorMode mode = AllocatorMode::malloc;
    // The void allocator's one block: this project's is max_size bytes, pre-touched in setup (so no page
    // fault lands in the loop); the original's is 16 MiB from the allocator under test, never touched first.
    uint32_t void_block_bytes = 0;
    bool pretouch_void_block = true;
    uint64_t chunks = 1;
    uint64_t seed = 0;
};

uint64_t share_of(uint64_t count, const Plan& plan, int worker) {
    if (plan.ops_per_thread) return count;
    return slice_size(count, static_cast<uint64_t>(plan.threads), static_cast<uint64_t>(worker));
}

// A block back to where it came from: free for malloc's, operator delete[] for operator new[]'s (the
// original's new uint8_t[] / delete[]); the void allocator's one block is not the slot's to give back.
inline void give_back(AllocatorMode mode, unsigned char* block) {
    if (mode == AllocatorMode::malloc) std::free(block);
    if (mode == AllocatorMode::new_array) ::operator delete[](block);
}

struct Tally {
    uint64_t mallocs = 0, frees = 0;
    uint64_t bytes_requested = 0;  // sum of the sizes malloc'd
    uint64_t hot_picks = 0;        // picks of the hottest kHotFraction of the slots
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

    template <AllocatorMode kMode, Touch kTouch>
    void fill_as();
    template <AllocatorMode kMode, Touch kTouch>
    void steps_as(uint64_t ops);
    template <AllocatorMode kMode, Touch kTouch>
    void acquire(Slot& slot, uint32_t id, uint32_t size);
    template <AllocatorMode kMode, Touch kTouch>
    void release(Slot& slot, uint32_t id);
    void check(const Slot& slot, uint32_t id);
    void sum(const Slot& slot) {
        tally.checksum += sum_block(slot.block, slot.size);
        tally.bytes_read += slot.size;
    }

    const Plan& plan_;
    const int index_;
    LiveBoard& board_;
    Rng rng_;
    std::unique_ptr<Laws> laws_;
    std::vector<Slot> slots_;
    unsigned char* void_block_ = nullptr;  // the void allocator's only block
};

void Worker::setup() {
    laws_ = std::make_unique<Laws>(plan_.size_law, plan_.slot_law, plan_.scattered, plan_.slots_per_thread,
                                   plan_.min_size, plan_.max_size, Rng(plan_.seed, kPermutationStream + index_));
    // The void block before the slot table, as the original's void allocator takes its buffer in init(). The
    // order can decide where an allocator puts them: TCMalloc may give the first big request the head of the
    // real pass's freed table, leaving the new table to fresh pages as in the original; whether it does also
    // depends on the heap the process had before the run (docs/results.md, 2026-11-28).
    if (plan_.mode == AllocatorMode::void_) {
        void_block_ = static_cast<unsigned char*>(std::malloc(plan_.void_block_bytes));
        if (void_block_ == nullptr) throw std::bad_alloc();
        if (plan_.pretouch_void_block) std::memset(void_block_, 0xA5, plan_.void_block_bytes);
    }
    slots_.assign(plan_.slots_per_thread, Slot{});  // the slot table comes from the allocator under test
    with_modes(plan_.mode, plan_.touch, [this](auto how, auto touch) {
        this->template fill_as<decltype(how)::value, decltype(touch)::value>();
    });
}

// Every slot toggles on each pick, so in steady state each is full with probability 1/2 whatever its
// popularity: filling a random half of the slots starts the loop in that steady state at once.
template <AllocatorMode kMode, Touch kTouch>
void Worker::fill_as() {
    uint64_t bits = 0;
    for (uint32_t id = 0; id < slots_.size(); ++id) {
        if (id % 64 == 0) bits = rng_.next();
        if ((bits >> (id % 64)) & 1) acquire<kMode, kTouch>(slots_[id], id, laws_->size(rng_.next()));
        if (id % kPublishEvery == 0) publish_and_sample();
    }
    publish_and_sample();
}

void Worker::steps(uint64_t ops) {
    with_modes(plan_.mode, plan_.touch, [this, ops](auto how, auto touch) {
        this->template steps_as<decltype(how)::value, decltype(touch)::value>(ops);
    });
}

template <AllocatorMode kMode, Touch kTouch>
void Worker::steps_as(uint64_t ops) {
    for (uint64_t done = 0; done < ops;) {
        const uint64_t batch = std::min(ops - done, kPublishEvery);
        for (uint64_t i = 0; i < batch; ++i) {
            const Pick pick = laws_->pick(rng_.next());  // one draw for the slot; another for a size if needed
            tally.hot_picks += laws_->is_hot(pick) ? 1 : 0;
            Slot& slot = slots_[pick.slot];
            if (slot.block != nullptr)
                release<kMode, kTouch>(slot, pick.slot);
            else
                acquire<kMode, kTouch>(slot, pick.slot, laws_->size(rng_.next()));
        }
        done += batch;
        publish_and_sample();
    }
}

template <AllocatorMode kMode, Touch kTouch>
void Worker::acquire(Slot& slot, uint32_t id, uint32_t size) {
    unsigned char* block = void_block_;
    if constexpr (kMode == AllocatorMode::malloc) block = static_cast<unsigned char*>(std::malloc(size));
    if constexpr (kMode == AllocatorMode::new_array) block = static_cast<unsigned char*>(::operator new[](size));
    if (block == nullptr) throw std::bad_alloc();
    slot = Slot{block, size, slot.generation + 1};
    if constexpr (kTouch == Touch::original) {
        std::memset(block, static_cast<unsigned char>(size), size);  // the original's byte: the size's low byte
        tally.bytes_written += size;
    } else if constexpr (kTouch != Touch::none) {
        std::memset(block, fill_byte(id, slot.generation), size);
        tally.bytes_written += size;
    }
    if constexpr (kTouch == Touch::full) check(slot, id);  // second touch of every line, while still hot
    ++tally.mallocs;
    tally.bytes_requested += size;
    ++live_blocks;
    live += size;
    if (live > peak) peak = live;
}

template <AllocatorMode kMode, Touch kTouch>
void Worker::release(Slot& slot, uint32_t id) {
    if constexpr (kTouch == Touch::original) sum(slot);
    else if constexpr (kTouch != Touch::none) check(slot, id);
    give_back(kMode, slot.block);
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

// One clock read per chunk boundary and none inside a chunk: with chunks 1 (the original's loop) the
// clock is read only before the first operation and after the last.
void Worker::timed_run(uint64_t ops) {
    at_run_start = tally;
    chunk_ns_per_pair.reserve(plan_.chunks);
    const uint64_t start = now_ns();
    uint64_t previous = start;
    for (uint64_t c = 0; c < plan_.chunks; ++c) {
        const uint64_t todo = slice_size(ops, plan_.chunks, c);
        if (todo == 0) continue;
        steps(todo);
        const uint64_t now = now_ns();
        // Each op is half of a malloc/free pair.
        chunk_ns_per_pair.push_back(static_cast<double>(now - previous) * 2.0 / static_cast<double>(todo));
        previous = now;
    }
    run_seconds = static_cast<double>(previous - start) * 1e-9;
    do_not_optimize(tally.checksum);
}

// Teardown reads back every block before freeing it (unless touch is "none"), so that every byte
// written is read back exactly once per read pass.
void Worker::release_all() {
    for (uint32_t id = 0; id < slots_.size(); ++id) {
        Slot& slot = slots_[id];
        if (slot.block == nullptr) continue;
        if (plan_.touch == Touch::original) sum(slot);
        else if (plan_.touch != Touch::none) check(slot, id);
        give_back(plan_.mode, slot.block);
        ++tally.frees;
        --live_blocks;
        live -= slot.size;
        slot.block = nullptr;
    }
    std::free(void_block_);
    void_block_ = nullptr;
    std::vector<Slot>().swap(slots_);
    laws_.reset();
}

void Worker::publish_and_sample() {
    board_.publish(index_, live);
    if (plan_.threads == 1) return;  // the exact per-thread peak is the global one
    const int64_t global = board_.sum();
    if (global > sampled_peak) sampled_peak = global;
}

Plan make_plan(const Params& p) {
    Plan plan;
    plan.threads = p.threads;
    plan.slots_per_thread = slots_per_thread(p);
    plan.ops_per_thread = per_thread(p.iterations_per, "iterations_per");
    plan.min_size = static_cast<uint32_t>(p.min_size);
    plan.max_size = static_cast<uint32_t>(p.max_size);
    plan.size_law = parse_size_law(p.size_law);
    plan.slot_law = parse_slot_law(p.slot_law);
    plan.scattered = parse_hot_slots_scattered(p.hot_slots);
    plan.touch = parse_touch(p.touch);
    plan.mode = parse_allocator_mode(p.allocator_mode);
    plan.void_block_bytes = plan.max_size;
    plan.chunks = static_cast<uint64_t>(p.chunks);
    plan.seed = p.seed;
    return plan;
}

// The original's void allocator, run right after the real run with the same parameters.
Plan in_process_void_plan(Plan plan) {
    plan.mode = AllocatorMode::void_;
    plan.void_block_bytes = std::max(plan.max_size, kInProcessVoidBlock);
    plan.pretouch_void_block = false;
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
    r.ns_per_op = r.ns_per_pair_thread / 2.0;
    r.chunk_ns = chunk_stats(chunks);
}

WholeRun whole_run(double seconds, uint64_t ops) {
    return {seconds, ops, seconds * 1e3 * 1e6 / static_cast<double>(ops)};
}

// One run from thread start to join. The whole-run clock (the original's figure) sums thread start, the
// phases and the join, so the hook's /proc snapshots between phases never count.
Result run_pass(const Params& params, const Plan& plan, const Hook& hook, const std::vector<CounterSpec>& specs) {
    PerfCounters counters(specs);  // opened before any worker exists, so inherit covers them
    LiveBoard board(plan.threads);
    std::vector<std::unique_ptr<Worker>> workers;
    for (int i = 0; i < plan.threads; ++i) workers.push_back(std::make_unique<Worker>(plan, i, board));
    const auto warmup_ops = static_cast<uint64_t>(params.warmup_iterations);
    const auto run_ops = static_cast<uint64_t>(params.iterations);
    const uint64_t start = now_ns();
    Crew crew(plan.threads, [&](int i, Phase phase) {
        const uint64_t count = phase == Phase::warmup ? warmup_ops : phase == Phase::run ? run_ops : 0;
        workers[static_cast<size_t>(i)]->perform(phase, share_of(count, plan, i));
    });
    double whole_seconds = static_cast<double>(now_ns() - start) * 1e-9;

    Result r;
    auto phase = [&](const char* name, Phase which, PerfCounters* pc) {
        r.phases.emplace_back(name, run_phase(hook, name, [&] { crew.run(which); }, pc));
        whole_seconds += r.phases.back().second;
        rethrow_first_error(workers);  // the workers' destructors free what is left
    };
    phase("setup", Phase::setup, nullptr);
    phase("warmup", Phase::warmup, nullptr);
    phase("run", Phase::run, &counters);
    uint64_t hot = 0, requested = 0;
    for (const auto& w : workers) {
        r.mallocs += w->tally.mallocs - w->at_run_start.mallocs;
        r.frees += w->tally.frees - w->at_run_start.frees;
        hot += w->tally.hot_picks - w->at_run_start.hot_picks;
        requested += w->tally.bytes_requested - w->at_run_start.bytes_requested;
        r.bytes_touched += (w->tally.bytes_written - w->at_run_start.bytes_written) +
                           (w->tally.bytes_read - w->at_run_start.bytes_read);
        r.live_bytes_end += static_cast<uint64_t>(w->live);
        r.live_blocks_end += w->live_blocks;
    }
    phase("teardown", Phase::teardown, nullptr);
    const uint64_t join_start = now_ns();
    crew.join();
    whole_seconds += static_cast<double>(now_ns() - join_start) * 1e-9;

    r.iterations = r.mallocs + r.frees;
    r.pairs = static_cast<double>(r.iterations) / 2.0;
    r.realised_mean_size = r.mallocs ? static_cast<double>(requested) / static_cast<double>(r.mallocs) : 0.0;
    r.hot_share = static_cast<double>(hot) / static_cast<double>(r.iterations);
    uint64_t warmup_total = 0;
    for (int i = 0; i < plan.threads; ++i) warmup_total += share_of(warmup_ops, plan, i);
    r.whole = whole_run(whole_seconds, r.iterations + warmup_total);
    uint64_t broken = 0;
    for (const auto& w : workers) {
        r.bytes_written += w->tally.bytes_written;
        r.bytes_read += w->tally.bytes_read;
        r.checksum += w->tally.checksum;
        broken += w->tally.broken_blocks;
    }
    // The void allocator hands every slot the same block, so read-backs see later blocks' bytes by design.
    // Touch "original" sums without comparing: nothing verified either.
    const bool verified = plan.mode != AllocatorMode::void_ && plan.touch != Touch::original;
    r.mismatches = verified ? static_cast<int64_t>(broken) : -1;
    summarise(workers, r.phases[2].second, r);
    r.counters = counters.results();
    return r;
}

void subtract_in_process_void(const Params& params, const Plan& plan, Result& r) {
    const Result v = run_pass(params, in_process_void_plan(plan), Hook{}, {});
    r.void_whole = v.whole;
    r.void_ns_per_op = v.ns_per_op;
    r.ns_per_op_net = r.ns_per_op - v.ns_per_op;
    r.ns_per_pair_net = r.ns_per_pair_thread - v.ns_per_pair_thread;
    r.ms_per_mop_net = r.whole.ms_per_mop - v.whole.ms_per_mop;
}

}  // namespace

Result run(const Params& params, const Hook& hook) {
    validate(params);
    const Plan plan = make_plan(params);
    Result r = run_pass(params, plan, hook, params.counters);
    const double nan = std::nan("");
    r.void_whole = {nan, 0, nan};
    r.void_ns_per_op = r.ns_per_op_net = r.ns_per_pair_net = r.ms_per_mop_net = nan;
    if (parse_void_run(params.void_run) == VoidRun::in_process) subtract_in_process_void(params, plan, r);
    r.threads = plan.threads;
    r.cores = hardware_threads();
    r.oversubscribed = plan.threads > static_cast<ThreadCount>(r.cores);
    r.allocator_mode = params.allocator_mode;
    r.touch = params.touch;
    r.size_law = params.size_law;
    r.slot_law = params.slot_law;
    r.hot_slots = params.hot_slots;
    r.void_run = params.void_run;
    r.slots_per_thread = plan.slots_per_thread;
    r.slots = plan.slots_per_thread * static_cast<uint64_t>(plan.threads);
    r.pareto_exponent = plan.slot_law == SlotLawKind::powerlaw ? RankLaw(plan.slots_per_thread).exponent() : nan;
    r.mean_size = Laws::mean_size(plan.size_law, plan.min_size, plan.max_size);
    return r;
}

}  // namespace hb::alloctest
