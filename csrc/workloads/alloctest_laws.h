// The two random laws of the alloctest workload, each drawn from 32 random bits with one table read and
// one multiply-add (no pow/exp/log per draw), so the harness stays cheap next to malloc/free.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>
#include <vector>

#include "common/rng.h"

namespace hb::alloctest {

// An inverse CDF sampled at 2^10 + 1 points and interpolated linearly inside each segment: the low 10 bits
// pick the segment (each holds 1/1024 of the probability), the high 22 bits the position inside it.
// For the smooth inverse CDFs here the interpolation error is far below what a test of the law can see.
class PiecewiseInverse {
public:
    static constexpr int kSegmentBits = 10;
    static constexpr uint32_t kSegments = 1u << kSegmentBits;

    template <class InverseCdf>
    explicit PiecewiseInverse(InverseCdf inverse_cdf) {
        double previous = inverse_cdf(0.0);
        for (uint32_t i = 0; i < kSegments; ++i) {
            const double next = inverse_cdf(static_cast<double>(i + 1) / kSegments);
            segments_[i] = {previous, (next - previous) * 0x1.0p-22};
            previous = next;
        }
    }

    double operator()(uint32_t bits) const {
        const Segment& s = segments_[bits & (kSegments - 1)];
        return s.start + s.width_per_step * static_cast<double>(bits >> kSegmentBits);
    }

private:
    struct Segment {
        double start;
        double width_per_step;  // segment width / 2^22
    };
    Segment segments_[kSegments];
};

// Popularity rank in [0, n): the continuous Pareto/Zipf law P(rank < k) = ((k+1)^a - 1) / ((n+1)^a - 1),
// i.e. density ~ (rank+1)^-s with s = 1 - a, with `a` solved so that the hottest 20% of the ranks get
// exactly 80% of the picks for this n (the self-similar 80/20 rule: ~64% on the hottest 4%, ...).
class RankLaw {
public:
    explicit RankLaw(uint64_t n)
        : n_(static_cast<double>(n)), a_(solve_a(n_)), table_([this](double u) { return inverse(u); }) {}

    uint32_t draw(uint32_t bits) const {
        const double r = table_(bits);
        return static_cast<uint32_t>(std::min(r, n_ - 1.0));  // rounding can touch n
    }

    double exponent() const { return 1.0 - a_; }

    // Share of the picks that the hottest `fraction` of the ranks receive under this law.
    static double share_of_top(double fraction, double n, double a) {
        const double x = std::log(fraction * n + 1.0), y = std::log(n + 1.0);
        if (std::fabs(a) < 1e-12) return x / y;
        return std::expm1(a * x) / std::expm1(a * y);
    }

private:
    // share_of_top falls from ~1 (a -> -inf) to 0.2 (a = 1, uniform): bisect for 0.8.
    static double solve_a(double n) {
        double lo = -60.0, hi = 1.0;
        for (int i = 0; i < 200; ++i) {
            const double mid = 0.5 * (lo + hi);
            (share_of_top(0.2, n, mid) > 0.8 ? lo : hi) = mid;
        }
        return 0.5 * (lo + hi);
    }

    double inverse(double u) const {  // rank (continuous, in [0, n]) at cumulative probability u
        const double y = std::log(n_ + 1.0);
        if (std::fabs(a_) < 1e-12) return std::exp(u * y) - 1.0;
        return std::exp(std::log1p(u * std::expm1(a_ * y)) / a_) - 1.0;
    }

    double n_;
    double a_;
    PiecewiseInverse table_;
};

// Block size with p(size) ~ 1/size on [min, max]: log-uniform on [min, max + 1), floored, so each
// octave of sizes holds the same probability mass.
class SizeLaw {
public:
    SizeLaw(uint32_t min_size, uint32_t max_size)
        : max_(max_size), table_([=](double u) {
              return static_cast<double>(min_size) *
                     std::exp(u * std::log((static_cast<double>(max_size) + 1.0) / min_size));
          }) {}

    uint32_t draw(uint32_t bits) const { return std::min(static_cast<uint32_t>(table_(bits)), max_); }

    // Mean of the continuous law (the floored one is ~0.5 byte smaller).
    static double mean_of(uint32_t min_size, uint32_t max_size) {
        const double lo = min_size, hi = static_cast<double>(max_size) + 1.0;
        return (hi - lo) / std::log(hi / lo);
    }

private:
    uint32_t max_;
    PiecewiseInverse table_;
};

// Rank -> slot id, a uniformly random permutation, so that hot slots are scattered over the slot array
// (and over the heap) instead of packed at its front.
inline std::vector<uint32_t> scattering_permutation(uint64_t n, Rng rng) {
    std::vector<uint32_t> slot_of_rank(n);
    std::iota(slot_of_rank.begin(), slot_of_rank.end(), 0u);
    for (uint64_t i = n; i > 1; --i) std::swap(slot_of_rank[i - 1], slot_of_rank[rng.bounded(i)]);
    return slot_of_rank;
}

}  // namespace hb::alloctest
