#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/tlbprobe.h"

namespace hb {
namespace {

// _core.tlbprobe's docstring.
constexpr const char* kDoc =
    "Dependent loads along one random cycle of nodes over a buffer of the given page size (phases populate, "
    "build, chase).";

using R = tlbprobe::Result;
const auto kResultKeys = std::make_tuple(
    key("phases", &R::phases), key("backing", &R::backing), key("pattern", &R::pattern),
    key("map_flags", &R::map_flags), key("working_set_bytes", &R::working_set_bytes),
    key("mapped_bytes", &R::mapped_bytes), key("mapping_page_size", &R::mapping_page_size), key("nodes", &R::nodes),
    key("node_stride_bytes", &R::node_stride_bytes), key("chains", &R::chains), key("accesses", &R::accesses),
    key("ns_per_access", &R::ns_per_access), key("chunks", &R::chunks), chunk_keys(&R::chunk_ns),
    key("checksum", &R::checksum), key("counters", &R::counters));

void bind(py::module_& m) {
    using P = tlbprobe::Params;
    bind_workload(m, WorkloadBinding{"tlbprobe", kDoc, &tlbprobe::validate, &tlbprobe::run}, kResultKeys,
                  field("backing", &P::backing), field("working_set_bytes", &P::working_set_bytes),
                  field("pattern", &P::pattern), field("chains", &P::chains), field("accesses", &P::accesses),
                  field("max_nodes", &P::max_nodes), field("chunks", &P::chunks), field("seed", &P::seed));
    m.def("tlbprobe_cycle", &tlbprobe::cycle, py::arg("nodes"), py::arg("seed") = 1,
          "next[i] of the cycle tlbprobe() links for this many nodes and seed (one cycle through all).");
}

[[maybe_unused]] const bool registered = register_binding("tlbprobe", &bind);

}  // namespace
}  // namespace hb
