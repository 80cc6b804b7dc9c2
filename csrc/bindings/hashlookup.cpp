#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/hashlookup.h"

namespace py = pybind11;

namespace hb {
namespace {

py::dict result_to_dict(const hashlookup::Result& r) {
    py::dict out;
    out["phases"] = phases_to_dict(r.phases);
    out["keys"] = r.keys;
    out["set_size"] = r.set_size;
    out["lookups"] = r.lookups;
    out["found"] = r.found;
    out["checksum"] = r.checksum;
    out["ns_per_lookup"] = r.ns_per_lookup;
    put_chunk_stats(out, r.chunk_ns);
    out["threads"] = r.threads;
    out["set_kind"] = r.set_kind;
    out["hash"] = r.hash;
    out["capacity"] = r.capacity;
    out["counters"] = counters_to_dict(r.counters);
    return out;
}

py::list generate_keys(int64_t n, uint64_t seed, int64_t key_min, int64_t key_max) {
    if (n < 0) throw py::value_error("n must be >= 0");
    if (key_min < 1 || key_min > key_max) throw py::value_error("need 1 <= key_min <= key_max");
    std::vector<std::string> keys;
    {
        py::gil_scoped_release no_gil;
        keys = hashlookup::generate_keys(static_cast<uint64_t>(n), seed, key_min, key_max);
    }
    py::list out(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) out[i] = py::str(keys[i]);
    return out;
}

py::dict membership(const std::string& set_kind, const std::string& hash, const std::vector<std::string>& keys,
                    const std::vector<std::string>& queries) {
    hashlookup::Membership m;
    {
        py::gil_scoped_release no_gil;
        m = hashlookup::membership(set_kind, hash, keys, queries);
    }
    py::dict out;
    out["set_size"] = m.set_size;
    out["found"] = py::cast(m.found);
    return out;
}

}  // namespace

void bind_hashlookup(py::module_& m) {
    using P = hashlookup::Params;
    bind_workload(m,
                  WorkloadBinding<P, hashlookup::Result>{
                      "hashlookup",
                      "Random string keys in a hash set; time point lookups only (phases generate, insert, "
                      "shuffle, lookup).",
                      &hashlookup::validate, &hashlookup::run, &result_to_dict},
                  field("keys", &P::keys), field("set_kind", &P::set_kind), field("hash", &P::hash),
                  field("threads", &P::threads),
                  field("lookups", &P::lookups), field("key_min", &P::key_min), field("key_max", &P::key_max),
                  field("order", &P::order), field("zipf_s", &P::zipf_s), field("chunks", &P::chunks),
                  field("seed", &P::seed));
    m.def("generate_keys", &generate_keys, py::arg("n"), py::arg("seed") = 1, py::arg("key_min") = 10,
          py::arg("key_max") = 19, "The keys hashlookup() generates for the same arguments, before shuffling.");
    m.def("hashlookup_membership", &membership, py::arg("set_kind"), py::arg("hash"), py::arg("keys"),
          py::arg("queries"),
          "For tests: insert keys into a set of that kind and hash, then report set_size and which queries it finds.");
}

namespace {
[[maybe_unused]] const bool registered = register_binding("hashlookup", &bind_hashlookup);
}  // namespace

}  // namespace hb
