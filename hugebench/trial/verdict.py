"""The answer of ``hugebench try``: from the stored rows of its configurations to one verdict (a typed
:class:`~.verdict_types.Verdict`, printed as text or as one JSON object) — the best configuration and its effect vs as-is, its memory cost,
its coverage and allocator proof, how to deploy it, one line per other configuration, and the caveats.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from hugebench import stats
from hugebench.knob_catalogue import MTHP_PREFIX
from hugebench.measure.phases import COVERAGE_EXPECTED
from hugebench.report.coverage import folio_shares, gap_lines, gap_summary
from hugebench.stats import sequential, stability
from hugebench.trial import conditions, modes
from hugebench.trial import guards as guards_mod
from hugebench.trial.deploy import deploy
from hugebench.trial.matrix import describe, uses_huge_pages
from hugebench.trial.race import (
    _resolved,
    better_ratio,
    paired_cs,
    paired_only,
    the_interval,
    warmups,
)
from hugebench.trial.runs import CPU_COLUMN, cpu_too_small, with_cpu
from hugebench.trial.sizes import page_sizes
from hugebench.trial.verdict_types import (
    Configuration,
    Confirmation,
    Interval,
    Ratio,
    Verdict,
    ends,
)

if TYPE_CHECKING:
    from hugebench.experiment import ExperimentSpec
    from hugebench.trial.schedule import Progress

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
    # the one rule of every verdict (stability), on the runs that are paired: a warm-up judges nothing
    steady = stability.cell_stability(paired_only(frame), metric)
    base_steady = stability.cell_stability(paired_only(base), metric)
    ratio = paired_cs(frame, base, metric, alpha) if len(ok) else None
    split = modes.describe(stats.ok_rows(paired_only(frame)), metric)  # the column that splits
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
    out: dict[str, Any] = {
        "peak_rss_column": column,
        "peak_rss_ratio": None,
        "cgroup_peak_ratio": None,
    }
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


@dataclass(frozen=True, eq=False)
class VerdictInputs:
    """What :func:`build` judges. ``cells``: cell id -> axis values, in keep order; only their rows count, so
    that with try --aged each memory state's caveats and counts are its own. ``base_id``: the as-is cell.
    ``state``: the schedule's progress (its cut, leaders, alphas, ``confirm_from``). ``wall``: the wall-time
    column, shown beside a CPU-time metric. ``linked``: the allocator the program links (names glibc's
    settings 'forced over' it). ``guards``: (column, better) of the metrics recorded beside the judged one;
    a best resolved worse on one of them is not recommended (:mod:`.guards`)."""

    rows: pd.DataFrame
    cells: Mapping[str, dict]
    base_id: str
    metric: str
    better: str  # "lower" or "higher"
    spec: ExperimentSpec  # its allocators and params (the deploy line)
    thp_found: str  # the machine's THP mode before the try
    state: Progress
    text_library: str | None = None
    wall: str | None = None
    linked: str | None = None
    guards: tuple[tuple[str, str], ...] = ()


def build(inputs: VerdictInputs) -> Verdict:
    """The verdict of ``inputs`` (its JSON form is ``to_dict()``). Every other configuration's ratio is the
    selection's (its interval at the selection's shared alpha); the best's effect is its confirmation's, on
    fresh pairs (``state.confirm_from`` on)."""
    rows, cells, base_id, metric, better = (
        inputs.rows, inputs.cells, inputs.base_id, inputs.metric, inputs.better,
    )  # fmt: skip
    spec, thp_found, state, text_library = (
        inputs.spec, inputs.thp_found, inputs.state, inputs.text_library,
    )  # fmt: skip
    wall, linked, guards = inputs.wall, inputs.linked, inputs.guards
    if "cell_id" in rows.columns:
        rows = rows[rows["cell_id"].isin(list(cells))]
    if CPU_COLUMN not in rows.columns and {"utime_s", "stime_s"} <= set(rows.columns):
        rows = pd.DataFrame(
            with_cpu(rows.to_dict("records"))
        )  # the CPU time shown beside wall time
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
        best = _confirm(best, rows, fresh, lead, base_id, metric, better, state, wall)
    # resolved: the confirmation resolved a difference worth deploying (a resolved 2 % is no such thing)
    confirmation = best.confirmation if best else None
    resolved = bool(best and confirmation and confirmation.resolved and not best.equivalent)
    wins = bool(resolved and best and best.kind == "better")
    likely = _not_firm(fresh, lead, base_id, metric) if wins else None
    leaning = (
        None
        if wins or resolved or not best
        else _leaning(best, fresh, lead, base_id, metric, better)
    )
    refused = None
    if best and guards:
        paired = paired_only(rows)  # the guarded metrics are paired as the judged one: warm-ups out
        judged = guards_mod.judge(_cell_rows(paired, lead), _cell_rows(paired, base_id), guards)
        best = dataclasses.replace(best, guards=tuple(judged))
        refused = guards_mod.refusal(best.name, judged)
        wins = wins and refused is None
    configs.update({lead: best} if best else {})  # the best as confirmed and guarded
    remaining = [c for cid, c in configs.items() if cid != base_id and c.runs and not c.dropped]
    confirmed_same = bool(
        best and best.confirmation and best.confirmation.pairs and best.equivalent
    )
    baseline = configs[base_id]
    verdict = Verdict(
        metric=metric,
        better=better,
        baseline=baseline,
        best=best,
        resolved=resolved,
        recommend=("likely" if likely else "best") if wins else "as-is",
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
        likely=likely,
        leaning=leaning,
        warmups=warmups(rows),
        answered_s=_rounded(getattr(state, "answered_s", None)),
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


def _mthp_knobs(cell: Mapping) -> dict:
    return {k: v for k, v in cell.items() if k.startswith(MTHP_PREFIX)}


def _cell_rows(rows: pd.DataFrame, cid: str) -> pd.DataFrame:
    return rows[rows["cell_id"] == cid] if "cell_id" in rows.columns else rows.iloc[0:0]


def _confirm(
    best: Configuration, rows, fresh, lead, base_id, metric, better, state, wall
) -> Configuration:
    """The best with its selection ratio replaced by its confirmation's one interval
    (:func:`.race.the_interval`: the fresh pairs' confidence sequence at ALPHA, widened for a deployment
    timed in another window); the selection's stays as ``selection_ratio``, how the interval was built as
    ``interval``, the process tree's CPU time (or wall time, beside a CPU metric) on the same fresh pairs
    beside it. Unconfirmed, the selection's is shown and nothing resolved."""
    ended = getattr(state, "confirmed", {}).get(base_id) or "not run"
    lead_rows, base_rows = _cell_rows(fresh, lead), _cell_rows(fresh, base_id)
    cs = paired_cs(lead_rows, base_rows, metric) if len(lead_rows) else None
    confirmation = Confirmation(ended=ended, pairs=cs.n if cs else 0, resolved=False)
    best = dataclasses.replace(best, selection_ratio=best.ratio, confirmation=confirmation)
    got = (
        the_interval(rows, lead, base_id, metric, state.confirm_from, better)
        if cs and cs.n
        else None
    )
    if got is None:
        return best
    ratio, drift = got
    assert cs is not None  # the_interval ran only on pairs
    steady = [stability.cell_stability(f, metric) for f in (lead_rows, base_rows)]
    confirmed = _ratio_dict(ratio, *steady)
    best = dataclasses.replace(
        best,
        ratio=confirmed,
        equivalent=bool(stability.equivalent(ratio, *steady)),
        confirmation=dataclasses.replace(
            confirmation, resolved=bool(confirmed and confirmed.resolved)
        ),
        interval=Interval(*_finite_ends(cs), cs.n, drift),
    )
    best = dataclasses.replace(best, kind=classify(best, better))
    beside = wall if wall and wall != metric else CPU_COLUMN if metric != CPU_COLUMN else None
    if beside and beside in fresh.columns:
        shown = _ratio_dict(paired_cs(lead_rows, base_rows, beside))
        if beside == wall:
            best = dataclasses.replace(best, wall_ratio=shown)
        else:
            best = dataclasses.replace(best, cpu_ratio=shown)
    return best


