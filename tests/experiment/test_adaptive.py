"""repetitions: auto — the stopping rule on simulated noisy cells, the schema, and a small real sweep on fake /sys."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest
from click.testing import CliRunner

from hugebench import load
from hugebench.cli import main
from hugebench.errors import SpecError
from hugebench.experiment import parse_spec
from hugebench.report import report
from hugebench.stats import adaptive
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

RULE = {"min": 6, "max": 12, "target": 0.03, "metric": "ns"}


def _value(cell: str, rep: int, spread: float) -> float:
    """A deterministic 'measurement': the same cell and block always give the same value (so a resume does too)."""
    u = int(hashlib.sha1(f"{cell}:{rep}".encode()).hexdigest()[:8], 16) / 2**32
    return 100.0 * (1 + spread * (u - 0.5))


SPREAD = {"tight": 0.01, "wide": 0.6, "partner": 0.01, "other": 0.01}


def _simulate(rule=RULE, partners=None, stop_after=None, store=None):
    """Rounds of next_cells over simulated cells; returns the store of (cell, rep) -> value."""
    store = {} if store is None else store
    for block in range(rule["max"] + 1):
        values = {
            cell: [v for (c, r), v in store.items() if c == cell and r < block] for cell in SPREAD
        }
        chosen = adaptive.next_cells(values, rule, block, partners)
        if not chosen:
            break
        for cell in chosen:
            if stop_after is not None and len(store) >= stop_after:
                return store
            store.setdefault((cell, block), _value(cell, block, SPREAD[cell]))
    return store


def _counts(store):
    return {cell: sum(1 for c, _ in store if c == cell) for cell in SPREAD}


def test_tight_cells_stop_at_min_wide_ones_run_to_max_and_never_past_it():
    counts = _counts(_simulate())
    assert counts["tight"] == counts["partner"] == counts["other"] == RULE["min"]
    assert counts["wide"] == RULE["max"]


def test_a_wide_cell_pulls_its_partner_into_its_blocks():
    store = _simulate(partners={"wide": {"partner"}})
    counts = _counts(store)
    assert counts["partner"] == counts["wide"] == RULE["max"] and counts["tight"] == RULE["min"]
    assert {r for c, r in store if c == "partner"} == {
        r for c, r in store if c == "wide"
    }  # paired blocks


def test_precision_not_significance_decides():
    """Two tight cells far apart stop at min like two tight cells that are equal: no look at their ratio."""
    values = {
        "a": [100.0, 100.5, 99.5, 100.2, 99.8, 100.1],
        "b": [50.0, 50.2, 49.9, 50.1, 49.8, 50.0],
    }
    assert adaptive.next_cells(values, RULE, 6) == []
    assert adaptive.relative_width(values["a"]) < 0.03


def test_cells_without_a_successful_run_are_not_repeated_and_single_values_are():
    values = {"failed": [], "one": [100.0], "nan": [float("nan")] * 6}
    assert adaptive.next_cells(values, RULE, 6) == ["one"]
    assert adaptive.next_cells(values, RULE, 12) == []
    assert adaptive.next_cells(values, RULE, 2) == [
        "failed",
        "one",
        "nan",
    ]  # blocks below min are whole


def _execute(spec, rows, stop_after=None):
    """The orchestrator's loop over adaptive.batches, with a fake measurement; stops (as Ctrl-C would) after
    ``stop_after`` new rows. Resumes from ``rows`` like a re-run over the same store."""
    done = {row["run_id"] for row in rows}
    written = 0
    for batch in adaptive.batches(spec, plan_mod.plan(spec), lambda: list(rows), plan_mod.block):
        for run in batch:
            if run.run_id in done:
                continue
            if stop_after is not None and written == stop_after:
                return rows
            spread = 0.5 if run.cell["set_kind"] == "node" else 0.001
            rows.append(
                {
                    "run_id": run.run_id,
                    "cell_id": run.cell_id,
                    "repetition": run.repetition,
                    "status": "ok",
                    "ns_per_lookup": _value(run.cell_id, run.repetition, spread),
                }
            )
            written += 1
    return rows


def test_an_interrupted_sweep_resumes_to_the_same_runs():
    spec = parse_spec(
        AUTO.replace("[flat, node]", "[flat, node, robin]")
        + "repetitions: {auto: {min: 3, max: 7, target: 0.05}}\n",
        "auto.yaml",
    )
    whole = _execute(spec, [])
    by_cell = {}
    for row in whole:
        by_cell.setdefault(row["cell_id"], []).append(row["repetition"])
    # node is wide and runs to max; flat is its baseline (a partner) and follows it; robin is tight and stops.
    assert sorted(len(v) for v in by_cell.values()) == [3, 7, 7]
    for stop in (2, 7, 10, 15):
        partial = _execute(spec, [], stop_after=stop)
        assert len(partial) == stop
        assert sorted(r["run_id"] for r in _execute(spec, partial)) == sorted(
            r["run_id"] for r in whole
        )


def test_the_decision_for_a_block_reads_only_earlier_blocks():
    rows = [{"cell_id": "a", "status": "ok", "repetition": r, "ns": 100.0 + r} for r in range(8)]
    rows += [
        {"cell_id": "a", "status": "failed", "repetition": 8, "ns": 1.0},
        {"cell_id": "a", "status": "ok", "repetition": -1, "warmup": True, "ns": 1.0},
    ]
    assert adaptive.values_by_cell(rows, ["a", "b"], "ns", 6) == {
        "a": [100.0, 101.0, 102.0, 103.0, 104.0, 105.0],
        "b": [],
    }


AUTO = """\
name: auto
workload: hashlookup
perf: off
counters: off
timeout: 120
seed: 3
params: {keys: 2000, chunks: 2}
baseline: {set_kind: flat}
axes:
  set_kind: [flat, node]
  thp: [madvise]
