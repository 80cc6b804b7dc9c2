// Runs one named phase of a workload between two hook calls, timing only the body.
// Order: hook(name, "begin") -> [counters on] -> timer start -> body -> timer stop -> [counters off]
// -> hook(name, "end"). The hook (Python snapshots of /proc, rusage) is never inside the timer, and
// the counters never count the hook.
#pragma once

#include <functional>

#include "common/perf_counters.h"
#include "common/timing.h"

namespace hb {

// Called from the thread that runs the workload, with phase names like "lookup", edge "begin"/"end".
using Hook = std::function<void(const char* phase, const char* edge)>;

template <class Body>
double run_phase(const Hook& hook, const char* name, Body&& body, PerfCounters* counters = nullptr) {
    if (hook) hook(name, "begin");
    if (counters) counters->enable();
    const uint64_t start = now_ns();
    body();
    const uint64_t stop = now_ns();
    if (counters) counters->disable();
    if (hook) hook(name, "end");
    return static_cast<double>(stop - start) * 1e-9;
}

}  // namespace hb
