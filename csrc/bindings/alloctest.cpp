#include <cmath>

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/alloctest.h"

namespace py = pybind11;

namespace hb {
namespace {

py::dict result_to_dict(const alloctest::Result& r) {
    py::dict out;
    out["phases"] = phases_to_dict(r.phases);
    out["threads"] = r.threads;
    out["cores"] = r.cores;
    out["oversubscribed"] = r.oversubscribed;
    out["allocator_mode"] = r.allocator_mode;
    out["touch"] = r.touch;
    out["size_law"] = r.size_law;
    out["slot_law"] = r.slot_law;
    out["hot_slots"] = r.hot_slots;
    out["void_run"] = r.void_run;
    out["slots"] = r.slots;
    out["slots_per_thread"] = r.slots_per_thread;
    out["pareto_exponent"] = number_or_none(r.pareto_exponent);
    out["mean_size"] = r.mean_size;
    out["realised_mean_size"] = r.realised_mean_size;
    out["hot_share"] = r.hot_share;
    out["iterations"] = r.iterations;
    out["mallocs"] = r.mallocs;
    out["frees"] = r.frees;
    out["pairs"] = r.pairs;
    out["ns_per_pair"] = r.ns_per_pair_thread;
    out["ns_per_pair_wall"] = r.ns_per_pair_wall;
    out["ns_per_pair_thread"] = r.ns_per_pair_thread;
    out["ns_per_op"] = r.ns_per_op;
    out["whole_s"] = r.whole.seconds;
    out["whole_ops"] = r.whole.ops;
    out["ms_per_mop"] = r.whole.ms_per_mop;
    out["void_whole_s"] = number_or_none(r.void_whole.seconds);
    out["void_ms_per_mop"] = number_or_none(r.void_whole.ms_per_mop);
    out["void_ns_per_op"] = number_or_none(r.void_ns_per_op);
    out["ns_per_op_net"] = number_or_none(r.ns_per_op_net);
    out["ns_per_pair_net"] = number_or_none(r.ns_per_pair_net);
    out["ms_per_mop_net"] = number_or_none(r.ms_per_mop_net);
    put_chunk_stats(out, r.chunk_ns);
    out["peak_requested_bytes"] = r.peak_requested_bytes;
    out["peak_requested_bytes_bound"] = r.peak_requested_bytes_bound;
    out["live_bytes_end"] = r.live_bytes_end;
    out["live_blocks_end"] = r.live_blocks_end;
    out["bytes_touched"] = r.bytes_touched;
    out["bytes_written"] = r.bytes_written;
    out["bytes_read"] = r.bytes_read;
    out["checksum"] = r.checksum;
    out["mismatches"] = r.mismatches < 0 ? py::object(py::none()) : py::object(py::int_(r.mismatches));
    out["counters"] = counters_to_dict(r.counters);
    return out;
}

template <class T>
py::array_t<T> to_array(const std::vector<T>& values) {
    py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
}

py::dict distributions(int64_t draws, int64_t slots, int64_t min_size, int64_t max_size, uint64_t seed,
                       const std::string& size_law, const std::string& slot_law, const std::string& hot_slots) {
    if (draws < 0) throw py::value_error("n_draws must be >= 0");
    // Only what the unsigned casts below need; alloctest::distributions checks the laws' own limits.
    if (slots < 0) throw py::value_error("slots must be >= 0, got " + std::to_string(slots));
    if (min_size < 1 || max_size < min_size || max_size > (int64_t{1} << 30))
        throw py::value_error("need 1 <= min_size <= max_size <= 2^30");
    alloctest::Distributions d;
    {
        py::gil_scoped_release no_gil;
        d = alloctest::distributions(static_cast<uint64_t>(draws), static_cast<uint64_t>(slots),
                                     static_cast<uint32_t>(min_size), static_cast<uint32_t>(max_size), seed,
                                     alloctest::LawChoice{size_law, slot_law, hot_slots});
    }
    py::dict out;
    out["slot_counts"] = to_array(d.slot_counts);
    out["rank_counts"] = to_array(d.rank_counts);
    out["sizes"] = to_array(d.sizes);
    out["pareto_exponent"] = number_or_none(d.pareto_exponent);
    out["mean_size"] = d.mean_size;
    out["hot_share"] = d.hot_share;
    out["hot_slots"] = d.hot_slots;
    return out;
}

}  // namespace

void bind_alloctest(py::module_& m) {
    using P = alloctest::Params;
    bind_workload(m,
                  WorkloadBinding<P, alloctest::Result>{
                      "alloctest",
                      "Allocator stress after ITHare's alloc-test: slots picked by an 80/20 law toggled by "
                      "malloc/free of blocks drawn by a size law, written and verified. Phases setup, warmup, "
                      "run (timed), teardown.",
                      &alloctest::validate, &alloctest::run, &result_to_dict},
                  field("threads", &P::threads), field("iterations", &P::iterations),
                  field("iterations_per", &P::iterations_per), field("warmup_iterations", &P::warmup_iterations),
                  field("slots", &P::slots), field("slots_per", &P::slots_per), field("total_bytes", &P::total_bytes),
                  field("size_law", &P::size_law), field("slot_law", &P::slot_law), field("hot_slots", &P::hot_slots),
                  field("min_size", &P::min_size), field("max_size", &P::max_size), field("touch", &P::touch),
                  field("allocator_mode", &P::allocator_mode), field("void_run", &P::void_run),
                  field("chunks", &P::chunks), field("seed", &P::seed));
    m.def("alloctest_distributions", &distributions, py::arg("n_draws"), py::arg("slots"), py::arg("min_size") = 5,
          py::arg("max_size") = 65536, py::arg("seed") = 1, py::arg("size_law") = "bands",
          py::arg("slot_law") = "pareto6", py::arg("hot_slots") = "contiguous",
          "The slot and size laws exactly as alloctest() draws them (one thread's worth of slots), for tests: "
          "slot_counts, rank_counts, sizes (numpy arrays), pareto_exponent (None for pareto6), mean_size, "
          "hot_share (picks of the hottest 0.16% of slots), hot_slots (how many slots that is).");
}

namespace {
[[maybe_unused]] const bool registered = register_binding("alloctest", &bind_alloctest);
}  // namespace

}  // namespace hb
