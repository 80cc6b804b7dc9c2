"""The answer of ``hugebench try``: from the stored rows of its configurations to one verdict (a plain dict,
printed as text or as one JSON object) — the best configuration and its effect vs as-is, its memory cost,
its coverage and allocator proof, how to deploy it, one line per other configuration, and the caveats.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from .. import stability, stats
from ..measure.phases import COVERAGE_EXPECTED
from . import conditions
from .deploy import deploy
from .matrix import describe, uses_huge_pages
from .schedule import _resolved, better_ratio

TREE_RSS = "tree_peak_rss_bytes"
CGROUP_PEAK = "cgroup.memory_peak_bytes"
# The caveats' levels are the calibrated ones (docs/trusting-numbers.md), never local constants: coverage
# short of ``measure.phases.COVERAGE_EXPECTED``; a noisy machine by ``measure.disturbance``'s rule (the rows'
# ``noise.disturbed``); a metric too variable to call when the best's ratio CI is wider than the band of
# ``stability.SMALLEST_EFFECT`` either way (the run cannot tell a difference worth deploying from none).


def _ratio_dict(r: stats.Ratio | None, *stabilities) -> dict | None:
    if r is None or not np.isfinite(r.value):
        return None
    fin = [x if np.isfinite(x) else None for x in (r.lo, r.hi)]
    return {
        "value": r.value,
        "ci_lo": fin[0],
        "ci_hi": fin[1],
        "n": r.n,
        "paired": r.paired,
        "resolved": _resolved(r, *stabilities),
    }


def _median(frame: pd.DataFrame, column: str) -> float | None:
    if column not in frame.columns:
        return None
    values = stats.finite(frame[column])
    return float(np.median(values)) if values.size else None


def configuration(frame: pd.DataFrame, base: pd.DataFrame, cell: dict, metric: str) -> dict:
    """One configuration's numbers: runs, median, ratios to as-is (metric, memory), coverage, proof."""
    ok = stats.ok_rows(frame)
    failed = stats.failed_rows(frame)
    steady = stability.cell_stability(
        frame, metric
    )  # the one rule of every verdict (hugebench.stability)
    base_steady = stability.cell_stability(base, metric)
    ratio = stats.compare(frame, base, metric) if len(ok) else None
    out = {
        "cell": dict(cell),
        "runs": int(len(ok)),
        "failed": int(len(failed)),
        "median": _median(ok, metric),
        "ratio": _ratio_dict(ratio, steady, base_steady) if ratio is not None else None,
        "equivalent": bool(stability.equivalent(ratio, steady, base_steady)),
        "unstable": steady.why if steady.unstable else None,
        **memory_ratios(frame, base, ok),
        "hp_coverage": _median(ok, "hp_coverage"),
        "allocator_proof": _proof(ok),
        "allocator_served": conditions.served(frame),
    }
    out["thp_overridden"], out["thp_overridden_why"] = conditions.overridden(frame)
    if len(failed) and not len(ok):
        out["error"] = (
            str(failed["error"].dropna().iloc[0]) if failed["error"].notna().any() else "failed"
        )
    return out


def memory_ratios(frame: pd.DataFrame, base: pd.DataFrame, ok: pd.DataFrame) -> dict:
    """The memory cost vs as-is: the process tree's peak RSS (the sum of its processes' peaks,
    ``tree_peak_rss_bytes``; the largest process's, ``peak_rss_bytes``, in rows without it) and, where the
    run had a cgroup with memory accounting, the cgroup's peak (``cgroup.memory_peak_bytes``: page cache and
    hugebench's supervisor of the run included)."""
    column = (
        TREE_RSS
        if TREE_RSS in frame.columns and frame[TREE_RSS].notna().any()
        else "peak_rss_bytes"
    )
    out = {"peak_rss_column": column, "peak_rss_ratio": None, "cgroup_peak_ratio": None}
    if not len(ok):
        return out
    if column in frame.columns:
        out["peak_rss_ratio"] = _ratio_dict(stats.compare(frame, base, column))
    if CGROUP_PEAK in frame.columns and frame[CGROUP_PEAK].notna().any():
        out["cgroup_peak_ratio"] = _ratio_dict(stats.compare(frame, base, CGROUP_PEAK))
    return out


def _proof(ok: pd.DataFrame) -> str | None:
    if ok.empty:
        return None
    row = ok.iloc[0]
    note = row.get("allocator_note")
    if isinstance(note, str):
        return note
    source = row.get("allocator_malloc_from")
    if isinstance(source, str):
        procs = row.get("allocator_processes")
        return f"probe: malloc and free resolve to {source} in every process" + (
            f" ({int(procs)})" if isinstance(procs, (int, float)) and not math.isnan(procs) else ""
        )
    return None


