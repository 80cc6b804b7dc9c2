"""The answer of ``hugebench try``: from the stored rows of its configurations to one verdict (a typed
:class:`~.verdict_types.Verdict`, printed as text or as one JSON object) — the best configuration and its effect vs as-is, its memory cost,
its coverage and allocator proof, how to deploy it, one line per other configuration, and the caveats.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from hugebench import stats
from hugebench.measure.phases import COVERAGE_EXPECTED
from hugebench.report.coverage import folio_shares, gap_lines, gap_summary
from hugebench.stats import sequential, stability
from hugebench.trial import conditions, modes
from hugebench.trial import guards as guards_mod
from hugebench.trial.deploy import deploy
from hugebench.trial.matrix import describe, uses_huge_pages
from hugebench.trial.race import _resolved, better_ratio, expected_range, paired_cs
from hugebench.trial.runs import CPU_COLUMN, with_cpu
from hugebench.trial.sizes import page_sizes
from hugebench.trial.verdict_types import (
    Configuration,
    Confirmation,
    Expected,
    Ratio,
    Verdict,
    ends,
)

TREE_RSS = "tree_peak_rss_bytes"
CGROUP_PEAK = "cgroup.memory_peak_bytes"
# The caveats' levels are the calibrated ones (docs/trusting-numbers.md), never local constants: coverage
# short of ``measure.phases.COVERAGE_EXPECTED``; a noisy machine by ``measure.disturbance``'s rule (the rows'
# ``noise.disturbed``); a metric too variable to call when the best's ratio CI is wider than the band of
# ``stability.SMALLEST_EFFECT`` either way (the run cannot tell a difference worth deploying from none).


def _ratio_dict(r: stats.Ratio | None, *stabilities) -> Ratio | None:
    """A ratio as the verdict holds it; an end its interval cannot bound yet (0 or infinity) is None."""
    if r is None or not np.isfinite(r.value):
        return None
    fin = [x if np.isfinite(x) and x > 0 else None for x in (r.lo, r.hi)]
    return Ratio(
        value=r.value,
        ci_lo=fin[0],
        ci_hi=fin[1],
        n=r.n,
        paired=r.paired,
        level=r.level,
        # the configurations the 5 % was shared by (Bonferroni): 1 for a confirmation's interval
        family=max(1, round(sequential.ALPHA / max(1e-12, 1 - r.level))),
        resolved=_resolved(r, *stabilities),
    )


def _median(frame: pd.DataFrame, column: str) -> float | None:
    if column not in frame.columns:
        return None
    values = stats.finite(frame[column])
    return float(np.median(values)) if values.size else None


def configuration(
    frame: pd.DataFrame,
    base: pd.DataFrame,
    cell: dict,
    metric: str,
    alpha: float = sequential.ALPHA,
) -> Configuration:
    """One configuration's numbers: runs, median, ratios to as-is (metric, at ``alpha``; memory),
    coverage, proof (``build`` names and classifies it)."""
    ok = stats.ok_rows(frame)
    failed = stats.failed_rows(frame)
    steady = stability.cell_stability(frame, metric)  # the one rule of every verdict (stability)
    base_steady = stability.cell_stability(base, metric)
    ratio = paired_cs(frame, base, metric, alpha) if len(ok) else None
    split = modes.describe(ok, metric)  # two modes: the column that splits, not a guess about load
    unstable = steady.why if steady.unstable else None
    if unstable and split:
        unstable = unstable.rsplit("; ", 1)[0] + "; " + split
    overridden, overridden_why = conditions.overridden(frame)
    error = None
    if len(failed) and not len(ok):
        error = str(failed["error"].dropna().iloc[0]) if failed["error"].notna().any() else "failed"
    return Configuration(
        cell=dict(cell),
        runs=int(len(ok)),
        failed=int(len(failed)),
        median=_median(ok, metric),
        ratio=_ratio_dict(ratio, steady, base_steady) if ratio is not None else None,
        equivalent=bool(stability.equivalent(ratio, steady, base_steady)),
        unstable=unstable,
        modes=split,
        **memory_ratios(frame, base, ok),
        hp_coverage=_median(ok, "hp_coverage"),
        folio_shares=folio_shares(ok) if len(ok) else {},
        gap=gap_lines(gap_summary(ok)) if len(ok) else [],
        allocator_proof=_proof(ok) or _proof(conditions.probed(frame)),
        allocator_served=conditions.served(frame),
        thp_overridden=overridden,
        thp_overridden_why=overridden_why,
        error=error,
    )


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


def classify(config: Configuration, better: str) -> str:
    """better / worse / same within noise / failed / too few runs, from its ratio's interval."""
    ratio = config.ratio
    if not config.runs:
        return "failed"
    if ratio is None or (ratio.ci_lo is None and ratio.ci_hi is None):
        return "too few runs"
    below = ratio.ci_hi is not None and ratio.ci_hi < 1
    above = ratio.ci_lo is not None and ratio.ci_lo > 1
    good, bad = (below, above) if better == "lower" else (above, below)
    return "better" if good else "worse" if bad else "same within noise"


