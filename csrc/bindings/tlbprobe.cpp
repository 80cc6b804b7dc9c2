#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/tlbprobe.h"

namespace py = pybind11;

namespace hb {
namespace {

py::dict result_to_dict(const tlbprobe::Result& r) {
    py::dict out;
    out["phases"] = phases_to_dict(r.phases);
    out["backing"] = r.backing;
    out["pattern"] = r.pattern;
    out["map_flags"] = r.map_flags;
    out["working_set_bytes"] = r.working_set_bytes;
    out["mapped_bytes"] = r.mapped_bytes;
    out["mapping_page_size"] = r.mapping_page_size;
    out["nodes"] = r.nodes;
    out["node_stride_bytes"] = r.node_stride_bytes;
    out["chains"] = r.chains;
    out["accesses"] = r.accesses;
    out["ns_per_access"] = r.ns_per_access;
    out["chunks"] = r.chunks;
    put_chunk_stats(out, r.chunk_ns);
    out["checksum"] = r.checksum;
    out["counters"] = counters_to_dict(r.counters);
    return out;
}

}  // namespace

void bind_tlbprobe(py::module_& m) {
    using P = tlbprobe::Params;
    bind_workload(m,
                  WorkloadBinding<P, tlbprobe::Result>{
                      "tlbprobe",
                      "Dependent loads along one random cycle of nodes over a buffer of the given page size "
                      "(phases populate, build, chase).",
                      &tlbprobe::validate, &tlbprobe::run, &result_to_dict},
                  field("backing", &P::backing), field("working_set_bytes", &P::working_set_bytes),
                  field("pattern", &P::pattern), field("chains", &P::chains), field("accesses", &P::accesses),
                  field("max_nodes", &P::max_nodes), field("chunks", &P::chunks), field("seed", &P::seed));
    m.def("tlbprobe_cycle", &tlbprobe::cycle, py::arg("nodes"), py::arg("seed") = 1,
          "next[i] of the cycle tlbprobe() links for this many nodes and seed (one cycle through all).");
}

namespace {
[[maybe_unused]] const bool registered = register_binding("tlbprobe", &bind_tlbprobe);
}  // namespace

}  // namespace hb
