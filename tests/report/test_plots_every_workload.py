"""`--plots` draws something for every workload (issue 30): a command and a sweep over allocators only get the
primary metric by allocator (x THP) with CIs, and a store that cannot be drawn says why."""

from __future__ import annotations

import textwrap
from pathlib import Path

from click.testing import CliRunner

from hugebench.cli import main
from hugebench.experiment import parse_spec
from hugebench.report.figures import write_plots
from hugebench.store import ResultStore
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep


def _sweep(tmp_path, text: str) -> Path:
    spec = parse_spec(textwrap.dedent(text), "t.yaml")
    out = tmp_path / "res"
    result = run_sweep(
        spec, plan_mod.plan(spec), SweepOptions(out=out, quiet=True, journal=tmp_path / "j.json")
    )
    assert result.statuses.get("ok"), result.statuses
    return out


def _plots(out: Path):
    result = CliRunner().invoke(main, ["report", str(out), "--plots", "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert "plots: " not in result.stdout  # the markdown on stdout stays markdown (issue 43)
    return result.output, sorted(p.name for p in (out / "plots").glob("*.png"))


def test_a_command_sweep_gets_its_metric_by_allocator(tmp_path):
    out = _sweep(
        tmp_path,
        """\
        name: cmd
        workload: command
        perf: off
        repetitions: 2
        params: {argv: [/bin/sh, -c, "sleep 0.4"], sample_interval: 0.05}
        axes:
          allocator: [glibc, jemalloc]
        baseline: {allocator: glibc}
        """,
    )
    text, pngs = _plots(out)
    assert "cmd-window_s-by-allocator.png" in pngs, (
        text,
        pngs,
    )  # the metric by allocator, with CIs
    assert "cmd-coverage.png" in pngs, (
        pngs
    )  # huge-page coverage over each run (the sampler's series)
    assert "plots: " + str(out / "plots") in text


def test_a_sweep_over_allocators_only_gets_a_figure(tmp_path):
    out = _sweep(
        tmp_path,
        """\
        name: allo
        workload: hashlookup
        perf: off
        params: {keys: 2000}
        axes:
          allocator: [glibc, jemalloc]
        baseline: {allocator: glibc}
        """,
    )
    text, pngs = _plots(out)
    assert pngs == ["allo-ns_per_lookup-by-allocator.png"], text


def test_a_store_without_a_successful_run_says_why_it_has_no_plot(tmp_path):
    store = ResultStore(tmp_path)
    store.write_context(
        "none-0001",
        {
            "experiment": "none",
            "workload": "hashlookup",
            "axes": ["allocator"],
            "primary_metric": "ns_per_lookup",
        },
    )
    store.append(
        {
            "run_id": "a",
            "cell_id": "c",
            "experiment": "none",
            "workload": "hashlookup",
            "sweep_id": "none-0001",
            "allocator": "glibc",
            "status": "failed",
            "error": "boom",
        }
    )
    why: list[str] = []
    assert write_plots(tmp_path, why) == [] and why == ["none: no plot, no run succeeded"]
