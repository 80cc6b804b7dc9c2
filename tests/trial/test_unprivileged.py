"""The lab user without root: doctor, plan and sweeps after root swept, with perf's user-space counts, and
perf that may count nothing.

Run for real as a user without root (the ``unprivileged`` fixture drops privileges in a child when the tests
run as root). Every sweep here uses its own lock file (HUGEBENCH_LOCK) so that a sweep of another session
on this machine cannot refuse it; the host lock's rules are tested in test_system_lock_users.py.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import thp_mode_needing_root


def _shared_dir(path: Path, mode: int) -> Path:
    path.mkdir()
    path.chmod(mode)
    return path


# -- the whole path: root swept before, then a user without root ------------------------------------------

HASH = """\
name: nonroot-hash
workload: hashlookup
repetitions: 1
timeout: 120
params: {keys: 20000, threads: 1}
axes:
  allocator: [glibc]
"""
COMMAND = """\
name: nonroot-cmd
workload: command
repetitions: 1
timeout: 120
params:
  argv: ["{python}", "-c", "x = [bytearray(4096) for _ in range(4000)]"]
axes:
  allocator: [glibc]
"""


def _paranoid() -> int:
    return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text())


def _rows(path: Path) -> list[dict]:
    return [json.loads(line) for line in (path / "runs.jsonl").read_text().splitlines()]


def _assert_user_counts(row: dict, uid: int, paranoid: int) -> None:
    """perf's counts as this user may have them: user space at paranoid 2, all at <= 1 (or root), else
    none, with the reason."""
    if uid == 0 or paranoid <= 1:
        assert row["perf_scope"] == "user+kernel" and row["perf.task_clock"] > 0
    elif paranoid == 2 or row["perf_scope"] == "user":  # mainline kernels treat levels above 2 as 2
        assert row["perf_scope"] == "user", row
        assert (
            row["perf.task_clock"] > 0
            and row["perf.page_faults"] > 0
            and row["perf.task_clock.reason"] is None
        )
    else:
        assert row["perf_scope"] is None and "perf_event_paranoid" in row["perf.task_clock.reason"]


@pytest.mark.needs_perf
def test_a_user_without_root_runs_doctor_plan_and_sweeps_after_root_swept(unprivileged, tmp_path):
    work = unprivileged.owned_dir(unprivileged.home / "lab")
    for name, text in (("hash.yaml", HASH), ("cmd.yaml", COMMAND)):
        (work / name).write_text(text)
        (work / name).chmod(0o644)
    lock_dir = _shared_dir(unprivileged.home.parent / "lock-e2e", 0o1777)
    env = {"HUGEBENCH_LOCK": str(lock_dir / "hugebench.lock"), "COLUMNS": "400"}
    if os.geteuid() == 0:  # root sweeps first, leaving its lock (and its journal, elsewhere) behind
        from click.testing import CliRunner

        from hugebench.cli import main

        swept = CliRunner().invoke(
            main,
            ["sweep", str(work / "hash.yaml"), "-o", str(tmp_path / "root"), "-q"],
            env={**env, "HUGEBENCH_JOURNAL": str(tmp_path / "journal.json")},
        )
        assert swept.exit_code == 0, swept.output
        assert (lock_dir / "hugebench.lock").stat().st_uid == 0
        (root_row,) = _rows(tmp_path / "root")
        assert root_row["perf_scope"] == "user+kernel"  # root's counts include the kernel's share

    doctor = unprivileged.hugebench("doctor", env=env, cwd=work)
    assert doctor.returncode == 0 and "Traceback" not in doctor.stderr, doctor.stderr
    paranoid, uid = _paranoid(), unprivileged.uid
    if uid != 0 and paranoid == 2:
        assert f"uid {uid} counts user space only" in doctor.stdout, doctor.stdout
    lock_line = (
        "mode 0666, writable" if os.geteuid() == 0 else "created mode 0666 by the next sweep"
    )
    assert f"{lock_dir}/hugebench.lock: {lock_line}" in doctor.stdout
    if uid != 0:
        assert f"not writable by uid {uid}" in doctor.stdout  # THP and the hugetlb pool, said so

    for name, out in (("hash.yaml", "r-hash"), ("cmd.yaml", "r-cmd")):
        plan = unprivileged.hugebench("plan", name, env=env, cwd=work)
        assert plan.returncode == 0 and "no kernel knob changes" in plan.stdout, (
            plan.stdout + plan.stderr
        )
        sweep = unprivileged.hugebench("sweep", name, "-o", out, "-q", env=env, cwd=work)
        assert sweep.returncode == 0 and "Traceback" not in sweep.stderr, (
            sweep.stdout + sweep.stderr
        )
        (row,) = _rows(work / out)
        assert row["status"] == "ok", row.get("error")
        _assert_user_counts(row, uid, paranoid)
    (hash_row,) = _rows(work / "r-hash")
    if uid != 0 and paranoid == 2:  # the in-process counters fall back to user space as perf does
        assert hash_row["pmu_scope"] == "user" and hash_row["pmu.task_clock"] > 0
    if uid != 0:  # THP 'never' without root: by prctl, for the worker alone
        (work / "never.yaml").write_text(
            HASH.replace("nonroot-hash", "nonroot-never") + "  thp: [never]\n"
        )
        (work / "never.yaml").chmod(0o644)
        never = unprivileged.hugebench(
            "sweep", "never.yaml", "-o", "r-never", "-q", env=env, cwd=work
        )
        assert never.returncode == 0, never.stdout + never.stderr
        (row,) = _rows(work / "r-never")
        assert row["status"] == "ok" and row["thp.enabled"] == "never", row.get("error")
        thp_now = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
        assert row.get("thp_prctl_disabled") is (True if "[never]" not in thp_now else None)
    if (
        uid != 0
    ):  # a THP mode that needs root: refused up front with the command that works from a venv
        (work / "always.yaml").write_text(HASH + f"system: {{thp: {thp_mode_needing_root()}}}\n")
        (work / "always.yaml").chmod(0o644)
        refused = unprivileged.hugebench(
            "sweep", "always.yaml", "-o", "r-always", env=env, cwd=work
        )
        script = Path(unprivileged.python).parent / "hugebench"
        assert refused.returncode != 0 and "Traceback" not in refused.stderr, refused.stderr
        assert f"needs root: run `sudo {script} sweep always.yaml`" in refused.stderr, (
            refused.stderr
        )
        assert not (work / "r-always" / "runs.jsonl").exists()
    shutil.rmtree(lock_dir)


# -- perf not allowed at all (Debian's perf_event_paranoid=3): counters absent with the reason --------------

FAKE_PERF = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "perf version 6.1.0"; exit 0; fi
if [ "$1" = "list" ]; then exit 0; fi
cat >&2 <<'EOF'
Error:
Access to performance monitoring and observability operations is limited.
Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open
access to performance monitoring and observability operations for processes
without CAP_PERFMON, CAP_SYS_PTRACE or CAP_SYS_ADMIN Linux capability.
perf_event_paranoid setting is 3:
EOF
exit 255
"""


