// What belongs here: the pybind11 glue that every workload's binding shares, and nothing that a single
// workload needs. That is the conversions (counter specs in; results out by a table of keys, see
// bindings/result_keys.h), the Python hook wrapped for code that runs without the GIL, bind_workload() —
// the one path by which a workload's run() becomes a _core function — and the registration that lets
// PYBIND11_MODULE find every csrc/bindings/<name>.cpp without a list to edit. A workload's own table of
// result keys and its helper functions for tests (generate_keys, faultstorm_probe, ...) stay in its own
// file; timed code never lives in csrc/bindings/.
//
// Parameter defaults live in ONE place, the Python registry (hugebench/workloads/). A binding names its
// parameters (they must map onto C++ fields) but takes each default from the registry when _core is
// imported; C++ Params carry none. Why not the alternative, "every parameter required": the registry's
// defaults would then apply only on the worker path, and _core.hashlookup(keys=...) called from a test
// or a notebook would need every argument spelled out. Why not generate C++ defaults at build time: the
// build would then run the package's Python, and a registry edit would need a rebuild to take effect.
// tests/core/test_core_signatures.py checks that binding, stub and registry agree on names, order and
// defaults.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "bindings/result_keys.h"
#include "common/perf_counters.h"
#include "common/phases.h"

namespace hb {

// (label, perf type, config, config1), as passed from Python.
using CounterTuple = std::tuple<std::string, uint32_t, uint64_t, uint64_t>;

std::vector<CounterSpec> counter_specs(const std::vector<CounterTuple>& tuples);

// An empty Hook for None; otherwise a Hook that takes the GIL around each call. `callable` must outlive
// the returned Hook (it is borrowed, so copying the Hook never touches Python reference counts).
Hook python_hook(const py::object& callable);

// The default of each parameter of the registry entry whose `function` is `function`, as a dict
// name -> default (import time only). Throws if there is no such entry.
py::dict registry_defaults(const char* function);

// py::arg(name) = the registry's default; throws naming the registry file when it has no such parameter
// (a default cannot be made up here).
py::arg_v registry_arg(const py::dict& defaults, const char* function, const char* name);

// f() run with the GIL released (C++ work that touches no Python object), its result returned.
template <class F>
auto without_gil(F&& f) {
    py::gil_scoped_release no_gil;
    return f();
}

// One workload parameter: its Python keyword and the field of Params it fills.
template <class Params, class T>
struct Field {
    const char* name;
    T Params::*member;
};

template <class Params, class T>
constexpr Field<Params, T> field(const char* name, T Params::*member) {
    return {name, member};
}

template <class Params, class Result>
struct WorkloadBinding {
    const char* function;  // the _core name, = Workload.function in the registry
    const char* doc;
    void (*validate)(const Params&);              // std::invalid_argument -> ValueError, before any work
    Result (*run)(const Params&, const Hook&);    // runs without the GIL
};
template <class Params, class Result>
WorkloadBinding(const char*, const char*, void (*)(const Params&), Result (*)(const Params&, const Hook&))
    -> WorkloadBinding<Params, Result>;

// Defines _core.<function>(*, <fields...>, counters=[], hook=None) -> dict: keyword-only arguments in
// the order given, defaults from the registry; fill Params -> validate -> release the GIL -> run ->
// convert the Result by its table of keys (bindings/result_keys.h).
template <class Params, class Result, class ResultKeys, class... T>
void bind_workload(py::module_& m, const WorkloadBinding<Params, Result>& w, const ResultKeys& result_keys,
                   Field<Params, T>... fields) {
    auto call = [w, result_keys, fields...](const T&... values, const std::vector<CounterTuple>& counters,
                                            const py::object& hook) {
        Params params;
        ((params.*(fields.member) = values), ...);
        params.counters = counter_specs(counters);
        w.validate(params);
        const Hook cpp_hook = python_hook(hook);  // it takes the GIL back only for its own calls
        return to_dict(without_gil([&] { return w.run(params, cpp_hook); }), result_keys);
    };
    const py::dict defaults = registry_defaults(w.function);
    m.def(w.function, call, py::kw_only(), registry_arg(defaults, w.function, fields.name)...,
          py::arg("counters") = std::vector<CounterTuple>{}, py::arg("hook") = py::none(), w.doc);
}

// Each csrc/bindings/<name>.cpp registers its bind function at load time:
//     [[maybe_unused]] const bool registered = register_binding("name", &bind_name);
// PYBIND11_MODULE then calls them all (in name order), so adding a workload edits no shared list.
using BindFunction = void (*)(py::module_&);
bool register_binding(const char* name, BindFunction bind);
void bind_registered(py::module_& m);

}  // namespace hb
