// The random laws of the alloctest workload, each drawn from one 64-bit random word with a few table
// reads, shifts and multiplies (no pow/exp/log per draw), so the harness stays cheap next to malloc/free.
//
// Two families:
//   * ITHare's alloc-test as its published program implements it (the defaults): sizes in power-of-two
//     bands whose probability halves from band to band (BandSizeLaw), slots by a six-level 80/20 split
//     whose hot slots are the lowest indices (Pareto6Law).
//   * The laws its article describes in prose (this project's earlier defaults): p(size) ~ 1/size
//     (SizeLaw) and a continuous rank law fitted to 80/20 (RankLaw), hot slots scattered by a permutation.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <memory>
#include <numeric>
#include <stdexcept>
#include <string>
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

// Sizes in bands (2^k, 2^(k+1)] for k = 2 .. m-1 with max_size = 2^m: band k has probability 2^-(k-1),
// except the last, which takes what is left (2^-(m-3), the same as the one before it); uniform within a band.
// So sizes run 5 .. max_size, half of them 5..8 B, and each band holds about the same number of bytes
// (per byte size the density falls as 1/s^2). The band is the number of trailing zeros of a uniform draw in
// [1, 2^(m-3)], the offset in the band the next k bits.
class BandSizeLaw {
public:
    static constexpr uint32_t kMinSize = 5;  // 2^2 + 1

    explicit BandSizeLaw(uint32_t max_size) : band_bits_(log2_exact(max_size) - 3) {}

    uint32_t draw(uint64_t bits) const {
        const uint64_t pick = (bits & ((uint64_t{1} << band_bits_) - 1)) + 1;
        const int k = __builtin_ctzll(pick) + 2;
        const uint64_t offset = (bits >> band_bits_) & ((uint64_t{1} << k) - 1);
        return static_cast<uint32_t>((uint64_t{1} << k) + 1 + offset);
    }

    // Probability of band k (sizes (2^k, 2^(k+1)]) for max_size = 2^m.
    static double band_probability(int k, int m) {
        if (k < 2 || k > m - 1) return 0.0;
        return std::ldexp(1.0, -(std::min(k, m - 2) - 1));
    }

    static double mean_of(uint32_t max_size) {
        const int m = log2_exact(max_size);
        double mean = 0;
        for (int k = 2; k <= m - 1; ++k) mean += band_probability(k, m) * (1.5 * std::ldexp(1.0, k) + 0.5);
        return mean;
    }

    static bool valid_max(uint64_t max_size) {
        return max_size >= 16 && max_size <= (uint64_t{1} << 30) && (max_size & (max_size - 1)) == 0;
    }

private:
    static int log2_exact(uint64_t v) { return 63 - __builtin_clzll(v); }
    int band_bits_;
};

// ITHare's "six-level 80/20": at each of six levels the pick stays in the hot 20% of the current range
// with probability 0.8. Grouping the 2^6 leaves by how many levels went hot gives seven contiguous groups,
// hottest first at the lowest indices: group g (g = 0..6 levels that went cold) holds
// C(6,g) 0.2^(6-g) 0.8^g of the slots and receives C(6,g) 0.8^(6-g) 0.2^g of the picks, uniform inside.
// Shares: the hottest 0.0064% of slots get 26.2%, 0.16% -> 65.5%, 1.7% -> 90.3%, 9.8% -> 98.3%.
// The pick computes as the original's does: the group by an ordered chain of comparisons of the low 32
// bits against the cumulative thresholds (a branch the CPU often mispredicts), the slot inside it as the
// high 32 bits modulo the group's size (a 32-bit division). A branch-free group and a multiply-shift offset
// draw the same law, but made the void pass ~20% cheaper than the original's while the real loops cost the
// same (the allocator's cache misses hide the harness's latency), so real minus void came out 1.2-1.4x the
// original's for the fast allocators (docs/results.md, issue 31).
class Pareto6Law {
public:
    static constexpr int kGroups = 7;

    explicit Pareto6Law(uint64_t n) {
        double picks = 0, slots = 0;
        begin_[0] = 0;
        for (int g = 0; g < kGroups - 1; ++g) {
            picks += pick_share(g);
            slots += slot_share(g);
            thresholds_[g] = static_cast<uint32_t>(std::min(picks * 0x1.0p32, 4294967295.0));
            // At least one slot per group (matters below ~16k slots only), the last group takes the rest.
            begin_[g + 1] = static_cast<uint32_t>(
                std::max<uint64_t>(begin_[g] + 1, static_cast<uint64_t>(slots * static_cast<double>(n))));
        }
        begin_[kGroups] = static_cast<uint32_t>(n);
        for (int g = 0; g < kGroups; ++g) size_[g] = begin_[g + 1] - begin_[g];
    }

