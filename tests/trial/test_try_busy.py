"""try on a cold start and on a busy machine (issue 55): each configuration's first run is a warm-up, never
paired; paired evidence survives another job and is called "likely X, re-run quiet" rather than "keep
as-is"; the verdict has one interval, built from the fresh pairs' confidence sequence and the drift the try
saw (hugebench.stats.sequential.deployment_interval), and the confirmation stops as soon as it is firm."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest

from hugebench.stats import Ratio, sequential
from hugebench.trial import race
from hugebench.trial import schedule as schedule_mod
from hugebench.trial import verdict as verdict_mod
from hugebench.trial.render import answer

CELLS = {
    "base": {"allocator": "glibc", "thp": "madvise"},
    "x": {"allocator": "jemalloc-thp", "thp": "madvise"},
}
SPEC = type("Spec", (), {"allocators": {}})()


def _rows(values: dict, disturbed: dict | None = None) -> list[dict]:
    """One row per run, run i of each cell in block i; ``disturbed``: cell -> the blocks flagged busy."""
    out = []
    for cell, vs in values.items():
        for i, v in enumerate(vs):
            busy = i in (disturbed or {}).get(cell, ())
            out.append(
                {
                    "cell_id": cell,
                    "status": "ok",
                    "window_s": v,
                    "utime_s": v * 0.9 / (1.6 if busy else 1.0),
                    "stime_s": 0.01,
                    "repetition": i,
                    "sweep_id": "s",
                    "noise.disturbed": busy,
                    "noise.why": "other work kept 1.0 CPUs busy (stress)" if busy else None,
                }
            )
    return out


def _state(blocks: int, confirm_from: int, ended: str) -> schedule_mod.Progress:
    state = schedule_mod.Progress(0.0, 180, stopped=schedule_mod.RESERVE_REACHED, blocks=blocks)
    state.confirm_from, state.confirm_pairs = confirm_from, blocks - confirm_from
    state.leaders = {"base": ("x", None)}
    state.alphas = {"base": sequential.selection_alpha(1)}
    state.confirmed = {"base": ended}
    return state


def test_a_cold_first_run_is_not_paired():
    """The numpy try of issue 55: as-is's first run 1.58 s, steady 0.75-0.80 s. Paired, it would put a
    0.5x pair at the bottom of every configuration's interval; as the warm-up it is run and counted,
    never paired, and the stability rule does not judge it either."""
    rng = np.random.default_rng(3)
    base = [1.58, *(0.78 + rng.normal(0, 0.01, 7))]
    x = [0.80, *(0.78 + rng.normal(0, 0.01, 7))]  # no difference, warm or not
    rows = pd.DataFrame(_rows({"base": base, "x": x}))
    ratio = race.ratio_to(rows, "x", "base", "window_s")
    assert ratio.n == 7 and ratio.lo > 0.9  # the cold pair (0.51) is not among them
    assert not race.steadiness(rows, "base", "window_s").unstable  # 1.58 is not an outlier of it
    assert race.warmups(rows) == 2
    # the schedule: after block 2 (two pairs) nothing is judged; a cold first run drops nothing
    sched = schedule_mod.Schedule(["base", "x"], "base", "window_s", "lower", 600, time.monotonic())
    sched.state.active = ["base", "x"]
    slow_start = _rows({"base": [0.5, 1.0, 1.0, 1.0], "x": [1.6, 1.05, 1.02, 1.04]})
    sched._decide(slow_start[:3] + slow_start[4:7], 3)  # blocks 0-2: one pair short of judging
    assert not sched.state.dropped
    sched._decide(slow_start, 4)  # blocks 0-3: three pairs, x's warm runs within reach of as-is's
    assert "x" not in sched.state.dropped
    state = _state(8, 4, "resolved better")
    verdict = _build(rows, CELLS, "base", "window_s", "lower", SPEC, "madvise", state)
    assert verdict.warmups == 2 and verdict.baseline.runs == 4  # blocks 0-3: the warm-up counted


def _build(rows, cells, base, metric, better, spec, thp, state):
    """verdict.build of these, as one value."""
    return verdict_mod.build(
        verdict_mod.VerdictInputs(rows, cells, base, metric, better, spec, thp, state)
    )


def _busy_try(effect: float, seed: int, blocks: int = 32, confirm_from: int = 12):
    """as-is (1 s) and x (``effect`` s) in interleaved blocks while another job holds one of the two
    CPUs half the time, in stretches of 4 blocks: a busy run is slowed by 1.0-1.9x, each on its own."""
    rng = np.random.default_rng(seed)
    busy = [i for i in range(blocks) if (i // 4) % 2 == 1]
    slow = {
        c: np.where(np.isin(np.arange(blocks), busy), rng.uniform(1.0, 1.9, blocks), 1.0)
        for c in CELLS
    }
    noise = {c: np.exp(rng.normal(0, 0.03, blocks)) for c in CELLS}
    values = {
        "base": list(1.0 * slow["base"] * noise["base"]),
        "x": list(effect * slow["x"] * noise["x"]),
    }
    return _rows(values, {c: busy for c in CELLS}), busy


@pytest.mark.parametrize("seed", range(5))
def test_a_half_effect_on_a_busy_machine_is_called_likely_never_keep_as_is(seed):
    """Issue 55's heap program with another job on one CPU: its confirmation read 0.526 [0.485, 0.781]
    and the verdict was "keep as-is" (unstable). Paired and robust, the same evidence is "likely X
    (0.5x), the machine was busy: re-run quiet to confirm", its one interval below 1, the process tree's
    CPU time beside the wall time."""
    rows, _ = _busy_try(0.5, seed)
    frame = pd.DataFrame(rows)
    sched = schedule_mod.Schedule(["base", "x"], "base", "window_s", "lower", 180, time.monotonic())
    assert sched._confirmation_ended(rows, 12, "x", "base") == "resolved better"
    assert sched.state.answered_s is not None  # the moment the answer was reached is kept
    state = _state(32, 12, "resolved better")
    verdict = _build(frame, CELLS, "base", "window_s", "lower", SPEC, "madvise", state)
    best = verdict.best
    assert verdict.recommend == "likely" and verdict.resolved and best.kind == "better"
    assert verdict.likely == "the machine was busy: re-run quiet to confirm"
    assert best.ratio.ci_hi < 1 and 0.4 < best.ratio.value < 0.65
    assert best.cpu_ratio is not None and best.cpu_ratio.value < 1
    short = answer(verdict, [], details=False).splitlines()
    assert short[0].startswith(f"VERDICT: likely {best.name} (0.")
    assert short[0].endswith("x), the machine was busy: re-run quiet to confirm")
    assert "; CPU time 0." in short[1]
    assert verdict.deploy is not None  # what to re-run quiet, and how to deploy it once confirmed
    assert any(c.startswith("likely: the best's interval") for c in verdict.caveats)


def test_no_effect_on_a_busy_machine_is_not_called_likely():
    """The same busy pattern with no difference: the paired interval holds 1; nothing is called, and
    pairs that point either way as often give no leaning either."""
    called = leaned = 0
    for seed in range(20):
        rows, _ = _busy_try(1.0, seed)
        state = _state(32, 12, "budget ended after 20 fresh pairs")
        verdict = _build(
            pd.DataFrame(rows), CELLS, "base", "window_s", "lower", SPEC, "madvise", state
        )
        called += verdict.recommend != "as-is"
        leaned += verdict.leaning is not None
    assert called <= 1 and leaned <= 1


# the heap program's busy try after lead-ins (2026-12-08 03:28, judge beside a one-CPU load): as-is and
# jemalloc-thp back to back, blocks 0-12, the confirmation from block 3; the pair of block 9 is a busy
# moment's (1.02x), every other pair 0.47-0.59x: the interval was 0.46-1.03 and the verdict "keep as-is"
HEAP_BUSY = {
    "base": [2.01, 2.12, 1.95, 2.09, 1.90, 2.14, 2.04, 2.23, 1.98, 1.84, 1.80, 1.96, 2.06],
    "x": [1.12, 1.08, 1.15, 1.14, 1.10, 1.26, 1.16, 1.04, 1.13, 1.89, 1.02, 1.06, 1.11],
}


def test_an_unresolved_best_whose_fresh_pairs_point_one_way_leads_and_says_so():
    """Not resolved (one busy pair stretches the anytime interval past 1), yet 9 of 10 fresh pairs are
    faster by ~45%: the answer says the best leads, not that a difference "if any, is small"; it still
    keeps as-is (no deploy lines) until a quiet re-run or a larger budget settles it."""
    busy = {c: range(13) for c in CELLS}
    rows = pd.DataFrame(_rows(HEAP_BUSY, busy))
    state = _state(13, 3, "budget ended after 10 fresh pairs")
    verdict = _build(rows, CELLS, "base", "window_s", "lower", SPEC, "madvise", state)
    best = verdict.best
    assert not verdict.resolved and verdict.recommend == "as-is" and verdict.deploy is None
    assert best.ratio.ci_hi > 1 and best.ratio.value < 0.6
    assert (
        verdict.leaning
        == "9 of 10 fresh pairs faster; the machine was busy: re-run quiet to confirm"
    )
    short = answer(verdict, [], details=False).splitlines()
    assert short[0].startswith(f"VERDICT: keep as-is for now: {best.name} leads (0.5")
    assert "9 of 10 fresh pairs faster) but is not resolved; the machine was busy" in " ".join(
        short
    )
    said = " ".join(verdict.caveats)
    assert "though 9 of 10 fresh pairs faster" in said and "if any, is small" not in said
    assert verdict.to_dict()["leaning"] == verdict.leaning
    assert verdict_mod.sign_test(9, 10) < verdict_mod.SIGN_LEVEL < verdict_mod.sign_test(8, 10)


def test_a_quiet_resolved_answer_is_firm():
    rng = np.random.default_rng(5)
    rows = _rows(
        {"base": list(1 + rng.normal(0, 0.02, 20)), "x": list(0.6 + rng.normal(0, 0.02, 20))}
    )
    state = _state(20, 10, "resolved better")
    verdict = _build(pd.DataFrame(rows), CELLS, "base", "window_s", "lower", SPEC, "madvise", state)
    assert verdict.recommend == "best" and verdict.likely is None
    assert answer(verdict, [], details=False).startswith("VERDICT: use ")


# -- the one interval's construction --------------------------------------------------------------


def test_the_block_drift_sees_a_step_and_a_trend_not_one_wild_pair():
    rng = np.random.default_rng(0)
    flat = rng.normal(0, 0.05, 30)
    assert sequential.block_drift_sd(flat) < 0.03
    wild = flat.copy()
    wild[7] = 1.5  # one pair of a busy moment
    assert sequential.block_drift_sd(wild) < 0.03  # a block's median barely moves
    step = flat + np.where(np.arange(30) < 15, 0.0, 0.2)
    assert sequential.block_drift_sd(step) > 0.07
    assert sequential.drift_sd(step) >= sequential.block_drift_sd(step)  # the larger of the two
    assert sequential.block_drift_sd(flat[:9]) == 0.0  # fewer than two blocks: nothing to compare


def test_the_interval_contains_the_sequence_and_widens_with_drift():
    effect = Ratio(0.6, 0.55, 0.66, True, 10)
    steady = list(np.exp(np.log(0.6) + np.random.default_rng(1).normal(0, 0.05, 24)))
    lo, hi, drift = sequential.deployment_interval(effect, steady)
    assert lo < 0.55 and hi > 0.66  # never narrower than the sequence: its guarantee holds
    trend = [r * math.exp(0.01 * i) for i, r in enumerate(steady)]
    lo2, hi2, drift2 = sequential.deployment_interval(effect, trend)
    assert lo2 < lo and hi2 > hi and drift2 > drift
    assert sequential.deployment_interval(Ratio(0.6, 0.0, math.inf, True, 5), steady)[:2] == (
        0.0,
        math.inf,
    )


def test_a_winners_flattered_selection_is_not_counted_as_drift():
    """The selection's pairs of a winner read lower than its fresh ones (it was picked for being the
    best): centred phase by phase, that step widens nothing; a drift inside a phase still does."""
    rng = np.random.default_rng(2)
    sel = np.exp(np.log(0.80) + rng.normal(0, 0.02, 12))
    fresh = np.exp(np.log(0.90) + rng.normal(0, 0.02, 10))
    series = np.concatenate([sel, fresh])
    phases = [False] * 12 + [True] * 10
    lo, hi = sequential.median_cs(fresh)
    effect = Ratio(float(np.median(fresh)), lo, hi, True, 10)
    centred = sequential.deployment_interval(effect, series, phases)
    plain = sequential.deployment_interval(effect, series)
    assert centred[1] < 0.97 < plain[1] and centred[2] < 1.02 < plain[2]


def test_the_interval_covers_a_later_window_at_least_nine_times_in_ten_under_drift():
    """Simulated: the log ratio wanders as a random walk of 1 % a pair (plus 8 % noise a pair); a try of
    12 selection and 12 fresh pairs, then a check of 12 pairs 10 pairs later. The fresh pairs' sequence
    alone misses the check more often (~86 %); the one interval covers it >= 90 % of the time."""
    rng = np.random.default_rng(7)
    inside = inside_cs = 0
    trys = 1500
    for _ in range(trys):
        walk = np.log(0.7) + np.cumsum(rng.normal(0, 0.01, 46))
        x = np.exp(walk + rng.normal(0, 0.08, 46))
        fresh = x[12:24]
        lo, hi = sequential.median_cs(fresh)
        effect = Ratio(float(np.median(fresh)), lo, hi, True, 12)
        phases = [False] * 12 + [True] * 12  # centred only when the fresh read worse (flattered)
        flattered = np.median(x[:12]) <= effect.value
        i_lo, i_hi, _ = sequential.deployment_interval(
            effect, x[:24], phases if flattered else None
        )
        check = float(np.median(x[34:46]))
        inside += i_lo <= check <= i_hi
        inside_cs += lo <= check <= hi
    assert inside / trys >= 0.9 and inside_cs < inside
