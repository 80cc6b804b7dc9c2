"""`hugebench try -- PROGRAM ARGS...` (issue 28): refusals, the matrix, the budget schedule, and real programs
tried end to end (a first-touch-bound C program, gzip on stdin, a Python script's JSON metric, redis under
redis-benchmark, a user without root), the written experiment file re-run by `hugebench sweep`."""

from __future__ import annotations

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import time
import types
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import thp_mode_needing_root

from hugebench.cli import main
from hugebench.cli.try_ import parse_budget
from hugebench.errors import PrivilegeError, SpecError
from hugebench.trial import BudgetTooSmall, Request, refuse
from hugebench.trial import matrix as matrix_mod
from hugebench.trial import schedule as schedule_mod

FAULTS_C = r"""
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
int main(void) {
    /* A large heap, first touched whole, then read at random: page faults and TLB misses, 4 KiB pages' cost. */
    size_t size = (size_t)256 << 20;
    char *p = malloc(size);
    if (!p) return 1;
    memset(p, 1, size);
    unsigned long x = 1, sum = 0;
    for (int i = 0; i < 8000000; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        sum += p[(x >> 20) % size];
    }
    printf("%lu\n", sum);
    return 0;
}
"""

JSON_PY = """
import json, time
t = time.perf_counter(); d = {}
for i in range(200000): d[str(i)] = i
print(json.dumps({"inserts_per_s": 200000 / (time.perf_counter() - t)}))
"""


def _try(args, tmp_path, **kwargs):
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        ["try", "--json", "--no-mthp", "-o", str(out), *args],
        catch_exceptions=False,
        **kwargs,
    )
    return result, out


def _verdict(result) -> dict:
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def _store_rows(out: Path) -> list[dict]:
    from hugebench.store import load

    return load(out, hosts=False).to_dict("records")


# -- logic without running anything ------------------------------------------------------------------


def test_budget_text_is_seconds_minutes_or_hours():
    assert parse_budget("90s") == 90 and parse_budget("10m") == 600 and parse_budget("1h") == 3600
    assert parse_budget("45") == 45
    with pytest.raises(SpecError, match="duration"):
        parse_budget("ten minutes")


def test_refusals_name_the_reason(tmp_path):
    with pytest.raises(SpecError, match="not found"):
        refuse(Request(argv=("no-such-program-hb",)))
    static = (
        shutil.which("ldconfig") or "/sbin/ldconfig"
    )  # Debian's ldconfig is a static executable
    if os.path.exists(static):
        with pytest.raises(SpecError, match="static"):
            refuse(Request(argv=(static, "-p")))
    setuid = tmp_path / "true-setuid"
    shutil.copy2("/bin/true", setuid)
    if os.geteuid() == 0:
        os.chown(
            setuid, 65534, -1
        )  # setuid to another user: secure execution, the loader ignores LD_PRELOAD
    setuid.chmod(0o4755)
    if os.geteuid() == 0 and not os.statvfs(setuid).f_flag & os.ST_NOSUID:
        with pytest.raises(SpecError, match="setuid"):
            refuse(Request(argv=(str(setuid),)))
    with pytest.raises(BudgetTooSmall, match="too small for two configurations"):
        refuse(Request(argv=("true",), budget_s=3))


def test_cli_refusal_is_a_clean_error_before_anything_runs(tmp_path):
    result = CliRunner().invoke(
        main, ["try", "-o", str(tmp_path / "o"), "--", "no-such-program-hb"]
    )
    assert result.exit_code == 2 and "cannot try no-such-program-hb" in result.output
    assert "Traceback" not in result.output and not (tmp_path / "o").exists()


def test_without_root_thp_modes_are_never_and_as_found(fake_sys):
    modes, found, notes = matrix_mod.thp_modes((), fake_sys.host, euid=1000)
    assert found == "madvise" and modes == ["never", "madvise"]
    assert "always left out (needs root)" in notes[0] and "never (per process)" in notes[0]
    with pytest.raises(
        PrivilegeError,
        match=r"THP always cannot be set .* still possible: --thp never --thp madvise",
    ):
        matrix_mod.thp_modes(("always",), fake_sys.host, euid=1000)
    assert matrix_mod.thp_modes((), fake_sys.host, euid=0)[0] == ["never", "madvise", "always"]


def _plain(cells: list) -> list:
    """The back-to-back regime's cells without their regime: this (fake) machine reports free pages, so a
    try measures each configuration back to back and after idle (test_both_regimes_are_measured_by_default)."""
    return [
        {k: v for k, v in c.items() if k != "regime"}
        for c in cells
        if c.get("regime") in (None, "back-to-back")
    ]


