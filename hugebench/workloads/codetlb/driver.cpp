// codetlb driver: calls the generated functions (codetlb.S) in a seeded random order and prints one JSON
// line. Only the call loop is the timed window (hugebench_window.h markers, which perf also follows).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include "hugebench_window.h"

extern "C" {
extern long (*const hb_fn_table[])(long);
extern const long hb_fn_count;
}

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: codetlb CALLS SEED uniform|zipf ZIPF_S\n");
        return 2;
    }
    const long calls = std::atol(argv[1]);
    std::mt19937_64 rng(std::strtoull(argv[2], nullptr, 10));
    const bool zipf = std::strcmp(argv[3], "zipf") == 0;
    const double s = std::atof(argv[4]);
    const long n = hb_fn_count;
    // The order is drawn before the window: only calls are timed.
    std::vector<unsigned> order(static_cast<size_t>(calls));
    if (zipf) {
        std::vector<double> weights(static_cast<size_t>(n));
        for (long i = 0; i < n; ++i) weights[static_cast<size_t>(i)] = 1.0 / std::pow(static_cast<double>(i + 1), s);
        std::discrete_distribution<unsigned> pick(weights.begin(), weights.end());
        std::vector<unsigned> shuffle(static_cast<size_t>(n));  // hot functions spread over the text
        for (long i = 0; i < n; ++i) shuffle[static_cast<size_t>(i)] = static_cast<unsigned>(i);
        std::shuffle(shuffle.begin(), shuffle.end(), rng);
        for (auto& o : order) o = shuffle[pick(rng)];
    } else {
        std::uniform_int_distribution<unsigned> pick(0, static_cast<unsigned>(n - 1));
        for (auto& o : order) o = pick(rng);
    }
    long x = 0;
    for (long i = 0; i < n; ++i) x = hb_fn_table[i](x);  // warm: every page of text touched once
    hugebench_window_enable();
    const auto t0 = std::chrono::steady_clock::now();
    for (long i = 0; i < calls; ++i) x = hb_fn_table[order[static_cast<size_t>(i)]](x);
    const auto t1 = std::chrono::steady_clock::now();
    hugebench_window_disable();
    const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
    std::printf("{\"ns_per_call\": %.3f, \"calls\": %ld, \"functions\": %ld, \"checksum\": %ld}\n", ns / calls,
                calls, n, x);
    return 0;
}
