// fleet's parameters outside the timed phases: the size mix (parsed, its mean) and the checks run before
// anything is allocated. The request loop and its phases stay in fleet.cpp.
#include "workloads/fleet_params.h"

#include <cmath>
#include <sstream>
#include <stdexcept>

namespace hb::fleet {

std::vector<SizeClass> parse_size_mix(const std::string& text) {
    std::vector<SizeClass> mix;
    std::stringstream classes(text);
    std::string item;
    uint64_t previous = 15;  // the smallest object holds its 16-byte header
    while (std::getline(classes, item, ',')) {
        const auto colon = item.find(':');
        require(colon != std::string::npos, "size_mix: '" + item + "' is not max_bytes:weight");
        size_t used = 0;
        uint64_t hi = 0;
        double weight = 0;
        try {
            hi = std::stoull(item.substr(0, colon), &used);
            weight = std::stod(item.substr(colon + 1));
        } catch (const std::exception&) {
            require(false, "size_mix: '" + item + "' is not max_bytes:weight");
        }
        require(hi > previous, "size_mix: class maxima must increase from 16 bytes, got " + std::to_string(hi));
        require(hi <= (uint64_t{1} << 30), "size_mix: a class maximum is at most 1 GiB");
        require(std::isfinite(weight) && weight > 0, "size_mix: weights must be positive numbers");
        mix.push_back({previous + 1, hi, weight});
        previous = hi;
    }
    require(!mix.empty(), "size_mix: give at least one class, e.g. 64:90,4096:10");
    return mix;
}

double mean_size(const std::vector<SizeClass>& mix) {
    double total = 0, weighted = 0;
    for (const auto& c : mix) {
        total += c.weight;
        weighted += c.weight * 0.5 * static_cast<double>(c.lo + c.hi);
    }
    return weighted / total;
}

void validate(const Params& p) {
    require_threads(p.threads);
    require_chunks(p.chunks);
    require(p.objects >= static_cast<uint64_t>(p.threads) && p.objects <= (uint64_t{1} << 32),
            "objects must be in [threads, 2^32], got " + std::to_string(p.objects));
    parse_size_mix(p.size_mix);
    require(p.lookups <= 1'000'000 && p.replacements <= 1'000'000 && p.temporaries <= 1'000'000,
            "lookups, replacements and temporaries must each be at most 1e6 per request");
    require(p.temp_max_bytes >= 16 && p.temp_max_bytes <= (uint64_t{1} << 30), "temp_max_bytes must be in [16, 2^30]");
    require(p.duration_s > 0 && p.duration_s <= 86400, "duration_s must be in (0, 86400]");
    require(p.peak_share > 0 && p.peak_share < 1, "peak_share must be in (0, 1)");
    require(p.shrink_fraction >= 0 && p.shrink_fraction < 1, "shrink_fraction must be in [0, 1)");
    require(p.alloc_sample_every <= (uint64_t{1} << 30), "alloc_sample_every must be at most 2^30");
    require(p.sample_interval_s >= 0.01, "sample_interval_s must be >= 0.01");
}

}  // namespace hb::fleet
