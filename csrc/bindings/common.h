// pybind11 glue shared by every workload's bindings: counter specs in, counter readings out, and the
// Python phase hook wrapped so that it can be called from C++ code that runs with the GIL released.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <tuple>
#include <vector>

#include "common/perf_counters.h"
#include "common/phases.h"

namespace hb {

// (label, perf type, config, config1), as passed from Python.
using CounterTuple = std::tuple<std::string, uint32_t, uint64_t, uint64_t>;

std::vector<CounterSpec> counter_specs(const std::vector<CounterTuple>& tuples);

// label -> {value, raw_value, time_enabled_ns, time_running_ns, error}; the numbers are None when error is set.
pybind11::dict counters_to_dict(const std::vector<CounterReading>& readings);

// An empty Hook for None; otherwise a Hook that takes the GIL around each call. `callable` must outlive
// the returned Hook (it is borrowed, so copying the Hook never touches Python reference counts).
Hook python_hook(const pybind11::object& callable);

}  // namespace hb
