#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <optional>

#include "bindings/common.h"
#include "workloads/faultstorm.h"

namespace hb {
namespace {

// _core.faultstorm's docstring.
constexpr const char* kDoc =
    "Threads hit a buffer at random pages; where the page faults land depends on the backing (phases obtain, "
    "[first_touch], steady, release).";

using R = faultstorm::Result;
using T = faultstorm::ThreadTotals;

// Not measured outside requests mode: None, not a number.
template <double R::*member>
std::optional<double> request_stat(const R& r) {
    return r.requests > 0 ? std::optional<double>(r.*member) : std::nullopt;
}

// Share of the workers' CPU time spent in the kernel (faults); None when the clocks saw no time at all.
std::optional<double> stime_share(const T& t) {
    const double busy = t.utime_s + t.stime_s;
    return busy > 0 ? std::optional<double>(t.stime_s / busy) : std::nullopt;
}

const auto kResultKeys = std::make_tuple(
    key("phases", &R::phases), key("backing", &R::backing), key("map_flags", &R::map_flags),
    key("buffer_bytes", &R::buffer_bytes), key("page_size", &R::page_size),
    key("mapping_page_size", &R::mapping_page_size), key("pages", &R::pages), key("threads", &R::threads),
    key("op_unit", &R::op_unit), key("ops", &R::ops), key("requests", &R::requests),
    key("pages_per_request", &R::pages_per_request), key("ns_per_op", &R::ns_per_op), key("chunks", &R::chunks),
    chunk_keys(&R::chunk_ns), key("request_ns_p50", &request_stat<&R::request_ns_p50>),
    key("request_ns_p90", &request_stat<&R::request_ns_p90>), key("request_ns_p99", &request_stat<&R::request_ns_p99>),
    key("request_ns_max", &request_stat<&R::request_ns_max>), key("checksum", &R::checksum),
    key("mismatches", &R::mismatches), key("counters", &R::counters),
    nested(&R::steady_thread, key("steady_thread_minflt", &T::minflt), key("steady_thread_majflt", &T::majflt),
           key("steady_thread_utime_s", &T::utime_s), key("steady_thread_stime_s", &T::stime_s),
           key("steady_thread_cpu_s", &T::cpu_s), key("steady_thread_wall_max_s", &T::wall_max_s),
           key("steady_thread_stime_share", &stime_share)));

using Probe = faultstorm::Probe;
const auto kProbeKeys = std::make_tuple(
    key("handle", &Probe::handle), key("address", &Probe::address), key("length", &Probe::length),
    key("mapped_bytes", &Probe::mapped_bytes), key("mapping_page_size", &Probe::mapping_page_size),
    key("map_flags", &Probe::map_flags));

py::dict probe(const std::string& backing, uint64_t buffer_bytes) {
    return to_dict(without_gil([&] { return faultstorm::probe(backing, buffer_bytes); }), kProbeKeys);
}

void bind(py::module_& m) {
    using P = faultstorm::Params;
    bind_workload(m, WorkloadBinding{"faultstorm", kDoc, &faultstorm::validate, &faultstorm::run}, kResultKeys,
                  field("backing", &P::backing), field("buffer_bytes", &P::buffer_bytes),
                  field("threads", &P::threads), field("ops_per_thread", &P::ops_per_thread),
                  field("write_ratio", &P::write_ratio), field("first_touch", &P::first_touch),
                  field("requests_per_thread", &P::requests_per_thread), field("request_bytes", &P::request_bytes),
                  field("chunks", &P::chunks), field("seed", &P::seed));
    m.def("faultstorm_probe", &probe, py::arg("backing"), py::arg("buffer_bytes"),
          "Obtain a buffer as faultstorm() would, write every page once, keep it until faultstorm_release.");
    m.def("faultstorm_release", &faultstorm::probe_release, py::arg("handle"),
          "Give back a buffer of faultstorm_probe.");
}

[[maybe_unused]] const bool registered = register_binding("faultstorm", &bind);

}  // namespace
}  // namespace hb