"""


def test_schema_and_plan(tmp_path):
    spec = parse_spec(AUTO + "repetitions: {auto: {min: 3, max: 5, target: 0.05}}\n", "auto.yaml")
    assert spec.repetitions == 3 and spec.adaptive.to_dict() == {
        "min": 3,
        "max": 5,
        "target": 0.05,
        "metric": "ns_per_lookup",
    }
    least, most = plan_mod.plan(spec), plan_mod.plan(spec, 5)
    assert len(least) == 6 and len(most) == 10 and most[:6] == least
    assert plan_mod.block(spec, 4) == [r for r in most if r.repetition == 4]
    only = plan_mod.block(spec, 4, {most[-1].cell_id})
    assert only == [most[-1]]
    with pytest.raises(SpecError, match=r"auto.yaml:12: key 'repetitions.auto': missing 'target'"):
        parse_spec(AUTO + "repetitions: {auto: {max: 5}}\n", "auto.yaml")
    with pytest.raises(SpecError, match=r"key 'repetitions.auto.min': must be an integer from 3"):
        parse_spec(AUTO + "repetitions: {auto: {min: 2, max: 5, target: 0.05}}\n", "auto.yaml")
    path = tmp_path / "auto.yaml"
    path.write_text(AUTO + "repetitions: {auto: {min: 3, max: 5, target: 0.05}}\n")
    out = CliRunner().invoke(main, ["plan", str(path), "-o", str(tmp_path / "none")]).output
    assert "6 runs = 2 cells x 3..5 repetitions (auto; at most 10 runs" in out
    assert "x 4 repetitions" in CliRunner().invoke(main, ["plan", str(path), "-r", "4"]).output


def _sweep(fake, out, text):
    spec = parse_spec(AUTO + text, "auto.yaml")
    options = SweepOptions(
        out=out,
        quiet=True,
        journal=fake.journal_path,
        host=fake.host,
    )
    return run_sweep(spec, plan_mod.plan(spec), options)


def test_real_sweep_adds_blocks_until_max_and_resumes(fake_sys, tmp_path):
    """A target no real cell can meet: every cell runs max times, in blocks numbered as fixed repetitions."""
    text = (
        "repetitions: {auto: {min: 3, max: 4, target: 0.000001}}\n"
        "expected: {source: a test, claims: [{cell: {set_kind: node}, vs: {set_kind: flat}, ratio: 2}]}\n"
    )
    result = _sweep(fake_sys, tmp_path / "res", text)
    df = load(tmp_path / "res")
    assert result.statuses == {"ok": 8} and df.groupby("set_kind")["repetition"].apply(
        sorted
    ).tolist() == [[0, 1, 2, 3], [0, 1, 2, 3]]
    again = _sweep(fake_sys, tmp_path / "res", text)
    assert again.rows_written == 0 and again.skipped_done == 8
    text_report = report(tmp_path / "res", fmt="markdown")
    assert "repetitions auto (min 3, max 4" in text_report and "4-4 runs per cell" in text_report
    assert "auto: expected vs observed" in text_report and "n=4: fewer than 6 runs" in text_report


def test_real_sweep_stops_at_min_when_every_cell_is_tight(fake_sys, tmp_path):
    """Tiny runs' latencies vary 30x here, so the judged metric is one a cell repeats closely: its peak RSS."""
    result = _sweep(
        fake_sys,
        tmp_path / "res",
        "repetitions: {auto: {min: 3, max: 6, target: 0.5, metric: peak_rss_bytes}}\n",
    )
    assert result.statuses == {"ok": 6}
    assert np.array_equal(np.sort(load(tmp_path / "res")["repetition"].unique()), [0, 1, 2])


# -- exact values: a width off by a factor, or a partner without a value, must show (issue 26, section 8) -----


def test_relative_width_is_the_whole_interval_over_the_median():
    """Three values of 100 and three of 110: every resampled median is 100, 105 or 110, and 100 and 110 each
    come up far more often than 2.5% of the time, so the 95% CI is exactly [100, 110] around a median of 105."""
    values = [100.0, 100.0, 100.0, 110.0, 110.0, 110.0]
    assert adaptive.relative_width(values) == pytest.approx(10 / 105)
    rule = {**RULE, "target": 0.09}  # 9.5% is too wide for 9%, and within 10%
    assert adaptive.next_cells({"c": values}, rule, 6) == ["c"]
    assert adaptive.next_cells({"c": values}, {**rule, "target": 0.1}, 6) == []


def test_a_partner_without_any_successful_run_is_not_pulled_into_extra_blocks():
    wide = [100.0, 160.0, 70.0, 130.0, 90.0, 150.0]
    values = {"wide": wide, "failed": [], "nan": [float("nan")] * 6, "ok": [100.0] * 6}
    partners = {"wide": {"failed", "nan", "ok"}}
    assert adaptive.next_cells(values, RULE, 6, partners) == ["wide", "ok"]
