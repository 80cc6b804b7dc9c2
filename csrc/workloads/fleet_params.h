// fleet's size mix: object sizes by class, "max_bytes:weight,..." (fleet.h says how a run uses them).
// Parsed and checked outside the timed phases (fleet_params.cpp, with fleet::validate).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "workloads/fleet.h"

namespace hb::fleet {

struct SizeClass {
    uint64_t lo = 0, hi = 0;  // inclusive
    double weight = 0;
};

// Throws std::invalid_argument naming the problem.
std::vector<SizeClass> parse_size_mix(const std::string& text);
double mean_size(const std::vector<SizeClass>& mix);

}  // namespace hb::fleet