    uint32_t draw(uint64_t bits) const {
        const auto low = static_cast<uint32_t>(bits);
        int g = kGroups - 1;
        for (int i = 0; i < kGroups - 1; ++i) {
            if (low < thresholds_[i]) {
                g = i;
                break;
            }
        }
        return begin_[g] + static_cast<uint32_t>(bits >> 32) % size_[g];
    }

    static double pick_share(int g) { return binomial(g) * std::pow(0.8, 6 - g) * std::pow(0.2, g); }
    static double slot_share(int g) { return binomial(g) * std::pow(0.2, 6 - g) * std::pow(0.8, g); }

private:
    static double binomial(int g) {
        static constexpr double c[kGroups] = {1, 6, 15, 20, 15, 6, 1};
        return c[g];
    }
    uint32_t thresholds_[kGroups - 1] = {};
    uint32_t begin_[kGroups + 1] = {};  // slots per thread are < 2^32 (validated)
    uint32_t size_[kGroups] = {};
};

enum class SizeLawKind { bands, inverse };
enum class SlotLawKind { pareto6, powerlaw };

SizeLawKind parse_size_law(const std::string& name);  // "bands" | "inverse"
SlotLawKind parse_slot_law(const std::string& name);  // "pareto6" | "powerlaw"
bool parse_hot_slots_scattered(const std::string& name);  // "contiguous" -> false | "scattered" -> true

// The hottest this fraction of the slots (by the slot law's ranking) is what every row reports the share
// of picks of: the issue-14 marker that tells which laws produced a row (pareto6 ~65%, powerlaw ~37%).
constexpr double kHotFraction = 0.0016;

struct Pick {
    uint32_t slot;  // index into the thread's slot array
    uint32_t rank;  // popularity rank under the slot law (0 hottest); == slot when hot slots are contiguous
};

// One thread's slot law, size law and (scattered only) rank -> slot permutation, chosen at run time.
// The branches on the law kinds are the same at every draw, so the CPU predicts them for free.
class Laws {
public:
    Laws(SizeLawKind size_kind, SlotLawKind slot_kind, bool scattered, uint64_t slots, uint32_t min_size,
         uint32_t max_size, Rng permutation_rng)
        : size_kind_(size_kind), slot_kind_(slot_kind), scattered_(scattered),
          hot_limit_(static_cast<uint64_t>(std::llround(kHotFraction * static_cast<double>(slots)))) {
        if (slot_kind == SlotLawKind::pareto6) pareto_ = std::make_unique<Pareto6Law>(slots);
        else ranks_ = std::make_unique<RankLaw>(slots);
        if (size_kind == SizeLawKind::bands) bands_ = std::make_unique<BandSizeLaw>(max_size);
        else inverse_ = std::make_unique<SizeLaw>(min_size, max_size);
        if (scattered) slot_of_rank_ = scattering_permutation(slots, permutation_rng);
    }

    Pick pick(uint64_t bits) const {
        const uint32_t rank = slot_kind_ == SlotLawKind::pareto6 ? pareto_->draw(bits)
                                                                 : ranks_->draw(static_cast<uint32_t>(bits));
        return {scattered_ ? slot_of_rank_[rank] : rank, rank};
    }

    uint32_t size(uint64_t bits) const {
        return size_kind_ == SizeLawKind::bands ? bands_->draw(bits) : inverse_->draw(static_cast<uint32_t>(bits));
    }

    bool is_hot(const Pick& p) const { return p.rank < hot_limit_; }
    uint64_t hot_limit() const { return hot_limit_; }

    // s of the powerlaw's p(rank) ~ (rank+1)^-s; NaN for pareto6 (a step law, no exponent).
    double exponent() const { return ranks_ ? ranks_->exponent() : std::nan(""); }

    static double mean_size(SizeLawKind kind, uint32_t min_size, uint32_t max_size) {
        return kind == SizeLawKind::bands ? BandSizeLaw::mean_of(max_size) : SizeLaw::mean_of(min_size, max_size);
    }

private:
    SizeLawKind size_kind_;
    SlotLawKind slot_kind_;
    bool scattered_;
    uint64_t hot_limit_;
    std::unique_ptr<Pareto6Law> pareto_;
    std::unique_ptr<RankLaw> ranks_;
    std::unique_ptr<BandSizeLaw> bands_;
    std::unique_ptr<SizeLaw> inverse_;
    std::vector<uint32_t> slot_of_rank_;
};

}  // namespace hb::alloctest
