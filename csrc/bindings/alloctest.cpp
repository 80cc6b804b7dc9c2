#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <algorithm>
#include <optional>

#include "bindings/common.h"
#include "workloads/alloctest.h"

namespace hb {
namespace {

// _core.alloctest's docstring.
constexpr const char* kDoc =
    "Allocator stress after ITHare's alloc-test: slots picked by an 80/20 law toggled by malloc/free of blocks "
    "drawn by a size law, written and verified. Phases setup, warmup, run (timed), teardown.";

using R = alloctest::Result;
using W = alloctest::WholeRun;

// -1 in void mode (the blocks share one buffer, nothing to verify): None.
std::optional<int64_t> mismatches(const R& r) {
    return r.mismatches < 0 ? std::nullopt : std::optional<int64_t>(r.mismatches);
}

const auto kResultKeys = std::make_tuple(
    key("phases", &R::phases), key("threads", &R::threads), key("cores", &R::cores),
    key("oversubscribed", &R::oversubscribed), key("allocator_mode", &R::allocator_mode), key("touch", &R::touch),
    key("size_law", &R::size_law), key("slot_law", &R::slot_law), key("hot_slots", &R::hot_slots),
    key("void_run", &R::void_run), key("slots", &R::slots), key("slots_per_thread", &R::slots_per_thread),
    key_or_none("pareto_exponent", &R::pareto_exponent), key("mean_size", &R::mean_size),
    key("realised_mean_size", &R::realised_mean_size), key("hot_share", &R::hot_share),
    key("iterations", &R::iterations), key("mallocs", &R::mallocs), key("frees", &R::frees), key("pairs", &R::pairs),
    key("ns_per_pair", &R::ns_per_pair_thread), key("ns_per_pair_wall", &R::ns_per_pair_wall),
    key("ns_per_pair_thread", &R::ns_per_pair_thread), key("ns_per_op", &R::ns_per_op),
    nested(&R::whole, key("whole_s", &W::seconds), key("whole_ops", &W::ops), key("ms_per_mop", &W::ms_per_mop)),
    nested(&R::void_whole, key_or_none("void_whole_s", &W::seconds), key_or_none("void_ms_per_mop", &W::ms_per_mop)),
    key_or_none("void_ns_per_op", &R::void_ns_per_op), key_or_none("ns_per_op_net", &R::ns_per_op_net),
    key_or_none("ns_per_pair_net", &R::ns_per_pair_net), key_or_none("ms_per_mop_net", &R::ms_per_mop_net),
    chunk_keys(&R::chunk_ns), key("peak_requested_bytes", &R::peak_requested_bytes),
    key("peak_requested_bytes_bound", &R::peak_requested_bytes_bound), key("live_bytes_end", &R::live_bytes_end),
    key("live_blocks_end", &R::live_blocks_end), key("bytes_touched", &R::bytes_touched),
    key("bytes_written", &R::bytes_written), key("bytes_read", &R::bytes_read), key("checksum", &R::checksum),
    key("mismatches", &mismatches), key("counters", &R::counters));

// A vector as a numpy array (the distributions are long).
template <class Vector>
auto as_array(Vector alloctest::Distributions::*member) {
    return [member](const alloctest::Distributions& d) {
        const auto& values = d.*member;
        py::array_t<typename Vector::value_type> out(static_cast<py::ssize_t>(values.size()));
        std::copy(values.begin(), values.end(), out.mutable_data());
        return out;
    };
}

using D = alloctest::Distributions;
const auto kDistributionKeys = std::make_tuple(
    key("slot_counts", as_array(&D::slot_counts)), key("rank_counts", as_array(&D::rank_counts)),
    key("sizes", as_array(&D::sizes)), key_or_none("pareto_exponent", &D::pareto_exponent),
    key("mean_size", &D::mean_size), key("hot_share", &D::hot_share), key("hot_slots", &D::hot_slots));

py::dict distributions(int64_t draws, int64_t slots, int64_t min_size, int64_t max_size, uint64_t seed,
                       const std::string& size_law, const std::string& slot_law, const std::string& hot_slots) {
    if (draws < 0) throw py::value_error("n_draws must be >= 0");
    // Only what the unsigned casts below need; alloctest::distributions checks the laws' own limits.
    if (slots < 0) throw py::value_error("slots must be >= 0, got " + std::to_string(slots));
    if (min_size < 1 || max_size < min_size || max_size > (int64_t{1} << 30))
        throw py::value_error("need 1 <= min_size <= max_size <= 2^30");
    D d;
    {
        py::gil_scoped_release no_gil;
        d = alloctest::distributions(static_cast<uint64_t>(draws), static_cast<uint64_t>(slots),
                                     static_cast<uint32_t>(min_size), static_cast<uint32_t>(max_size), seed,
                                     alloctest::LawChoice{size_law, slot_law, hot_slots});
    }
    return to_dict(d, kDistributionKeys);
}

void bind(py::module_& m) {
    using P = alloctest::Params;
    bind_workload(m, WorkloadBinding{"alloctest", kDoc, &alloctest::validate, &alloctest::run}, kResultKeys,
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

[[maybe_unused]] const bool registered = register_binding("alloctest", &bind);

}  // namespace
}  // namespace hb