def test_matrix_puts_as_is_first_then_one_change_at_a_time(fake_sys):
    mx = matrix_mod.build(
        Request(argv=("true",), only=("jemalloc-thp",), thp=("never", "always")), fake_sys.host
    )
    cells = _plain(mx.cells)
    assert _plain([mx.baseline]) == [{"allocator": "as-is", "thp": "madvise"}] == cells[:1]
    one_change = [c for c in cells[1:] if (c["allocator"] == "as-is") != (c["thp"] == "madvise")]
    assert cells[1 : 1 + len(one_change)] == one_change  # single changes before combinations
    assert {"allocator": "jemalloc-thp", "thp": "always"} in cells


def test_both_regimes_are_measured_by_default(fake_sys, monkeypatch):
    """Where the machine reports free pages, try measures the conditions between runs without being asked,
    root or not: back to back and after 4 s idle, free page reporting as found in both (issue 55: holding
    it off is a machine setting, only with --regime warm, as root), with a note saying so; --regime wins;
    a machine that reports nothing is measured as found."""
    request = Request(argv=("true",), only=("jemalloc-thp",))
    for euid in (0, 1000):
        monkeypatch.setattr(matrix_mod.os, "geteuid", lambda euid=euid: euid)
        mx = matrix_mod.build(
            Request(argv=("true",), only=("jemalloc-thp",), thp=("madvise",)), fake_sys.host
        )
        assert sorted(c["regime"] for c in mx.cells) == ["back-to-back"] * 2 + ["cold:4s"] * 2
        assert any("measured back to back and after 4 s idle" in n for n in mx.notes)
    warm = Request(argv=("true",), only=("jemalloc-thp",), thp=("madvise",), regime="warm")
    with pytest.raises(PrivilegeError, match="--regime warm holds free page reporting off"):
        matrix_mod.build(warm, fake_sys.host)
    asked = matrix_mod.build(
        Request(argv=("true",), only=("jemalloc-thp",), thp=("madvise",), regime="cold", idle_s=1),
        fake_sys.host,
    )
    assert {c["regime"] for c in asked.cells} == {"cold:1s"} and not any(
        "reporting is on" in n for n in asked.notes
    )
    monkeypatch.undo()
    assert {c["regime"] for c in matrix_mod.build(warm, fake_sys.host).cells} == {"warm"}
    (fake_sys.sys_root / "module/page_reporting/parameters/page_reporting_order").write_text("11\n")
    plain = matrix_mod.build(request, fake_sys.host)
    assert not any("regime" in c for c in plain.cells)


def test_metric_options_become_the_command_metric():
    assert matrix_mod.metric_param("wall", False) == "wall"
    assert matrix_mod.metric_param("json:ops", True) == {
        "json": "ops",
        "name": "ops",
        "better": "higher",
    }
    assert matrix_mod.metric_param("regex:took ([0-9.]+)", False)["name"] == "score"
    assert (
        matrix_mod.metric_param("json:metric", False)["name"] == "score"
    )  # a parameter's name is taken
    with pytest.raises(SpecError, match="higher-is-better"):
        matrix_mod.metric_param("wall", True)


def test_clearly_worse_needs_separated_runs_and_resolution_is_one_rule():
    assert schedule_mod.clearly_worse([2.0, 2.1, 2.2], [1.0, 1.1, 1.2], "lower")
    assert not schedule_mod.clearly_worse([2.0, 2.1], [1.0, 1.1], "lower")  # too few runs to drop
    assert not schedule_mod.clearly_worse([1.0, 2.1, 2.2], [1.0, 1.1, 1.2], "lower")
    assert schedule_mod.clearly_worse([1.0, 1.1, 1.2], [2.0, 2.1, 2.2], "higher")
    from hugebench.stats import Ratio

    assert schedule_mod._resolved(Ratio(0.5, 0.45, 0.55, True, 6))
    assert not schedule_mod._resolved(
        Ratio(0.5, 0.45, 0.55, True, 3)
    )  # a CI on 3 pairs is their range
    assert not schedule_mod._resolved(
        Ratio(0.98, 0.9, 1.05, True, 12)
    ) and not schedule_mod._resolved(None)


