"""No process outlives its run: the cgroup v2 of a run, the record of its processes, the clean-up of a dead
sweep's runs (next sweep, `system restore`), and OOM kills told apart from crashes.

Logic against fake /proc trees; the real thing with a daemon (a grandchild that calls setsid) under a real
`command` sweep killed with -9, in both containments: the run's cgroup (root, a cgroup v2 mount) and the
pid record (forced off the cgroup)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench import kernel
from hugebench.kernel import Host
from hugebench.machine.launch import Launched
from hugebench.run.rows import oom_verdict
from hugebench.system import cgroup as cgroups
from hugebench.system.containment import TOKEN, RunContainer, alive, end_leftovers, record_dir

HYBRID = """\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
"""
PURE_V2 = "30 24 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate\n"
ESCAPED = "30 24 0:26 / /mnt/my\\040cgroups rw - cgroup2 none rw\n"


def _fake_proc(tmp_path, mountinfo: str) -> Path:
    root = tmp_path / "proc"
    (root / "self").mkdir(parents=True)
    (root / "self" / "mountinfo").write_text(mountinfo)
    return root


@pytest.mark.parametrize(
    "text,v2,memory_v1",
    [
        (HYBRID, "/sys/fs/cgroup/unified", "/sys/fs/cgroup/memory"),
        (PURE_V2, "/sys/fs/cgroup", None),
        (ESCAPED, "/mnt/my cgroups", None),
        ("", None, None),
    ],
)
def test_the_cgroup_v2_mount_is_found_in_mountinfo(tmp_path, text, v2, memory_v1):
    mounts = kernel.cgroup_mounts(Host(proc=_fake_proc(tmp_path, text)))
    assert mounts["v2"] == v2 and mounts["v1"].get("memory") == memory_v1
    assert "systemd" not in mounts["v1"] and "name=systemd" not in mounts["v1"]


def test_no_cgroup_v2_means_a_pid_record_and_says_why(tmp_path):
    proc = _fake_proc(tmp_path, HYBRID.replace("cgroup2 cgroup2", "tmpfs tmpfs"))
    group, why = cgroups.create("x", Host(proc=proc))
    assert group is None and "no cgroup v2 hierarchy is mounted" in why


def test_a_cgroup_that_cannot_be_created_says_why(tmp_path):
    mount = tmp_path / "ro"
    mount.mkdir()
    mount.chmod(0o500)
    proc = _fake_proc(tmp_path, f"41 31 0:38 / {mount} rw - cgroup2 cgroup2 rw\n")
    try:
        group, why = cgroups.create("x", Host(proc=proc))
        if os.geteuid() == 0:  # root may mkdir anywhere: the fake mount then lacks cgroup.procs
            assert group is None and "cgroup.procs is not writable" in why
        else:
            assert group is None and "needs root or a delegated cgroup v2 subtree" in why
    finally:
        mount.chmod(0o700)


def test_the_record_of_runs_lives_beside_the_journal(tmp_path, monkeypatch):
    assert record_dir(tmp_path / "j.json") == tmp_path / "j-runs"
    monkeypatch.setenv("HUGEBENCH_JOURNAL", str(tmp_path / "other.json"))
    assert record_dir(None) == tmp_path / "other-runs"


# -- the record of a dead sweep's run, ended -------------------------------------------------------------


def _dead_pid() -> tuple[int, int]:
    """A pid that existed and is gone, with the start ticks it had."""
    child = subprocess.Popen(["sleep", "0"])
    start = kernel.process_start_ticks(child.pid)
    child.wait()
    return child.pid, start


def _sleeper(env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen(
        ["sleep", "60"], env={**os.environ, **(env or {})}, start_new_session=True
    )


def _write_record(records: Path, name: str, owner: tuple[int, int], token: str, pids: dict) -> Path:
    records.mkdir(exist_ok=True)
    path = records / f"{name}.json"
    path.write_text(
        json.dumps(
            {
                "format": 1,
                "name": name,
                "token": token,
                "owner_pid": owner[0],
                "owner_start": owner[1],
                "cgroup": None,
                "pids": {str(p): s for p, s in pids.items()},
            }
        )
    )
    return path


def _run_name(owner: tuple[int, int]) -> str:
    """A run's name as RunContainer makes it: its sweep's pid and start ticks, then the run."""
    return f"{owner[0]}-{owner[1]}-run"


def test_a_dead_sweeps_recorded_and_token_carrying_processes_are_ended(tmp_path):
    records = tmp_path / "j-runs"
    owner = _dead_pid()
    name = _run_name(owner)
    token = f"{name}-1"
    recorded, tokened = _sleeper({TOKEN: token}), _sleeper({TOKEN: token})
    # recorded by the dead sweep but neither in the run's cgroup nor holding its token: not provably the
    # run's (a record naming any process must not get it killed)
    unproven = _sleeper()
    bystander = _sleeper({TOKEN: f"{token}0"})
    try:
        path = _write_record(
            records,
            name,
            owner,
            token,
            {p.pid: kernel.process_start_ticks(p.pid) for p in (recorded, unproven)},
        )
        ended = [
            e for e in end_leftovers(records) if e["run"] == name
        ]  # (a real dead sweep's cgroup too)
        assert recorded.wait(5) == -signal.SIGKILL and tokened.wait(5) == -signal.SIGKILL
        assert [e["killed"] for e in ended] == [2]
        assert not path.exists() and bystander.poll() is None and unproven.poll() is None
    finally:
        for p in (recorded, tokened, unproven, bystander):
            p.kill()
            p.wait()


def test_a_live_sweeps_runs_and_a_reused_pid_are_left_alone(tmp_path):
    records = tmp_path / "j-runs"
    me = (os.getpid(), kernel.process_start_ticks(os.getpid()))
    mine, reused = _sleeper({TOKEN: f"{_run_name(me)}-live"}), _sleeper()
    try:
        live = _write_record(records, _run_name(me), me, f"{_run_name(me)}-live", {})
        # a dead sweep recorded a pid that now belongs to another process (other start time)
        owner = _dead_pid()
        stale = _write_record(
            records,
            _run_name(owner),
            owner,
            f"{_run_name(owner)}-gone",
            {reused.pid: kernel.process_start_ticks(reused.pid) - 1},
        )
        ended = [e for e in end_leftovers(records) if e["run"] in (_run_name(me), _run_name(owner))]
        assert [e["run"] for e in ended] == [_run_name(owner)] and ended[0]["killed"] == 0
        assert mine.poll() is None and reused.poll() is None
        assert live.exists() and not stale.exists()
    finally:
        for p in (mine, reused):
            p.kill()
            p.wait()


def test_alive_tells_a_reused_pid_and_a_zombie_from_the_process_recorded():
    child = subprocess.Popen(["sleep", "60"])
    start = kernel.process_start_ticks(child.pid)
    assert alive(child.pid, start) and alive(child.pid, None) and not alive(child.pid, start + 1)
    child.kill()  # killed, not yet reaped: a zombie is no longer a process to end
    assert _gone(child.pid, 5)
    assert Path(f"/proc/{child.pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    child.wait()


# -- OOM kills ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "fields,vmstat,status",
    [
        (
            {
                "status": "crashed",
                "signal": "SIGKILL",
                "error": "the program died of signal SIGKILL",
            },
            1,
            "oom",
        ),
        (
            {"status": "crashed", "signal": "SIGKILL", "error": "x"},
            0,
            "crashed",
        ),  # killed by someone else
        (
            {"status": "crashed", "signal": "SIGSEGV", "error": "x"},
            3,
            "crashed",
        ),  # an OOM elsewhere, a real crash
        ({"status": "ok"}, 2, "ok"),
        # the run's own cgroup counted the kill: exact, whatever the program then exited with (sh -> 137)
        ({"status": "failed", "error": "exited with code 137", "cgroup.oom_kills": 1}, 0, "oom"),
        (
            {"status": "crashed", "signal": "SIGKILL", "error": "x", "cgroup.oom_kills": 0},
            5,
            "crashed",
        ),
    ],
)
def test_an_oom_kill_is_oom_not_a_crash(fields, vmstat, status):
    verdict = oom_verdict(dict(fields), vmstat)
    assert verdict["status"] == status
    if status == "oom":
        assert (
            verdict["error"].startswith("killed by the OOM killer")
            and fields["error"] in verdict["error"]
        )


# -- real processes --------------------------------------------------------------------------------------

DAEMONIZE = textwrap.dedent("""\
    import os, sys, time
    if os.fork() == 0:
        os.setsid()
        if os.fork() == 0:
            tmp = sys.argv[1] + ".tmp"
            open(tmp, "w").write(str(os.getpid()))
            os.replace(tmp, sys.argv[1])
            time.sleep(float(sys.argv[2]))
        os._exit(0)
    time.sleep(float(sys.argv[3]))
    """)


def _cgroup_reason() -> str | None:
    group, why = cgroups.create(f"probe-{os.getpid()}")
    if group is not None:
        group.remove()
    return why


def _wait_for(path: Path, proc: subprocess.Popen | None = None, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while not (path.exists() and path.read_text().strip()):
        assert proc is None or proc.poll() is None, (
            "the sweep ended before its program's daemon started"
        )
        assert time.monotonic() < deadline, f"{path} never written"
        time.sleep(0.05)
    return int(path.read_text())


def _gone(pid: int, timeout: float = 10) -> bool:
    deadline = time.monotonic() + timeout
    while alive(pid, None):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


@pytest.fixture
def daemon_script(tmp_path) -> Path:
    script = tmp_path / "daemonize.py"
    script.write_text(DAEMONIZE)
    return script


@pytest.mark.parametrize("use_cgroup", [True, False], ids=["cgroup", "pid-record"])
def test_a_run_container_ends_a_daemon_that_left_the_group(tmp_path, daemon_script, use_cgroup):
    if use_cgroup and (why := _cgroup_reason()):
        pytest.skip(f"no run cgroup here: {why}")
    pidfile = tmp_path / "daemon.pid"
    container = RunContainer("abcdef123456", tmp_path / "j-runs", use_cgroup=use_cgroup)
    launched = Launched(
        [sys.executable, str(daemon_script), str(pidfile), "60", "0"],
        {},
        tmp_path,
        stdout=tmp_path / "out",
        container=container,
    )
    daemon = _wait_for(pidfile)
    launched.wait(30)  # the program ended; its setsid grandchild did not
    assert alive(daemon, None)
    if use_cgroup:
        assert daemon in container.cgroup.procs()
    else:
        assert (
            container.record_path.exists() and container.token in container.record_path.read_text()
        )
    columns = container.close()
    assert _gone(daemon, 5), "the run ended and its daemon lives on"
    assert columns["containment.killed_at_end"] >= 1 and not list(
        (tmp_path / "j-runs").glob("*.json")
    )
    if use_cgroup:
        assert columns["containment"] == "cgroup" and not container.cgroup.path.exists()
        if not container.cgroup.has_memory():
            assert "no memory controller" in columns["cgroup.memory.reason"]
    else:
        assert columns["containment"] == "subreaper+pid record" and columns["containment.reason"]


SWEEP = textwrap.dedent("""\
    import sys
    from hugebench import experiment as spec
    from hugebench.sweep import plan
    from hugebench.sweep.orchestrator import SweepOptions, run_sweep
    from hugebench.system import cgroup
    if sys.argv[1] == "off":
        cgroup.create = lambda name, host=None: (None, "turned off by the test")
    s = spec.load_spec(sys.argv[2])
    run_sweep(s, plan.plan(s), SweepOptions(out=sys.argv[3], quiet=True, journal=sys.argv[4]))
    """)


def _experiment(tmp_path: Path, daemon_script: Path, pidfile: Path, perf: str = "off") -> Path:
    path = tmp_path / "daemon.yaml"
    path.write_text(
        textwrap.dedent(f"""\
        name: daemon
        workload: command
        perf: {perf}
        timeout: 300
        params:
          argv: [{sys.executable}, {daemon_script}, {pidfile}, "300", "300"]
        """)
    )
    return path


def _start_sweep(tmp_path, daemon_script, mode, perf="off") -> tuple[subprocess.Popen, int]:
    pidfile = tmp_path / "daemon.pid"
    exp = _experiment(tmp_path, daemon_script, pidfile, perf)
    sweep = subprocess.Popen(
        [
            sys.executable,
            "-c",
            SWEEP,
            mode,
            str(exp),
            str(tmp_path / "res"),
            str(tmp_path / "j.json"),
        ],
        cwd=tmp_path,
        start_new_session=True,
    )
    return sweep, _wait_for(pidfile, sweep)


def _tree(root: int) -> list[int]:
    return kernel.process_tree(root)


def _kill_all_but(sweep: subprocess.Popen, daemon: int) -> None:
    """The sweep and every process of its run except the daemon, killed at once: nobody can clean up (hb-exec
    killed too, as by an OOM killer or `kill -9` of each)."""
    tree = [p for p in _tree(sweep.pid) if p != daemon]
    for pid in tree:
        os.kill(pid, signal.SIGSTOP)
    for pid in tree:
        os.kill(pid, signal.SIGKILL)
    sweep.wait(10)


def _modes():
    return [pytest.param("on", id="cgroup"), pytest.param("off", id="pid-record")]


@pytest.mark.slow
@pytest.mark.parametrize("mode", _modes())
@pytest.mark.parametrize("perf", ["off", pytest.param("auto", marks=pytest.mark.needs_perf)])
def test_sweep_killed_with_9_its_daemon_ends_right_away(tmp_path, daemon_script, mode, perf):
    if mode == "on" and (why := _cgroup_reason()):
        pytest.skip(f"no run cgroup here: {why}")
    sweep, daemon = _start_sweep(tmp_path, daemon_script, mode, perf)
    try:
        os.kill(sweep.pid, signal.SIGKILL)
        sweep.wait(10)
        assert _gone(daemon, 10), "the daemon outlived the sweep killed with -9"
    finally:
        if alive(daemon, None):
            os.kill(daemon, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("mode", _modes())
@pytest.mark.parametrize("cleaner", ["next sweep", "system restore"])
def test_when_nothing_of_the_run_could_clean_up_the_next_sweep_or_restore_does(
    tmp_path, daemon_script, mode, cleaner
):
    if mode == "on" and (why := _cgroup_reason()):
        pytest.skip(f"no run cgroup here: {why}")
    sweep, daemon = _start_sweep(tmp_path, daemon_script, mode)
    try:
        _kill_all_but(sweep, daemon)
        time.sleep(0.3)
        assert alive(daemon, None), (
            "the daemon died with its run: nothing left for this test to prove"
        )
        journal = str(tmp_path / "j.json")
        if mode == "on" and cleaner == "system restore":  # the cgroup alone is record enough
            for record in (tmp_path / "j-runs").glob("*.json"):
                record.unlink()
        if cleaner == "next sweep":
            tiny = tmp_path / "tiny.yaml"
            tiny.write_text(
                f"name: tiny\nworkload: command\nperf: off\nparams: {{argv: [{sys.executable}, -c, '1']}}\n"
            )
            from hugebench.cli import main

            result = CliRunner().invoke(
                main,
                ["sweep", str(tiny), "-o", str(tmp_path / "res2"), "--quiet"],
                env={"HUGEBENCH_JOURNAL": journal},
            )
            assert result.exit_code == 0, result.output
            assert f"left running by a sweep that died (pid {sweep.pid})" in result.output
        else:
            from hugebench.cli import main

            result = CliRunner().invoke(main, ["system", "--journal", journal, "restore"])
            assert result.exit_code == 0, result.output
            assert f"(its sweep, pid {sweep.pid}, is gone)" in result.output
        assert _gone(daemon, 5), f"the daemon outlived {cleaner}"
        assert not list((tmp_path / "j-runs").glob("*.json")), (
            "the dead run's record was not removed"
        )
        if mode == "on":
            assert not [g for g in cgroups.run_cgroups() if g.path.name.startswith(f"{sweep.pid}-")]
    finally:
        if alive(daemon, None):
            os.kill(daemon, signal.SIGKILL)


@pytest.mark.slow
@pytest.mark.parametrize("mode", _modes())
def test_sigterm_to_a_sweep_ends_its_runs_processes_at_once(tmp_path, daemon_script, mode):
    if mode == "on" and (why := _cgroup_reason()):
        pytest.skip(f"no run cgroup here: {why}")
    sweep, daemon = _start_sweep(tmp_path, daemon_script, mode)
    try:
        os.kill(sweep.pid, signal.SIGTERM)
        sweep.wait(20)
        assert not alive(daemon, None), "the daemon outlived a sweep stopped with SIGTERM"
        assert not list((tmp_path / "j-runs").glob("*.json"))
    finally:
        if alive(daemon, None):
            os.kill(daemon, signal.SIGKILL)


OOM_VICTIM = textwrap.dedent("""\
    import os, signal, sys
    vmstat = sys.argv[1]
    text = open(vmstat).read()
    open(vmstat, "w").write(text + "oom_kill 1\\n")  # what the kernel counts as it picks its victim
    os.kill(os.getpid(), signal.SIGKILL)
    """)


@pytest.mark.parametrize("grandchild", [True, False], ids=["program-of-command", "worker"])
def test_a_process_killed_by_the_oom_killer_is_an_oom_row(
    tmp_path, fake_sys, monkeypatch, grandchild
):
    """The kernel's count is faked (no memory limit to hit safely on a machine without swap); the victim, the
    SIGKILL and every process between it and the sweep are real. No cgroup: its exact count would say 0."""
    monkeypatch.setattr(cgroups, "create", lambda name, host=None: (None, "off for this test"))
    from hugebench import load
    from hugebench.experiment import parse_spec
    from hugebench.sweep import plan
    from hugebench.sweep.orchestrator import SweepOptions, run_sweep

    victim = tmp_path / "victim.py"
    victim.write_text(OOM_VICTIM)
    vmstat = fake_sys.proc_root / "vmstat"
    options = {"host": fake_sys.host}
    if (
        grandchild
    ):  # the user's program under the command workload: the worker lives and reports its end
        text = f"name: o\nworkload: command\nperf: off\nparams: {{argv: [{sys.executable}, {victim}, {vmstat}]}}\n"
    else:  # the worker itself
        fake_python = tmp_path / "python"
        fake_python.write_text(f"#!/bin/sh\nexec {sys.executable} {victim} {vmstat}\n")
        fake_python.chmod(0o755)
        text = "name: o\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\n"
        options["python"] = str(fake_python)
    spec = parse_spec(text, "o.yaml")
    result = run_sweep(
        spec,
        plan.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json", **options),
    )
    row = load(tmp_path / "res").iloc[0]
    assert result.statuses == {"oom": 1}, row["error"]
    assert (
        row["error"].startswith("killed by the OOM killer (/proc/vmstat oom_kill rose by 1")
        and "SIGKILL" in row["error"]
    )
    assert row["oom_kills"] == 1


def test_the_memory_accounting_of_a_cgroup_is_read_from_its_files(tmp_path):
    group = cgroups.Cgroup(tmp_path)
    assert not group.has_memory() and group.memory_peak() is None and group.oom_kills() is None
    (tmp_path / "memory.events").write_text(
        "low 0\nhigh 0\nmax 12\noom 2\noom_kill 1\noom_group_kill 0\n"
    )
    (tmp_path / "memory.peak").write_text("73400320\n")
    (tmp_path / "memory.stat").write_text(
        "anon 70000000\nfile 4096\nanon_thp 62914560\nfile_thp 0\n"
    )
    assert group.has_memory() and group.memory_peak() == 73400320
    assert group.oom_kills() == 1 and group.anon_thp() == 62914560


@pytest.mark.needs_root
def test_a_real_cgroup_oom_kill_is_counted_in_the_run_cgroup(tmp_path):
    """Where the cgroup v2 hierarchy has the memory controller: a 32 MiB limit, a program that wants 256 MiB
    (no swap, so the cgroup's OOM killer, never the machine's)."""
    group, why = cgroups.create(f"oomtest-{os.getpid()}")
    if group is None:
        pytest.skip(f"no run cgroup here: {why}")
    try:
        if not group.has_memory():
            pytest.skip(cgroups.no_memory_reason(group))
        (group.path / "memory.max").write_text(str(32 << 20))
        if (group.path / "memory.swap.max").exists():
            (group.path / "memory.swap.max").write_text("0")
        hog = subprocess.Popen(
            [sys.executable, "-c", "b = bytearray(256 << 20); b[::4096] = b'x' * (65536)"],
            preexec_fn=lambda: group.join(os.getpid()),
        )
        assert hog.wait(60) == -signal.SIGKILL
        assert group.oom_kills() >= 1 and group.memory_peak() >= 16 << 20
        assert (
            oom_verdict(
                {"status": "failed", "error": "x", "cgroup.oom_kills": group.oom_kills()}, 0
            )["status"]
            == "oom"
        )
    finally:
        group.remove()


def test_a_run_the_kernel_will_not_move_into_its_cgroup_goes_on_under_the_pid_record(
    tmp_path, monkeypatch, daemon_script
):
    if why := _cgroup_reason():
        pytest.skip(f"no run cgroup here: {why}")

    def refused(self, pid):
        raise PermissionError(
            13, "Permission denied"
        )  # as in a container without cgroup delegation

    monkeypatch.setattr(cgroups.Cgroup, "join", refused)
    # hb-exec --enter joins by writing the files it is given: one it cannot write is a refused move
    refusing = [str(tmp_path / "not-a-cgroup" / "cgroup.procs")]
    monkeypatch.setattr(RunContainer, "join_files", lambda self: refusing)
    container = RunContainer("abcdef123456", tmp_path / "j-runs")
    made = container.cgroup.path
    pidfile = tmp_path / "daemon.pid"
    launched = Launched(
        [sys.executable, str(daemon_script), str(pidfile), "60", "0"],
        {},
        tmp_path,
        stdout=tmp_path / "out",
        container=container,
    )
    assert (
        container.cgroup is None
        and "could not move the run into" in container.reason
        and not made.exists()
    )
    daemon = _wait_for(pidfile)
    launched.wait(30)
    columns = container.close()
    assert _gone(daemon, 5) and columns["containment"] == "subreaper+pid record"