def classify(config: dict, better: str) -> str:
    """better / worse / same within noise / failed / too few runs, from its ratio to as-is."""
    ratio = config.get("ratio")
    if not config["runs"]:
        return "failed"
    if ratio is None or ratio["ci_lo"] is None:
        return "too few runs"
    good = (
        better_ratio(ratio["ci_hi"], better) < 1
        if better == "lower"
        else better_ratio(ratio["ci_lo"], better) < 1
    )
    bad = (
        better_ratio(ratio["ci_lo"], better) > 1
        if better == "lower"
        else better_ratio(ratio["ci_hi"], better) > 1
    )
    return "better" if good else "worse" if bad else "same within noise"


def build(
    rows: pd.DataFrame,
    cells: Mapping[str, dict],
    base_id: str,
    metric: str,
    better: str,
    spec,
    thp_found: str,
    state,
    text_library: str | None = None,
    linked: str | None = None,
) -> dict:
    """The verdict as one JSON-able dict (``cells``: cell id -> axis values, in keep order; only their rows
    count, so that with try --aged each memory state's caveats and counts are its own). ``linked``: the
    allocator the program links (names glibc's settings 'forced over' it)."""
    if "cell_id" in rows.columns:
        rows = rows[rows["cell_id"].isin(list(cells))]
    base = rows[rows["cell_id"] == base_id] if "cell_id" in rows.columns else rows.iloc[0:0]
    configs = {
        cid: configuration(rows[rows["cell_id"] == cid], base, cell, metric)
        for cid, cell in cells.items()
    }
    for cid, config in configs.items():
        config["name"] = describe(config["cell"], thp_found, linked)
        if config["thp_overridden"]:  # never called by the THP mode it only asked for
            config["name"] = conditions.overridden_name(
                config["name"], config["cell"], config["thp_overridden"], config["runs"]
            )
        config["dropped"] = state.dropped.get(cid)
        config["cut"] = cid in state.cut
        config["class"] = (
            "baseline"
            if cid == base_id
            else "not run"
            if config["cut"] and not config["runs"]
            else "THP overridden"
            if config["thp_overridden"]
            else classify(config, better)
        )
    best_id = _best(configs, base_id, better)
    group = [best_id, *_ties(rows, configs, best_id, base_id, metric)] if best_id else []
    best_id = (
        _simplest(group, list(cells), configs) if group else None
    )  # among equals, the fewest changes
    best = configs.get(best_id) if best_id else None
    if best:
        best["ties"] = [configs[c]["name"] for c in group if c != best_id]
        # ties simpler than the one recommended (earlier in keep order) that are not resolved on their own runs
        order = list(cells)
        best["simpler_unresolved"] = [
            configs[c]["name"]
            for c in group
            if order.index(c) < order.index(best_id) and not _worth_deploying(configs[c])
        ]
    # resolved: a difference worth deploying is resolved (a resolved 2 % gain is "no difference worth deploying")
    resolved = bool(best and best["ratio"] and best["ratio"]["resolved"] and not best["equivalent"])
    wins = bool(best and _worth_deploying(best))
    remaining = [
        c for cid, c in configs.items() if cid != base_id and c["runs"] and not c["dropped"]
    ]
    verdict = {
        "metric": metric,
        "better": better,
        "baseline": configs[base_id],
        "best": best,
        "resolved": resolved,
        "recommend": "best" if wins else "as-is",
        "no_difference": bool(not wins and remaining and all(c["equivalent"] for c in remaining)),
        "margin": stability.SMALLEST_EFFECT,
        "deploy": deploy(best["cell"], spec, thp_found, text_library, linked=linked)
        if wins
        else None,
        "as_is": conditions.as_is_line(configs[base_id]["allocator_served"], linked),
        "others": [c for cid, c in configs.items() if cid not in (base_id, best_id)],
        "stopped": state.stopped_for(base_id),
        "blocks": state.blocks,
        "run_s": state.run_s,
    }
    verdict["caveats"] = caveats(verdict, rows, base, metric)
    return verdict


def _best(configs: dict, base_id: str, better: str) -> str | None:
    ranked = [
        (better_ratio(c["ratio"]["value"], better), cid)
        for cid, c in configs.items()
        if cid != base_id and c["ratio"] and c["runs"] and not c["thp_overridden"]
    ]
    return min(ranked)[1] if ranked else None


def _ties(rows: pd.DataFrame, configs: dict, best_id: str, base_id: str, metric: str) -> list[str]:
    """Configurations whose ratio to the best one's includes 1 (95%): as good as it, as far as the runs tell."""
    from .schedule import MIN_BLOCKS

    best_rows = rows[rows["cell_id"] == best_id]
    out = []
    for cid, config in configs.items():
        if cid in (best_id, base_id) or config["runs"] < MIN_BLOCKS:
            continue
        r = stats.compare(rows[rows["cell_id"] == cid], best_rows, metric)
        if np.isfinite(r.lo) and r.lo <= 1.0 <= r.hi:
            out.append(cid)
    return out