def test_no_difference_worth_deploying_is_the_stability_rules_equivalence():
    from hugebench.stats import Ratio
    from hugebench.stats.stability import SMALLEST_EFFECT, assess, equivalent

    assert SMALLEST_EFFECT == 0.05
    assert equivalent(Ratio(1.01, 0.97, 1.04, True, 6))
    assert not equivalent(Ratio(1.01, 0.97, 1.04, True, 3))  # too few pairs to prove anything
    assert not equivalent(
        Ratio(0.97, 0.90, 1.02, True, 12)
    )  # could be 10 % better: not proven the same
    assert not equivalent(
        Ratio(1.0, 0.99, 1.01, True, 6), assess([60, 80, 100, 120, 140, 160])
    )  # unstable
    assert not equivalent(None)


def _rows(values: dict[str, list[float]]) -> list[dict]:
    return [
        {
            "cell_id": cell,
            "status": "ok",
            "window_s": v,
            "repetition": i,
            "sweep_id": "s",
            "source": "local",
        }
        for cell, vs in values.items()
        for i, v in enumerate(vs)
    ]


def _twice(values: dict[str, list[float]]) -> dict[str, list[float]]:
    return {cell: vs * 2 for cell, vs in values.items()}


def test_the_schedule_stops_when_no_configuration_left_differs_from_as_is():
    same = _twice(
        {
            "base": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98],
            "a": [1.00, 1.00, 1.01, 0.99, 1.01, 0.99],
            "b": [1.01, 1.00, 0.99, 1.00, 1.01, 0.99],
        }
    )  # 12 pairs: a confidence sequence shows sameness within 5 % from about 11
    assert schedule_mod.no_difference(_rows(same), ["base", "a", "b"], "base", "window_s")
    faster = {**same, "b": [0.90, 0.91, 0.89, 0.90, 0.92, 0.88] * 2}
    assert not schedule_mod.no_difference(_rows(faster), ["base", "a", "b"], "base", "window_s")
    assert schedule_mod.no_difference(
        _rows(faster), ["base", "a"], "base", "window_s"
    )  # b dropped: not left
    short = {k: v[:3] for k, v in same.items()}
    assert not schedule_mod.no_difference(_rows(short), ["base", "a", "b"], "base", "window_s")
    # the schedule itself: after RESOLVE_BLOCKS blocks it stops and says why
    sched = schedule_mod.Schedule(
        ["base", "a", "b"], "base", "window_s", "lower", 600, time.monotonic()
    )
    sched.state.active = ["base", "a", "b"]
    assert sched._decide(_rows(same), schedule_mod.RESOLVE_BLOCKS)
    assert sched.state.stopped == schedule_mod.NO_DIFFERENCE


def test_aged_groups_each_compare_with_their_own_as_is_and_a_cut_keeps_whole_configurations():
    """try --aged: the fragmented configuration is judged against as-is on a fragmented machine (30% slower
    there), not against fresh as-is; each state is answered on its own; a cut never splits a configuration."""
    values = _twice(
        {
            "bf": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98],
            "bg": [1.30, 1.31, 1.29, 1.30, 1.32, 1.28],
            "af": [0.90, 0.91, 0.89, 0.90, 0.92, 0.88],
            "ag": [1.30, 1.30, 1.31, 1.29, 1.31, 1.29],
        }
    )
    bases = {"bf": "bf", "bg": "bg", "af": "bf", "ag": "bg"}
    sched = schedule_mod.Schedule(
        list(values), "bf", "window_s", "lower", 600, time.monotonic(), bases=bases
    )
    sched.state.active = list(values)
    assert not sched._decide(_rows({k: v[:3] for k, v in values.items()}), schedule_mod.MIN_BLOCKS)
    assert "ag" not in sched.state.dropped  # clearly worse than *fresh* as-is, but not than its own
    assert sched._decide(_rows(values), schedule_mod.RESOLVE_BLOCKS)
    assert sched.state.answered == {
        "bf": "the leader's ratio to as-is is resolved",
        "bg": schedule_mod.NO_DIFFERENCE,
    }
    assert sched.state.stopped == "every memory state answered"
    assert sched.state.stopped_for("bg") == schedule_mod.NO_DIFFERENCE

    order = [
        f"{c}{s}" for c in "bcdef" for s in "fg"
    ]  # 5 configurations x 2 states, as-is (b) first
    bases = {cid: "b" + cid[1] for cid in order}
    sched = schedule_mod.Schedule(
        order, "bf", "window_s", "lower", 4 + 25.5, time.monotonic(), bases=bases
    )
    sched.state.run_s = 1.0  # fits 25 runs + the 2 timing runs: cut to the least, 2 configurations
    sched._cut(_rows({"bf": [1.0], "bg": [1.3]}))
    assert sched.state.kept == ["bf", "bg", "cf", "cg"] and sched.state.cut == order[4:]
    assert sched.state.cover_s > 25.5  # the budget that would keep all five is said


