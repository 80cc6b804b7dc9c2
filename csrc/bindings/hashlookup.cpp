#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/hashlookup.h"

namespace py = pybind11;

namespace hb {
namespace {

py::dict result_to_dict(const hashlookup::Result& r) {
    py::dict phases;
    for (const auto& [name, seconds] : r.phases) phases[py::str(name)] = seconds;
    py::dict out;
    out["phases"] = phases;
    out["keys"] = r.keys;
    out["set_size"] = r.set_size;
    out["lookups"] = r.lookups;
    out["found"] = r.found;
    out["checksum"] = r.checksum;
    out["ns_per_lookup"] = r.ns_per_lookup;
    out["chunk_ns_median"] = r.chunk_ns_median;
    out["chunk_ns_p10"] = r.chunk_ns_p10;
    out["chunk_ns_p90"] = r.chunk_ns_p90;
    out["threads"] = r.threads;
    out["set_kind"] = r.set_kind;
    out["capacity"] = r.capacity;
    out["counters"] = counters_to_dict(r.counters);
    return out;
}

py::dict run_hashlookup(int64_t keys, const std::string& set_kind, int64_t threads, int64_t lookups,
                        int64_t key_min, int64_t key_max, const std::string& order, double zipf_s,
                        int64_t chunks, uint64_t seed, const std::vector<CounterTuple>& counters,
                        const py::object& hook) {
    hashlookup::Params params;
    params.keys = keys;
    params.set_kind = set_kind;
    params.threads = threads;
    params.lookups = lookups;
    params.key_min = key_min;
    params.key_max = key_max;
    params.order = order;
    params.zipf_s = zipf_s;
    params.chunks = chunks;
    params.seed = seed;
    params.counters = counter_specs(counters);
    hashlookup::validate(params);  // ValueError before any work
    const Hook cpp_hook = python_hook(hook);
    hashlookup::Result result;
    {
        py::gil_scoped_release no_gil;  // the hook takes it back only for its own calls
        result = hashlookup::run(params, cpp_hook);
    }
    return result_to_dict(result);
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

}  // namespace

void bind_hashlookup(py::module_& m) {
    m.def("hashlookup", &run_hashlookup, py::kw_only(), py::arg("keys"), py::arg("set_kind") = "flat",
          py::arg("threads") = 1, py::arg("lookups") = 0, py::arg("key_min") = 10, py::arg("key_max") = 19,
          py::arg("order") = "uniform", py::arg("zipf_s") = 0.99, py::arg("chunks") = 64, py::arg("seed") = 1,
          py::arg("counters") = std::vector<CounterTuple>{}, py::arg("hook") = py::none(),
          "Random string keys in a hash set; time point lookups only (phases generate, insert, shuffle, lookup).");
    m.def("generate_keys", &generate_keys, py::arg("n"), py::arg("seed") = 1, py::arg("key_min") = 10,
          py::arg("key_max") = 19, "The keys hashlookup() generates for the same arguments, before shuffling.");
}

}  // namespace hb
