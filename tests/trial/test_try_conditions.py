"""issue 55: try measures the program as its deploy lines will run it. A machine condition a configuration's
runs had (free page reporting held off) is named in it and has its own deploy line; by default reporting is
left as found and both regimes are measured; a huge-page configuration that got as-is's pages is dropped
after its first run; regimes whose verdicts disagree in sign say so first; the probe library stays out of
the timed runs."""

from __future__ import annotations

import dataclasses
import time
import types

import pytest

from hugebench.kernel import reporting
from hugebench.sweep.plan import RunSpec
from hugebench.trial import deploy as deploy_mod
from hugebench.trial import matrix
from hugebench.trial.schedule import END_RESERVE_S, Schedule, lead_in

SPEC = types.SimpleNamespace(allocators={}, params={"argv": ["/opt/prog"]})


def test_a_configuration_held_off_reporting_carries_its_sysfs_line_and_its_cost(
    fake_sys, monkeypatch
):
    monkeypatch.setattr("hugebench.kernel.host.LOCAL", fake_sys.host)
    monkeypatch.setattr(deploy_mod, "process_thp_support", lambda: {"never": True})
    cell = {"allocator": "as-is", "thp": "madvise", "regime": "warm"}
    got = deploy_mod.deploy(cell, SPEC, "madvise", systemd_version=252)
    (line,) = [w for w in got.lines if "page_reporting_order" in w.shell]
    assert line.scope == "machine-wide" and line.required
    assert line.shell == "echo 11 > /sys/module/page_reporting/parameters/page_reporting_order"
    assert "no longer takes back this guest's free memory" in line.affects
    assert "echo 9 >" in line.affects  # the undo: the order as found
    assert matrix.describe(cell, "madvise").endswith("free page reporting held off")
    # back to back and after idle change nothing on the machine: no such line
    for regime in ("back-to-back", "cold:4s"):
        other = deploy_mod.deploy({**cell, "regime": regime}, SPEC, "madvise", systemd_version=252)
        assert not any("page_reporting" in w.shell for w in other.lines)


def test_reporting_is_left_as_found_by_default(fake_sys, monkeypatch):
    """Root or not: both regimes, neither holding reporting off; the back-to-back run leaves the order."""
    from hugebench.system import SystemState
    from hugebench.system import regime as regime_mod

    for euid in (0, 1000):
        monkeypatch.setattr(matrix.os, "geteuid", lambda euid=euid: euid)
        request = matrix.Request(argv=("true",), thp=("madvise",), only=("glibc",))
        cells = matrix.build(request, fake_sys.host).cells
        assert {c["regime"] for c in cells} == {"back-to-back", "cold:4s"}
        assert not any(regime_mod.holds_reporting(c["regime"]) for c in cells)
    with SystemState(fake_sys.host) as state:
        regime_mod.enter("back-to-back", state)
        assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "9"
    assert (f"sys/{reporting.ORDER_FILE}", "11") not in fake_sys.writes


def _schedule(huge=("h",), page_sizes=None):
    sched = Schedule(["base", "h", "j"], "base", "window_s", "lower", 600, 0.0, huge=huge)
    sched.page_sizes = dict(page_sizes or {})
    sched.state.kept = ["base", "h"]
    sched.state.active = ["base", "h"]
    sched.state.cut = ["j"]
    return sched


def _row(cell, **cols):
    return {"cell_id": cell, "status": "ok", "warmup": True, "repetition": -1, **cols}


def test_a_huge_page_configuration_with_as_is_folios_is_dropped_after_one_run():
    mix = {"folio.anon_bytes": 256 << 20, "folio_share.4kB": 1.0, "folio_share.2048kB": 0.0}
    rows = [_row("base", **mix), _row("h", **mix)]
    sched = _schedule()
    sched._after_warmup(rows, {"h"})
    assert "the same pages as as-is" in sched.state.dropped["h"]
    assert "h" not in sched.state.active
    assert "j" in sched.state.active  # the cut one takes its place: the budget goes elsewhere
    # one that got huge pages stays
    sched = _schedule()
    got = {**mix, "folio_share.4kB": 0.03, "folio_share.2048kB": 0.97}
    sched._after_warmup([_row("base", **mix), _row("h", **got)], {"h"})
    assert "h" not in sched.state.dropped


