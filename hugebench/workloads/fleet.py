"""fleet (Temeraire's fleet view): requests over a live object set; throughput beside time in malloc.

Its derived columns: fragmentation, memory given back after the shrink, huge-page coverage over time. Pure
functions of a row, so tests check the arithmetic on dicts.

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
from hugebench.workloads.base import (
    STARTUP_S,
    Param,
    RatioTable,
    Workload,
    XYPlot,
    loop_params,
    register,
)

__all__ = ["fleet_metrics", "fragmentation", "time_weighted", "WORKLOAD"]


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
    net, gross = fragmentation(
        row.get("peak_rss_bytes"), row.get("rss_before_workload_bytes"), row.get("peak_live_bytes")
    )
    out = {"fragmentation": net, "fragmentation_gross": gross}
    at_peak, at_shrink = row.get("phase.peak.smaps.Rss"), row.get("phase.shrink.smaps.Rss")
    at_end = row.get("phase.churn.smaps.Rss")
    freed = (row.get("peak_live_bytes") or 0) - (row.get("live_bytes_after_shrink") or 0)
    returned = at_peak - at_end if at_peak is not None and at_end is not None else None
    out["rss_returned_bytes"] = returned
    out["rss_returned_now_bytes"] = (
        at_peak - at_shrink if at_peak is not None and at_shrink is not None else None
    )
    out["rss_returned_share"] = _ratio(returned, freed) if freed > 0 else None
    rss, huge = row.get("series_rss_bytes") or [], row.get("series_anon_huge_bytes") or []
    coverage = [_ratio(h, r) for r, h in zip(rss, huge)]
    if coverage:
        out["series_coverage"] = coverage
        out["hp_coverage_tw"] = time_weighted_coverage(
            row.get("series_t_s") or list(range(len(coverage))), rss, huge
        )
    steady = row.get("steady_s") or 0
    if row.get("sampler.read_s") is not None and steady:
        out["sampler.read_share"] = (
            row["sampler.read_s"] / steady
        )  # of the coordinator's time, not the workers'
    return out


FLEET_SIZE_MIX = (
    "64:55,256:25,1024:12,8192:6,65536:1.8,1048576:0.2"  # mostly small, a tail to 1 MiB
)


def _mean_size(p: dict) -> float:
    """Mean object size of ``size_mix`` (classes "max:weight", sizes uniform in (previous max, max])."""
    lo, total, weighted = 16, 0.0, 0.0
    for item in p.get("size_mix", FLEET_SIZE_MIX).split(","):
        hi, weight = item.split(":")
        total += float(weight)
        weighted += float(weight) * (lo + int(hi)) / 2
        lo = int(hi) + 1
    return weighted / total


def _memory(p: dict) -> int:
    # The peak live set, x1.5 for allocator overhead and fragmentation, the object table, the interpreter.
    return int(p["objects"] * (_mean_size(p) * 1.5 + 24) + (64 << 20))


def _time(p: dict) -> float:
    # Duration-bounded; the grow phase writes a word per 64-byte line (~1 GB/s here) and teardown frees.
    return STARTUP_S + p["duration_s"] + 2e-9 * p["objects"] * _mean_size(p) + 1e-6 * p["objects"]


WORKLOAD = register(
    Workload(
        name="fleet",
        doc="Temeraire's fleet view: requests over a live object set; throughput beside time in malloc.",
        params={
            "threads": Param(
                int, 1, minimum=1, help="request threads, each with its own share of the objects"
            ),
            "objects": Param(
                int, 200_000, minimum=1, help="live objects at the peak, over all threads"
            ),
            "size_mix": Param(
                str,
                FLEET_SIZE_MIX,
                help="object sizes: classes max_bytes:weight, uniform in (previous max, max], from 16 B",
            ),
            "lookups": Param(
                int,
                16,
                minimum=0,
                help="K: reads per request into random live objects (header + one line); "
                "0 = the allocator-only microbenchmark",
            ),
            "replacements": Param(
                int, 1, minimum=0, help="R: objects freed and replaced per request"
            ),
            "temporaries": Param(
                int, 4, minimum=0, help="short-lived blocks each request allocates and frees"
            ),
            "temp_max_bytes": Param(
                int, 1024, minimum=16, help="temporaries are uniform in [16, temp_max_bytes]"
            ),
            "duration_s": Param(
                float, 20.0, minimum=0.1, help="seconds of requests (peak + churn phases)"
            ),
            "peak_share": Param(
                float, 0.5, minimum=0.0, help="share of duration_s before the shrink"
            ),
            "shrink_fraction": Param(
                float, 0.75, minimum=0.0, help="share of the objects the shrink frees"
            ),
            "alloc_sample_every": Param(
                int, 64, minimum=0, help="time one malloc/free in this many (random gaps; 0 = off)"
            ),
            "sample_interval_s": Param(
                float,
                1.0,
                minimum=0.01,
                help="seconds between smaps_rollup samples (at most ~60 per run)",
            ),
            **loop_params(
                seed="seed of sizes, picks and sampling gaps",
                chunks="time slices of each steady phase, per thread",
                default_chunks=20,
            ),
        },
        timed_phase="churn",
        ops_column="requests",
        memory_estimate=_memory,
        time_estimate=_time,
        metrics=(
            ("requests_per_s", "Requests/s", ".0f"),
            ("request_ns_p50", "p50 ns", ".0f"),
            ("request_ns_p99", "p99 ns", ".0f"),
            ("alloc_time_share", "Time in alloc", ".1%"),
            ("peak_rss_bytes", "Peak RSS", "bytes"),
            ("fragmentation", "Fragmentation", ".2f"),
            ("rss_returned_share", "Returned", ".0%"),
            ("hp_coverage_tw", "HP cov. (time-wtd)", ".0%"),
            ("vmstat.thp_fault_alloc", "THP faults", "si"),
            ("vmstat.thp_split_pmd", "PMD splits", "si"),
        ),
        better="higher",
        extra_metrics=fleet_metrics,
        xy_plots=(
            XYPlot(
                "series",
                "series_t_s",
                "series_coverage",
                "allocator",
                "seconds since the grow phase",
                "AnonHugePages / Rss",
                "huge-page coverage over time",
                "coverage",
            ),
            XYPlot(
                "series",
                "series_t_s",
                "series_rss_bytes",
                "allocator",
                "seconds since the grow phase",
                "Rss (bytes)",
                "RSS over time",
                "rss",
            ),
            XYPlot(
                "scatter",
                "alloc_time_share",
                "requests_per_s",
                "allocator",
                "time in malloc/free (share)",
                "requests/s",
                "throughput vs time in the allocator",
                "tradeoff",
            ),
        ),
        ratio_tables=(
            RatioTable(
                (
                    ("alloc_time_share", "Time in alloc"),
                    ("requests_per_s", "Requests/s"),
                    ("request_ns_p99", "p99"),
                    ("peak_rss_bytes", "Peak RSS"),
                    ("fragmentation", "Fragmentation"),
                    ("hp_coverage_tw", "HP coverage"),
                ),
                "the Temeraire trade-off, each as a ratio to the baseline [95% CI]",
                flag=("alloc_time_share", "requests_per_s"),
                flag_label="more malloc, more req/s",
            ),
        ),
    )
)
