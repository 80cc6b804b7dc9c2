"""What the machine was doing during a run: the noise.* columns from a fake /proc, and a real tiny sweep
beside a CPU hog started here, whose runs must be flagged disturbed."""

import subprocess
import sys
import time

import pytest

from hugebench import load
from hugebench.experiment import parse_spec
from hugebench.kernel import Host
from hugebench.measure import disturbance
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

TICK = disturbance._CLK_TCK


def _proc(root, cpu, load="0.10 0.20 0.30 1/200 999", procs=(), psi=None):
    """A fake /proc: /proc/stat's cpu line, loadavg, a few processes, PSI totals (us)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text("cpu  " + " ".join(str(v) for v in cpu) + " 0 0\ncpu0 1 2 3\n")
    (root / "loadavg").write_text(load + "\n")
    for pid, comm, ticks in procs:
        (root / str(pid)).mkdir(exist_ok=True)
        rest = (
            ["S", "1"] + ["0"] * 9 + [str(ticks), "0"] + ["0"] * 6 + [str(pid * 7)] + ["0"] * 3
        )  # starttime
        (root / str(pid) / "stat").write_text(f"{pid} ({comm}) " + " ".join(rest) + "\n")
    if psi is not None:
        (root / "pressure").mkdir(exist_ok=True)
        for kind, total in psi.items():
            (root / "pressure" / kind).write_text(
                f"some avg10=0.00 avg60=0.00 avg300=0.00 total={total}\n"
                "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
            )
    return str(root)


def _pair(tmp_path, before, after):
    a = disturbance.snapshot(Host(_proc(tmp_path / "a", **before), tmp_path / "nosys"))
    b = disturbance.snapshot(Host(_proc(tmp_path / "b", **after), tmp_path / "nosys"))
    return a, b


def test_quiet_interval_is_not_disturbed(tmp_path):
    # 2 s over 2 CPUs = 4 s of CPU time; the run used 1 s of it; nobody else did anything.
    a, b = _pair(
        tmp_path,
        dict(cpu=[0, 0, 0, 0, 0, 0, 0, 0], procs=[(50, "sshd", 10)], psi={"cpu": 0}),
        dict(
            cpu=[1 * TICK, 0, 0, 3 * TICK, 0, 0, 0, 0],
            procs=[(50, "sshd", 10)],
            psi={"cpu": 100_000},
        ),
    )
    cols = disturbance.machine_columns(a, b, 2.0, own_cpu_s=1.0)
    assert cols["noise.steal_pct"] == 0 and cols["noise.other_cpus"] == 0
    assert cols["noise.top_others"] == "" and cols["noise.psi_cpu_pct"] == pytest.approx(5.0)
    assert cols["noise.load1"] == 0.1 and cols["noise.procs_running"] == 0
    assert cols["noise.cpu_mhz"] is None and "cpufreq" in cols["noise.cpu_mhz.reason"]
    assert "psi_memory_pct.reason" in " ".join(cols) and disturbance.judge(cols) == (False, None)


def test_hog_and_steal_are_flagged_and_named(tmp_path):
    # 2 s: the run 1 s, a hog 1.8 s (its own process), the hypervisor took 0.6 s of 4.
    a, b = _pair(
        tmp_path,
        dict(cpu=[0] * 8, procs=[(50, "hog", 100), (60, "kworker/0:1-events", 5)]),
        dict(
            cpu=[int(2.8 * TICK), 0, 0, int(0.6 * TICK), 0, 0, 0, int(0.6 * TICK)],
            procs=[
                (50, "hog", 100 + int(1.8 * TICK)),
                (60, "kworker/0:1-mm_percpu_wq", 5),
                (70, "cc1plus", int(0.2 * TICK)),
            ],
            load="2.50 1.00 0.50 3/200 999",
        ),
    )
    cols = disturbance.machine_columns(a, b, 2.0, own_cpu_s=1.0)
    assert cols["noise.other_cpus"] == pytest.approx(0.9)
    assert cols["noise.steal_pct"] == pytest.approx(15.0)
    # a new process: all its time; a kworker that renamed itself is the same process (idle here)
    assert cols["noise.top_others"] == "hog[50] 0.90 CPU, cc1plus[70] 0.10 CPU"
    assert cols["noise.procs_running"] == 2
    disturbed, why = disturbance.judge(cols)
    assert disturbed and "steal 15% > 10%" in why and "0.90 CPUs busy > 0.5 (hog[50]" in why


def test_own_process_excluded_and_missing_proc_gives_reasons(tmp_path):
    a, b = _pair(
        tmp_path,
        dict(cpu=[0] * 8, procs=[(7, "me", 0)]),
        dict(cpu=[TICK, 0, 0, TICK, 0, 0, 0, 0], procs=[(7, "me", TICK)]),
    )
    assert disturbance.machine_columns(a, b, 1.0, 0.0, exclude={7})["noise.top_others"] == ""
    empty = disturbance.snapshot(Host(tmp_path / "none", tmp_path / "none"))
    cols = disturbance.machine_columns(empty, empty, 1.0, 0.0)
    assert cols["noise.steal_pct"] is None and cols["noise.steal_pct.reason"].startswith(
        "no /proc/stat"
    )
    assert disturbance.judge(cols) == (False, None)  # nothing known: not flagged


def test_run_columns_on_the_real_machine():
    before = disturbance.snapshot()
    child = subprocess.run([sys.executable, "-c", "pass"])
    assert child.returncode == 0
    cols = disturbance.run_columns(
        before, {"wall_s": 0.05, "worker.utime_s": 0.02, "worker.stime_s": 0.01, "worker.nivcsw": 3}
    )
    assert cols["noise.load1"] is not None and cols["noise.steal_pct"] is not None
    assert cols["noise.nivcsw_per_s"] == pytest.approx(60.0)
    assert isinstance(cols["noise.disturbed"], bool)


HOG_SPEC = """\
name: hogged
workload: hashlookup
repetitions: 2
timeout: 60
perf: off
params: {keys: 200000, chunks: 4}
axes:
  allocator: [glibc]
  set_kind: [flat]