@pytest.fixture
def forbidding_perf(tmp_path, monkeypatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "perf").write_text(FAKE_PERF)
    (bin_dir / "perf").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:{os.environ['PATH']}")
    return bin_dir / "perf"


def test_perf_that_may_count_nothing_gives_reasons_not_a_crash(forbidding_perf, tmp_path, fake_sys):
    # Before: every event "missing from perf stat output", then ValueError: perf stat needs at least one event.
    from hugebench import doctor
    from hugebench.experiment import parse_spec
    from hugebench.measure import perf
    from hugebench.sweep import plan as plan_mod
    from hugebench.sweep.orchestrator import SweepOptions, run_sweep

    caps = perf.detect(host=fake_sys.host)
    assert caps.available and not caps.supported and caps.scope is None
    assert all("perf_event_paranoid" in why for _, why in caps.unsupported)
    check = doctor.check_paranoid(caps)
    assert (
        not check.ok
        and "can count nothing" in check.detail
        and "perf_event_paranoid=2" in check.fix
    )
    spec = parse_spec(HASH.replace("keys: 20000", "keys: 2000") + "perf: auto\n", "exp.yaml")
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(
            out=tmp_path / "res",
            quiet=True,
            host=fake_sys.host,
        ),
    )
    assert result.statuses == {"ok": 1}
    (row,) = _rows(tmp_path / "res")
    assert row["perf_scope"] is None and row["perf.task_clock"] is None
    assert "no permission to count" in row["perf.task_clock.reason"]
    assert "perf_event_paranoid" in row["perf.page_faults.reason"]


