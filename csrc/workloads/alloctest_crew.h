// The threads of the alloctest workload: persistent workers driven phase by phase by the calling thread,
// and the board on which they publish their live bytes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <utility>
#include <mutex>
#include <thread>
#include <vector>

#include "common/checks.h"

namespace hb::alloctest {

enum class Phase { setup, warmup, run, teardown };

// Persistent workers driven phase by phase. Allocators keep per-thread state (arenas, caches), so the
// thread that fills a slot must be the one that later runs the timed loop on it and frees it.
// Blocking waits, not spinning: on a 2-core VM a spinner would steal the CPU from the working threads.
class Crew {
public:
    Crew(ThreadCount size, std::function<void(int, Phase)> body) : body_(std::move(body)) {
        try {
            threads_.reserve(static_cast<size_t>(size));
            for (int i = 0; i < static_cast<int>(size); ++i) threads_.emplace_back([this, i] { serve(i); });
        } catch (...) {
            stop_and_join();
            throw;
        }
    }
    ~Crew() { stop_and_join(); }
    Crew(const Crew&) = delete;
    Crew& operator=(const Crew&) = delete;

    // Release every worker into `phase`; return when the last one has finished it.
    void run(Phase phase) {
        std::unique_lock<std::mutex> lock(mutex_);
        phase_ = phase;
        done_ = 0;
        ++generation_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return done_ == threads_.size(); });
    }

    // Stop the workers and join them (the destructor does it too); part of the original's whole-run time.
    void join() { stop_and_join(); }

private:
    void serve(int worker) {
        uint64_t seen = 0;
        for (;;) {
            Phase phase;
            {
                std::unique_lock<std::mutex> lock(mutex_);
                changed_.wait(lock, [&] { return stop_ || generation_ != seen; });
                if (stop_) return;
                seen = generation_;
                phase = phase_;
            }
            body_(worker, phase);
            std::lock_guard<std::mutex> lock(mutex_);
            ++done_;
            changed_.notify_all();
        }
    }

    void stop_and_join() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        changed_.notify_all();
        for (auto& t : threads_)
            if (t.joinable()) t.join();
    }

    std::function<void(int, Phase)> body_;
    std::vector<std::thread> threads_;
    std::mutex mutex_;
    std::condition_variable changed_;
    uint64_t generation_ = 0;
    Phase phase_ = Phase::setup;
    size_t done_ = 0;
    bool stop_ = false;
};

// Each thread's live requested bytes, published every kPublishEvery ops, so any thread can sample the
// global sum cheaply. One cache line per thread: a publication never invalidates a neighbour's line.
class LiveBoard {
public:
    explicit LiveBoard(ThreadCount threads) : cells_(static_cast<size_t>(threads)) {}
    void publish(int worker, int64_t live) { cells_[static_cast<size_t>(worker)].bytes.store(live, std::memory_order_relaxed); }
    int64_t sum() const {
        int64_t total = 0;
        for (const auto& cell : cells_) total += cell.bytes.load(std::memory_order_relaxed);
        return total;
    }

private:
    struct alignas(64) Cell {
        std::atomic<int64_t> bytes{0};
    };
    std::vector<Cell> cells_;
};

}  // namespace hb::alloctest
