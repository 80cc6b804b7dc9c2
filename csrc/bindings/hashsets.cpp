#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/hashsets.h"

namespace py = pybind11;

namespace hb {
namespace {

py::dict result_to_dict(const hashsets::Result& r) {
    py::dict out;
    out["phases"] = phases_to_dict(r.phases);
    out["keys"] = r.keys;
    out["hash"] = r.hash;
    out["rounds"] = r.rounds;
    py::list kinds;
    for (const auto& kind : r.kinds) kinds.append(kind.set_kind);
    out["kinds"] = kinds;  // in set_kinds order: the first is the base of the ratios
    py::dict sets;
    for (const auto& kind : r.kinds) {
        py::dict one;
        one["insert_s"] = kind.insert_s;
        one["set_size"] = kind.set_size;
        one["capacity"] = kind.capacity;
        one["lookups"] = kind.lookups;
        one["found"] = kind.found;
        one["checksum"] = kind.checksum;
        one["ns_per_lookup"] = kind.ns_per_lookup;
        one["round_ns"] = py::cast(kind.round_ns);
        one["counters"] = counters_to_dict(kind.counters);
        sets[py::str(kind.set_kind)] = one;
    }
    out["set"] = sets;  // the worker flattens it to set.<kind>.<key> columns
    return out;
}

}  // namespace

void bind_hashsets(py::module_& m) {
    using P = hashsets::Params;
    bind_workload(m,
                  WorkloadBinding<P, hashsets::Result>{
                      "hashsets",
                      "Several set kinds in one process from the same keys; rounds of lookups, one chunk per kind "
                      "each (phases generate, insert.<kind>..., shuffle, lookup).",
                      &hashsets::validate, &hashsets::run, &result_to_dict},
                  field("keys", &P::keys), field("set_kinds", &P::set_kinds), field("hash", &P::hash),
                  field("lookups", &P::lookups), field("key_min", &P::key_min), field("key_max", &P::key_max),
                  field("rounds", &P::rounds), field("build_order", &P::build_order), field("seed", &P::seed));
}

namespace {
[[maybe_unused]] const bool registered = register_binding("hashsets", &bind_hashsets);
}  // namespace

}  // namespace hb
