"""hashsets: every set kind built from the same keys in one process, lookups interleaved by round."""

from __future__ import annotations

import math
import time

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from hugebench import _core
from hugebench.cli import main
from hugebench.run.worker import _flatten_core_result
from hugebench.workloads import hashsets

INFO = _core.build_info()
KINDS = INFO["set_kinds"]


def test_every_kind_finds_every_key_in_its_own_chunks():
    keys = _core.generate_keys(3000, seed=5, key_min=4, key_max=22)
    r = _core.hashsets(
        keys=3000, set_kinds=",".join(KINDS), key_min=4, key_max=22, rounds=7, seed=5
    )
    assert r["kinds"] == KINDS
    assert set(r["phases"]) == {"generate", "shuffle", "lookup", *(f"insert.{k}" for k in KINDS)}
    for kind in KINDS:
        one = r["set"][kind]
        assert one["set_size"] == len(set(keys))
        assert one["lookups"] == one["found"] == 3000  # one per key, in its own chunks
        assert len(one["round_ns"]) == 7 and all(ns > 0 for ns in one["round_ns"])
        assert one["ns_per_lookup"] > 0 and one["insert_s"] > 0
    # K kinds x one lookup per key = K passes over the shuffled keys, cut into chunks: together the kinds
    # found every key K times, whichever chunks each took.
    assert sum(r["set"][k]["checksum"] for k in KINDS) == len(KINDS) * sum(map(len, keys))


def test_lookups_per_kind_and_the_base_first_in_either_build_order():
    r = _core.hashsets(keys=500, set_kinds="node, flat", lookups=1001, rounds=10)
    assert r["kinds"] == ["node", "flat"] and list(r["phases"])[1:3] == [
        "insert.node",
        "insert.flat",
    ]
    assert [r["set"][k]["lookups"] for k in ("node", "flat")] == [1001, 1001]
    reversed_ = _core.hashsets(keys=500, set_kinds="node,flat", rounds=10, build_order="reversed")
    assert reversed_["kinds"] == ["node", "flat"] and list(reversed_["phases"])[1:3] == [
        "insert.flat",
        "insert.node",
    ]
    with pytest.raises(ValueError, match="build_order"):
        _core.hashsets(keys=10, set_kinds="flat,node", build_order="random")


@pytest.mark.parametrize(
    "set_kinds, match",
    [
        ("flat", "at least two kinds"),
        ("flat,flat", "'flat' twice"),
        ("flat,tree", "set_kind must be one of"),
        ("flat,", "set_kind must be one of"),
    ],
)
def test_bad_kinds_are_value_errors(set_kinds, match):
    with pytest.raises(ValueError, match=match):
        _core.hashsets(keys=10, set_kinds=set_kinds)


def test_more_rounds_than_lookups_is_a_value_error():
    with pytest.raises(ValueError, match="rounds"):
        _core.hashsets(keys=10, set_kinds="flat,node", rounds=11)


def _spec(tmp_path, params: str):
    spec = tmp_path / "s.yaml"
    spec.write_text(f"name: s\nworkload: hashsets\nparams: {{{params}}}\n")
    return spec


@pytest.mark.parametrize(
    "params, words",
    [
        ("set_kinds: 'flat,flat'", ["'flat' twice"]),
        ("set_kinds: 'flat,btree'", ["'btree' is not a set kind"]),
        ("rounds: 65", ["at most 64"]),
        ("keys: 10, rounds: 20", ["must not exceed the lookups"]),
    ],
)
def test_plan_refuses_bad_params_with_the_file_and_key(tmp_path, params, words):
    result = CliRunner().invoke(main, ["plan", str(_spec(tmp_path, params))])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "s.yaml" in result.output and all(w in result.output for w in words)


def test_plan_refuses_a_kind_the_build_lacks_naming_the_package(tmp_path, monkeypatch):
    monkeypatch.setattr(
        _core, "build_info", lambda: {**INFO, "set_kinds": ["flat", "node"], "hashes": ["own"]}
    )
    result = CliRunner().invoke(main, ["plan", str(_spec(tmp_path, "set_kinds: 'flat,boost'"))])
    assert result.exit_code != 0 and "apt-get install libboost1.81-dev" in result.output


