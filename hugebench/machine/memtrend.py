"""Memory over time of a run: the process tree's RSS and AnonHugePages as the coverage sampler saw them, as a
series (the report's figure) and as a slope with its confidence interval ("RSS stable" or "grows 40 MiB/h
[25, 55]"), the question a soak under a steady driver answers (memory bloat under THP ``always``).

The slope is the least-squares line through the samples; its interval comes from a moving-block bootstrap
(blocks of about the square root of the samples, so that the samples' dependence on their neighbours is
kept), seeded: the same samples give the same interval. A run shorter than MIN_SAMPLES samples gets no slope,
with the reason.
"""

from __future__ import annotations

import numpy as np

MIN_SAMPLES = 8
LEVEL = 0.95
N_BOOT = 1000
MIB_H = 3600.0 / (1 << 20)  # bytes/s -> MiB/h


def _slope(t: np.ndarray, y: np.ndarray) -> float:
    tc = t - t.mean()
    denom = float((tc * tc).sum())
    return float((tc * (y - y.mean())).sum() / denom) if denom > 0 else float("nan")


def slope_ci(t, y, seed: int = 0) -> tuple[float, float, float]:
    """(slope, lo, hi) of y over t in y's unit per t's unit, the interval at LEVEL."""
    t, y = np.asarray(t, float), np.asarray(y, float)
    n = len(t)
    block = max(2, int(round(n**0.5)))
    starts = np.arange(n - block + 1)
    rng = np.random.default_rng(seed)
    per = -(-n // block)
    draws = []
    for _ in range(N_BOOT):
        chosen = rng.choice(starts, per)
        idx = np.concatenate([np.arange(s, s + block) for s in chosen])[:n]
        draws.append(_slope(t[idx], y[idx]))
    boots = np.asarray([b for b in draws if np.isfinite(b)])
    lo, hi = np.quantile(boots, [(1 - LEVEL) / 2, (1 + LEVEL) / 2]) if boots.size else (np.nan,) * 2
    return _slope(t, y), float(lo), float(hi)


def trend(samples: list, field: str = "Rss") -> dict:
    """``mem.<field>_slope_mib_h`` with ``_lo``/``_hi`` and ``mem.<field>_trend`` (the words), from the
    sampler's (time, totals) samples; the reason instead when there are too few."""
    key = f"mem.{field.lower()}"
    if len(samples) < MIN_SAMPLES:
        return {
            f"{key}_slope_mib_h.reason": f"{len(samples)} memory samples; a slope needs "
            f"{MIN_SAMPLES} (a longer run or a shorter sample_interval)"
        }
    t = np.array([s[0] for s in samples]) - samples[0][0]
    y = np.array([s[1].get(field, 0) for s in samples], float)
    slope, lo, hi = (v * MIB_H for v in slope_ci(t, y))
    words = (
        f"grows {slope:.0f} MiB/h [{lo:.0f}, {hi:.0f}]"
        if lo > 0
        else f"shrinks {-slope:.0f} MiB/h [{lo:.0f}, {hi:.0f}]"
        if hi < 0
        else f"stable ({slope:+.0f} MiB/h [{lo:.0f}, {hi:.0f}])"
    )
    return {
        f"{key}_slope_mib_h": slope,
        f"{key}_slope_lo": lo,
        f"{key}_slope_hi": hi,
        f"{key}_trend": f"{field} {words} over {_span(t[-1])}",
    }


def _span(seconds: float) -> str:
    return (
        f"{seconds / 3600:.1f} h"
        if seconds >= 3600
        else f"{seconds / 60:.0f} min"
        if seconds >= 120
        else f"{seconds:.0f} s"
    )


def series(samples: list, kept_every: int) -> dict:
    """The RSS and AnonHugePages series in MiB, beside ``series_t_s`` (the same samples)."""
    kept = samples[::kept_every]
    return {
        "series_rss_mib": [round(s.get("Rss", 0) / (1 << 20), 2) for _, s in kept],
        "series_anon_huge_mib": [round(s.get("AnonHugePages", 0) / (1 << 20), 2) for _, s in kept],
    }
