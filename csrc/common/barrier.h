// One-shot start barrier: worker threads are created and parked before the timed region, then released
// together, so thread creation never lands inside the timer. It blocks (no spinning) because on a
// 2-core VM spinning workers would steal the CPU from the coordinator while it runs the Python hook.
#pragma once

#include <condition_variable>
#include <mutex>

#include "common/checks.h"

namespace hb {

class StartBarrier {
public:
    explicit StartBarrier(ThreadCount workers) : expected_(workers) {}
    StartBarrier(const StartBarrier&) = delete;
    StartBarrier& operator=(const StartBarrier&) = delete;

    // Worker side: announce readiness, then block until release (true) or cancel (false: do no work).
    bool arrive_and_wait() {
        std::unique_lock<std::mutex> lock(mutex_);
        ++arrived_;
        changed_.notify_all();
        changed_.wait(lock, [this] { return state_ != State::waiting; });
        return state_ == State::released;
    }

    // Coordinator side: block until every worker is parked, so the release starts them all at once.
    void wait_until_all_arrived() {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [this] { return arrived_ >= expected_; });
    }

    void release() { finish(State::released); }
    void cancel() { finish(State::cancelled); }  // error path: let parked workers exit without working

private:
    enum class State { waiting, released, cancelled };

    void finish(State final_state) {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            if (state_ == State::waiting) state_ = final_state;
        }
        changed_.notify_all();
    }

    std::mutex mutex_;
    std::condition_variable changed_;
    const ThreadCount expected_;
    ThreadCount arrived_ = 0;
    State state_ = State::waiting;
};

}  // namespace hb
