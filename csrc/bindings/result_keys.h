// How a C++ result becomes the dict a workload function returns: its binding lists the result's keys
// once, as a table (a std::tuple) of entries, and to_dict() reads the struct by that table. An entry is
//   key("name", &Result::member)          the member, converted by to_python()
//   key("name", [](const Result& r) {..})  a value worked out from the result (std::optional: None when empty)
//   key_or_none("name", getter)            a double that is NaN when not measured -> None
//   nested(&Result::part, entries...)      the entries of a member struct, at this level (e.g. chunk_keys)
// The dict keeps the table's order. Only binding code runs here, after the workload returned: nothing in a
// timed region.
#pragma once

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <functional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "common/perf_counters.h"
#include "common/timing.h"

namespace hb {

namespace py = pybind11;  // for every file of csrc/bindings/

// label -> {value, raw_value, time_enabled_ns, time_running_ns, error, user_only}; the numbers are None when
// error is set; user_only: counted in user space only (perf_event_paranoid refused the kernel's share).
py::dict counters_to_dict(const std::vector<CounterReading>& readings);

// name -> seconds, in execution order.
py::dict phases_to_dict(const std::vector<std::pair<std::string, double>>& phases);

// A measurement that could not be made (NaN) crosses into Python as None, never as a number.
py::object number_or_none(double value);

// The Python value of a field: phases and counter readings as dicts, anything else as pybind11 casts it
// (numbers, str, bool, lists of them, std::optional -> value or None).
inline py::object to_python(const std::vector<std::pair<std::string, double>>& phases) {
    return phases_to_dict(phases);
}
inline py::object to_python(const std::vector<CounterReading>& readings) { return counters_to_dict(readings); }
template <class T>
py::object to_python(const T& value) {
    if constexpr (std::is_base_of_v<py::handle, T>) {
        return py::reinterpret_borrow<py::object>(value);  // already a Python object (list, dict, None)
    } else {
        return py::cast(value);
    }
}

template <class Get>
struct Key {
    const char* name;
    Get get;  // a member pointer or a function of the object
};

template <class Get, class Entries>
struct Nested {
    Get get;
    Entries entries;
};

template <class Get>
Key<Get> key(const char* name, Get get) {
    return {name, get};
}

template <class Get>
auto key_or_none(const char* name, Get get) {
    return key(name, [get](const auto& object) { return number_or_none(std::invoke(get, object)); });
}

template <class Get, class... Entries>
Nested<Get, std::tuple<Entries...>> nested(Get get, Entries... entries) {
    return {get, std::tuple<Entries...>(entries...)};
}

// ChunkStats as chunk_ns_median, chunk_ns_p10, chunk_ns_p90.
template <class Get>
auto chunk_keys(Get get) {
    return nested(get, key("chunk_ns_median", &ChunkStats::median), key("chunk_ns_p10", &ChunkStats::p10),
                  key("chunk_ns_p90", &ChunkStats::p90));
}

template <class Object, class... Entries>
void put_keys(py::dict& out, const Object& object, const std::tuple<Entries...>& entries);

template <class Object, class Get>
void put(py::dict& out, const Object& object, const Key<Get>& entry) {
    out[entry.name] = to_python(std::invoke(entry.get, object));
}

template <class Object, class Get, class Entries>
void put(py::dict& out, const Object& object, const Nested<Get, Entries>& entry) {
    put_keys(out, std::invoke(entry.get, object), entry.entries);
}

template <class Object, class... Entries>
void put_keys(py::dict& out, const Object& object, const std::tuple<Entries...>& entries) {
    std::apply([&](const auto&... entry) { (put(out, object, entry), ...); }, entries);
}

template <class Object, class Entries>
py::dict to_dict(const Object& object, const Entries& entries) {
    py::dict out;
    put_keys(out, object, entries);
    return out;
}

}  // namespace hb