"""


def test_sweep_beside_a_cpu_hog_flags_its_runs(tmp_path):
    """A real sweep with a busy-looping process beside it: every run records the machine columns and is
    flagged disturbed, the hog named among the other processes."""
    hog = subprocess.Popen([sys.executable, "-c", "while 1: pass"])
    try:
        time.sleep(0.2)
        spec = parse_spec(HOG_SPEC, "hogged.yaml")
        runs = plan_mod.plan(spec)
        with pytest.warns(
            disturbance.NoisyMachineWarning, match="busy as the sweep starts"
        ):  # the pre-check
            run_sweep(
                spec,
                runs,
                SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "journal.json"),
            )
    finally:
        hog.kill()
        hog.wait()
    df = load(tmp_path / "res")
    assert (df["status"] == "ok").all() and len(df) == 2
    for column in (
        "noise.steal_pct",
        "noise.load1",
        "noise.other_cpus",
        "noise.psi_cpu_pct",
        "noise.top_others",
    ):
        assert column in df.columns
    assert (df["noise.other_cpus"] > disturbance.THRESHOLDS.other_cpus).all(), df[
        "noise.other_cpus"
    ].tolist()
    assert df["noise.disturbed"].all() and df["noise.why"].str.contains("other work kept").all()
    assert df["noise.top_others"].str.contains(f"python[^,]*\\[{hog.pid}\\]").any(), df[
        "noise.top_others"
    ].tolist()


def test_sweep_with_quiet_machine_records_the_wait(tmp_path, monkeypatch):
    """--quiet-machine: before each block the sweep looks (here: waits at most 0 s) and records the wait."""
    monkeypatch.setattr(disturbance, "LOOK_S", 0.05)
    spec = parse_spec(HOG_SPEC, "hogged.yaml")
    run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(
            out=tmp_path / "res",
            quiet=True,
            journal=tmp_path / "journal.json",
            quiet_machine=0.0,
            label="jemalloc 5.3",
        ),
    )
    df = load(tmp_path / "res")
    from hugebench.report import load_results

    assert [c.get("label") for c in load_results(tmp_path / "res").contexts.values()] == [
        "jemalloc 5.3"
    ]
    assert (
        df["noise.waited_s"].notna().all() and (df["noise.waited_s"] >= 0).all()
    )  # one block per repetition
    assert "noise.still_busy" in df.columns


def test_migrations_are_read_between_the_exit_and_the_reaping(tmp_path):
    # hb-exec reads /proc/PID/sched of its child while it is a zombie: the only moment the count exists
    import json
    import os

    from hugebench.machine.environment import launcher

    status = tmp_path / "status.json"
    code = (
        "import os\nfor cpu in [0, 1] * 5:\n    os.sched_setaffinity(0, {cpu % os.cpu_count()})\n"
    )
    subprocess.run([launcher(), str(status), "--", sys.executable, "-c", code], check=True)
    migrated = json.loads(status.read_text())["nr_migrations"]
    if migrated == -1:
        pytest.skip("this kernel shows no se.nr_migrations in /proc/PID/sched")
    assert migrated >= (9 if os.cpu_count() > 1 else 0)
    assert run_columns_migrations({"worker.nr_migrations": migrated}) == migrated
    assert run_columns_migrations({"worker.nr_migrations": -1}) is None


def run_columns_migrations(row: dict):
    from hugebench.measure.disturbance import run_columns, snapshot

    return run_columns(snapshot(), {"wall_s": 1.0, **row})["noise.migrations"]