def test_aged_keep_order_has_both_kinds_of_huge_page_change_first(fake_sys):
    mx = matrix_mod.build(
        Request(argv=("true",), only=("jemalloc-thp", "glibc-hugetlb")), fake_sys.host
    )
    aged = matrix_mod._aged_order(_plain(mx.cells), mx.thp_found)
    cells = _plain(mx.cells)
    assert aged[0] == cells[0] and sorted(map(str, aged)) == sorted(map(str, cells))
    assert (
        aged[1] == cells[1] and aged[1]["thp"] == "madvise"
    )  # the first allocator setting, as before
    assert aged[2] == {
        "allocator": "as-is",
        "thp": "always",
    }  # then THP always: a small budget keeps both kinds
    assert aged.index({"allocator": "as-is", "thp": "never"}) > aged.index(
        {"allocator": "jemalloc-thp", "thp": "madvise"}
    )


def test_a_cut_configuration_reads_not_run_and_each_state_counts_only_its_own_runs():
    import pandas as pd

    from hugebench.trial import verdict as verdict_mod
    from hugebench.trial.render import answer

    values = {
        "bf": [1.00, 1.01, 0.99],
        "bg": [1.30, 1.31, 1.29],
        "af": [0.90, 0.91, 0.89],
        "ag": [1.30, 1.30, 1.31],
    }
    rows = pd.DataFrame(_rows(values))
    rows["noise.disturbed"] = (
        rows["cell_id"] == "bg"
    )  # only the fragmented state's as-is runs were disturbed
    rows["noise.why"] = rows["noise.disturbed"].map({True: "steal 4% > 2%", False: None})
    state = schedule_mod.Progress(
        0.0,
        60,
        stopped="budget ended",
        blocks=3,
        cut=["cf", "cg"],
        answered={"bf": "the leader's ratio to as-is is resolved"},
    )
    cell = {"allocator": "glibc", "thp": "madvise"}
    each = {}
    for memory, ids in (("fresh", ("bf", "af", "cf")), ("fragmented:100%", ("bg", "ag", "cg"))):
        cells = {
            cid: {**cell, "memory_state": memory, **({"thp": "always"} if cid[0] != "b" else {})}
            for cid in ids
        }
        cells[ids[2]]["allocator"] = "jemalloc-thp"
        each[memory] = dataclasses.replace(
            verdict_mod.build(
                verdict_mod.VerdictInputs(
                    rows, cells, ids[0], "window_s", "lower", None, "madvise", state
                )
            ),
            runs=int(rows["cell_id"].isin(ids).sum()),
            plan=(f"plan cut: {ids[2]}",),
        )
    fresh, aged = each["fresh"], each["fragmented:100%"]
    assert [c.kind for c in fresh.others] == ["not run"] and fresh.stopped.startswith("the leader")
    assert aged.stopped == "budget ended"
    assert not any(
        c.startswith("noisy") for c in fresh.caveats
    )  # the other state's runs are not its own
    assert any("3 of 6 runs" in c for c in aged.caveats if c.startswith("noisy"))
    out = answer(
        dataclasses.replace(fresh, by_condition=("memory_state", each)), ["12 runs in 30 s"]
    )
    assert (
        out.count("12 runs in 30 s") == 1
        and out.count("plan cut: cf") == 1
        and out.count("plan cut: cg") == 1
    )
    assert "== on a fresh machine (memory_state fresh; 6 runs) ==" in out
    assert "== on a fragmented machine (memory_state fragmented:100%; 6 runs) ==" in out
    assert (
        "  not run           jemalloc-thp, THP always, fresh memory: cut to fit the budget" in out
    )
    assert "failed" not in out and out.count("cut to fit the budget") == 2


