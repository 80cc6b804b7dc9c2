#include "bindings/common.h"

#include <linux/perf_event.h>

#include <algorithm>
#include <stdexcept>
#include <string>
#include <utility>

#ifndef HB_BUILD_TYPE
#define HB_BUILD_TYPE "unknown"
#endif
#ifndef HB_CXX_COMPILER
#define HB_CXX_COMPILER "unknown"
#endif
#ifndef HB_CXX_FLAGS
#define HB_CXX_FLAGS ""
#endif

namespace hb {

std::vector<CounterSpec> counter_specs(const std::vector<CounterTuple>& tuples) {
    std::vector<CounterSpec> specs;
    specs.reserve(tuples.size());
    for (const auto& [label, type, config, config1] : tuples) specs.push_back({label, type, config, config1});
    return specs;
}

py::dict registry_defaults(const char* function) {
    const py::dict registry = py::module_::import("hugebench.workloads").attr("WORKLOADS");
    for (const auto& item : registry) {
        const py::object workload = py::reinterpret_borrow<py::object>(item.second);
        if (workload.attr("function").cast<std::string>() != function) continue;
        py::dict defaults;
        for (const auto& [name, param] : workload.attr("params").cast<py::dict>()) defaults[name] = param.attr("default");
        return defaults;
    }
    throw std::runtime_error(std::string("hugebench/workloads.py: no workload has function='") + function +
                             "', which csrc/bindings binds");
}

py::arg_v registry_arg(const py::dict& defaults, const char* function, const char* name) {
    if (!defaults.contains(name))
        throw std::runtime_error(std::string("hugebench/workloads.py: the '") + function +
                                 "' entry has no param '" + name + "', which csrc/bindings binds; add it there");
    return py::arg(name) = py::reinterpret_borrow<py::object>(defaults[name]);
}

Hook python_hook(const py::object& callable) {
    if (callable.is_none()) return {};
    if (!PyCallable_Check(callable.ptr())) throw py::type_error("hook must be callable or None");
    const py::handle borrowed = callable;
    return [borrowed](const char* phase, const char* edge) {
        py::gil_scoped_acquire gil;
        borrowed(phase, edge);
    };
}

namespace {

py::list split_list(const std::string& text) {
    py::list out;
    for (size_t start = 0; start < text.size();) {
        const size_t end = std::min(text.find(',', start), text.size());
        out.append(text.substr(start, end - start));
        start = end + 1;
    }
    return out;
}

py::dict build_info() {
    const std::string build_type = HB_BUILD_TYPE;
#ifdef NDEBUG
    const bool asserts_on = false;
#else
    const bool asserts_on = true;
#endif
    py::dict info;
    info["build_type"] = build_type;
    info["compiler"] = HB_CXX_COMPILER;
    info["cxx_flags"] = HB_CXX_FLAGS;
    // The C++ library changes what the hash-set kinds measure: libstdc++'s std::string is 32 bytes (two
    // slots a cache line), libc++'s (the binary wheel's, .ci/build-wheel) 24.
#if defined(_LIBCPP_VERSION)
    info["cxx_stdlib"] = "libc++ " + std::to_string(_LIBCPP_VERSION);
#elif defined(__GLIBCXX__)
    info["cxx_stdlib"] = "libstdc++ " + std::to_string(__GLIBCXX__);
#else
    info["cxx_stdlib"] = "unknown";
#endif
    info["string_bytes"] = sizeof(std::string);
    info["debug"] = asserts_on || build_type == "Debug";
    info["set_kinds"] = split_list(HB_SET_KINDS);  // hashlookup's set kinds and hashes compiled in
    info["hashes"] = split_list(HB_HASHES);
    return info;
}

// perf_event_open(2)'s constants as _core attributes, each name written once.
#define HB_PERF_CONSTANT(name) {#name, static_cast<int>(name)}
const std::pair<const char*, int> kPerfConstants[] = {
    HB_PERF_CONSTANT(PERF_TYPE_HARDWARE), HB_PERF_CONSTANT(PERF_TYPE_SOFTWARE),
    HB_PERF_CONSTANT(PERF_TYPE_TRACEPOINT), HB_PERF_CONSTANT(PERF_TYPE_HW_CACHE), HB_PERF_CONSTANT(PERF_TYPE_RAW),
    HB_PERF_CONSTANT(PERF_COUNT_HW_CPU_CYCLES), HB_PERF_CONSTANT(PERF_COUNT_HW_INSTRUCTIONS),
    HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_REFERENCES), HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_MISSES),
    HB_PERF_CONSTANT(PERF_COUNT_HW_BRANCH_INSTRUCTIONS), HB_PERF_CONSTANT(PERF_COUNT_HW_BRANCH_MISSES),
    HB_PERF_CONSTANT(PERF_COUNT_HW_REF_CPU_CYCLES),
    HB_PERF_CONSTANT(PERF_COUNT_SW_CPU_CLOCK), HB_PERF_CONSTANT(PERF_COUNT_SW_TASK_CLOCK),
    HB_PERF_CONSTANT(PERF_COUNT_SW_PAGE_FAULTS), HB_PERF_CONSTANT(PERF_COUNT_SW_CONTEXT_SWITCHES),
    HB_PERF_CONSTANT(PERF_COUNT_SW_CPU_MIGRATIONS), HB_PERF_CONSTANT(PERF_COUNT_SW_PAGE_FAULTS_MIN),
    HB_PERF_CONSTANT(PERF_COUNT_SW_PAGE_FAULTS_MAJ),
    HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_L1D), HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_L1I),
    HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_LL), HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_DTLB),
    HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_ITLB), HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_OP_READ),
    HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_OP_WRITE), HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_RESULT_ACCESS),
    HB_PERF_CONSTANT(PERF_COUNT_HW_CACHE_RESULT_MISS),
};
#undef HB_PERF_CONSTANT

void bind_perf_constants(py::module_& m) {
    for (const auto& [name, value] : kPerfConstants) m.attr(name) = value;

    // The config encoding of PERF_TYPE_HW_CACHE events documented in perf_event_open(2).
    m.def("perf_hw_cache_config", [](int cache, int op, int result) {
        return static_cast<uint64_t>(cache) | (static_cast<uint64_t>(op) << 8) | (static_cast<uint64_t>(result) << 16);
    }, py::arg("cache"), py::arg("op"), py::arg("result"),
          "config value for a PERF_TYPE_HW_CACHE event: cache | op << 8 | result << 16");
}

std::vector<std::pair<std::string, BindFunction>>& registered_bindings() {
    static std::vector<std::pair<std::string, BindFunction>> bindings;  // built before main, read at import
    return bindings;
}

void bind_common(py::module_& m) {
    m.def("build_info", &build_info,
          "How this extension was compiled: build_type, compiler, cxx_flags, debug (True: do not report numbers), "
          "set_kinds and hashes (hashlookup's, as found by CMake).");
    bind_perf_constants(m);
}

[[maybe_unused]] const bool registered = register_binding("common", &bind_common);

}  // namespace

bool register_binding(const char* name, BindFunction bind) {
    registered_bindings().emplace_back(name, bind);
    return true;
}

void bind_registered(py::module_& m) {
    auto bindings = registered_bindings();
    // The objects' load order is unspecified; name order keeps _core's function order stable.
    std::sort(bindings.begin(), bindings.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (const auto& [name, bind] : bindings) bind(m);
}

}  // namespace hb
