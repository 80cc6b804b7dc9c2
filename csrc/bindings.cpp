// pybind11 glue only: each csrc/bindings/<name>.cpp registers its own functions (see bindings/common.h).
#include <pybind11/pybind11.h>

#include "bindings/common.h"

PYBIND11_MODULE(_core, m) {
    m.doc() = "hugebench timed workloads (C++)";
    hb::bind_registered(m);
}