def test_the_confirmed_leader_is_recommended_and_the_selection_ties_are_named_unconfirmed():
    """The recommendation is the configuration confirmed on fresh pairs (not a simpler one picked after
    the fact); those the selection could not tell from it are named, as not confirmed themselves."""
    import pandas as pd

    from hugebench.trial import verdict as verdict_mod
    from hugebench.trial.render import text

    values = {
        "base": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98] * 3,
        "a": [0.50, 0.50, 0.51, 0.49, 0.95, 0.96] + [0.5] * 12,
        "b": [0.50, 0.51, 0.49, 0.50, 0.52, 0.48] * 3,
    }
    rows = pd.DataFrame(_rows(values))
    rows = rows[(rows["cell_id"] != "a") | (rows["repetition"] < 6)]  # only b is confirmed
    state = schedule_mod.Progress(0.0, 60, stopped=schedule_mod.RESERVE_REACHED, blocks=6)
    state.confirm_from, state.confirm_pairs = 6, 12
    state.leaders, state.confirmed = {"base": ("b", None)}, {"base": "resolved better"}
    cells = {
        "base": {"allocator": "glibc", "thp": "madvise"},
        "a": {"allocator": "glibc-hugetlb", "thp": "madvise"},
        "b": {"allocator": "glibc", "thp": "always"},
    }
    spec = types.SimpleNamespace(allocators={})
    verdict = verdict_mod.build(
        verdict_mod.VerdictInputs(rows, cells, "base", "window_s", "lower", spec, "madvise", state)
    )
    assert verdict.best.cell == cells["b"] and verdict.recommend == "best"
    assert verdict.best.ties == ("glibc-hugetlb, THP madvise (as found)",)
    assert verdict.best.confirmation.pairs == 12
    out = text(verdict, [])
    assert "confirmed on fresh pairs, resolved at 95%" in out
    assert (
        "not told apart from it in the selection (not confirmed themselves): glibc-hugetlb, THP "
        "madvise (as found)" in out
    )


def test_the_verdict_says_no_difference_worth_deploying_and_its_caveats_use_the_calibrated_levels():
    import pandas as pd

    from hugebench.trial import verdict as verdict_mod
    from hugebench.trial.render import text

    same = _twice(
        {"base": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98], "a": [1.00, 1.00, 1.01, 0.99, 1.01, 0.99]}
    )
    rows = pd.DataFrame(_rows(same))
    rows["tree_peak_rss_bytes"] = [100e6] * 12 + [150e6] * 12
    rows["noise.disturbed"] = [False] * 23 + [True]
    rows["noise.why"] = [None] * 23 + ["other work kept 1.02 CPUs busy > 0.5 (python3[1] 1.00 CPU)"]
    state = schedule_mod.Progress(0.0, 60, stopped=schedule_mod.NO_DIFFERENCE, blocks=6)
    cells = {
        "base": {"allocator": "glibc", "thp": "madvise"},
        "a": {"allocator": "jemalloc-thp", "thp": "madvise"},
    }
    verdict = verdict_mod.build(
        verdict_mod.VerdictInputs(rows, cells, "base", "window_s", "lower", None, "madvise", state)
    )
    assert verdict.no_difference and verdict.recommend == "as-is" and verdict.deploy is None
    assert verdict.best.equivalent and verdict.best.peak_rss_column == "tree_peak_rss_bytes"
    assert verdict.best.peak_rss_ratio.value == pytest.approx(1.5)
    out = text(verdict, [])
    assert "no difference worth deploying" in out and "within ±5% of as-is" in out
    assert "process tree's peak RSS 1.50x as-is" in out
    caveats = verdict.caveats
    assert not any(
        c.startswith("not resolved") for c in caveats
    )  # sameness resolved is not "not resolved"
    noisy = [c for c in caveats if c.startswith("noisy")]
    assert noisy and "1 of 24 runs" in noisy[0] and "other work kept 1.02 CPUs busy" in noisy[0]
    # coverage short of the one level (measure.phases.COVERAGE_EXPECTED), never a local constant
    from hugebench.measure.phases import COVERAGE_EXPECTED

    best = dataclasses.replace(verdict.best, hp_coverage=COVERAGE_EXPECTED - 0.01)
    assert "expected to reach 90%" in verdict_mod._coverage_caveat(best)
    assert (
        verdict_mod._coverage_caveat(dataclasses.replace(best, hp_coverage=COVERAGE_EXPECTED))
        is None
    )


# -- real programs ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def faults_program(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is not installed")
    d = tmp_path_factory.mktemp("faults")
    (d / "faults.c").write_text(FAULTS_C)
    subprocess.run(["gcc", "-O2", "-o", str(d / "faults"), str(d / "faults.c")], check=True)
    return d / "faults"


