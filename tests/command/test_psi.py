"""Pressure stall information over a run: the run's own cgroup v2 (`<kind>.pressure`), or /proc/pressure
without one, read at every sample and turned into shares of each interval and of the run.

The logic on fake trees; the real thing with a program that keeps four busy processes on this machine's
cores for a second and a half (its own cgroup's cpu pressure must show the wait)."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest

from hugebench import load
from hugebench.experiment import load_spec
from hugebench.kernel import Host
from hugebench.kernel.pressure import own_cgroup_v2, parse_pressure
from hugebench.machine.psi import PressureLog
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

PSI = "some avg10=1.00 avg60=0.50 avg300=0.10 total={some}\nfull avg10=0.00 avg60=0.00 avg300=0.00 total={full}\n"


def _tree(tmp_path, cgroup_line: str = "0::/hugebench/run-1") -> tuple[Path, Path]:
    proc, v2 = tmp_path / "proc", tmp_path / "cg"
    (proc / "self").mkdir(parents=True)
    (proc / "pressure").mkdir()
    (proc / "self" / "mountinfo").write_text(
        f"41 31 0:38 / {v2} rw,relatime - cgroup2 cgroup2 rw\n"
    )
    (proc / "self" / "cgroup").write_text(f"4:memory:/x\n{cgroup_line}\n")
    group = v2 / "hugebench" / "run-1"
    group.mkdir(parents=True)
    return proc, group


def _write(directory: Path, some: int, full: int) -> None:
    for kind in ("cpu", "memory", "io"):
        name = f"{kind}.pressure" if directory.name != "pressure" else kind
        (directory / name).write_text(PSI.format(some=some, full=full))


def test_parse_reads_both_totals():
    assert parse_pressure(PSI.format(some=12, full=3)) == {"some": 12, "full": 3}
    assert parse_pressure("garbage\nsome total=x\n") == {}


def test_the_runs_own_cgroup_is_read_and_its_stalls_become_shares(tmp_path):
    proc, group = _tree(tmp_path)
    assert own_cgroup_v2(Host(proc=proc)) == group
    log = PressureLog(Host(proc=proc))
    for t, some in ((0.0, 0), (1.0, 250_000), (2.0, 250_000), (3.0, 1_250_000)):
        _write(group, some, some // 2)
        log.tick(t)
    columns = log.columns()
    assert columns["psi.source"] == f"cgroup {group}"
    assert columns["psi.memory_some_pct"] == pytest.approx(100 * 1.25 / 3, abs=1e-3)
    assert columns["psi.io_full_pct"] == pytest.approx(100 * 0.625 / 3, abs=1e-3)
    assert columns["series_psi_cpu_some_pct"] == [None, 25.0, 0.0, 100.0]
    # thinned like the other series: each kept point covers the span since the previous kept one
    assert log.columns(step=2)["series_psi_memory_some_pct"] == [None, 12.5]


def test_without_a_cgroup_the_machines_pressure_is_read_and_said(tmp_path):
    proc, _ = _tree(tmp_path, cgroup_line="0::/")
    log = PressureLog(Host(proc=proc))
    for t, some in ((0.0, 0), (2.0, 500_000)):
        _write(proc / "pressure", some, 0)
        log.tick(t)
    columns = log.columns()
    assert columns["psi.source"] == f"{proc}/pressure (machine-wide)"
    assert columns["psi.cpu_some_pct"] == 25.0


def test_a_kernel_without_psi_gives_a_reason(tmp_path):
    proc, _ = _tree(tmp_path, cgroup_line="0::/")
    log = PressureLog(Host(proc=proc))
    log.tick(0.0)
    log.tick(1.0)
    assert log.columns() == {
        "psi.reason": "fewer than two pressure readings (no PSI, or a run too short)"
    }


@pytest.mark.needs_root
def test_a_run_that_oversubscribes_the_cpus_shows_its_own_cpu_pressure(tmp_path):
    if not Path("/proc/pressure/cpu").exists():
        pytest.skip("kernel without PSI (/proc/pressure/cpu missing)")
    busy = max(4, 2 * (os.cpu_count() or 1))
    program = (
        "import multiprocessing as m, time\n"
        "def spin():\n    end = time.time() + 1.5\n    while time.time() < end: pass\n"
        f"ps = [m.Process(target=spin) for _ in range({busy})]\n"
        "[p.start() for p in ps]; [p.join() for p in ps]\n"
    )
    (tmp_path / "spin.py").write_text(program)
    path = tmp_path / "psi.yaml"
    path.write_text(
        "name: psi\nworkload: command\nperf: off\ntimeout: 60\n"
        + textwrap.dedent(
            f"""\
            params:
              argv: [python3, {tmp_path / "spin.py"}]
              sample_interval: 0.25
            """
        )
    )
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    row = load(tmp_path / "res").iloc[0]
    assert result.statuses == {"ok": 1}, row.get("error")
    # more runnable processes than CPUs: some of the run's tasks waited for a CPU most of the time
    assert row["psi.cpu_some_pct"] > 20, row["psi.source"]
    series = row["series_psi_cpu_some_pct"]
    assert len(series) == len(row["series_t_s"]) and series[0] is None
    assert all(0 <= v <= 100 for v in series[1:])
    if row["containment"] == "cgroup":
        assert row["psi.source"].startswith("cgroup ") and "/hugebench/" in row["psi.source"]
