"""Memory over time: the slope of a run's sampled RSS with its interval, in words."""

from __future__ import annotations

import numpy as np

from hugebench.machine import memtrend
from hugebench.machine.sampler import FIELDS, CoverageSampler

MIB = 1 << 20


def _samples(per_hour_mib: float, noise_mib: float, n: int = 120, step_s: float = 30.0):
    rng = np.random.default_rng(1)
    return [
        (
            i * step_s,
            {
                "Rss": 500 * MIB
                + per_hour_mib * MIB * i * step_s / 3600
                + rng.normal(0, noise_mib * MIB),
                "AnonHugePages": 100 * MIB,
            },
        )
        for i in range(n)
    ]


def test_growth_is_said_with_its_interval():
    out = memtrend.trend(_samples(40, 2), "Rss")
    assert 35 < out["mem.rss_slope_mib_h"] < 45
    assert 0 < out["mem.rss_slope_lo"] < 40 < out["mem.rss_slope_hi"]
    assert out["mem.rss_trend"].startswith("Rss grows 4") and out["mem.rss_trend"].endswith(
        "over 60 min"
    )


def test_a_flat_noisy_series_is_stable_and_the_same_twice():
    out = memtrend.trend(_samples(0, 20), "Rss")
    assert out["mem.rss_slope_lo"] < 0 < out["mem.rss_slope_hi"]
    assert out["mem.rss_trend"].startswith("Rss stable")
    assert memtrend.trend(_samples(0, 20), "Rss") == out  # seeded


def test_too_few_samples_give_a_reason_not_a_slope():
    out = memtrend.trend(_samples(40, 2, n=3), "Rss")
    assert (
        "mem.rss_slope_mib_h" not in out and "a slope needs 8" in out["mem.rss_slope_mib_h.reason"]
    )


def test_the_sampler_summary_carries_the_series_and_trend():
    sampler = CoverageSampler()
    sampler.samples = [(t, {**dict.fromkeys(FIELDS, 0), **s}) for t, s in _samples(40, 2, n=20)]
    out = sampler.summary()
    assert len(out["series_rss_mib"]) == 20 == len(out["series_t_s"])
    assert "mem.rss_trend" in out and "mem.anonhugepages_trend" in out
