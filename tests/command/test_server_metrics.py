"""A real redis-server under redis-benchmark named as a driver: every metric of it per run (throughput and
latency percentiles), the server's warm-up runs recorded apart, and a failed driver's row keeping the end of
both the driver's and the server's output."""

from __future__ import annotations

import shutil
import textwrap

import pytest
from click.testing import CliRunner

from hugebench import load
from hugebench.cli import main
from hugebench.experiment import load_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

pytestmark = pytest.mark.skipif(
    shutil.which("redis-server") is None or shutil.which("redis-benchmark") is None,
    reason="redis-server/redis-benchmark not installed (apt-get install redis-server redis-tools)",
)

SERVER = """\
  server:
    argv: [redis-server, --port, "0", --unixsocket, "{tmp}/r.sock", --save, "", --daemonize, "no"]
    ready: {path: "{tmp}/r.sock"}
    warmup: 1
"""


def _sweep(tmp_path, params: str):
    path = tmp_path / "srv.yaml"
    path.write_text(
        "name: srv\nworkload: command\nperf: off\ntimeout: 60\nparams:\n"
        + SERVER
        + textwrap.indent(textwrap.dedent(params), "  ")
    )
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    return result, load(tmp_path / "res")


def test_redis_benchmark_as_a_driver_gives_every_metric(tmp_path):
    result, df = _sweep(
        tmp_path,
        """\
          argv: [redis-benchmark, -s, "{tmp}/r.sock", -n, "4000", -t, "set,get", --csv]
          metric: {driver: redis-benchmark, test: GET}
        """,
    )
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    assert row["rps"] > 100
    assert 0 < row["p50_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"]
    assert row["server_warmup_runs"] == 1 and row["server_warmup_s"] > 0
    report = CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--format", "markdown"])
    assert report.exit_code == 0, report.output
    assert "p99_ms" in report.output and "rps" in report.output
    from own_processes import run_processes

    assert not run_processes("redis-server")


def test_a_failed_driver_keeps_both_tails(tmp_path):
    result, df = _sweep(
        tmp_path,
        """\
          argv: [sh, -c, "echo driver-said-no; exit 3"]
          metric: {driver: redis-benchmark, test: GET}
        """,
    )
    assert result.statuses == {"failed": 1}
    row = df.iloc[0]
    assert "warm-up run 1 of 1" in row["error"]  # the warm-up run failed first: nothing measured
    tail = row["stdout_tail"]
    assert "driver-said-no" in tail and "-- server's output (end) --" in tail
    assert "ready to accept connections" in tail.lower()  # the server's own log


def test_a_secondary_metric_missing_is_absent_with_its_reason(tmp_path):
    result, df = _sweep(
        tmp_path,
        """\
          argv: [redis-benchmark, -s, "{tmp}/r.sock", -n, "3000", -t, "get", -q]
          metric: {driver: redis-benchmark, test: GET}
        """,
    )
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    assert row["rps"] > 100 and row["p50_ms"] > 0
    assert row["p99_ms"] != row["p99_ms"] and "without -q" in row["p99_ms.reason"]


def test_every_process_of_a_forking_program_is_proven(tmp_path):
    """A forked child that never execs runs no probe constructor; the sampler's per-process mappings prove
    the preloaded allocator is in it too (the multi-process server's case: PostgreSQL's backends)."""
    from hugebench.machine.allocators import find_library

    if find_library("libjemalloc.so.2") is None:
        pytest.skip("libjemalloc2 not installed")
    path = tmp_path / "fork.yaml"
    path.write_text(
        "name: fork\nworkload: command\nperf: off\ntimeout: 60\n"
        "params:\n"
        '  argv: ["{python}", -c, "import os, time\\nif os.fork() == 0:\\n  time.sleep(1.2)\\n'
        '  os._exit(0)\\nos.wait()"]\n'
        "  sample_interval: 0.1\n"
        "axes: {allocator: [jemalloc]}\n"
    )
    spec = load_spec(path)
    result = run_sweep(spec, plan_mod.plan(spec), SweepOptions(out=tmp_path / "res", quiet=True))
    df = load(tmp_path / "res")
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    assert row["allocator_tree_processes"] == 2 and row["allocator_tree_mapped"] == 2
    assert (
        row["allocator_tree_unmapped"] is None
        or row["allocator_tree_unmapped"] != row["allocator_tree_unmapped"]
    )
