#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/hashsets.h"

namespace hb {
namespace {

// _core.hashsets's docstring.
constexpr const char* kDoc =
    "Several set kinds in one process from the same keys; rounds of lookups, one chunk per kind each (phases "
    "generate, insert.<kind>..., shuffle, lookup).";

using K = hashsets::KindResult;
const auto kKindKeys = std::make_tuple(
    key("insert_s", &K::insert_s), key("set_size", &K::set_size), key("capacity", &K::capacity),
    key("lookups", &K::lookups), key("found", &K::found), key("checksum", &K::checksum),
    key("ns_per_lookup", &K::ns_per_lookup), key("round_ns", &K::round_ns), key("counters", &K::counters));

using R = hashsets::Result;

// In set_kinds order: the first is the base of the ratios.
py::list kind_names(const R& r) {
    py::list kinds;
    for (const auto& kind : r.kinds) kinds.append(kind.set_kind);
    return kinds;
}

// kind -> its keys; the worker flattens it to set.<kind>.<key> columns.
py::dict per_kind(const R& r) {
    py::dict sets;
    for (const auto& kind : r.kinds) sets[py::str(kind.set_kind)] = to_dict(kind, kKindKeys);
    return sets;
}

const auto kResultKeys = std::make_tuple(key("phases", &R::phases), key("keys", &R::keys), key("hash", &R::hash),
                                         key("rounds", &R::rounds), key("kinds", &kind_names), key("set", &per_kind));

void bind(py::module_& m) {
    using P = hashsets::Params;
    bind_workload(m, WorkloadBinding{"hashsets", kDoc, &hashsets::validate, &hashsets::run}, kResultKeys,
                  field("keys", &P::keys), field("set_kinds", &P::set_kinds), field("hash", &P::hash),
                  field("lookups", &P::lookups), field("key_min", &P::key_min), field("key_max", &P::key_max),
                  field("rounds", &P::rounds), field("build_order", &P::build_order), field("seed", &P::seed));
}

[[maybe_unused]] const bool registered = register_binding("hashsets", &bind);

}  // namespace
}  // namespace hb