def test_nested_results_flatten_to_kind_columns_with_their_counters():
    from hugebench.measure.encoding import CounterSpec

    result = {
        "phases": {"lookup": 1.5},
        "kinds": ["flat", "node"],
        "set": {
            "flat": {
                "ns_per_lookup": 10.0,
                "round_ns": [1.0, 2.0],
                "counters": {"cycles": {"value": None, "error": "not supported"}},
            }
        },
    }
    row = _flatten_core_result(result, [CounterSpec("cycles", "cycles", 0, 0)])
    assert row["phase.lookup.s"] == 1.5 and row["kinds"] == ["flat", "node"]
    assert row["set.flat.ns_per_lookup"] == 10.0 and row["set.flat.round_ns"] == [1.0, 2.0]
    assert (
        math.isnan(row["pmu.set.flat.cycles"])
        and row["pmu.set.flat.cycles.reason"] == "not supported"
    )


@pytest.mark.needs_perf
def test_each_kind_counts_only_its_own_chunks():
    clock = ("task_clock", _core.PERF_TYPE_SOFTWARE, _core.PERF_COUNT_SW_TASK_CLOCK, 0)
    cpu_before, wall_before = time.thread_time_ns(), time.perf_counter_ns()
    r = _core.hashsets(keys=100000, set_kinds="flat,node", rounds=4, counters=[clock])
    cpu_ns = time.thread_time_ns() - cpu_before
    running = cpu_ns / (
        time.perf_counter_ns() - wall_before
    )  # the share of the call the thread ran
    lookup_ns = r["phases"]["lookup"] * 1e9
    counted = [r["set"][k]["counters"]["task_clock"]["value"] for k in ("flat", "node")]
    timed = [r["set"][k]["ns_per_lookup"] * r["set"][k]["lookups"] for k in ("flat", "node")]
    # The task clock is the thread's CPU time, the chunk time is wall time: on a machine whose other work
    # preempts the thread (CI's background wheel builds) the first is less than the second. Each kind's count
    # is at most its own chunk's time (not the phase's, which is about both); both together are about the
    # lookup phase's time scaled by the share of the call the thread ran, and at most the CPU time it took.
    for value, ns in zip(counted, timed):
        assert 0 < value < 1.2 * ns + 1e6  # the kind's own chunk time, not the phase's
    assert sum(counted) < 1.05 * lookup_ns
    assert 0.5 * running * lookup_ns < sum(counted) <= cpu_ns


def _row(base_rounds, other_rounds, found=100):
    return {
        "kinds": ["flat", "boost"],
        "set.flat.round_ns": base_rounds,
        "set.boost.round_ns": other_rounds,
        "set.flat.found": 100,
        "set.flat.lookups": 100,
        "set.boost.found": found,
        "set.boost.lookups": 100,
        "set.flat.set_size": 50,
        "set.boost.set_size": 50,
        "set.flat.ns_per_lookup": 100.0,
        "set.boost.ns_per_lookup": 120.0,
        "set.flat.insert_s": 1.0,
        "set.boost.insert_s": 2.0,
        "status": "ok",
        "keys": 1000,
    }


def test_the_ratio_is_the_median_of_per_round_ratios_so_drift_cancels():
    # The machine slows down 3x over the run; boost is 1.2x flat's time in every round.
    base = [100.0, 150.0, 300.0, 120.0, 200.0]
    metrics = hashsets.metrics(_row(base, [1.2 * b for b in base]))
    assert metrics["set.flat.vs_base"] == 1.0
    assert metrics["set.boost.vs_base"] == pytest.approx(1.2)


def test_a_kind_that_misses_a_key_fails_the_run():
    with pytest.raises(RuntimeError, match="'boost' found 99 of the 100"):
        hashsets.metrics(_row([1.0, 1.0], [1.0, 1.0], found=99))