def test_with_two_regimes_a_configuration_dropped_at_its_first_run_gives_its_place_in_its_regime():
    """Back to back and after idle (two groups, each with its own as-is): the one configuration kept got
    as-is's pages in both; the next one the cut left out takes its place in each regime."""
    order = ["base", "idle-base", "h", "idle-h", "j", "idle-j", "k", "idle-k"]
    bases = {c: "idle-base" if c.startswith("idle-") else "base" for c in order}
    sched = Schedule(
        order, "base", "window_s", "lower", 600, 0.0, huge=("h", "idle-h"), bases=bases
    )
    sched.state.kept = sched.state.active = ["base", "idle-base", "h", "idle-h"]
    sched.state.active = list(sched.state.kept)
    sched.state.cut = ["j", "idle-j", "k", "idle-k"]
    mix = {"folio.anon_bytes": 256 << 20, "folio_share.4kB": 1.0, "folio_share.2048kB": 0.0}
    rows = [_row(c, **mix) for c in ("base", "idle-base", "h", "idle-h")]
    sched._after_warmup(rows, {"h", "idle-h"})
    assert {"h", "idle-h"} <= set(sched.state.dropped)
    assert sorted(sched.state.active) == ["base", "idle-base", "idle-j", "j"]
    assert sched.state.cut == ["k", "idle-k"]


def test_a_configuration_promoted_but_not_run_yet_is_not_dropped_as_failed():
    """Promoted at the block's last run, it has no timed run yet: not 'every run failed'."""
    sched = _schedule()
    sched.state.active = ["base", "h", "j"]
    timed = [
        {"cell_id": c, "status": "ok", "repetition": 0, "window_s": v}
        for c, v in (("base", 1.0), ("h", 0.9))
    ]
    sched._decide(timed, 1)
    assert "j" not in sched.state.dropped and "j" in sched.state.active
    failed = [*timed, {"cell_id": "j", "status": "failed", "repetition": 0, "window_s": None}]
    sched._decide(failed, 1)
    assert sched.state.dropped["j"] == "every run failed"


def test_without_folio_sizes_zero_coverage_on_both_is_the_same_pages():
    """As a user (no pagemap): both under 1 % huge-page coverage."""
    rows = [
        _row("base", hp_coverage=0.0, tree_peak_rss_bytes=1 << 30),
        _row("h", hp_coverage=0.002, tree_peak_rss_bytes=1 << 30),
    ]
    sched = _schedule()
    sched._after_warmup(rows, {"h"})
    assert "0% of its memory on huge pages" in sched.state.dropped["h"]


def test_a_failed_verification_run_drops_the_configuration():
    rows = [_row("base"), {**_row("h"), "status": "failed", "error": "malloc from libc"}]
    sched = _schedule()
    sched._after_warmup(rows, {"h"})
    assert sched.state.dropped["h"] == "its verification run failed: malloc from libc"


def test_a_verdict_whose_regimes_disagree_in_sign_says_so_first():
    import verdict_scenarios

    from hugebench.trial import regimes
    from hugebench.trial.render import answer

    one = verdict_scenarios.recommends()
    best = one.best
    assert best is not None and best.ratio is not None
    fast = dataclasses.replace(
        one,
        best=dataclasses.replace(
            best,
            cell={**best.cell, "regime": "back-to-back"},
            name=best.name + ", back to back",
            ratio=dataclasses.replace(best.ratio, value=0.56),
        ),
    )
    slow_best = dataclasses.replace(
        best,
        cell={**best.cell, "regime": "cold:5s"},
        name=best.name + ", after 5 s idle",
        ratio=dataclasses.replace(best.ratio, value=1.84),
    )
    slow = dataclasses.replace(one, best=slow_best, recommend="as-is")
    both = dataclasses.replace(
        fast, by_condition=("regime", {"back-to-back": fast, "cold:5s": slow})
    )
    said = regimes.disagreement(both)
    assert said is not None and said.startswith(f"{best.name}: 0.56x as-is back to back, but 1.84x")
    assert "wins only back to back" in said
    both = dataclasses.replace(both, disagreement=said)
    assert answer(both, [], details=False).splitlines()[0] == f"VERDICTS DISAGREE: {said}"
    assert both.to_dict()["disagreement"] == said
    agree = dataclasses.replace(
        both, by_condition=("regime", {"back-to-back": fast, "cold:5s": fast})
    )
    assert regimes.disagreement(agree) is None