@pytest.mark.needs_root
@pytest.mark.needs_thp
def test_heap_bound_program_gets_a_huge_page_verdict_with_coverage(
    faults_program, tmp_path, thp_found_madvise
):
    started = time.monotonic()
    result, out = _try(
        [
            "--regime",
            "back-to-back",
            "--budget",
            "50s",
            "--allocators",
            "glibc",
            "--thp",
            "never",
            "--thp",
            "always",
            "--",
            str(faults_program),
        ],
        tmp_path,
    )
    wall = time.monotonic() - started
    verdict = _verdict(result)
    best = verdict["best"]
    always = [c for c in (best, *verdict["others"]) if c["cell"]["thp"] == "always"]
    assert always and all(c["hp_coverage"] > 0.5 for c in always), (
        verdict
    )  # the mode held: coverage proven
    assert best["allocator_proof"] and "libc.so.6" in best["allocator_proof"]
    if verdict["resolved"]:  # 2 MiB pages: 512x fewer faults and TLB misses
        assert best["cell"]["thp"] == "always" and best["ratio"]["value"] < 0.9, verdict
        # firm, or 'likely' with its reason when the runs were unstable (another job on this 2-core
        # machine: the suite's fast lane runs beside the real ones); either way deployed as printed
        assert verdict["recommend"] in ("best", "likely"), verdict
        assert (verdict["recommend"] == "likely") == bool(verdict["likely"]), verdict
        assert (
            "echo always > /sys/kernel/mm/transparent_hugepage/enabled" in verdict["deploy"]["thp"]
        )
    else:
        # On this KVM guest THP always is sometimes 0.45x as-is and sometimes slower (the runs are bimodal: a
        # 2 MiB block the host has not backed yet costs its faults there), so the stability rule may refuse to
        # call it: then try must keep as-is and say why, never recommend on an unresolved difference.
        assert verdict["recommend"] == "as-is" and verdict["deploy"] is None
        # THP always may also lose and be dropped: the best left is then within the band of as-is and the
        # verdict itself says "no difference worth deploying" (fresh clone, 11-28: always 1.70x, never 0.995x)
        assert verdict["no_difference"] or any(
            "not resolved" in c or "unstable" in c or "varies" in c for c in verdict["caveats"]
        ), verdict
    assert wall < 50 + 15
    assert Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().count("[madvise]") == 1


def test_gzip_reading_stdin_and_the_experiment_file_resumes_with_sweep(tmp_path, thp_found_madvise):
    data = tmp_path / "input.bin"
    data.write_bytes(os.urandom(1 << 20) + bytes(4 << 20))
    result, out = _try(
        [
            "--regime",
            "back-to-back",
            "--budget",
            "40s",
            "--allocators",
            "glibc,jemalloc-thp",
            "--thp",
            "madvise",
            "--stdin",
            str(data),
            "--",
            "gzip",
            "-c",
            "-6",
        ],
        tmp_path,
    )
    verdict = _verdict(result)
    assert verdict["baseline"]["runs"] >= schedule_mod.MIN_BLOCKS
    assert _plain([verdict["best"]["cell"]]) == [{"allocator": "jemalloc-thp", "thp": "madvise"}]
    assert verdict["best"]["runs"] >= 1 and verdict["experiment_file"].endswith("experiment.yaml")
    rows = _store_rows(out)
    assert len(rows) == verdict["runs"] and all(r["status"] == "ok" for r in rows)
    assert all(r["param.stdin"] == str(data) for r in rows)
    swept = CliRunner().invoke(main, ["sweep", verdict["experiment_file"], "-o", str(out), "-q"])
    assert swept.exit_code == 0, swept.output
    after = _store_rows(out)
    ids = [r["run_id"] for r in after]
    assert len(ids) == len(set(ids))  # resumed: no run made twice
    planned = [r for r in rows if not r.get("lead_in")]  # a back-to-back run's lead-in is try's own
    assert f"{len(planned)} already done" in swept.output
    assert {r["run_id"] for r in rows} <= set(ids)


def test_python_json_metric_higher_is_better(tmp_path):
    script = tmp_path / "bench.py"
    script.write_text(JSON_PY)
    result, out = _try(
        [
            "--regime",
            "back-to-back",
            "--budget",
            "30s",
            "--allocators",
            "glibc,mimalloc-large",
            "--thp",
            "madvise",
            "--metric",
            "json:inserts_per_s",
            "--higher-is-better",
            "--env",
            "PYTHONHASHSEED=0",
            "--",
            sys.executable,
            str(script),
        ],
        tmp_path,
    )
    verdict = _verdict(result)
    assert verdict["metric"] == "inserts_per_s" and verdict["better"] == "higher"
    assert verdict["baseline"]["median"] > 1000
    assert all(str(r.get("param.env.PYTHONHASHSEED")) == "0" for r in _store_rows(out))