def test_side_by_side_pools_rounds_over_runs_with_a_ci():
    rng = np.random.default_rng(3)
    rows = []
    for repetition in range(3):
        base = list(rng.uniform(100, 400, 12))  # drift between rounds and runs
        rows.append(
            {**_row(base, [b * rng.normal(1.1, 0.01) for b in base]), "repetition": repetition}
        )
    same = [
        {**_row([100.0] * 12, [100.0 * rng.normal(1.0, 0.05) for _ in range(12)]), "keys": 2000}
    ]
    table = hashsets.side_by_side(pd.DataFrame(rows + same), ["keys"]).set_index(
        ["keys", "set_kind"]
    )
    faster = table.loc[(1000, "boost")]
    assert faster["rounds"] == 36 and faster["n"] == 3
    assert faster["ratio.ci_lo"] < faster["ratio"] < faster["ratio.ci_hi"]
    assert 1.08 < faster["ratio"] < 1.12 and faster["resolved"] is True
    assert table.loc[(1000, "flat")]["resolved"] is None and math.isnan(
        table.loc[(1000, "flat")]["ratio.ci_lo"]
    )
    assert table.loc[(2000, "boost")]["resolved"] is False  # no difference: the CI holds 1


def test_runs_that_disagree_widen_the_ci_beyond_one_run():
    # Each run is steady within itself (ratio 1.0 in one, 1.5 in the other): resampling rounds alone would
    # give a narrow interval; resampling runs first spans both.
    runs = [
        np.full(32, 1.0) + np.linspace(0, 0.01, 32),
        np.full(32, 1.5) + np.linspace(0, 0.01, 32),
    ]
    lo, hi = hashsets.two_level_ci(runs)
    assert lo < 1.05 and hi > 1.45
    lo_one, hi_one = hashsets.two_level_ci(runs[:1])
    assert hi_one - lo_one < 0.02


def test_a_tiny_sweep_reports_the_kinds_side_by_side(tmp_path):
    spec = tmp_path / "side.yaml"
    spec.write_text(
        "name: side\nworkload: hashsets\nrepetitions: 2\nparams: {keys: 20000, rounds: 4, "
        "set_kinds: 'flat,node'}\naxes:\n  key_max: [12, 24]\n"
    )
    out = tmp_path / "out"
    result = CliRunner().invoke(main, ["sweep", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    report = CliRunner().invoke(main, ["report", str(out), "--format", "markdown"])
    assert report.exit_code == 0, report.output
    assert "Set kinds side by side" in report.output
    assert "| 24 | node | 2 | 8 |" in report.output and "node/flat" in report.output


def test_the_memory_model_bounds_measured_peaks(tmp_path):
    # hashlookup (one kind per run) and hashsets (all at once) at 1M keys: the plan's estimate is at least the
    # measured peak RSS, and not wildly above it (the model follows each table's growth rule).
    from hugebench import load, workloads

    spec = tmp_path / "mem.yaml"
    spec.write_text(
        "name: mem\nworkload: hashlookup\nparams: {keys: 1M, lookups: 1000}\n"
        f"axes:\n  set_kind: [{', '.join(KINDS)}]\n"
    )
    both = tmp_path / "both.yaml"
    both.write_text(
        "name: both\nworkload: hashsets\n"
        f"params: {{keys: 1M, lookups: 1000, set_kinds: '{','.join(KINDS)}'}}\n"
    )
    for path, out in ((spec, "a"), (both, "b")):
        result = CliRunner().invoke(main, ["sweep", str(path), "-o", str(tmp_path / out)])
        assert result.exit_code == 0, result.output
    for row in load(tmp_path / "a").to_dict("records"):
        model = workloads.get("hashlookup").memory_estimate(
            {"keys": 1_000_000, "set_kind": row["set_kind"]}
        )
        assert row["peak_rss_bytes"] <= model <= 1.8 * row["peak_rss_bytes"], row["set_kind"]
    row = load(tmp_path / "b").iloc[0]
    model = workloads.get("hashsets").memory_estimate(
        {"keys": 1_000_000, "set_kinds": ",".join(KINDS), "key_min": 10, "key_max": 19}
    )
    assert row["peak_rss_bytes"] <= model <= 1.5 * row["peak_rss_bytes"]
