#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/faultstorm.h"

namespace py = pybind11;

namespace hb {
namespace {

py::dict steady_thread_entries(const faultstorm::ThreadTotals& t, py::dict out) {
    out["steady_thread_minflt"] = t.minflt;
    out["steady_thread_majflt"] = t.majflt;
    out["steady_thread_utime_s"] = t.utime_s;
    out["steady_thread_stime_s"] = t.stime_s;
    out["steady_thread_cpu_s"] = t.cpu_s;
    out["steady_thread_wall_max_s"] = t.wall_max_s;
    const double busy = t.utime_s + t.stime_s;
    // Share of the workers' CPU time spent in the kernel (faults); None when the clocks saw no time at all.
    out["steady_thread_stime_share"] = busy > 0 ? py::object(py::float_(t.stime_s / busy)) : py::none();
    return out;
}

py::dict result_to_dict(const faultstorm::Result& r) {
    py::dict out;
    out["phases"] = phases_to_dict(r.phases);
    out["backing"] = r.backing;
    out["map_flags"] = r.map_flags;
    out["buffer_bytes"] = r.buffer_bytes;
    out["page_size"] = r.page_size;
    out["mapping_page_size"] = r.mapping_page_size;
    out["pages"] = r.pages;
    out["threads"] = r.threads;
    out["op_unit"] = r.op_unit;
    out["ops"] = r.ops;
    out["requests"] = r.requests;
    out["pages_per_request"] = r.pages_per_request;
    out["ns_per_op"] = r.ns_per_op;
    out["chunks"] = r.chunks;
    put_chunk_stats(out, r.chunk_ns);
    // Not measured outside requests mode: None, not a number.
    const auto request_stat = [&r](double value) {
        return r.requests > 0 ? py::object(py::float_(value)) : py::none();
    };
    out["request_ns_p50"] = request_stat(r.request_ns_p50);
    out["request_ns_p90"] = request_stat(r.request_ns_p90);
    out["request_ns_p99"] = request_stat(r.request_ns_p99);
    out["request_ns_max"] = request_stat(r.request_ns_max);
    out["checksum"] = r.checksum;
    out["mismatches"] = r.mismatches;
    out["counters"] = counters_to_dict(r.counters);
    return steady_thread_entries(r.steady_thread, out);
}

py::dict probe(const std::string& backing, uint64_t buffer_bytes) {
    faultstorm::Probe p;
    {
        py::gil_scoped_release no_gil;
        p = faultstorm::probe(backing, buffer_bytes);
    }
    py::dict out;
    out["handle"] = p.handle;
    out["address"] = p.address;
    out["length"] = p.length;
    out["mapped_bytes"] = p.mapped_bytes;
    out["mapping_page_size"] = p.mapping_page_size;
    out["map_flags"] = p.map_flags;
    return out;
}

}  // namespace

void bind_faultstorm(py::module_& m) {
    using P = faultstorm::Params;
    bind_workload(m,
                  WorkloadBinding<P, faultstorm::Result>{
                      "faultstorm",
                      "Threads hit a buffer at random pages; where the page faults land depends on the backing "
                      "(phases obtain, [first_touch], steady, release).",
                      &faultstorm::validate, &faultstorm::run, &result_to_dict},
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

namespace {
[[maybe_unused]] const bool registered = register_binding("faultstorm", &bind_faultstorm);
}  // namespace

}  // namespace hb
