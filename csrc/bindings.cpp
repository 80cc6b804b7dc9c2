// pybind11 glue only: each workload registers its own functions from csrc/bindings/<workload>.cpp.
#include <pybind11/pybind11.h>

namespace py = pybind11;

namespace hb {
void bind_common(py::module_& m);
void bind_hashlookup(py::module_& m);
void bind_alloctest(py::module_& m);
void bind_faultstorm(py::module_& m);
// HB-BIND-DECLS (one line per workload above this marker)
}  // namespace hb

PYBIND11_MODULE(_core, m) {
    m.doc() = "hugebench timed workloads (C++)";
    hb::bind_common(m);
    hb::bind_hashlookup(m);
    hb::bind_alloctest(m);
    hb::bind_faultstorm(m);
    // HB-BIND-CALLS (one line per workload above this marker)
}
