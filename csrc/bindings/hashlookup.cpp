#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include "bindings/common.h"
#include "workloads/hashlookup.h"

namespace hb {
namespace {

// _core.hashlookup's docstring.
constexpr const char* kDoc =
    "Random string keys in a hash set; time point lookups only (phases generate, insert, shuffle, lookup).";

using R = hashlookup::Result;
const auto kResultKeys = std::make_tuple(
    key("phases", &R::phases), key("keys", &R::keys), key("set_size", &R::set_size), key("lookups", &R::lookups),
    key("found", &R::found), key("checksum", &R::checksum), key("ns_per_lookup", &R::ns_per_lookup),
    chunk_keys(&R::chunk_ns), key("threads", &R::threads), key("set_kind", &R::set_kind), key("hash", &R::hash),
    key("capacity", &R::capacity), key("counters", &R::counters));

using Membership = hashlookup::Membership;
const auto kMembershipKeys = std::make_tuple(key("set_size", &Membership::set_size), key("found", &Membership::found));

py::list to_list(const std::vector<std::string>& keys) {
    py::list out(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) out[i] = py::str(keys[i]);
    return out;
}

py::list generate_keys(int64_t n, uint64_t seed, int64_t key_min, int64_t key_max, unsigned threads) {
    if (n < 0) throw py::value_error("n must be >= 0");
    if (key_min < 1 || key_min > key_max) throw py::value_error("need 1 <= key_min <= key_max");
    std::vector<std::string> keys;
    {
        py::gil_scoped_release no_gil;
        keys = hashlookup::generate_keys(static_cast<uint64_t>(n), seed, key_min, key_max, threads);
    }
    return to_list(keys);
}

py::list uniform_queries(int64_t n, int64_t lookups, uint64_t seed, int64_t key_min, int64_t key_max) {
    if (n < 1 || lookups < 0) throw py::value_error("need n >= 1 and lookups >= 0");
    std::vector<std::string> queries;
    {
        py::gil_scoped_release no_gil;
        queries = hashlookup::uniform_queries(static_cast<uint64_t>(n), static_cast<uint64_t>(lookups), seed,
                                              key_min, key_max);
    }
    return to_list(queries);
}

py::dict membership(const std::string& set_kind, const std::string& hash, const std::vector<std::string>& keys,
                    const std::vector<std::string>& queries) {
    Membership m;
    {
        py::gil_scoped_release no_gil;
        m = hashlookup::membership(set_kind, hash, keys, queries);
    }
    return to_dict(m, kMembershipKeys);
}

void bind(py::module_& m) {
    using P = hashlookup::Params;
    bind_workload(m, WorkloadBinding{"hashlookup", kDoc, &hashlookup::validate, &hashlookup::run}, kResultKeys,
                  field("keys", &P::keys), field("set_kind", &P::set_kind), field("hash", &P::hash),
                  field("threads", &P::threads), field("lookups", &P::lookups), field("key_min", &P::key_min),
                  field("key_max", &P::key_max), field("order", &P::order), field("zipf_s", &P::zipf_s),
                  field("chunks", &P::chunks), field("seed", &P::seed), field("teardown", &P::teardown));
    m.def("generate_keys", &generate_keys, py::arg("n"), py::arg("seed") = 1, py::arg("key_min") = 10,
          py::arg("key_max") = 19, py::arg("threads") = 0,
          "The keys hashlookup() generates for the same arguments, before shuffling; their letters written on "
          "`threads` threads (0: every core this process may use), the same keys for any count.");
    m.def("hashlookup_queries", &uniform_queries, py::arg("n"), py::arg("lookups"), py::arg("seed") = 1,
          py::arg("key_min") = 10, py::arg("key_max") = 19,
          "For tests: the keys hashlookup() looks up in the uniform order, in order (lookups < n: a seeded "
          "uniform sample of the n keys without replacement; 0: every key once).");
    m.def("hashlookup_membership", &membership, py::arg("set_kind"), py::arg("hash"), py::arg("keys"),
          py::arg("queries"),
          "For tests: insert keys into a set of that kind and hash, then report set_size and which queries it finds.");
}

[[maybe_unused]] const bool registered = register_binding("hashlookup", &bind);

}  // namespace
}  // namespace hb
