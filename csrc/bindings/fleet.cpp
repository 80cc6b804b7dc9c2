#include <cmath>

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/fleet.h"

namespace py = pybind11;

namespace hb {
namespace {

py::dict result_to_dict(const fleet::Result& r) {
    py::dict out;
    out["phases"] = phases_to_dict(r.phases);
    out["threads"] = r.threads;
    out["mean_size"] = r.mean_size;
    out["requests"] = r.requests;
    out["requests_peak"] = r.requests_peak;
    out["requests_churn"] = r.requests_churn;
    out["steady_s"] = r.steady_s;
    out["requests_per_s"] = r.requests_per_s;
    out["request_ns_mean"] = r.request_ns_mean;
    out["request_ns_p50"] = number_or_none(r.request_ns_p50);
    out["request_ns_p90"] = number_or_none(r.request_ns_p90);
    out["request_ns_p99"] = number_or_none(r.request_ns_p99);
    out["request_ns_p999"] = number_or_none(r.request_ns_p999);
    put_chunk_stats(out, r.chunk_ns);
    out["mallocs"] = r.mallocs;
    out["frees"] = r.frees;
    out["steady_mallocs"] = r.steady_mallocs;
    out["steady_frees"] = r.steady_frees;
    out["lookups_done"] = r.lookups;
    out["replacements_done"] = r.replacements;
    out["temporaries_done"] = r.temporaries;
    out["alloc_calls"] = r.alloc_calls;
    out["alloc_calls_timed"] = r.alloc_calls_timed;
    out["alloc_time_s"] = number_or_none(r.alloc_time_s);
    out["alloc_time_share"] = number_or_none(r.alloc_time_share);
    out["alloc_clock_overhead_ns"] = r.alloc_clock_overhead_ns;
    out["tsc_ghz"] = r.tsc_ghz;
    out["objects_peak"] = r.objects_peak;
    out["objects_after_shrink"] = r.objects_after_shrink;
    out["peak_live_bytes"] = r.peak_live_bytes;
    out["live_bytes_after_shrink"] = r.live_bytes_after_shrink;
    out["live_bytes_end"] = r.live_bytes_end;
    out["series_t_s"] = r.series_t_s;
    out["series_phase"] = r.series_phase;
    out["series_live_bytes"] = r.series_live_bytes;
    out["series_requests"] = r.series_requests;
    out["checksum"] = r.checksum;
    out["mismatches"] = r.mismatches;
    out["counters"] = counters_to_dict(r.counters);
    return out;
}

}  // namespace

void bind_fleet(py::module_& m) {
    using P = fleet::Params;
    bind_workload(m,
                  WorkloadBinding<P, fleet::Result>{
                      "fleet",
                      "A request loop over a live object set (Temeraire's fleet view): temporaries, K lookups, "
                      "R replacements per request. Phases grow, peak, shrink, churn, teardown; "
                      "hook(phase, 'sample') every sample_interval_s during peak, shrink and churn.",
                      &fleet::validate, &fleet::run, &result_to_dict},
                  field("threads", &P::threads), field("objects", &P::objects), field("size_mix", &P::size_mix),
                  field("lookups", &P::lookups), field("replacements", &P::replacements),
                  field("temporaries", &P::temporaries), field("temp_max_bytes", &P::temp_max_bytes),
                  field("duration_s", &P::duration_s), field("peak_share", &P::peak_share),
                  field("shrink_fraction", &P::shrink_fraction), field("alloc_sample_every", &P::alloc_sample_every),
                  field("sample_interval_s", &P::sample_interval_s), field("chunks", &P::chunks),
                  field("seed", &P::seed));
    m.def("fleet_size_mean", [](const std::string& mix) { return fleet::mean_size(fleet::parse_size_mix(mix)); },
          py::arg("size_mix"), "Mean object size of a size_mix string (ValueError when it does not parse).");
}

namespace {
[[maybe_unused]] const bool registered = register_binding("fleet", &bind_fleet);
}  // namespace

}  // namespace hb
