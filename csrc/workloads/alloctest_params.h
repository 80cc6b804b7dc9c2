// alloctest's parameters outside the timed loop (alloctest_params.cpp): limits, random stream numbers,
// and the slot count and thread scopes derived from Params. Parsers and validate() are in alloctest.h.
#pragma once

#include <cstdint>
#include <string>

#include "workloads/alloctest.h"

namespace hb::alloctest {

constexpr int64_t kMaxBlockSize = int64_t{1} << 30;
constexpr uint64_t kMinSlotsPerThread = 10;  // so that "the hottest 20%" is at least two slots

// Separate random streams per thread and purpose, so e.g. the permutation never shifts the op sequence.
constexpr uint64_t kOpsStream = 1;
constexpr uint64_t kPermutationStream = 1u << 20;

// "thread" | "total": whether a count is per thread (iterations_per, slots_per).
bool per_thread(const std::string& scope, const char* name);
// Slots each thread owns: `slots` (per thread or over all), or twice total_bytes over the mean size.
uint64_t slots_per_thread(const Params& p);
unsigned hardware_threads();  // at least 1

}  // namespace hb::alloctest