def _simplest(candidates: list, order: list, configs: dict) -> str | None:
    """The first of ``candidates`` in the matrix's keep order worth deploying (:func:`_worth_deploying`), else
    the first candidate (the best by median)."""
    fine = [c for c in order if c in candidates and _worth_deploying(configs[c])]
    return fine[0] if fine else candidates[0]


def _worth_deploying(config: dict) -> bool:
    """Resolved better than as-is, and not proven within the smallest effect of it (``stability.equivalent``:
    a resolved 2 % gain is no difference worth deploying)."""
    ratio = config["ratio"]
    return bool(
        config["class"] == "better" and ratio and ratio["resolved"] and not config["equivalent"]
    )


def caveats(verdict: dict, rows: pd.DataFrame, base: pd.DataFrame, metric: str) -> list[str]:
    best = verdict["best"]
    out = [c for c in (_coverage_caveat(best), _noisy_caveat(rows), _variable_caveat(best)) if c]
    hit = [
        c for c in (verdict["baseline"], best, *verdict["others"]) if c and c.get("thp_overridden")
    ]
    if hit:
        out.append(
            f"THP overridden in {len(hit)} configuration(s) ({'; '.join(repr(c['name']) for c in hit)}): "
            f"{hit[0]['thp_overridden_why']}; they measured the program with THP as it set it, so none is "
            "recommended as the THP mode it asked (a program's own option to keep THP, e.g. redis-server "
            "--disable-thp no, is how to try it)"
        )
    out += _unstable_caveats(
        [c for c in (verdict["baseline"], best, *verdict["others"]) if c and c.get("unstable")]
    )
    if not verdict["resolved"] and not verdict["no_difference"]:
        out.append(
            f"not resolved: the best's ratio CI to as-is includes 1 or rests on fewer than "
            f"{stats.min_runs_for(0.95)} pairs ({verdict['stopped'] or 'budget ended'}); a larger --budget helps"
        )
    left = (
        rows.get("containment.killed_at_end")
        if "containment.killed_at_end" in rows.columns
        else None
    )
    if left is not None and (pd.to_numeric(left, errors="coerce").fillna(0) > 0).any():
        n = int((pd.to_numeric(left, errors="coerce").fillna(0) > 0).sum())
        out.append(
            f"daemon: {n} run(s) left processes running after the program ended (hugebench ended them); "
            "the program starts something that outlives it"
        )
    return out


def _unstable_caveats(configs: list, shown: int = 3) -> list[str]:
    """One line per unstable configuration, the first ``shown`` of them; the rest named on one line."""
    out = [
        f"unstable: '{c['name']}': {c['unstable']} — no difference resting on it is called resolved"
        for c in configs[:shown]
    ]
    if len(configs) > shown:
        out.append(
            f"unstable too, by the same rule: {', '.join(repr(c['name']) for c in configs[shown:])} "
            "(the reasons are in --json)"
        )
    return out


def _coverage_caveat(best: dict | None) -> str | None:
    if not (best and uses_huge_pages(best["cell"]) and best["hp_coverage"] is not None):
        return None
    if best["hp_coverage"] >= COVERAGE_EXPECTED:
        return None
    return (
        f"coverage: only {best['hp_coverage']:.0%} of the memory of '{best['name']}' was on huge pages (median "
        f"of its runs; a huge-page setting is expected to reach {COVERAGE_EXPECTED:.0%}): short of its promise"
    )


def _noisy_caveat(rows: pd.DataFrame) -> str | None:
    """The runs the disturbance rule flagged (other work, steal, memory stalls), with the commonest cause."""
    disturbed, causes = stability.disturbance(rows)
    if not disturbed:
        return None
    ok = stats.ok_rows(rows)
    return (
        f"noisy: {disturbed} of {len(ok)} runs were measured on a disturbed machine "
        f"({stability.likely_cause(disturbed, len(ok), causes)}); a quiet machine gives firmer answers"
    )


def _variable_caveat(best: dict | None) -> str | None:
    ratio = best and best["ratio"]
    if not ratio or ratio["ci_lo"] is None or ratio["ci_hi"] is None:
        return None
    band = (1 + stability.SMALLEST_EFFECT) - 1 / (1 + stability.SMALLEST_EFFECT)
    span = ratio["ci_hi"] - ratio["ci_lo"]
    if span <= band:
        return None
    return (
        f"variable: the best's ratio CI spans {span:.2f}, wider than the ±{stability.SMALLEST_EFFECT:.0%} band of a "
        "difference worth deploying; the metric varies too much to call closely"
    )