def test_a_configuration_worse_than_as_is_is_never_called_the_best():
    import verdict_scenarios

    from hugebench.trial.render import answer

    one = verdict_scenarios.recommends()
    assert one.best is not None and one.best.ratio is not None
    fewer = dataclasses.replace(
        one,
        better="higher",
        recommend="as-is",
        best=dataclasses.replace(one.best, ratio=dataclasses.replace(one.best.ratio, value=0.91)),
    )
    text = answer(fewer, [], details=False) + "\n" + answer(fewer, [], details=True)
    decisions = [line for line in text.splitlines() if line.startswith("VERDICT")]
    assert len(decisions) == 2 and not any("best" in line for line in decisions)
    assert all("closest to as-is (none was better)" in line for line in decisions)


@pytest.mark.needs_root
def test_the_probe_is_only_in_the_untimed_runs(tmp_path):
    """A real sweep of the command workload as try writes it (probe: untimed, one warm-up): the warm-up
    run's process had libhbprobe.so in LD_PRELOAD, the timed ones had nothing of hugebench's."""
    import os

    from hugebench import load
    from hugebench.experiment import parse_spec
    from hugebench.sweep import plan as plan_mod
    from hugebench.sweep.orchestrator import SweepOptions, run_sweep

    if os.geteuid() != 0:
        pytest.skip("needs root (the sweep's knobs)")
    text = (
        "name: probe-untimed\nworkload: command\nrepetitions: 2\nwarmup: 1\ntimeout: 30\nperf: off\n"
        "counters: off\nparams:\n  argv: [/bin/sh, -c, 'echo \"PRELOAD=$LD_PRELOAD\"']\n"
        "  probe: untimed\n  metric: wall\naxes:\n  allocator: [as-is]\n"
    )
    spec = parse_spec(text, str(tmp_path / "p.yaml"))
    runs = plan_mod.plan(spec)
    runs.insert(2, lead_in(runs[2]))  # a back-to-back run's lead-in: untimed, and as deployed
    result = run_sweep(
        spec,
        runs,
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "journal.json"),
    )
    assert result.statuses == {"ok": 4}
    rows = load(tmp_path / "res")
    assert rows["lead_in"].tolist() == [False, False, True, False]
    for _, row in rows.iterrows():
        warm = bool(row["warmup"]) and not row["lead_in"]
        assert ("libhbprobe.so" in row["stdout_tail"]) == warm, row["stdout_tail"]
        assert (
            row.get("allocator_served") is not None
            and row["allocator_served"] == row["allocator_served"]
        ) == warm


def test_folio_sizes_never_contradict_the_coverage_beside_them():
    """issue 55: numpy's as-is read 'folio sizes 4kB 100%' beside 'huge-page coverage 96%' (its few per-size
    readings all before its array existed); memory on 2 MiB pages is in 2 MiB folios, so such a line says
    that its readings missed the huge pages instead."""
    import verdict_scenarios

    from hugebench.trial.render import answer, folio_text

    one = verdict_scenarios.recommends()
    assert one.best is not None
    missed = dataclasses.replace(one.baseline, hp_coverage=0.96, folio_shares={"4kB": 1.0})
    said = folio_text(missed)
    assert said.startswith("not read while its huge pages were resident") and "96%" in said
    agree = dataclasses.replace(missed, folio_shares={"4kB": 0.02, "2048kB": 0.98})
    assert folio_text(agree) == "4kB 2%, 2048kB 98%"
    best = dataclasses.replace(
        one.best, hp_coverage=0.97, folio_shares={"4kB": 0.03, "2048kB": 0.97}
    )
    text = answer(dataclasses.replace(one, best=best, baseline=missed), [], details=True)
    (line,) = [ln for ln in text.splitlines() if ln.startswith("  folio sizes:")]
    assert "4kB 100%" not in line.split("saw")[0] and "(as-is: not read while" in line


def test_a_huge_page_configuration_whose_coverage_saw_huge_pages_is_not_dropped():
    """Its per-size reading (taken early) saw only 4 KiB folios, its coverage over the run 95%: kept."""
    mix = {"folio.anon_bytes": 256 << 20, "folio_share.4kB": 1.0, "folio_share.2048kB": 0.0}
    rows = [_row("base", **mix, hp_coverage=0.0), _row("h", **mix, hp_coverage=0.95)]
    sched = _schedule()
    sched._after_warmup(rows, {"h"})
    assert "h" not in sched.state.dropped


