// Zipf(s) ranks in [1, n] with P(k) proportional to k^-s, by rejection-inversion (W. Hörmann and
// G. Derflinger, "Rejection-inversion to generate variates from monotone discrete distributions", 1996).
// O(1) setup and ~1 uniform draw per sample for any n and any s >= 0, so no n-sized CDF table is needed.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#include "common/rng.h"

namespace hb {

class ZipfSampler {
public:
    ZipfSampler(uint64_t n, double s) : n_(static_cast<double>(n)), s_(s) {
        if (n == 0) throw std::invalid_argument("Zipf needs n >= 1");
        if (!(s >= 0.0) || !std::isfinite(s)) throw std::invalid_argument("Zipf exponent must be finite and >= 0");
        integral_at_1_5_minus_1_ = big_h(1.5) - 1.0;
        integral_at_n_ = big_h(n_ + 0.5);
        squeeze_ = 2.0 - big_h_inverse(big_h(2.5) - h(2.0));
    }

    // A rank in [1, n]; rank 1 is the most frequent.
    uint64_t operator()(Rng& rng) const {
        for (;;) {
            const double u = integral_at_n_ + rng.uniform() * (integral_at_1_5_minus_1_ - integral_at_n_);
            const double x = big_h_inverse(u);
            const double k = std::clamp(std::floor(x + 0.5), 1.0, n_);
            // Accept at once inside the squeeze, otherwise compare with the exact hat-area boundary.
            if (k - x <= squeeze_ || u >= big_h(k + 0.5) - h(k)) return static_cast<uint64_t>(k);
        }
    }

private:
    double h(double x) const { return std::exp(-s_ * std::log(x)); }

    // H(x) = (x^(1-s) - 1) / (1 - s), the integral of h, written to stay accurate as s -> 1.
    double big_h(double x) const {
        const double log_x = std::log(x);
        return expm1_over_x((1.0 - s_) * log_x) * log_x;
    }

    double big_h_inverse(double y) const {
        const double t = std::max(y * (1.0 - s_), -1.0);  // -1 is the domain limit of log1p
        return std::exp(log1p_over_x(t) * y);
    }

    // log1p(x)/x and expm1(x)/x, with their Taylor series near 0 where the quotient loses precision.
    static double log1p_over_x(double x) {
        if (std::fabs(x) > 1e-8) return std::log1p(x) / x;
        return 1.0 - x * (0.5 - x * (1.0 / 3.0 - 0.25 * x));
    }
    static double expm1_over_x(double x) {
        if (std::fabs(x) > 1e-8) return std::expm1(x) / x;
        return 1.0 + x * 0.5 * (1.0 + x / 3.0 * (1.0 + 0.25 * x));
    }

    double n_;
    double s_;
    double integral_at_1_5_minus_1_;
    double integral_at_n_;
    double squeeze_;
};

}  // namespace hb
