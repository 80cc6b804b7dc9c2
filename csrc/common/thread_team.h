// A fixed team of worker threads created before a timed region, parked on a StartBarrier, then started
// together and joined. The destructor cancels and joins, so an exception between creation and start
// (a failing hook, say) never leaves a joinable std::thread behind (which would call std::terminate).
#pragma once

#include <functional>
#include <thread>
#include <vector>

#include "common/barrier.h"

namespace hb {

class ThreadTeam {
public:
    // work(index) runs on worker `index` in [0, workers) once start_and_join() is called.
    // It must not throw: catch inside and hand errors back through your own per-worker output.
    ThreadTeam(ThreadCount workers, std::function<void(int)> work) : barrier_(workers), work_(std::move(work)) {
        threads_.reserve(static_cast<size_t>(workers));
        try {
            for (int i = 0; i < static_cast<int>(workers); ++i) {
                threads_.emplace_back([this, i] {
                    if (barrier_.arrive_and_wait()) work_(i);
                });
            }
        } catch (...) {
            cancel_and_join();
            throw;
        }
    }

    ~ThreadTeam() { cancel_and_join(); }
    ThreadTeam(const ThreadTeam&) = delete;
    ThreadTeam& operator=(const ThreadTeam&) = delete;

    // Blocks until every worker is parked, so that start_and_join() times work and not thread start-up.
    void wait_until_ready() { barrier_.wait_until_all_arrived(); }

    void start_and_join() {
        barrier_.release();
        join_all();
    }

private:
    void cancel_and_join() {
        barrier_.cancel();  // no effect if already released
        join_all();
    }

    void join_all() {
        for (auto& thread : threads_)
            if (thread.joinable()) thread.join();
    }

    StartBarrier barrier_;
    std::function<void(int)> work_;
    std::vector<std::thread> threads_;
};

}  // namespace hb