def _finite_ends(r: stats.Ratio) -> tuple[float | None, float | None]:
    return tuple(x if np.isfinite(x) and x > 0 else None for x in (r.lo, r.hi))  # type: ignore[return-value]


def _rounded(seconds: float | None) -> float | None:
    return None if seconds is None else round(float(seconds), 1)


def _not_firm(fresh: pd.DataFrame, lead, base_id, metric) -> str | None:
    """Why a resolved best is only likely (None: firm): a cell of its fresh pairs is unstable by the one
    rule, and the reason in words — the machine was busy (runs flagged disturbed), or its runs varied."""
    steady = [stability.cell_stability(_cell_rows(fresh, c), metric) for c in (lead, base_id)]
    if not any(s.unstable for s in steady):  # firm: resolved (the caller's) and both stable
        return None
    if any(s.disturbed > stability.DISTURBED_SHARE * s.n for s in steady):
        return "the machine was busy: re-run quiet to confirm"
    return "its runs were unstable: re-run to confirm"


SIGN_LEVEL = 0.05  # the two-sided sign test a leaning verdict's fresh pairs pass


def sign_test(ahead: int, n: int) -> float:
    """The two-sided p-value of ``ahead`` of ``n`` pairs pointing one way when either way is as likely
    (the exact binomial sign test)."""
    if n <= 0:
        return 1.0
    k = max(ahead, n - ahead)
    tail = sum(math.comb(n, i) for i in range(k, n + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def _leaning(best: Configuration, fresh, lead, base_id, metric, better) -> str | None:
    """Why an unresolved best still leads (None: it does not): its fresh pairs point its way beyond chance
    (:func:`sign_test` at :data:`SIGN_LEVEL`: 9 of 10 is p = 0.02) and their median beyond the smallest
    effect, while its one interval, an anytime bound that a busy moment's pair stretches (the heap program
    beside a one-CPU load: 9 of 10 pairs at 0.47-0.59x and one at 1.02x; interval 0.46-1.03), still holds 1.
    A fixed-n test after optional stopping is no guarantee: hence a leaning, never a recommendation."""
    conf = best.confirmation
    if not (conf and conf.pairs) or best.kind == "worse" or best.equivalent or not best.ratio:
        return None
    pairs = stats._paired_values(
        stats.ok_rows(_cell_rows(fresh, lead)), stats.ok_rows(_cell_rows(fresh, base_id)), metric
    )
    if pairs is None:
        return None
    ratios = stats.pair_ratios(*pairs)
    ratios = ratios[np.isfinite(ratios) & (ratios > 0)]
    ahead = int(sum(better_ratio(float(r), better) < 1 for r in ratios))
    n = int(ratios.size)
    if (
        n < 2
        or better_ratio(float(np.median(ratios)), better) >= 1 - stability.SMALLEST_EFFECT
        or ahead * 2 <= n
        or sign_test(ahead, n) >= SIGN_LEVEL
    ):
        return None
    way = "faster" if metric in ("window_s", CPU_COLUMN) else "better"
    why = (
        _not_firm(fresh, lead, base_id, metric)
        or "its interval needs more pairs: a larger --budget"
    )
    return f"{ahead} of {n} fresh pairs {way}; {why}"


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
    if metric == CPU_COLUMN and CPU_COLUMN in base.columns:
        tiny = cpu_too_small(list(stats.ok_rows(base)[CPU_COLUMN]))
        out += [tiny] if tiny else []
    hit = [c for c in (verdict.baseline, best, *verdict.others) if c and c.thp_overridden]
    if hit:
        out.append(
            f"THP overridden in {len(hit)} configuration(s) ({'; '.join(repr(c.name) for c in hit)}): "
            f"{hit[0].thp_overridden_why}; they measured the program with THP as it set it, so none is "
            "recommended as the THP mode it asked (a program's own option to keep THP, e.g. redis-server "
            "--disable-thp no, is how to try it)"
        )
    out += _unstable_caveats(
        [c for c in (verdict.baseline, best, *verdict.others) if c and c.unstable]
    )
    out += [
        f"two modes: '{c.name}': {c.modes}"
        for c in (verdict.baseline, best)
        if c and c.modes and not c.unstable
    ]
    if not verdict.resolved and not verdict.no_difference and best:
        out.append(_unresolved(verdict))
    if verdict.likely and best and best.ratio:
        out.append(
            f"likely: the best's interval ({ends(best.ratio.ci_lo, best.ratio.ci_hi)}, widened by the drift "
            f"between this try's blocks) excludes 1, but {verdict.likely}"
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
        f"unstable: '{c.name}': {c.unstable} — a difference resting on it is called likely, not firm"
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
    said = f"not resolved: the confirmation of '{best.name}' on {conf.pairs} fresh pairs has an interval"
    if conf.pairs < fewest:
        return f"{said} that includes 1 ({conf.ended}); it can resolve from {fewest} pairs on; a larger --budget helps"
    if verdict.leaning:
        return (
            f"{said} that includes 1 ({conf.ended}), though {verdict.leaning.split('; ')[0]}: the "
            "interval holds at every look, so a few pairs the other way (a busy moment's) stretch it; "
            "a quiet re-run or a larger --budget settles it"
        )
    return (
        f"{said} that includes 1 ({conf.ended}): too few of its pairs point the same way, so a difference,"
        " if any, is small against how much the runs vary; a larger --budget narrows the interval"
    )
