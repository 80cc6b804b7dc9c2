// In-process counters through perf_event_open(2), opened at the start of a workload (so threads created
// later inherit them) and enabled only around the timed loop. Each event is opened on its own, not as a
// group, so one unsupported event (e.g. any hardware event on a VM without a PMU) cannot sink the others:
// it becomes an entry with an error text and never a number.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace hb {

// type/config/config1 have the meaning of the same fields of struct perf_event_attr.
struct CounterSpec {
    std::string label;
    uint32_t type = 0;
    uint64_t config = 0;
    uint64_t config1 = 0;
};

struct CounterReading {
    std::string label;
    double value = 0;            // raw_value scaled by enabled/running when the kernel multiplexed it
    uint64_t raw_value = 0;
    uint64_t time_enabled_ns = 0;
    uint64_t time_running_ns = 0;
    std::string error;           // empty when the numbers are valid; otherwise the numbers mean nothing
    bool user_only = false;      // kernel's share not counted (perf_event_paranoid forbids it to this user)

    bool ok() const { return error.empty(); }
};

class PerfCounters {
public:
    PerfCounters() = default;
    explicit PerfCounters(const std::vector<CounterSpec>& specs);
    ~PerfCounters();
    PerfCounters(const PerfCounters&) = delete;
    PerfCounters& operator=(const PerfCounters&) = delete;

    void enable();
    void disable();
    std::vector<CounterReading> results() const;
    bool empty() const { return events_.empty(); }

private:
    struct Event {
        CounterSpec spec;
        int fd = -1;
        std::string open_error;
        bool user_only = false;
    };
    static Event open_event(const CounterSpec& spec);
    static CounterReading read_event(const Event& event);

    std::vector<Event> events_;
};

}  // namespace hb