def test_an_unstable_configuration_of_a_resolved_verdict_is_not_called_unresolvable():
    """'unstable ... no difference resting on it is called resolved' must not stand beside 'resolved at
    95%': an unstable configuration's caveat says a difference resting on it is called likely, not firm
    (the verdict's own rule: unstable runs make a resolved interval 'likely', issue 55)."""
    import pandas as pd
    import verdict_scenarios

    from hugebench.trial import verdict as verdict_mod

    one = verdict_scenarios.recommends()
    assert one.recommend == "best" and one.resolved and one.best is not None
    shaky = dataclasses.replace(one.best, unstable="spread 40% > 25%")
    other = dataclasses.replace(one.others[0], unstable="spread 50% > 25%")
    for verdict in (
        dataclasses.replace(one, best=shaky, others=(other, *one.others[1:])),
        dataclasses.replace(one, best=shaky, resolved=False, recommend="as-is"),
    ):
        got = verdict_mod.caveats(verdict, pd.DataFrame(), pd.DataFrame(), "window_s")
        lines = [c for c in got if "unstable" in c and f"'{shaky.name}'" in c]
        assert len(lines) == 1 and "called likely, not firm" in lines[0]
        assert not any("called resolved" in c for c in got)


def _run(cell, rep, regime_value, warm=False):
    return RunSpec(
        run_id=f"{cell}-{rep}{'w' if warm else ''}",
        cell_id=cell,
        experiment="x",
        workload="command",
        repetition=-1 if warm else rep,
        order_index=0,
        allocator="as-is",
        params={},
        system={},
        cell={},
        timeout=10.0,
        warmup=warm,
        regime=regime_value,
    )


def test_a_back_to_back_timed_run_follows_a_run_of_its_own_configuration():
    """Back to back (and warm), each timed run comes right after an untimed lead-in of its own
    configuration -- its warm-up, or a lead-in made for it; after idle, none (the idle is the regime)."""
    cells = {"base": "back-to-back", "h": "back-to-back", "cold-base": "cold:4s", "w": "warm"}
    sched = Schedule(list(cells), "base", "window_s", "lower", 600, 0.0)
    warmups = [_run(c, -1, r, warm=True) for c, r in cells.items()]
    sched._lead = {c for c, r in cells.items() if r != "cold:4s"}
    sched._warm = {"base": [warmups[0]]}
    made = [
        run for batch in sched._timed([_run(c, 1, r) for c, r in cells.items()]) for run in batch
    ]
    # base's warm-up leads its own first timed run; h and w get lead-ins, the cold one none
    assert [(r.cell_id, r.warmup, r.lead_in) for r in made] == [
        ("base", True, False),
        ("base", False, False),
        ("h", True, True),
        ("h", False, False),
        ("cold-base", False, False),
        ("w", True, True),
        ("w", False, False),
    ]
    lead = made[2]
    assert lead.run_id != made[3].run_id and lead.repetition == made[3].repetition
    assert sched.state.lead_ins == 2
    # the budget counts a lead-in as a run
    sched.state.run_s = 1.0
    sched.state.started = time.monotonic()
    assert sched._lead_factor() == 1.75
    sched.state.budget_s = END_RESERVE_S + 2.5  # two runs and a half left
    assert not sched._fits([_run("h", 2, "back-to-back"), _run("cold-base", 2, "cold:4s")])
    assert sched._fits([_run("cold-base", 2, "cold:4s"), _run("cold-base", 3, "cold:4s")])


def test_a_lead_in_is_never_paired_or_counted():
    """A lead-in's row is a warm-up: the race pairs and judges only the timed runs."""
    from hugebench.trial.race import ratio_to, values_of

    rows = []
    for rep in (1, 2, 3, 4):
        rows.append({"cell_id": "h", "status": "ok", "warmup": True, "lead_in": True,
                     "repetition": rep, "window_s": 9.0})  # fmt: skip
        rows.append(
            {"cell_id": "h", "status": "ok", "warmup": False, "repetition": rep, "window_s": 1.0}
        )
        rows.append(
            {"cell_id": "b", "status": "ok", "warmup": False, "repetition": rep, "window_s": 2.0}
        )
    assert values_of(rows, ["h"], "window_s")["h"] == [1.0] * 4
    assert ratio_to(rows, "h", "b", "window_s").value == pytest.approx(0.5)