def test_perf_names_with_the_user_space_modifier_are_parsed():
    # perf as a user at perf_event_paranoid 2 appends ':u' to every event it was given
    from hugebench.measure import perf
    from hugebench.measure.events import EventChoice

    text = textwrap.dedent("""\
        0.78,msec,task-clock:u,782931,100.00,0.101,CPUs utilized
        47,,page-faults:u,782931,100.00,60.031,K/sec
        <not supported>,,cycles:u,0,100.00,,
        1200,,cpu/event=0x8,umask=0xe/u,782931,100.00,,
    """)
    counters = perf.parse_perf_csv(text)  # keyed as printed; the 'u' marks what was counted
    assert (
        counters["task-clock:u"].value == pytest.approx(780000)
        and counters["task-clock:u"].user_only
    )
    assert counters["cpu/event=0x8,umask=0xe/u"].user_only and not perf.user_space_only("cycles:k")
    choices = [
        EventChoice("task_clock", "task-clock"),
        EventChoice("page_faults", "page-faults:u"),
        EventChoice("cycles", "cycles"),
        EventChoice("raw", "cpu/event=0x8,umask=0xe/"),
    ]
    row = perf.perf_columns(text, choices)
    assert row["perf.page_faults"] == 47 and row["perf.raw"] == 1200 and row["perf_scope"] == "user"
    assert row["perf.cycles.reason"].startswith("not supported")
    root = perf.perf_columns(text.replace(":u,", ",").replace("/u,", "/,"), choices)
    assert root["perf_scope"] == "user+kernel" and root["perf.task_clock"] == pytest.approx(780000)


def test_the_root_command_names_the_venv_script_sudo_would_not_find(tmp_path, monkeypatch):
    from hugebench.system import sudo_hugebench

    venv = tmp_path / "lab/.venv"
    (venv / "bin").mkdir(parents=True)
    (venv / "bin/hugebench").write_text("")
    monkeypatch.setattr("sys.prefix", str(venv))
    monkeypatch.chdir(tmp_path / "lab")
    assert sudo_hugebench() == ".venv/bin/hugebench"  # sudo's secure_path holds no venv
    monkeypatch.chdir(tmp_path)
    assert sudo_hugebench() == "lab/.venv/bin/hugebench"
    monkeypatch.chdir("/")
    assert sudo_hugebench() == str(venv / "bin/hugebench")
    monkeypatch.setattr("sys.prefix", sys.base_prefix)  # a system-wide install: on sudo's PATH
    assert sudo_hugebench() == "hugebench"


def test_doctor_says_what_perf_counts_for_this_user():
    from hugebench import doctor
    from hugebench.measure.perf import PerfCapabilities

    def caps(**kw):
        return PerfCapabilities("/usr/bin/perf", "6.1", None, 2, frozenset({"task-clock"}), **kw)

    user = doctor.check_paranoid(caps(scope="user"))
    assert (
        user.ok
        and f"uid {os.geteuid()} counts user space only" in user.detail
        and "paranoid=1" in user.fix
    )
    whole = doctor.check_paranoid(caps(scope="user+kernel"))
    assert whole.ok and "counts user and kernel space" in whole.detail
    missing = doctor.check_paranoid(PerfCapabilities(None, None, "perf not found on PATH", 2))
    assert not missing.ok and "not probed: perf not found" in missing.detail
