"""try's statistics under selection and optional stopping (hugebench.stats.sequential, the schedule's rules).

The simulation replays try's selection and confirmation over thousands of trys at once (numpy, vectorised):
12 configurations and as-is, lognormal noise, one pair per block, a look after every block, drops of the
clearly worse after 3 blocks, the leader picked by median ratio, then fresh pairs of the leader only."""

from __future__ import annotations

import math
import re

import numpy as np
import pandas as pd
import pytest

from hugebench.stats import sequential
from hugebench.trial import schedule as schedule_mod
from hugebench.trial import verdict as verdict_mod


def test_the_interval_is_the_beta_binomial_mixture_and_needs_pairs_that_agree():
    # 7 pairs all one way resolve at 95 %, 6 cannot; with the alpha shared by 12, 11 pairs
    assert sequential.fewest_pairs(0.05) == 7
    assert sequential.fewest_pairs(0.05 / 12) == 11
    assert sequential.accept_range(7, 0.05) == (1, 6)
    # the mixture against a fair coin, by hand: 2**n * B(a + k, a + n - k) / B(a, a), a = 1/2
    n, k = 7, 7
    e = 2**n * math.gamma(7.5) * math.gamma(0.5) / math.gamma(8) / math.pi
    assert e >= 20 and sequential._log_mixture(n, k) == pytest.approx(math.log(e))
    lo, hi = sequential.median_cs([0.8, 0.82, 0.79, 0.85, 0.81, 0.83, 0.80])
    assert lo == 0.79 and hi == 0.85  # the extreme order statistics at n = 7
    assert sequential.median_cs([0.8] * 6) == (0.0, math.inf)  # unbounded: 6 pairs cannot tell
    r = sequential.paired([0.8, 0.9, 0.85, 0.8, 0.82, 0.81, 0.83], [1.0] * 7)
    assert r.resolved is True and r.level == 0.95 and r.n == 7
    assert sequential.direction([7, 0, 3], [0, 7, 4], [7, 7, 7]).tolist() == [1, -1, 0]


def _lead(ratios: np.ndarray, n: np.ndarray, active: np.ndarray) -> np.ndarray:
    """Each try's leader: the active configuration with the smallest median ratio of its pairs so far."""
    med = np.nanmedian(np.where(np.arange(ratios.shape[2]) < n[..., None], ratios, np.nan), axis=2)
    return np.argmin(np.where(active, med, np.inf), axis=1)


def simulate(effects, trys=3000, sigma=0.10, blocks=16, fresh=20, seed=1):
    """(recommended configuration or -1, any selection interval excluding its true ratio) per try."""
    rng = np.random.default_rng(seed)
    k = len(effects)
    log_eff = np.log(np.asarray(effects))
    base = rng.normal(0, sigma, (trys, 1, blocks))
    runs = log_eff[None, :, None] + rng.normal(0, sigma, (trys, k, blocks))
    ratios = np.exp(runs - base)  # paired, one per block
    alpha = sequential.selection_alpha(k)
    active = np.ones((trys, k), bool)
    n = np.zeros((trys, k), int)
    live = np.ones(trys, bool)  # selection still going on
    wrong = np.zeros(trys, bool)
    for b in range(blocks):
        n += active & live[:, None]
        seen = np.arange(blocks) < n[..., None]
        below = (seen & (ratios < 1)).sum(2)
        above = (seen & (ratios > 1)).sum(2)
        say = sequential.direction(below, above, n, alpha)
        truth = np.sign(-log_eff)[None, :]
        wrong |= ((say != 0) & (say != truth)).any(1) & live
        lead = _lead(ratios, n, active)
        if (
            b + 1 >= schedule_mod.MIN_BLOCKS
        ):  # clearly worse than as-is: every run above every as-is run
            worst_base = np.max(np.where(seen, runs * 0 + base, -np.inf), axis=2)
            best_cfg = np.min(np.where(seen, runs, np.inf), axis=2)
            active &= ~((best_cfg > worst_base) & live[:, None])
            active[np.arange(trys), lead] = True
        live &= say[np.arange(trys), lead] != 1  # the leader resolved: selection ends
    lead = _lead(ratios, n, active)
    ahead = np.nanmedian(np.where(np.arange(blocks) < n[..., None], ratios, np.nan), axis=2)
    ahead = ahead[np.arange(trys), lead] < 1
    # confirmation: fresh pairs of the leader and as-is, a look after each, at alpha
    conf = np.exp(log_eff[lead][:, None] + rng.normal(0, sigma * math.sqrt(2), (trys, fresh)))
    below, above = np.cumsum(conf < 1, 1), np.cumsum(conf > 1, 1)
    say = sequential.direction(below, above, np.arange(1, fresh + 1)[None, :].repeat(trys, 0))
    first = np.where((say != 0).any(1), np.argmax(say != 0, 1), fresh - 1)
    verdict = say[np.arange(trys), first]
    return np.where(ahead & (verdict == 1), lead, -1), wrong


