#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/alloctest.h"

namespace py = pybind11;

namespace hb {
namespace {

py::dict result_to_dict(const alloctest::Result& r) {
    py::dict phases;
    for (const auto& [name, seconds] : r.phases) phases[py::str(name)] = seconds;
    py::dict out;
    out["phases"] = phases;
    out["threads"] = r.threads;
    out["allocator_mode"] = r.allocator_mode;
    out["touch"] = r.touch;
    out["slots"] = r.slots;
    out["slots_per_thread"] = r.slots_per_thread;
    out["pareto_exponent"] = r.pareto_exponent;
    out["mean_size"] = r.mean_size;
    out["iterations"] = r.iterations;
    out["mallocs"] = r.mallocs;
    out["frees"] = r.frees;
    out["pairs"] = r.pairs;
    out["ns_per_pair"] = r.ns_per_pair_thread;
    out["ns_per_pair_wall"] = r.ns_per_pair_wall;
    out["ns_per_pair_thread"] = r.ns_per_pair_thread;
    out["chunk_ns_median"] = r.chunk_ns_median;
    out["chunk_ns_p10"] = r.chunk_ns_p10;
    out["chunk_ns_p90"] = r.chunk_ns_p90;
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

py::dict run_alloctest(int64_t threads, int64_t iterations, int64_t warmup_iterations, int64_t slots,
                       int64_t total_bytes, int64_t min_size, int64_t max_size, const std::string& touch,
                       const std::string& allocator_mode, int64_t chunks, uint64_t seed,
                       const std::vector<CounterTuple>& counters, const py::object& hook) {
    alloctest::Params params{threads, iterations, warmup_iterations, slots, total_bytes, min_size, max_size,
                             touch, allocator_mode, chunks, seed, counter_specs(counters)};
    alloctest::validate(params);  // ValueError before any work
    const Hook cpp_hook = python_hook(hook);
    alloctest::Result result;
    {
        py::gil_scoped_release no_gil;  // the hook takes it back only for its own calls
        result = alloctest::run(params, cpp_hook);
    }
    return result_to_dict(result);
}

template <class T>
py::array_t<T> to_array(const std::vector<T>& values) {
    py::array_t<T> out(static_cast<py::ssize_t>(values.size()));
    std::copy(values.begin(), values.end(), out.mutable_data());
    return out;
}

py::dict distributions(int64_t draws, int64_t slots, int64_t min_size, int64_t max_size, uint64_t seed) {
    if (draws < 0) throw py::value_error("n_draws must be >= 0");
    if (slots < 0 || min_size < 1 || max_size < min_size || max_size > (int64_t{1} << 30))
        throw py::value_error("need slots >= 10 and 1 <= min_size <= max_size <= 2^30");
    alloctest::Distributions d;
    {
        py::gil_scoped_release no_gil;
        d = alloctest::distributions(static_cast<uint64_t>(draws), static_cast<uint64_t>(slots),
                                     static_cast<uint32_t>(min_size), static_cast<uint32_t>(max_size), seed);
    }
    py::dict out;
    out["slot_counts"] = to_array(d.slot_counts);
    out["rank_counts"] = to_array(d.rank_counts);
    out["sizes"] = to_array(d.sizes);
    out["pareto_exponent"] = d.pareto_exponent;
    out["mean_size"] = d.mean_size;
    return out;
}

}  // namespace

void bind_alloctest(py::module_& m) {
    m.def("alloctest", &run_alloctest, py::kw_only(), py::arg("threads") = 1, py::arg("iterations") = 10000000,
          py::arg("warmup_iterations") = 1000000, py::arg("slots") = 0, py::arg("total_bytes") = 1300000000,
          py::arg("min_size") = 8, py::arg("max_size") = 65536, py::arg("touch") = "write-read",
          py::arg("allocator_mode") = "malloc", py::arg("chunks") = 64, py::arg("seed") = 1,
          py::arg("counters") = std::vector<CounterTuple>{}, py::arg("hook") = py::none(),
          "Allocator stress: Pareto-picked slots toggled by malloc/free of 1/size-distributed blocks, written and "
          "verified. Phases setup, warmup, run (timed), teardown.");
    m.def("alloctest_distributions", &distributions, py::arg("n_draws"), py::arg("slots"), py::arg("min_size") = 8,
          py::arg("max_size") = 65536, py::arg("seed") = 1,
          "The slot and size laws exactly as alloctest() draws them (one thread's worth of slots), for tests: "
          "slot_counts, rank_counts, sizes (numpy arrays), pareto_exponent, mean_size.");
}

}  // namespace hb
