#include "bindings/result_keys.h"

#include <cmath>

namespace hb {

py::dict counters_to_dict(const std::vector<CounterReading>& readings) {
    py::dict out;
    for (const auto& r : readings) {
        py::dict entry;
        const bool ok = r.ok();
        entry["value"] = ok ? py::object(py::float_(r.value)) : py::none();
        entry["raw_value"] = ok ? py::object(py::int_(r.raw_value)) : py::none();
        entry["time_enabled_ns"] = ok ? py::object(py::int_(r.time_enabled_ns)) : py::none();
        entry["time_running_ns"] = ok ? py::object(py::int_(r.time_running_ns)) : py::none();
        entry["error"] = ok ? py::object(py::none()) : py::object(py::str(r.error));
        entry["user_only"] = r.user_only;
        out[py::str(r.label)] = entry;
    }
    return out;
}

py::dict phases_to_dict(const std::vector<std::pair<std::string, double>>& phases) {
    py::dict out;
    for (const auto& [name, seconds] : phases) out[py::str(name)] = seconds;
    return out;
}

py::object number_or_none(double value) {
    return std::isnan(value) ? py::object(py::none()) : py::object(py::float_(value));
}

}  // namespace hb