def test_no_real_difference_among_12_configurations_is_recommended_at_most_5_percent_of_the_time():
    chosen, wrong = simulate([1.0] * 12)
    assert (chosen >= 0).mean() <= 0.05
    # and every selection interval held at every look, together, at least 95 % of the time
    assert wrong.mean() <= 0.05


def test_a_true_20_percent_gain_is_found_most_of_the_time_and_its_sign_never_flips():
    effects = [1.0] * 11 + [0.8]
    chosen, wrong = simulate(effects)
    assert (chosen == 11).mean() >= 0.8
    assert ((chosen >= 0) & (chosen != 11)).mean() <= 0.05
    assert wrong.mean() <= 0.05


def _rows(values: dict[str, list[float]]) -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"cell_id": c, "status": "ok", "window_s": v, "repetition": i, "sweep_id": "s"}
            for c, vs in values.items()
            for i, v in enumerate(vs)
        ]
    )


@pytest.mark.parametrize("fresh_ratio, recommended", [(0.96, False), (0.90, True)])
def test_the_winner_reports_its_confirmations_ratio_not_the_flattered_selections(
    fresh_ratio, recommended
):
    """sqlite in issue 40: 0.899x in the selection, 0.96 deployed. The selection's 12 blocks flatter 'a'
    (0.80); its 10 fresh pairs say ``fresh_ratio``: that is the effect reported, and 0.96 (within 5 %)
    is no difference worth deploying."""
    wiggle = [0.000, 0.004, -0.003, 0.002, -0.001, 0.003, -0.002, 0.001, -0.004, 0.002]
    base = [1.0 + w for w in wiggle] * 2 + [1.0, 1.002]
    a = [0.80 * b for b in base[:12]] + [
        fresh_ratio * b * (1 + w) for b, w in zip(base[12:], wiggle)
    ]
    b_cfg = [1.01 * x for x in base]
    rows = _rows({"base": base, "a": a, "b": b_cfg})
    state = schedule_mod.Progress(
        0.0, 60, stopped="the leader's ratio to as-is is resolved", blocks=12
    )
    state.confirm_from, state.confirm_pairs = 12, 10
    state.leaders = {"base": ("a", None)}
    state.alphas = {"base": sequential.selection_alpha(2)}
    state.confirmed = {"base": "resolved better"}
    cells = {
        "base": {"allocator": "glibc", "thp": "madvise"},
        "a": {"allocator": "glibc-hugetlb", "thp": "madvise"},
        "b": {"allocator": "glibc", "thp": "never"},
    }
    spec = type("Spec", (), {"allocators": {}})()
    verdict = verdict_mod.build(
        verdict_mod.VerdictInputs(rows, cells, "base", "window_s", "lower", spec, "madvise", state)
    )
    best = verdict.best
    assert best.cell == cells["a"] and best.confirmation.pairs == 10
    assert best.ratio.value == pytest.approx(fresh_ratio, abs=0.01)
    assert best.selection_ratio.value == pytest.approx(0.80, abs=0.01)
    assert best.selection_ratio.family == 2 and best.ratio.family == 1
    assert (verdict.recommend == "best") is recommended
    if not recommended:
        # 0.96 is within 5 %; the step from the selection's flattered 0.80 reads as drift in the one
        # interval, so it is not called "no difference" either: as-is, nothing deployed
        assert verdict.recommend == "as-is" and verdict.deploy is None
        assert not (verdict.resolved and best.kind == "better")
    from hugebench.trial.render import text

    out = text(verdict, [])
    assert f"{fresh_ratio:.3f}x as-is" in out.splitlines()[0] or f"{fresh_ratio:.2f}" in out
    assert "in the selection (chosen as the best, so flattered): 0.800x" in out


