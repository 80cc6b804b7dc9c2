"""Derived columns of the ``fleet`` workload (Temeraire's fleet view): fragmentation, memory given back after
the shrink, huge-page coverage over time. Pure functions of a row, so tests check the arithmetic on dicts.

* ``fragmentation`` = (peak RSS − RSS before the workload) ÷ peak live bytes − 1: the memory the allocator
  held beyond what the program asked for at its peak. ``fragmentation_gross`` keeps the interpreter's RSS
  in (peak RSS ÷ peak live bytes − 1, the issue's literal definition; misleading at small live sets).
* ``rss_returned_bytes`` = RSS at the end of ``peak`` − RSS at the end of ``churn`` (the allocator had the
  whole churn phase to give memory back); ``rss_returned_now_bytes`` the same at the end of ``shrink``;
  ``rss_returned_share`` divides by the live bytes the shrink freed.
* ``series_coverage`` = AnonHugePages ÷ Rss per sample; ``hp_coverage_tw`` is
  :func:`hugebench.measure.phases.time_weighted_coverage` of the series (the one definition the command
  sampler uses too: time-weighted AnonHugePages ÷ time-weighted Rss).
"""

from __future__ import annotations

from hugebench.measure.phases import time_weighted, time_weighted_coverage

__all__ = ["fleet_metrics", "fragmentation", "time_weighted"]


def _ratio(a, b):
    return a / b if a is not None and b else None


def fragmentation(peak_rss: int | None, rss_before: int | None, peak_live: int | None) -> tuple:
    """(net, gross) fragmentation; None where an input is missing or zero."""
    if not peak_rss or not peak_live:
        return None, None
    net = (peak_rss - (rss_before or 0)) / peak_live - 1
    return net, peak_rss / peak_live - 1


def fleet_metrics(row: dict) -> dict:
    """The fleet workload's derived columns (see the module docstring)."""
    net, gross = fragmentation(row.get("peak_rss_bytes"), row.get("rss_before_workload_bytes"),
                               row.get("peak_live_bytes"))
    out = {"fragmentation": net, "fragmentation_gross": gross}
    at_peak, at_shrink = row.get("phase.peak.smaps.Rss"), row.get("phase.shrink.smaps.Rss")
    at_end = row.get("phase.churn.smaps.Rss")
    freed = (row.get("peak_live_bytes") or 0) - (row.get("live_bytes_after_shrink") or 0)
    returned = at_peak - at_end if at_peak is not None and at_end is not None else None
    out["rss_returned_bytes"] = returned
    out["rss_returned_now_bytes"] = at_peak - at_shrink if at_peak is not None and at_shrink is not None else None
    out["rss_returned_share"] = _ratio(returned, freed) if freed > 0 else None
    rss, huge = row.get("series_rss_bytes") or [], row.get("series_anon_huge_bytes") or []
    coverage = [_ratio(h, r) for r, h in zip(rss, huge)]
    if coverage:
        out["series_coverage"] = coverage
        out["hp_coverage_tw"] = time_weighted_coverage(row.get("series_t_s") or list(range(len(coverage))),
                                                       rss, huge)
    steady = row.get("steady_s") or 0
    if row.get("sampler.read_s") is not None and steady:
        out["sampler.read_share"] = row["sampler.read_s"] / steady  # of the coordinator's time, not the workers'
    return out

