#include "common/perf_counters.h"

#include <linux/perf_event.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <unordered_set>

#include "common/syscalls.h"

namespace hb {
namespace {

long perf_event_open(perf_event_attr* attr, pid_t pid, int cpu, int group_fd, unsigned long flags) {
    return syscall(SYS_perf_event_open, attr, pid, cpu, group_fd, flags);
}

perf_event_attr attr_for(const CounterSpec& spec) {
    perf_event_attr attr;
    std::memset(&attr, 0, sizeof attr);
    attr.size = sizeof attr;
    attr.type = spec.type;
    attr.config = spec.config;
    attr.config1 = spec.config1;
    attr.disabled = 1;    // counts nothing until enable(), i.e. until the timed loop starts
    attr.inherit = 1;     // threads created after opening (the workload's workers) are counted too
    attr.exclude_hv = 1;
    attr.read_format = PERF_FORMAT_TOTAL_TIME_ENABLED | PERF_FORMAT_TOTAL_TIME_RUNNING;
    return attr;
}

}  // namespace

PerfCounters::PerfCounters(const std::vector<CounterSpec>& specs) {
    std::unordered_set<std::string> labels;
    for (const auto& spec : specs) {
        if (!labels.insert(spec.label).second)
            throw std::invalid_argument("duplicate counter label '" + spec.label + "'");
    }
    events_.reserve(specs.size());
    for (const auto& spec : specs) events_.push_back(open_event(spec));
}

PerfCounters::~PerfCounters() {
    for (auto& event : events_)
        if (event.fd >= 0) close(event.fd);
}

PerfCounters::Event PerfCounters::open_event(const CounterSpec& spec) {
    Event event;
    event.spec = spec;
    perf_event_attr attr = attr_for(spec);
    // pid 0, cpu -1: this thread (and, by inherit, its future threads) on whatever CPU it runs.
    long fd = perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
    if (fd < 0 && (errno == EACCES || errno == EPERM)) {
        // perf_event_paranoid >= 2 forbids this user the kernel's share: count user space only, as perf stat
        // does (its ':u'), and say so in the reading.
        attr.exclude_kernel = 1;
        fd = perf_event_open(&attr, 0, -1, -1, PERF_FLAG_FD_CLOEXEC);
        event.user_only = fd >= 0;
    }
    if (fd < 0)
        event.open_error = "perf_event_open failed: " + errno_text(errno);
    else
        event.fd = static_cast<int>(fd);
    return event;
}

// ioctl on the parent fd also reaches the inherited copies in existing threads.
void PerfCounters::enable() {
    for (auto& event : events_)
        if (event.fd >= 0) ioctl(event.fd, PERF_EVENT_IOC_ENABLE, 0);
}

void PerfCounters::disable() {
    for (auto& event : events_)
        if (event.fd >= 0) ioctl(event.fd, PERF_EVENT_IOC_DISABLE, 0);
}

CounterReading PerfCounters::read_event(const Event& event) {
    CounterReading reading;
    reading.label = event.spec.label;
    reading.user_only = event.user_only;
    if (event.fd < 0) {
        reading.error = event.open_error;
        return reading;
    }
    uint64_t values[3] = {0, 0, 0};  // value, time_enabled, time_running (our read_format)
    const ssize_t got = read(event.fd, values, sizeof values);
    if (got != static_cast<ssize_t>(sizeof values)) {
        reading.error = got < 0 ? "read failed: " + errno_text(errno) : "short read from perf event fd";
        return reading;
    }
    reading.raw_value = values[0];
    reading.time_enabled_ns = values[1];
    reading.time_running_ns = values[2];
    if (reading.time_running_ns == 0) {
        // Never on a PMU while enabled (multiplexed out, or never enabled): the count is unknown, not 0.
        reading.error = "not counted (time_running = 0)";
        return reading;
    }
    const double scale = static_cast<double>(reading.time_enabled_ns) / static_cast<double>(reading.time_running_ns);
    reading.value = static_cast<double>(reading.raw_value) * (scale > 1.0 ? scale : 1.0);
    return reading;
}

std::vector<CounterReading> PerfCounters::results() const {
    std::vector<CounterReading> readings;
    readings.reserve(events_.size());
    for (const auto& event : events_) readings.push_back(read_event(event));
    return readings;
}

}  // namespace hb