def test_a_cut_names_what_it_left_out_and_the_budget_that_covers_it_likely_winners_first():
    import time

    from hugebench.trial.runs import likely_first
    from hugebench.trial.session import _cut_lines

    order = ["base", "never", "hugetlb", "always"]
    huge = {"hugetlb", "always"}
    assert likely_first(order, huge, 256 << 20) == ["base", "hugetlb", "always", "never"]
    assert likely_first(order, huge, 4 << 20) == order  # a small program: the matrix's order
    sched = schedule_mod.Schedule(
        order, "base", "window_s", "lower", 4 + 30.0, time.monotonic(), huge=huge
    )
    sched.state.run_s = 1.0
    rows = [{"cell_id": "base", "status": "ok", "window_s": 1.0, "tree_peak_rss_bytes": 300e6}]
    sched._cut(rows)  # 30 runs, 20 of them the confirmation's reserve: the least is kept
    state = sched.state
    assert state.kept == ["base", "hugetlb"] and state.cut == ["always", "never"]
    assert state.alphas == {"base": 0.05}  # one configuration kept: nothing to share
    names = {c: c for c in order}
    (line,) = _cut_lines(state, names, order)
    # issue 55: the huge-page configuration left out is named as a likely winner, with the budget that
    # would hold it beside the ones kept; the rest, and the budget that covers all, after it
    assert (
        "likely winners left out (huge pages, for a program this large): always; --budget" in line
    )
    hold, cover = (int(b) for b in re.findall(r"--budget (\d+)s", line))
    assert "would hold them; also left out: never; --budget" in line and "would cover them" in line
    assert 34 < hold < cover and state.cover_s > 34  # more than the budget given
    # a small program: nothing is likely, the plain line
    sched = schedule_mod.Schedule(
        order, "base", "window_s", "lower", 4 + 30.0, time.monotonic(), huge=huge
    )
    sched.state.run_s = 1.0
    sched._cut([{**rows[0], "tree_peak_rss_bytes": 4e6}])
    (line,) = _cut_lines(sched.state, names, order)
    assert "likely" not in line and "left out: hugetlb, always; --budget" in line


class _Clock:
    """schedule's time.monotonic, advanced one second per run the fake sweep makes."""

    def __init__(self):
        self.now = 1000.0

    def monotonic(self):
        return self.now


def _drive(sched, order, values, clock, seed=0, columns=None, noise=0.01):
    """Run the Schedule's batches through a fake sweep: one second a run, each run's metric its cell's value
    times a little noise; the rows it wrote."""
    import types

    import numpy as np

    rng = np.random.default_rng(seed)
    rows = []

    def plan_block(spec, block, cells):
        return [types.SimpleNamespace(cell_id=c, block=block) for c in order if c in cells]

    for batch in sched(None, [], lambda: list(rows), plan_block):
        for run in batch:
            clock.now += 1.0
            value = values[run.cell_id] * (1 + noise * rng.standard_normal())
            rows.append(
                {"cell_id": run.cell_id, "status": "ok", "window_s": value, "repetition": run.block}
                | (columns or {}).get(run.cell_id, {})
            )
    return rows


