"""A `command` run supervised from the sweep's own process (hugebench.run.inprocess): no worker process,
the program started into the run's cgroup, the sweep's process outside it, a supervisor that raises a failed
row (the sweep goes on), and the program's tree found among the run's cgroup.procs, not every process.

Logic against a fake /proc; the real thing with a small `command` sweep (seconds)."""

from __future__ import annotations

import os
import sys
import textwrap
from pathlib import Path

from hugebench import kernel
from hugebench.experiment import load_spec
from hugebench.kernel import Host
from hugebench.store import load
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep


def _stat(root: Path, pid: int, ppid: int) -> None:
    (root / str(pid)).mkdir(parents=True)
    (root / str(pid) / "stat").write_text(f"{pid} (x y) S {ppid} 0 0 0 -1 0 0 0 0 0 0 0\n")


def test_the_tree_is_found_among_the_members_given_without_reading_other_processes(tmp_path):
    proc = tmp_path / "proc"
    for pid, ppid in ((10, 1), (11, 10), (12, 11), (13, 10), (20, 1), (21, 20)):
        _stat(proc, pid, ppid)
    assert kernel.process_tree(10, Host(proc=proc)) == [10, 11, 13, 12]
    # the run's cgroup holds 10..13 (and 99, gone since): 21's unparseable stat is never read
    (proc / "21" / "stat").write_text("not a stat file")
    assert kernel.process_tree(10, Host(proc=proc), within=[10, 11, 12, 13, 99]) == [10, 11, 13, 12]
    assert kernel.process_tree(11, Host(proc=proc), within=[11, 12]) == [11, 12]
    assert kernel.process_tree(42, Host(proc=proc), within=[10]) == []


def _sweep(tmp_path: Path, body: str, repetitions: int = 1):
    path = tmp_path / "cmd.yaml"
    path.write_text(
        f"name: cmd\nworkload: command\nperf: off\nrepetitions: {repetitions}\n"
        + textwrap.dedent(body)
    )
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    return result, load(tmp_path / "res")


def _own_cgroup(pid: int | str = "self") -> str:
    lines = Path(f"/proc/{pid}/cgroup").read_text().splitlines()
    return next((ln[3:] for ln in lines if ln.startswith("0::")), "")


def test_a_command_run_has_no_worker_and_its_program_is_in_the_runs_cgroup(tmp_path):
    script = tmp_path / "where.py"
    script.write_text(
        "import os\n"
        "print('cgroup', open('/proc/self/cgroup').read().split('0::')[-1].strip())\n"
        "stat = open(f'/proc/{os.getppid()}/stat').read()\n"
        "print('grandparent', stat.rsplit(')', 1)[1].split()[1])\n"
    )
    result, df = _sweep(tmp_path, f"params: {{argv: [{sys.executable}, {script}]}}\n")
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    assert row["launcher"] == "sweep" and not any(c.startswith("worker.") for c in df.columns)
    assert row["supervisor.children_utime_s"] + row["supervisor.children_stime_s"] >= 0
    out = dict(line.split(" ", 1) for line in row["stdout_tail"].splitlines())
    # hb-exec is the program's parent and the sweep's process its parent: no worker in between
    assert int(out["grandparent"]) == os.getpid()
    if row["containment"] == "cgroup":
        assert out["cgroup"].rsplit("/", 1)[-1].endswith(row["run_id"][:12])
        assert _own_cgroup() != out["cgroup"]  # the sweep's process is never in the run's cgroup
    else:
        assert row["containment.reason"]


def test_a_supervisor_that_raises_is_a_failed_row_and_the_sweep_goes_on(tmp_path, monkeypatch):
    from hugebench.run import measured

    def boom(self, deadline):
        raise RuntimeError("the supervisor broke")

    monkeypatch.setattr(measured.Measured, "run_program", boom)
    result, df = _sweep(tmp_path, "params: {argv: [/bin/true]}\n", repetitions=2)
    assert result.statuses == {"failed": 2}
    assert (df["error"] == "RuntimeError: the supervisor broke").all()
    assert df["stderr_tail"].str.contains("Traceback").all()
    assert (df["launcher"] == "sweep").all() and (df["exit_code"] == 1).all()


def test_a_hanging_program_is_killed_with_its_tree_at_the_timeout(tmp_path):
    seconds = 3000 + os.getpid() % 997  # a duration no other process sleeps
    marker = f"sleep\0{seconds}"
    script = tmp_path / "hang.sh"
    script.write_text(f"#!/bin/sh\nsleep {seconds} &\nexec sleep {seconds}\n")
    script.chmod(0o755)
    result, df = _sweep(tmp_path, f"timeout: 2\nparams: {{argv: [{script}]}}\n")
    assert result.statuses == {"timeout": 1}, df.get("error")
    assert "timeout" in df.iloc[0]["error"]
    left = [
        p
        for p in os.listdir("/proc")
        if p.isdigit() and marker in (kernel.read_optional(Path("/proc", p, "cmdline")) or "")
    ]
    assert left == [], "processes of the run outlived it"


def test_an_hb_exec_without_enter_leaves_the_start_to_python(tmp_path, monkeypatch):
    from hugebench.machine import environment, launch

    old = tmp_path / "hb-exec"
    old.write_bytes(b"\x7fELF... usage: hb-exec STATUS_FILE [NAME=VALUE ...] -- PROGRAM")
    old.chmod(0o755)
    launch._enter_shim.cache_clear()
    monkeypatch.setattr(environment, "launcher", lambda: str(old))
    try:
        assert launch._enter_shim() is None  # an older build: Python joins the cgroup before exec
        ended = launch.Launched(["/bin/true"], {}, tmp_path, stdout=tmp_path / "out").wait(10)
        assert ended.code == 0
    finally:
        launch._enter_shim.cache_clear()
        monkeypatch.undo()
    assert launch._enter_shim() == environment.launcher()  # this tree's own build has --enter
