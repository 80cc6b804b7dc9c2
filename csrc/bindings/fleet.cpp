#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/fleet.h"
#include "workloads/fleet_params.h"

namespace hb {
namespace {

// _core.fleet's docstring.
constexpr const char* kDoc =
    "A request loop over a live object set (Temeraire's fleet view): temporaries, K lookups, R replacements per "
    "request. Phases grow, peak, shrink, churn, teardown; hook(phase, 'sample') every sample_interval_s during "
    "peak, shrink and churn.";

using R = fleet::Result;
const auto kResultKeys = std::make_tuple(
    key("phases", &R::phases), key("threads", &R::threads), key("mean_size", &R::mean_size),
    key("requests", &R::requests), key("requests_peak", &R::requests_peak), key("requests_churn", &R::requests_churn),
    key("steady_s", &R::steady_s), key("requests_per_s", &R::requests_per_s),
    key("request_ns_mean", &R::request_ns_mean), key_or_none("request_ns_p50", &R::request_ns_p50),
    key_or_none("request_ns_p90", &R::request_ns_p90), key_or_none("request_ns_p99", &R::request_ns_p99),
    key_or_none("request_ns_p999", &R::request_ns_p999), chunk_keys(&R::chunk_ns), key("mallocs", &R::mallocs),
    key("frees", &R::frees), key("steady_mallocs", &R::steady_mallocs), key("steady_frees", &R::steady_frees),
    key("lookups_done", &R::lookups), key("replacements_done", &R::replacements),
    key("temporaries_done", &R::temporaries), key("alloc_calls", &R::alloc_calls),
    key("alloc_calls_timed", &R::alloc_calls_timed), key_or_none("alloc_time_s", &R::alloc_time_s),
    key_or_none("alloc_time_share", &R::alloc_time_share), key("alloc_clock_overhead_ns", &R::alloc_clock_overhead_ns),
    key("tsc_ghz", &R::tsc_ghz), key("objects_peak", &R::objects_peak),
    key("objects_after_shrink", &R::objects_after_shrink), key("peak_live_bytes", &R::peak_live_bytes),
    key("live_bytes_after_shrink", &R::live_bytes_after_shrink), key("live_bytes_end", &R::live_bytes_end),
    key("series_t_s", &R::series_t_s), key("series_phase", &R::series_phase),
    key("series_live_bytes", &R::series_live_bytes), key("series_requests", &R::series_requests),
    key("checksum", &R::checksum), key("mismatches", &R::mismatches), key("counters", &R::counters));

void bind(py::module_& m) {
    using P = fleet::Params;
    bind_workload(m, WorkloadBinding{"fleet", kDoc, &fleet::validate, &fleet::run}, kResultKeys,
                  field("threads", &P::threads), field("objects", &P::objects),
                  field("size_mix", &P::size_mix), field("lookups", &P::lookups),
                  field("replacements", &P::replacements), field("temporaries", &P::temporaries),
                  field("temp_max_bytes", &P::temp_max_bytes), field("duration_s", &P::duration_s),
                  field("peak_share", &P::peak_share), field("shrink_fraction", &P::shrink_fraction),
                  field("alloc_sample_every", &P::alloc_sample_every),
                  field("sample_interval_s", &P::sample_interval_s), field("chunks", &P::chunks),
                  field("seed", &P::seed));
    m.def("fleet_size_mean", [](const std::string& mix) { return fleet::mean_size(fleet::parse_size_mix(mix)); },
          py::arg("size_mix"), "Mean object size of a size_mix string (ValueError when it does not parse).");
}

[[maybe_unused]] const bool registered = register_binding("fleet", &bind);

}  // namespace
}  // namespace hb