def _phases(rows: pd.DataFrame, state) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(the selection's rows, the confirmation's fresh rows), split at ``state.confirm_from``."""
    split = getattr(state, "confirm_from", None)
    if split is None or "repetition" not in rows.columns:
        return rows, rows.iloc[0:0]
    rep = pd.to_numeric(rows["repetition"], errors="coerce")
    return rows[rep < split], rows[rep >= split]


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
    wall: str | None = None,
    linked: str | None = None,
    guards: tuple = (),
) -> Verdict:
    """The verdict (its JSON form is ``to_dict()``; ``cells``: cell id -> axis values, in keep order; only their rows
    count, so that with try --aged each memory state's caveats and counts are its own). Every other
    configuration's ratio is the selection's (its interval at the selection's shared alpha); the best's
    effect is its confirmation's, on fresh pairs (``state.confirm_from`` on). ``wall``: the wall-time column,
    shown beside a CPU-time metric. ``linked``: the allocator the program links (names glibc's settings
    'forced over' it). ``guards``: (column, better) of the metrics recorded beside the judged one; a best
    resolved worse on one of them is not recommended (:mod:`.guards`)."""
    if "cell_id" in rows.columns:
        rows = rows[rows["cell_id"].isin(list(cells))]
    if metric == CPU_COLUMN:
        rows = pd.DataFrame(with_cpu(rows.to_dict("records")))
    selection, fresh = _phases(rows, state)
    kept = [c for c in cells if c != base_id and c not in state.cut]
    alpha = state.alphas.get(base_id) or sequential.selection_alpha(len(kept))
    base = _cell_rows(selection, base_id)
    configs = {
        cid: _named(
            configuration(_cell_rows(selection, cid), base, cell, metric, alpha),
            cid, base_id, better, state, thp_found, linked,
        )
        for cid, cell in cells.items()
    }  # fmt: skip
    lead = state.leaders.get(base_id, (None, None))[0]
    if lead is None or lead not in configs or configs[lead].thp_overridden:
        # a configuration whose program overrode its THP mode is never the answer (the schedule never lets
        # it lead; overrides seen only in the confirmation's runs land here): the best other one, unconfirmed
        lead = _best(configs, base_id, better)
    best = configs.get(lead) if lead else None
    if best:
        ties = _ties(selection, configs, lead, base_id, metric, alpha)
        best = dataclasses.replace(best, ties=tuple(configs[c].name for c in ties))
        best = _confirm(best, fresh, lead, base_id, metric, better, state, wall)
        best = _expected(best, rows, lead, base_id, metric)
    # resolved: the confirmation resolved a difference worth deploying (a resolved 2 % is no such thing)
    resolved = bool(best and best.confirmation.resolved and not best.equivalent)
    wins = bool(resolved and best.kind == "better")
    refused = None
    if best and guards:
        judged = guards_mod.judge(_cell_rows(rows, lead), _cell_rows(rows, base_id), guards)
        best = dataclasses.replace(best, guards=tuple(judged))
        refused = guards_mod.refusal(best.name, judged)
        wins = wins and refused is None
    configs.update({lead: best} if best else {})  # the best as confirmed and guarded
    remaining = [c for cid, c in configs.items() if cid != base_id and c.runs and not c.dropped]
    confirmed_same = bool(best and best.confirmation.pairs and best.equivalent)
    baseline = configs[base_id]
    verdict = Verdict(
        metric=metric,
        better=better,
        baseline=baseline,
        best=best,
        resolved=resolved,
        recommend="best" if wins else "as-is",
        guarded=refused,
        no_difference=bool(
            not wins and (confirmed_same or (remaining and all(c.equivalent for c in remaining)))
        ),
        margin=stability.SMALLEST_EFFECT,
        selection_alpha=alpha,
        deploy=deploy(
            best.cell,
            spec,
            thp_found,
            text_library,
            linked=linked,
            mthp_found=_mthp_knobs(baseline.cell),
        )
        if wins and best
        else None,
        as_is=conditions.as_is_line(baseline.allocator_served, linked),
        linked=linked,  # the allocator the program links (glibc's settings preload libc over it)
        others=tuple(c for cid, c in configs.items() if cid not in (base_id, lead)),
        page_sizes=page_sizes(list(configs.values()), better),
        stopped=state.stopped_for(base_id),
        blocks=state.blocks,
        run_s=state.run_s,
    )
    return dataclasses.replace(verdict, caveats=tuple(caveats(verdict, rows, base, metric)))


def _named(config: Configuration, cid, base_id, better, state, thp_found, linked) -> Configuration:
    """The configuration with its name, why it was dropped or cut, and its class."""
    name = describe(config.cell, thp_found, linked)
    if config.thp_overridden:  # never called by the THP mode it only asked for
        name = conditions.overridden_name(name, config.cell, config.thp_overridden, config.runs)
    cut = cid in state.cut
    config = dataclasses.replace(config, name=name, dropped=state.dropped.get(cid), cut=cut)
    kind = (
        "baseline"
        if cid == base_id
        else "not run"
        if cut and not config.runs
        else "THP overridden"
        if config.thp_overridden
        else classify(config, better)
    )
    return dataclasses.replace(config, kind=kind)


def _mthp_knobs(cell: dict) -> dict:
    return {k: v for k, v in cell.items() if k.startswith("thp.mthp.")}


def _cell_rows(rows: pd.DataFrame, cid: str) -> pd.DataFrame:
    return rows[rows["cell_id"] == cid] if "cell_id" in rows.columns else rows.iloc[0:0]


def _confirm(
    best: Configuration, fresh, lead, base_id, metric, better, state, wall
) -> Configuration:
    """The best with its selection ratio replaced by its confirmation's, on the fresh pairs alone (at ALPHA);
    the selection's stays as ``selection_ratio``. Unconfirmed, the selection's is shown and nothing
    resolved."""
    ended = getattr(state, "confirmed", {}).get(base_id) or "not run"
    lead_rows, base_rows = _cell_rows(fresh, lead), _cell_rows(fresh, base_id)
    ratio = paired_cs(lead_rows, base_rows, metric) if len(lead_rows) else None
    confirmation = Confirmation(ended=ended, pairs=ratio.n if ratio else 0, resolved=False)
    best = dataclasses.replace(best, selection_ratio=best.ratio, confirmation=confirmation)
    if ratio is None or not ratio.n:
        return best
    steady = [stability.cell_stability(f, metric) for f in (lead_rows, base_rows)]
    confirmed = _ratio_dict(ratio, *steady)
    best = dataclasses.replace(
        best,
        ratio=confirmed,
        equivalent=bool(stability.equivalent(ratio, *steady)),
        confirmation=dataclasses.replace(
            confirmation, resolved=bool(confirmed and confirmed.resolved)
        ),
    )
    best = dataclasses.replace(best, kind=classify(best, better))
    if wall and wall != metric:
        best = dataclasses.replace(
            best, wall_ratio=_ratio_dict(paired_cs(lead_rows, base_rows, wall))
        )
    return best


def _expected(best: Configuration, rows: pd.DataFrame, lead, base_id, metric) -> Configuration:
    """The confirmed best with where a deployment timed alike should read it (:class:`.Expected`)."""
    conf, ratio = best.confirmation, best.ratio
    if not (conf and conf.pairs and ratio):
        return best
    ends = expected_range(
        _cell_rows(rows, lead), _cell_rows(rows, base_id), metric, ratio, conf.pairs
    )
    if ends is None:
        return best
    lo, hi, drift = ends
    return dataclasses.replace(best, expected=Expected(lo, hi, conf.pairs, drift))


def _best(configs: dict[str, Configuration], base_id: str, better: str) -> str | None:
    ranked = [
        (better_ratio(c.ratio.value, better), cid)
        for cid, c in configs.items()
        if cid != base_id and c.ratio and c.runs and not c.thp_overridden
    ]
    return min(ranked)[1] if ranked else None


def _ties(rows, configs: dict, best_id: str, base_id: str, metric: str, alpha: float) -> list[str]:
    """Configurations the selection could not tell from the best (their paired interval to it, at the
    selection's alpha, holds 1); a dropped one was told apart (clearly worse)."""
    from hugebench.trial.race import MIN_BLOCKS

    best_rows = _cell_rows(rows, best_id)
    out = []
    for cid, config in configs.items():
        if cid in (best_id, base_id) or config.runs < MIN_BLOCKS or config.dropped:
            continue
        r = paired_cs(_cell_rows(rows, cid), best_rows, metric, alpha)
        if r is not None and r.lo <= 1.0 <= r.hi:
            out.append(cid)
    return out


def caveats(verdict: Verdict, rows: pd.DataFrame, base: pd.DataFrame, metric: str) -> list[str]:
    best = verdict.best
    out = [verdict.guarded] if verdict.guarded else []
    out += [c for c in (_coverage_caveat(best), _noisy_caveat(rows), _variable_caveat(best)) if c]
    hit = [c for c in (verdict.baseline, best, *verdict.others) if c and c.thp_overridden]
    if hit:
        out.append(
            f"THP overridden in {len(hit)} configuration(s) ({'; '.join(repr(c.name) for c in hit)}): "
            f"{hit[0].thp_overridden_why}; they measured the program with THP as it set it, so none is "
            "recommended as the THP mode it asked (a program's own option to keep THP, e.g. redis-server "
            "--disable-thp no, is how to try it)"
        )
    out += _unstable_caveats(
        [c for c in (verdict.baseline, best, *verdict.others) if c and c.unstable],
        confirmed=_confirmed_on(verdict),
    )
    out += [
        f"two modes: '{c.name}': {c.modes}"
        for c in (verdict.baseline, best)
        if c and c.modes and not c.unstable
    ]
    if not verdict.resolved and not verdict.no_difference and best:
        out.append(_unresolved(verdict))
    thin = _thin(best, verdict.better) if verdict.recommend == "best" else None
    out += [thin] if thin else []
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


def _thin(best: Configuration, better: str) -> str | None:
    """A recommendation whose expected range for a deployment reaches the wrong side of 1: said, not hidden."""
    exp = best.expected
    if not exp:
        return None
    far = exp.hi if better == "lower" else exp.lo
    if far is not None and (far > 1 if better == "lower" else far < 1):
        return (
            f"thin: resolved in this try, but a deployment timed alike should read {ends(exp.lo, exp.hi)}x as-is "
            "(95%): it may see no gain; time it where it runs before relying on it"
        )
    return None


def _confirmed_on(verdict: Verdict) -> tuple[set, int]:
    """(the names of as-is and the best, the confirmation's pairs) when the verdict is resolved on the
    confirmation's fresh pairs -- steady there, or the rule would not have resolved it; else (empty, 0)."""
    best, conf = verdict.best, verdict.best.confirmation if verdict.best else None
    if not (verdict.resolved and best and conf and conf.pairs):
        return set(), 0
    return {verdict.baseline.name, best.name}, conf.pairs


def _unstable_caveats(
    configs: list, shown: int = 3, confirmed: tuple[set, int] = (set(), 0)
) -> list[str]:
    """One line per unstable configuration, the first ``shown`` of them; the rest named on one line. As-is
    and the best of a verdict resolved on fresh pairs (``confirmed``) were unstable over all their runs but
    steady on those pairs (the rule resolves nothing otherwise): said so, never 'nothing resting on it is
    called resolved' beside 'resolved at 95%' (issue 55)."""
    names, pairs = confirmed
    out = [
        f"unstable over all its runs: '{c.name}': {c.unstable} — the verdict rests on the "
        f"confirmation's {pairs} fresh pairs alone, steady by the same rule"
        if c.name in names
        else f"unstable: '{c.name}': {c.unstable} — no difference resting on it is called resolved"
        for c in configs[:shown]
    ]
    if len(configs) > shown:
        out.append(
            f"unstable too, by the same rule: {', '.join(repr(c.name) for c in configs[shown:])} "
            "(the reasons are in --json)"
        )
    return out


def _coverage_caveat(best: Configuration | None) -> str | None:
    if not (best and uses_huge_pages(best.cell) and best.hp_coverage is not None):
        return None
    if best.hp_coverage >= COVERAGE_EXPECTED:
        return None
    return (
        f"coverage: only {best.hp_coverage:.0%} of the memory of '{best.name}' was on huge pages (median "
        f"of its runs; a huge-page setting is expected to reach {COVERAGE_EXPECTED:.0%}): short of its promise"
        + (f"; why: {best.gap[0]}" if best.gap else "")
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


def _variable_caveat(best: Configuration | None) -> str | None:
    ratio = best.ratio if best else None
    if not ratio or ratio.ci_lo is None or ratio.ci_hi is None:
        return None  # an unbounded end is said by the not-resolved caveat
    band = (1 + stability.SMALLEST_EFFECT) - 1 / (1 + stability.SMALLEST_EFFECT)
    span = ratio.ci_hi - ratio.ci_lo
    if span <= band:
        return None
    return (
        f"variable: the best's ratio CI spans {span:.2f}, wider than the ±{stability.SMALLEST_EFFECT:.0%} band of a "
        "difference worth deploying; the metric varies too much to call closely"
    )


def _unresolved(verdict: Verdict) -> str:
    """Why there is no recommendation: the winner was not confirmed, or its confirmation did not resolve."""
    best = verdict.best
    assert (
        best is not None and best.confirmation is not None
    )  # caveats' condition; build confirmed it
    conf = best.confirmation
    fewest = sequential.fewest_pairs()
    if not conf.pairs:
        return (
            f"not confirmed: the selection's best, '{best.name}', got no fresh pairs "
            f"({conf.ended}; selection: {verdict.stopped or 'budget ended'}); nothing is recommended "
            f"without them (at least {fewest} pairs); a larger --budget helps"
        )
    lo, hi = (best.ratio.ci_lo, best.ratio.ci_hi) if best.ratio else (None, None)
    if (lo is not None and lo > 1) or (hi is not None and hi < 1):
        return (
            f"not resolved: the confirmation of '{best.name}' on {conf.pairs} fresh pairs has an "
            "interval that excludes 1, but a configuration it rests on is unstable (above), so it is not "
            f"called ({conf.ended})"
        )
    said = f"not resolved: the confirmation of '{best.name}' on {conf.pairs} fresh pairs has an interval"
    if conf.pairs < fewest:
        return f"{said} that includes 1 ({conf.ended}); it can resolve from {fewest} pairs on; a larger --budget helps"
    return (
        f"{said} that includes 1 ({conf.ended}): too few of its pairs point the same way, so a difference,"
        " if any, is small against how much the runs vary; a larger --budget narrows the interval"
    )
