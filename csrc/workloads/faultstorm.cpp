#include "workloads/faultstorm.h"

#include <sys/resource.h>

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <numeric>
#include <stdexcept>

#include "common/rng.h"
#include "common/thread_team.h"
#include "common/timing.h"
#include "workloads/faultstorm_buffer.h"

namespace hb::faultstorm {
namespace {

// Where each thread's data lives inside a page: thread t owns one 8-byte slot, on its own cache line
// while there are no more threads than lines, so writers do not false-share a line of the same page.
struct Layout {
    char* base = nullptr;
    uint64_t page_size = 0;
    uint64_t pages = 0;
    uint64_t salt = 0;

    uint64_t slot_offset(unsigned thread) const {
        const uint64_t lines = page_size / 64;
        return (thread % lines) * 64 + (thread / lines) * 8;
    }
    uint64_t* word(uint64_t page, uint64_t offset) const {
        return reinterpret_cast<uint64_t*>(base + page * page_size + offset);
    }
    uint64_t* slot(uint64_t page, unsigned thread) const { return word(page, slot_offset(thread)); }
    // Never 0, so an unwritten (zero) slot is told apart from a written one.
    uint64_t tag(uint64_t page, unsigned thread) const {
        uint64_t state = salt ^ (page << 10) ^ thread;
        return splitmix64(state) | 1;
    }
};

// One thread's reproducible sequence of accesses: built before the barrier, replayed by the check.
class OpStream {
public:
    OpStream(const Params& p, uint64_t pages, unsigned thread)
        : rng_(p.seed, 1000 + thread),
          write_threshold_(static_cast<uint64_t>(p.write_ratio * 0x1.0p53)),
          pages_(pages) {
        if (p.requests_per_thread > 0) return;  // requests draw their slices from rng_ directly
        order_.resize(pages);
        std::iota(order_.begin(), order_.end(), 0u);
        Rng shuffle(p.seed, 2000 + thread);
        for (uint64_t i = pages - 1; i > 0; --i) std::swap(order_[i], order_[shuffle.bounded(i + 1)]);
    }
    // Walks the permutation, starting over after the last page (no division in the hot loop).
    uint64_t next_page() {
        const uint64_t page = order_[position_];
        position_ = position_ + 1 == pages_ ? 0 : position_ + 1;
        return page;
    }
    bool next_is_write() { return (rng_.next() >> 11) < write_threshold_; }
    uint64_t next_slice_start(uint64_t slice_pages) { return rng_.bounded(pages_ - slice_pages + 1); }

private:
    Rng rng_;
    uint64_t write_threshold_;
    uint64_t pages_;
    uint64_t position_ = 0;
    std::vector<uint32_t> order_;
};

struct ThreadClock {
    uint64_t wall_ns = 0;
    double cpu_s = 0;
    rusage usage{};