@pytest.fixture
def foreign_redis():
    """A redis-server this test starts as another user (nobody) when it can, else as root: not started by
    hugebench, so a try must neither count it as its leftover nor end it."""
    import pwd
    import tempfile

    # in /tmp itself: pytest's own tmp_path is private to root
    directory = Path(tempfile.mkdtemp(prefix="hb-foreign-redis-", dir="/tmp"))
    directory.chmod(0o777)
    try:
        user = pwd.getpwnam("nobody") if os.geteuid() == 0 else None
    except KeyError:
        user = None
    server = subprocess.Popen(
        ["redis-server", "--port", "0", "--unixsocket", str(directory / "s"), "--save", "",
         "--appendonly", "no", "--dir", str(directory)],
        user=user.pw_uid if user else None,
        group=user.pw_gid if user else None,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while not (directory / "s").exists() and server.poll() is None and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        if server.poll() is not None:
            pytest.skip(f"could not start an unrelated redis-server (exit {server.returncode})")
        yield server
    finally:
        server.terminate()
        server.wait(timeout=10)
        shutil.rmtree(directory, ignore_errors=True)


def test_own_run_processes_are_found_by_their_token_and_no_other():
    """The leftover check the redis tests use: a process carrying this process's run token is ours; the same
    program without it (anyone else's) is not."""
    from own_processes import run_processes

    from hugebench import kernel
    from hugebench.system.containment import TOKEN

    token = f"{os.getpid()}-{kernel.process_start_ticks(os.getpid())}-test-abc"
    ours = subprocess.Popen(["sleep", "30"], env={**os.environ, TOKEN: token})
    theirs = subprocess.Popen(["sleep", "30"])
    try:
        time.sleep(0.2)
        found = run_processes("sleep")
        assert [line.split()[0] for line in found] == [str(ours.pid)], found
    finally:
        for proc in (ours, theirs):
            proc.kill()
            proc.wait()


@pytest.mark.skipif(
    shutil.which("redis-server") is None or shutil.which("redis-benchmark") is None,
    reason="redis-server/redis-benchmark not installed",
)
@pytest.mark.parametrize("beside", ["alone", "beside-another-users-redis"])
def test_redis_server_under_redis_benchmark(tmp_path, request, beside):
    from own_processes import run_processes

    foreign = request.getfixturevalue("foreign_redis") if beside != "alone" else None
    result, out = _try(
        [
            "--regime",
            "back-to-back",
            "--budget",
            "40s" if foreign is None else "20s",
            "--allocators",
            "glibc,jemalloc-thp",
            "--thp",
            "madvise",
            "--server",
            "redis-server --port 0 --unixsocket {tmp}/s --save '' --appendonly no",
            "--ready",
            "path:{tmp}/s",
            "--metric",
            r"regex:GET: ([0-9.]+) requests per second",
            "--higher-is-better",
            "--",
            "redis-benchmark",
            "-s",
            "{tmp}/s",
            "-t",
            "get",
            "-n",
            "5000",
            "-q",
        ],
        tmp_path,
    )
    verdict = _verdict(result)
    assert verdict["baseline"]["runs"] >= 1 and verdict["baseline"]["median"] > 100
    assert (
        "redis-server" in verdict["baseline"]["allocator_proof"]
        or verdict["baseline"]["allocator_proof"]
    )
    assert not run_processes(
        "redis-server"
    )  # no server of ours left running (others' do not count)
    if foreign is not None:
        assert foreign.poll() is None  # the other user's server was left alone


def test_the_budget_holds(tmp_path):
    started = time.monotonic()
    result, out = _try(
        [
            "--regime",
            "back-to-back",
            "--budget",
            "30s",
            "--allocators",
            "glibc,jemalloc-thp,mimalloc-large",
            "--",
            "sh",
            "-c",
            "exec sleep 0.2",
        ],
        tmp_path,
    )
    wall = time.monotonic() - started
    verdict = _verdict(result)
    assert wall < 45, f"--budget 30s took {wall:.0f} s"
    assert verdict["wall_s"] <= 30 + 5


def test_a_program_no_setting_changes_stops_early_with_no_difference_worth_deploying(tmp_path):
    started = time.monotonic()
    result, out = _try(
        [
            "--regime",
            "back-to-back",
            "--budget",
            "60s",
            "--allocators",
            "glibc,glibc-hugetlb",
            "--thp",
            "madvise",
            "--",
            "sh",
            "-c",
            "exec sleep 0.4",
        ],
        tmp_path,
    )
    wall = time.monotonic() - started
    verdict = _verdict(result)
    assert verdict["recommend"] == "as-is" and verdict["deploy"] is None, verdict
    if verdict["stopped"] == schedule_mod.NO_DIFFERENCE:
        assert verdict["no_difference"] and verdict["best"]["equivalent"], verdict
        assert verdict["best"]["ratio"]["n"] >= schedule_mod.RESOLVE_BLOCKS
        assert wall < 45, (
            f"stopped early? {wall:.0f} s of a 60 s budget"
        )  # ~6 blocks of 2 runs of ~0.5 s
    else:
        # sleep's time does not move, but a third of the runs measured beside another job makes a cell
        # unstable by the one rule, and then sameness is no more proven than a difference: said, not called
        assert not verdict["no_difference"] and any(
            c.startswith("unstable") for c in verdict["caveats"]
        ), verdict


def test_a_user_without_root_tries_never_and_the_mode_as_found(unprivileged, tmp_path):
    from test_unprivileged import _shared_dir

    work = unprivileged.owned_dir(unprivileged.home / "lab")
    lock_dir = _shared_dir(unprivileged.home.parent / "lock-try", 0o1777)
    env = {"HUGEBENCH_LOCK": str(lock_dir / "hugebench.lock")}
    ran = unprivileged.hugebench(
        "try",
        "--json",
        "--regime",
        "back-to-back",
        "--budget",
        "30s",
        "--allocators",
        "glibc",
        "--regime",  # a user's default here is cold with 4 s idle a run: too few runs in 30 s
        "cold",
        "--idle",
        "0",
        "-o",
        "r",
        "--",
        "gzip",
        "-c",
        "/etc/services",
        env=env,
        cwd=work,
    )
    assert ran.returncode == 0, ran.stderr
    verdict = json.loads(ran.stdout.strip().splitlines()[-1])
    modes = {verdict["baseline"]["cell"]["thp"]} | {
        c["cell"]["thp"] for c in [verdict["best"], *verdict["others"]]
    }
    found = (
        Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().split("[")[1].split("]")[0]
    )
    assert modes == {"never", found} if found != "never" else {"never"}
    assert "left out (needs root)" in ran.stderr
    refused = unprivileged.hugebench(
        "try", "--thp", thp_mode_needing_root(), "-o", "r2", "--", "true", env=env, cwd=work
    )
    assert refused.returncode == 3 and "still possible" in refused.stderr


def test_many_unstable_configurations_are_named_without_a_line_each():
    from hugebench.trial.verdict import _unstable_caveats

    configs = [
        types.SimpleNamespace(name=f"c{i}", unstable="10 of 20 runs disturbed") for i in range(5)
    ]
    lines = _unstable_caveats(configs)
    assert len(lines) == 4 and lines[0].startswith("unstable: 'c0': 10 of 20 runs disturbed")
    assert lines[3] == "unstable too, by the same rule: 'c3', 'c4' (the reasons are in --json)"


def test_a_resolved_gain_within_the_smallest_effect_is_not_recommended():
    import pandas as pd

    from hugebench.trial import verdict as verdict_mod

    values = _twice(
        {
            "base": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98],
            "a": [0.980, 0.985, 0.975, 0.980, 0.990, 0.970],
        }
    )  # 4 blocks of selection, then 8 fresh pairs of 'a' and as-is (the confirmation)
    rows = pd.DataFrame(_rows(values))
    state = schedule_mod.Progress(0.0, 60, stopped="budget ended", blocks=4)
    state.confirm_from, state.leaders = 4, {"base": ("a", None)}
    state.confirmed = {"base": "no difference worth deploying"}
    cells = {
        "base": {"allocator": "glibc", "thp": "madvise"},
        "a": {"allocator": "jemalloc-thp", "thp": "madvise"},
    }
    verdict = verdict_mod.build(
        verdict_mod.VerdictInputs(rows, cells, "base", "window_s", "lower", None, "madvise", state)
    )
    best = verdict.best
    assert best.kind == "better" and best.ratio.resolved and best.equivalent  # 2 % faster, proven
    assert verdict.recommend == "as-is" and verdict.deploy is None and verdict.no_difference
    assert not verdict.resolved  # what try calls resolved is a difference worth deploying
    sched = schedule_mod.Schedule(["base", "a"], "base", "window_s", "lower", 600, time.monotonic())
    sched.state.active = ["base", "a"]
    sched._decide(_rows(values), schedule_mod.RESOLVE_BLOCKS)
    assert sched.state.stopped == schedule_mod.NO_DIFFERENCE  # not "the leader's ratio is resolved"