def test_a_cut_screens_every_configuration_once_and_keeps_the_best(monkeypatch):
    """Issue 40's heap program under try --budget 3m: ~45 runs for 13 configurations, so the plan is cut.
    A fixed keep order kept glibc's hugetlb tunable (nothing for 256 KiB blocks that each get an mmap) and
    cut jemalloc with THP (0.64x). With one run of each first, the cut keeps what measured best."""
    import types

    clock = _Clock()
    monkeypatch.setattr(schedule_mod, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    order = ["base", "hugetlb", "c", "d", "e", "f", "jem"]
    values = {c: 1.0 for c in order} | {"jem": 0.64, "hugetlb": 1.10}
    sched = schedule_mod.Schedule(
        order, "base", "window_s", "lower", 45.0, clock.monotonic(), huge={"hugetlb", "jem"}
    )
    rows = _drive(sched, order, values, clock)
    state = sched.state
    assert state.screened == order[1:]  # each ran once before the cut
    assert state.kept[:2] == ["base", "jem"] and "hugetlb" in state.cut
    assert sum(1 for r in rows if r["cell_id"] == "hugetlb") == 1
    assert state.alphas["base"] == pytest.approx(0.05 / 6)  # the screening chose among six
    assert state.leaders["base"][0] == "jem"
    assert clock.now <= 1000.0 + 45.0  # within the budget
    # a budget that keeps every configuration screens nothing
    clock2 = _Clock()
    monkeypatch.setattr(schedule_mod, "time", types.SimpleNamespace(monotonic=clock2.monotonic))
    roomy = schedule_mod.Schedule(order, "base", "window_s", "lower", 400.0, clock2.monotonic())
    _drive(roomy, order, values, clock2)
    assert roomy.state.screened == [] and roomy.state.cut == []


def test_with_no_leader_ahead_of_as_is_the_confirmation_reserve_keeps_selecting(monkeypatch):
    """xz as a user, judged: six-second runs (4 s idle each: the cold regime) left room for as-is and one
    configuration; after five blocks neither was ahead nor equivalent, the selection stopped where the
    confirmation's reserve began, no confirmation was due, and try ended with two of its three minutes
    unused. The reserve is for a leader ahead of as-is: while there is none, the selection goes on."""
    import types

    order = ["base", "x"]
    values = {"base": 1.0, "x": 1.01}  # no real difference, noisy runs
    for seed in range(4):
        clock = _Clock()
        monkeypatch.setattr(schedule_mod, "time", types.SimpleNamespace(monotonic=clock.monotonic))
        sched = schedule_mod.Schedule(order, "base", "window_s", "lower", 60.0, clock.monotonic())
        _drive(sched, order, values, clock, seed=seed, noise=0.3)
        used = clock.now - 1000.0
        assert 60.0 - schedule_mod.END_RESERVE_S - 1 <= used <= 60.0, (seed, sched.state.stopped)
        # a leader that got ahead late is still only confirmed on fresh pairs, however few remain
        assert not sched.state.confirmed["base"].startswith("resolved better"), seed


def _folios(**shares) -> dict:
    return {"folio.anon_bytes": 512 << 20} | {
        f"folio_share_tw.{k[1:]}": v for k, v in shares.items()
    }


def test_a_page_size_set_that_got_the_same_folios_as_a_kept_one_is_dropped_after_one_run(
    monkeypatch,
):
    """Size sets chosen by measurement (issue 41): the kernel took 64 KiB folios under 16kB+64kB as under
    64kB only, and 2 MiB pages under 64kB+2048kB as under THP always; the later of each pair costs runs and
    tells nothing more, so it is dropped after its first run. The sets that got different folios race on."""
    import types

    clock = _Clock()
    monkeypatch.setattr(schedule_mod, "time", types.SimpleNamespace(monotonic=clock.monotonic))
    order = ["base", "always", "m64", "m16_64", "m64_2M"]
    values = {"base": 1.0, "always": 0.6, "m64": 0.62, "m16_64": 0.61, "m64_2M": 0.6}
    columns = {
        "base": _folios(),
        "always": _folios(_2048kB=0.99),
        "m64": _folios(_64kB=0.99),
        "m16_64": _folios(_16kB=0.002, _64kB=0.99),
        "m64_2M": _folios(_64kB=0.001, _2048kB=0.99),
    }
    names = {"always": "THP always", "m64": "mTHP 64kB only", "m16_64": "16+64", "m64_2M": "64+2M"}
    page_sizes = {
        "base": (-1.0, "as-is"),
        "always": (0.0, names["always"]),
        "m64": (64 * 16 + 1, names["m64"]),
        "m16_64": (64 * 16 + 2, names["m16_64"]),
        "m64_2M": (2048 * 16 + 2, names["m64_2M"]),
    }
    sched = schedule_mod.Schedule(
        order, "base", "window_s", "lower", 400.0, clock.monotonic(), page_sizes=page_sizes
    )
    rows = _drive(sched, order, values, clock, columns=columns)
    dropped = sched.state.dropped
    assert "mTHP 64kB only" in dropped["m16_64"] and "64kB 99%" in dropped["m16_64"]
    assert "THP always" in dropped["m64_2M"]
    assert not any("same folios" in dropped.get(c, "") for c in ("base", "always", "m64"))
    assert sum(1 for r in rows if r["cell_id"] in ("m16_64", "m64_2M")) == 2  # one run each
    assert sum(1 for r in rows if r["cell_id"] == "m64") >= schedule_mod.MIN_BLOCKS


def test_same_folios_needs_a_reading_of_enough_memory_and_a_close_mix():
    from hugebench.trial import sizes

    sets = {"a": (0.0, "A"), "b": (1.0, "B")}
    rows = [
        {"cell_id": "a", "status": "ok", **_folios(_64kB=0.90)},
        {"cell_id": "b", "status": "ok", **_folios(_64kB=0.85)},
    ]
    assert sizes.same_folios(rows, sets) == {}  # 5 points apart: different folios
    rows[1] |= _folios(_64kB=0.91)
    assert list(sizes.same_folios(rows, sets)) == ["b"]
    small = [dict(r, **{"folio.anon_bytes": 1 << 20}) for r in rows]
    assert sizes.same_folios(small, sets) == {}  # 1 MiB: no evidence
    unread = [{k: v for k, v in r.items() if not k.startswith("folio")} for r in rows]
    assert sizes.same_folios(unread, sets) == {}


def _replications(step: float, trys: int = 1000, n: int = 30, fresh: int = 10, gap: int = 20):
    """How often a later check of ``fresh`` pairs (its median, ``gap`` pairs after the try's last) lands
    inside the confirmation's interval and inside ``deployment_interval``, when the log effect drifts as a
    random walk of ``step`` a pair (0: no drift), with per-pair noise 0.1."""
    from hugebench.stats import Ratio

    rng = np.random.default_rng(7)
    inside_cs = inside_expected = 0
    for _ in range(trys):
        x = np.log(0.8) + np.cumsum(rng.normal(0, step, n + gap + fresh))
        x = x + rng.normal(0, 0.1, x.size)
        series = np.exp(x[:n])
        lo, hi = sequential.median_cs(series[-fresh:])
        effect = Ratio(float(np.median(series[-fresh:])), lo, hi, True, fresh)
        e_lo, e_hi, _ = sequential.deployment_interval(effect, series)
        check = float(np.exp(np.median(x[-fresh:])))
        inside_cs += lo <= check <= hi
        inside_expected += e_lo <= check <= e_hi
    return inside_cs / trys, inside_expected / trys


def test_the_expected_range_covers_a_later_check_where_the_effects_interval_does_not():
    # no drift: both cover a later check of the same size at least 95 % of the time
    cs, expected = _replications(0.0)
    assert cs >= 0.95 and expected >= 0.95
    # a drift of 0.02 a pair (the ratio wanders ~10 % over the try): the effect's interval misses a
    # later check about a fifth of the time, the expected range (drift from the try's own pairs) ~1 in 10
    cs, expected = _replications(0.02)
    assert cs < 0.85 and expected >= 0.87 and expected - cs >= 0.07


def test_the_expected_range_widens_with_the_drift_and_keeps_unbounded_ends():
    from hugebench.stats import Ratio

    effect = Ratio(0.8, 0.75, 0.85, True, 10)
    steady = [0.8, 0.78, 0.82, 0.8, 0.79, 0.81, 0.8, 0.78, 0.82, 0.8, 0.79, 0.81]
    drifting = [0.7, 0.71, 0.72, 0.74, 0.76, 0.78, 0.8, 0.82, 0.84, 0.86, 0.88, 0.9]
    lo, hi, drift = sequential.deployment_interval(effect, steady)
    assert lo < 0.75 and hi > 0.85 and drift == 1.0  # a check's own noise, no drift
    lo2, hi2, drift2 = sequential.deployment_interval(effect, drifting)
    assert lo2 < lo and hi2 > hi and drift2 > 1.05
    assert sequential.drift_sd(np.log(steady)) == 0.0
    lo, hi, _ = sequential.deployment_interval(Ratio(0.8, 0.0, math.inf, True, 6), steady)
    assert lo == 0.0 and hi == math.inf  # what the sequence cannot bound stays unbounded