    static ThreadClock now() {
        ThreadClock c;
        timespec ts;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
        c.cpu_s = static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
        getrusage(RUSAGE_THREAD, &c.usage);
        c.wall_ns = now_ns();
        return c;
    }
};

double seconds(const timeval& tv) { return static_cast<double>(tv.tv_sec) + static_cast<double>(tv.tv_usec) * 1e-6; }

struct WorkerResult {
    std::vector<double> chunk_ns;
    std::vector<double> request_ns;
    uint64_t read_sum = 0;
    uint64_t bad_reads = 0;  // a read slot that held neither 0 nor this thread's tag
    ThreadClock begin, end;
};

inline void check_read(const Layout& l, uint64_t page, unsigned t, uint64_t value, WorkerResult& out) {
    out.read_sum += value;
    out.bad_reads += (value != 0 && value != l.tag(page, t));
}

// Relaxed atomics: plain loads/stores in the machine code, but no data race when several threads
// share a page (each writes only its own slot; requests also read the others' slots).
void run_ops(const Layout& l, const Params& p, unsigned t, OpStream& stream, WorkerResult& out) {
    const uint64_t ops = p.ops_per_thread;
    const uint64_t chunks = std::min<uint64_t>(p.chunks, std::max<uint64_t>(ops, 1));
    const uint64_t offset = l.slot_offset(t);
    uint64_t i = 0;
    for (uint64_t c = 0; c < chunks; ++c) {
        const uint64_t chunk_end = slice_begin(ops, chunks, c + 1);
        const uint64_t chunk_ops = chunk_end - i;
        const uint64_t start = now_ns();
        for (; i < chunk_end; ++i) {
            const uint64_t page = stream.next_page();
            uint64_t* slot = l.word(page, offset);
            if (stream.next_is_write())
                __atomic_store_n(slot, l.tag(page, t), __ATOMIC_RELAXED);
            else
                check_read(l, page, t, __atomic_load_n(slot, __ATOMIC_RELAXED), out);
        }
        if (chunk_ops > 0)
            out.chunk_ns.push_back(static_cast<double>(now_ns() - start) / static_cast<double>(chunk_ops));
    }
}

// One request reads the first word of every cache line of its slice; a write request also stores the
// thread's tag in its slot of every page of the slice.
void serve_request(const Layout& l, unsigned t, uint64_t first, uint64_t count, bool write, WorkerResult& out) {
    for (uint64_t page = first; page < first + count; ++page) {
        const char* line = l.base + page * l.page_size;
        for (uint64_t off = 0; off < l.page_size; off += 64)
            out.read_sum += __atomic_load_n(reinterpret_cast<const uint64_t*>(line + off), __ATOMIC_RELAXED);
        uint64_t* slot = l.slot(page, t);
        if (write)
            __atomic_store_n(slot, l.tag(page, t), __ATOMIC_RELAXED);
        else
            check_read(l, page, t, __atomic_load_n(slot, __ATOMIC_RELAXED), out);
    }
}

void run_requests(const Layout& l, const Params& p, unsigned t, uint64_t slice_pages, OpStream& stream,
                  WorkerResult& out) {
    const uint64_t requests = p.requests_per_thread;
    const uint64_t chunks = std::min<uint64_t>(p.chunks, requests);
    uint64_t r = 0;
    for (uint64_t c = 0; c < chunks; ++c) {
        const uint64_t chunk_end = slice_begin(requests, chunks, c + 1);
        const uint64_t chunk_requests = chunk_end - r;
        const uint64_t chunk_start = now_ns();
        for (; r < chunk_end; ++r) {
            const uint64_t first = stream.next_slice_start(slice_pages);
            const bool write = stream.next_is_write();
            const uint64_t start = now_ns();
            serve_request(l, t, first, slice_pages, write, out);
            out.request_ns.push_back(static_cast<double>(now_ns() - start));
        }
        if (chunk_requests > 0)
            out.chunk_ns.push_back(static_cast<double>(now_ns() - chunk_start) / static_cast<double>(chunk_requests));
    }
}

uint64_t slice_pages_of(const Params& p, uint64_t page_size, uint64_t pages) {
    return std::clamp<uint64_t>(p.request_bytes / page_size, 1, pages);
}

// Replays one thread's op stream to learn which pages it wrote (the values are a function of page
// and thread, so "wrote at least once" fixes the expected content of every slot).
std::vector<uint8_t> pages_written(const Params& p, uint64_t pages, uint64_t slice_pages, unsigned t) {
    std::vector<uint8_t> written(pages, 0);
    OpStream stream(p, pages, t);
    if (p.requests_per_thread > 0) {
        for (uint64_t r = 0; r < p.requests_per_thread; ++r) {
            const uint64_t first = stream.next_slice_start(slice_pages);
            if (stream.next_is_write()) std::fill_n(written.begin() + first, slice_pages, 1);
        }
    } else {
        for (uint64_t i = 0; i < p.ops_per_thread; ++i) {
            const uint64_t page = stream.next_page();
            if (stream.next_is_write()) written[page] = 1;
        }
    }
    return written;
}

// Outside every phase: reads back every slot of every thread and compares with the replay.
void verify(const Layout& l, const Params& p, Result& result) {
    const uint64_t slice_pages = slice_pages_of(p, l.page_size, l.pages);
    for (int t = 0; t < p.threads; ++t) {
        const auto written = pages_written(p, l.pages, slice_pages, static_cast<unsigned>(t));
        for (uint64_t page = 0; page < l.pages; ++page) {
            const uint64_t value = *l.slot(page, static_cast<unsigned>(t));
            result.checksum += value;
            result.mismatches += value != (written[page] ? l.tag(page, static_cast<unsigned>(t)) : 0);
        }
    }
}

}  // namespace

void validate(const Params& p) {
    const uint64_t page_size = base_page_size();
    if (p.buffer_bytes < page_size || p.buffer_bytes % page_size != 0)
        throw std::invalid_argument("buffer_bytes must be a positive multiple of the page size (" +
                                    std::to_string(page_size) + "), got " + std::to_string(p.buffer_bytes));
    if (p.buffer_bytes / page_size > UINT32_MAX) throw std::invalid_argument("buffer_bytes too large");
    // One 8-byte slot per thread per page.
    require_threads(p.threads, static_cast<ThreadCount>(page_size / 8));
    require(p.write_ratio >= 0.0 && p.write_ratio <= 1.0, "write_ratio must be in [0, 1]");
    require(p.requests_per_thread > 0 || p.ops_per_thread > 0,
            "ops_per_thread must be > 0 (or set requests_per_thread)");
    require(p.chunks >= 1, "chunks must be >= 1, got " + std::to_string(p.chunks));
    require(p.requests_per_thread == 0 || p.request_bytes > 0, "request_bytes must be > 0 in requests mode");
    parse_backing(p.backing);
}

namespace {

void add_thread_clocks(const WorkerResult& w, ThreadTotals& totals) {
    totals.cpu_s += w.end.cpu_s - w.begin.cpu_s;
    totals.utime_s += seconds(w.end.usage.ru_utime) - seconds(w.begin.usage.ru_utime);
    totals.stime_s += seconds(w.end.usage.ru_stime) - seconds(w.begin.usage.ru_stime);
    totals.minflt += static_cast<uint64_t>(w.end.usage.ru_minflt - w.begin.usage.ru_minflt);
    totals.majflt += static_cast<uint64_t>(w.end.usage.ru_majflt - w.begin.usage.ru_majflt);
    totals.wall_max_s = std::max(totals.wall_max_s, static_cast<double>(w.end.wall_ns - w.begin.wall_ns) * 1e-9);
}

// Threads and their op streams are created before the phase; the phase releases them and joins.
double run_steady(const Layout& l, const Params& p, const Hook& hook, PerfCounters& counters,
                  std::vector<WorkerResult>& results) {
    const uint64_t slice_pages = slice_pages_of(p, l.page_size, l.pages);
    std::vector<OpStream> streams;
    streams.reserve(p.threads);
    for (int t = 0; t < p.threads; ++t) streams.emplace_back(p, l.pages, static_cast<unsigned>(t));
    results.assign(p.threads, WorkerResult{});
    for (auto& r : results) {
        r.chunk_ns.reserve(p.chunks);
        r.request_ns.reserve(p.requests_per_thread);
    }
    ThreadTeam team(p.threads, [&](int t) {
        WorkerResult& out = results[static_cast<size_t>(t)];
        const auto thread = static_cast<unsigned>(t);
        out.begin = ThreadClock::now();
        if (p.requests_per_thread > 0)
            run_requests(l, p, thread, slice_pages, streams[thread], out);
        else
            run_ops(l, p, thread, streams[thread], out);
        out.end = ThreadClock::now();
    });
    team.wait_until_ready();
    return run_phase(hook, "steady", [&] { team.start_and_join(); }, &counters);
}

void summarise_steady(const std::vector<WorkerResult>& workers, Result& result) {
    uint64_t read_sum = 0;
    std::vector<double> chunk_ns, request_ns;
    for (const auto& w : workers) {
        chunk_ns.insert(chunk_ns.end(), w.chunk_ns.begin(), w.chunk_ns.end());
        request_ns.insert(request_ns.end(), w.request_ns.begin(), w.request_ns.end());
        result.mismatches += w.bad_reads;
        read_sum += w.read_sum;
        add_thread_clocks(w, result.steady_thread);
    }
    do_not_optimize(read_sum);
    result.chunks = static_cast<int64_t>(workers.front().chunk_ns.size());
    result.chunk_ns = chunk_stats(chunk_ns);
    result.request_ns_p50 = percentile(request_ns, 50);
    result.request_ns_p90 = percentile(request_ns, 90);
    result.request_ns_p99 = percentile(request_ns, 99);
    result.request_ns_max = percentile(std::move(request_ns), 100);
}

void first_touch(const Layout& l, uint64_t bytes) {
    // One byte per page, value 0: maps the page without changing what the check expects.
    volatile char* base = l.base;
    for (uint64_t off = l.page_size - 1; off < bytes; off += l.page_size) base[off] = 0;
}

void describe(const Params& p, const Buffer& buffer, const Layout& l, Result& r) {
    r.backing = p.backing;
    r.map_flags = buffer.map_flags();
    r.buffer_bytes = p.buffer_bytes;
    r.page_size = l.page_size;
    r.mapping_page_size = buffer.mapping_page_size();
    r.pages = l.pages;
    r.threads = p.threads;
    const bool requests_mode = p.requests_per_thread > 0;
    r.op_unit = requests_mode ? "request" : "page-access";
    r.requests = requests_mode ? p.requests_per_thread * p.threads : 0;
    r.pages_per_request = requests_mode ? slice_pages_of(p, l.page_size, l.pages) : 0;
    r.ops = requests_mode ? r.requests : p.ops_per_thread * p.threads;
}

}  // namespace

Result run(const Params& p, const Hook& hook) {
    const uint64_t page_size = base_page_size();
    validate(p);
    const Backing backing = parse_backing(p.backing);
    PerfCounters counters(p.counters);  // opened before the workers exist, so they inherit it
    Result result;
    std::unique_ptr<Buffer> buffer;
    result.phases.emplace_back("obtain", run_phase(hook, "obtain", [&] {
        buffer = Buffer::obtain(backing, p.buffer_bytes);
    }));
    Layout layout{buffer->data(), page_size, p.buffer_bytes / page_size, p.seed * 0x9E3779B97F4A7C15ull};
    describe(p, *buffer, layout, result);
    if (p.first_touch)
        result.phases.emplace_back("first_touch", run_phase(hook, "first_touch", [&] {
            first_touch(layout, p.buffer_bytes);
        }));
    std::vector<WorkerResult> workers;
    result.steady_s = run_steady(layout, p, hook, counters, workers);
    result.phases.emplace_back("steady", result.steady_s);
    summarise_steady(workers, result);
    result.ns_per_op = result.ops > 0 ? result.steady_s * 1e9 / static_cast<double>(result.ops) : 0.0;
    result.counters = counters.results();
    verify(layout, p, result);
    result.phases.emplace_back("release", run_phase(hook, "release", [&] { buffer->release(); }));
    return result;
}

namespace {
std::mutex probes_mutex;
std::map<uint64_t, std::unique_ptr<Buffer>> probes;
uint64_t next_probe_handle = 1;
}  // namespace

Probe probe(const std::string& backing, uint64_t buffer_bytes) {
    const uint64_t page_size = base_page_size();
    if (buffer_bytes < page_size || buffer_bytes % page_size != 0)
        throw std::invalid_argument("buffer_bytes must be a positive multiple of the page size");
    auto buffer = Buffer::obtain(parse_backing(backing), buffer_bytes);
    volatile char* bytes = buffer->data();
    for (uint64_t off = 0; off < buffer_bytes; off += page_size) bytes[off] = 1;
    Probe out;
    out.address = reinterpret_cast<uint64_t>(buffer->data());
    out.length = buffer_bytes;
    out.mapped_bytes = buffer->mapped_bytes();
    out.mapping_page_size = buffer->mapping_page_size();
    out.map_flags = buffer->map_flags();
    std::lock_guard<std::mutex> lock(probes_mutex);
    out.handle = next_probe_handle++;
    probes.emplace(out.handle, std::move(buffer));
    return out;
}

void probe_release(uint64_t handle) {
    std::unique_ptr<Buffer> buffer;
    {
        std::lock_guard<std::mutex> lock(probes_mutex);
        auto it = probes.find(handle);
        if (it == probes.end()) throw std::invalid_argument("no live faultstorm probe " + std::to_string(handle));
        buffer = std::move(it->second);
        probes.erase(it);
    }
}

}  // namespace hb::faultstorm
