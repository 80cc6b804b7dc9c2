// A fixed team of worker threads created before a timed region, parked on a StartBarrier, then started
// together and joined. The destructor cancels and joins, so an exception between creation and start
// (a failing hook, say) never leaves a joinable std::thread behind (which would call std::terminate).
// Also the exception-safe start and the join that alloctest's Crew shares with it.
#pragma once

#include <functional>
#include <thread>
#include <vector>

#include "common/barrier.h"
#include "common/checks.h"

namespace hb {

inline void join_all(std::vector<std::thread>& threads) {
    for (auto& thread : threads)
        if (thread.joinable()) thread.join();
}

// Starts `count` threads, thread i running body(i). If one cannot be started, calls stop_and_join()
// (which must make the started ones return and join them) and rethrows.
template <class Body, class StopAndJoin>
void start_threads(std::vector<std::thread>& threads, ThreadCount count, Body body, StopAndJoin stop_and_join) {
    try {
        threads.reserve(static_cast<size_t>(count));
        for (int i = 0; i < static_cast<int>(count); ++i) threads.emplace_back(body, i);
    } catch (...) {
        stop_and_join();
        throw;
    }
}

class ThreadTeam {
public:
    // work(index) runs on worker `index` in [0, workers) once start_and_join() is called.
    // It must not throw: catch inside and hand errors back through your own per-worker output.
    ThreadTeam(ThreadCount workers, std::function<void(int)> work) : barrier_(workers), work_(std::move(work)) {
        const auto parked = [this](int i) {
            if (barrier_.arrive_and_wait()) work_(i);
        };
        start_threads(threads_, workers, parked, [this] { cancel_and_join(); });
    }

    ~ThreadTeam() { cancel_and_join(); }
    ThreadTeam(const ThreadTeam&) = delete;
    ThreadTeam& operator=(const ThreadTeam&) = delete;

    // Blocks until every worker is parked, so that start_and_join() times work and not thread start-up.
    void wait_until_ready() { barrier_.wait_until_all_arrived(); }

    void start_and_join() {
        barrier_.release();
        join_all(threads_);
    }

private:
    void cancel_and_join() {
        barrier_.cancel();  // no effect if already released
        join_all(threads_);
    }

    StartBarrier barrier_;
    std::function<void(int)> work_;
    std::vector<std::thread> threads_;
};

}  // namespace hb
