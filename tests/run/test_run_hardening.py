"""A sweep under a careless user and a hostile machine: crashing allocators behind perf, SIGKILL of the
whole sweep, a second sweep at once, knobs changed behind its back, a library that is not an allocator,
torn context files, Ctrl-C."""

from __future__ import annotations

import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench import load
from hugebench.cli import main
from hugebench.errors import HugebenchError, SpecError, SystemStateError
from hugebench.experiment import parse_spec
from hugebench.run.rundir import remove_stale_run_dirs
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
from hugebench.system import SweepLock, discover_knobs

DATA = TESTS / "data"


def _sweep(text, tmp_path, out="res", **kw):
    spec = parse_spec(text, "exp.yaml")
    runs = plan_mod.plan(spec)
    options = SweepOptions(out=tmp_path / out, quiet=True, journal=tmp_path / "journal.json", **kw)
    return run_sweep(spec, runs, options)


@pytest.fixture(scope="module")
def crashing_allocator(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the crashing allocator")
    lib = tmp_path_factory.mktemp("alloc") / "libcrashing_malloc.so"
    subprocess.run(
        ["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(DATA / "crashing_malloc.c")],
        check=True,
    )
    return lib


@pytest.mark.needs_perf
@pytest.mark.parametrize("how,signame", [("segv", "SIGSEGV"), ("abort", "SIGABRT")])
def test_a_crashing_allocator_under_perf_is_a_crashed_row(
    tmp_path, crashing_allocator, how, signame
):
    text = textwrap.dedent(f"""\
        name: crash
        workload: hashlookup
        perf: auto
        params: {{keys: 400000, key_min: 16, key_max: 19}}
        allocators:
          crashing: {{path: {crashing_allocator}, env: {{HB_CRASH_HOW: {how}}}}}
        axes: {{allocator: [crashing]}}
        """)
    result = _sweep(text, tmp_path)
    assert result.statuses == {"crashed": 1}
    row = load(tmp_path / "res").iloc[0]
    assert row["status"] == "crashed" and signame in row["error"]
    assert row["exit_code"] == -signal.Signals[signame].value
    assert "perf.task_clock" in row.index or any(
        c.startswith("perf.") for c in row.index
    )  # perf did wrap it


@pytest.mark.needs_perf
def test_a_sigkilled_worker_under_perf_is_not_exit_code_zero(tmp_path):
    fake = tmp_path / "python"
    fake.write_text("#!/bin/sh\nkill -KILL $$\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    result = _sweep(
        "name: k\nworkload: hashlookup\nperf: auto\nparams: {keys: 100}\n",
        tmp_path,
        python=str(fake),
    )
    assert result.statuses in ({"crashed": 1}, {"oom": 1})
    assert "SIGKILL" in load(tmp_path / "res").iloc[0]["error"] or result.statuses == {"oom": 1}


def test_a_library_that_is_not_an_allocator_is_refused_before_anything_runs(tmp_path):
    """libz imports malloc and defines none: preloaded it would change nothing, so every run would fail its
    allocator check; the file is refused when it is loaded, naming the key (issue 38)."""
    from hugebench.machine.allocators import find_library

    libz = find_library("libz.so.1")
    if libz is None:
        pytest.skip("libz.so.1 not found")
    text = (
        f"name: z\nworkload: hashlookup\nperf: off\nparams: {{keys: 100}}\n"
        f"allocators: {{zlib: {{path: {libz}}}}}\naxes: {{allocator: [zlib]}}\n"
    )
    with pytest.raises(
        SpecError, match=r"x.yaml:\d+: key 'allocators.zlib.path'.*defines no malloc"
    ):
        parse_spec(text, "x.yaml")


def test_a_user_allocator_named_like_a_builtin_is_refused():
    with pytest.raises(SpecError, match="'jemalloc' is a built-in allocator"):
        parse_spec(
            "name: x\nworkload: hashlookup\nallocators: {jemalloc: {path: /usr/lib/libfoo.so}}\n",
            "x.yaml",
        )


def test_a_second_sweep_is_refused_naming_the_holder(tmp_path, monkeypatch):
    lock = tmp_path / "host.lock"
    monkeypatch.setenv("HUGEBENCH_LOCK", str(lock))
    with SweepLock(lock, "experiment 'first'"):
        with pytest.raises(SystemStateError, match=rf"pid {os.getpid()}, experiment 'first'"):
            _sweep("name: second\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\n", tmp_path)
    assert not (tmp_path / "res").exists()  # refused before anything was written
    result = _sweep(
        "name: second\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\n", tmp_path
    )
    assert result.statuses == {"ok": 1}  # the lock went with its holder


def test_knobs_changed_during_a_run_mark_the_row_disturbed(tmp_path, fake_sys):
    enabled = fake_sys.sys_root / "kernel/mm/transparent_hugepage/enabled"
    meddler = tmp_path / "python"
    meddler.write_text(
        f"#!/bin/sh\necho 'always madvise [never]' > {enabled}\nexec {sys.executable} \"$@\"\n"
    )
    meddler.chmod(meddler.stat().st_mode | stat.S_IEXEC)
    result = _sweep(
        "name: d\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\n",
        tmp_path,
        python=str(meddler),
        host=fake_sys.host,
    )
    assert result.statuses == {"disturbed": 1}
    row = load(tmp_path / "res").iloc[0]
    assert "thp.enabled madvise -> never" in row["error"]
    from hugebench.stats import ok_rows

    assert ok_rows(load(tmp_path / "res")).empty


def test_a_torn_context_file_refuses_to_mix_runs(tmp_path):
    text = "name: t\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\n"
    _sweep(text, tmp_path)
    context = next((tmp_path / "res" / "sweeps").glob("*.json"))
    context.write_text(context.read_text()[:40])
    with pytest.raises(HugebenchError, match="cannot be read"):
        _sweep(text.replace("keys: 100", "keys: 200"), tmp_path)
    context.unlink()
    with pytest.raises(SpecError, match="context file is missing"):
        _sweep(text, tmp_path)


def test_torn_store_warning_printed_once(tmp_path):
    _sweep(
        "name: t\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\naxes: {set_kind: [flat]}\n",
        tmp_path,
    )
    with open(tmp_path / "res" / "runs.jsonl", "a") as f:
        f.write('{"run_id": "torn')
    result = CliRunner().invoke(main, ["report", str(tmp_path / "res")])
    assert result.exit_code == 0, result.output
    warnings = [line for line in result.output.splitlines() if "torn last line" in line]
    assert len(warnings) == 1 and warnings[0].startswith("hugebench: warning:")


def test_ctrl_c_exits_130(tmp_path, monkeypatch):
    import hugebench.sweep.orchestrator as orchestrator

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(orchestrator, "run_sweep", interrupted)
    exp = tmp_path / "e.yaml"
    exp.write_text("name: c\nworkload: hashlookup\nparams: {keys: 100}\n")
    result = CliRunner().invoke(main, ["sweep", str(exp), "-o", str(tmp_path / "r")])
    assert result.exit_code == 130 and "interrupted" in result.output


def test_killing_an_already_reaped_worker_is_not_an_error(tmp_path):
    from hugebench.machine.launch import Launched

    launched = Launched(["true"], {}, tmp_path, stdout=tmp_path / "out")
    assert launched.wait(10).code == 0
    launched.kill()  # ProcessLookupError is swallowed: Ctrl-C just as a run ended


def test_pool_larger_than_memory_is_refused_before_anything_runs(tmp_path, fake_sys):
    knob = discover_knobs(fake_sys.host)["hugetlb.2MB"]
    with pytest.raises(HugebenchError, match=r"can give at most \d+"):
        knob.validate(100_000_000)
    assert knob.validate(16) == "16"
    text = "name: p\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\nsystem: {hugetlb.2MB: 100000000}\n"
    with pytest.raises(HugebenchError, match="hugetlb.2MB=100000000 would reserve"):
        _sweep(text, tmp_path, host=fake_sys.host)
    assert fake_sys.read("proc/sys/vm/nr_hugepages") == "0"


SWEEP_SCRIPT = """
from hugebench import experiment as spec
from hugebench.sweep import plan
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
s = spec.parse_spec('''
name: orphan
workload: hashlookup
timeout: 600
perf: {perf}
params: {{keys: 1000}}
''')
run_sweep(s, plan.plan(s), SweepOptions(out={out!r}, quiet=True, journal={journal!r}, python={python!r}))
"""


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _left_behind(tmp_path) -> list[str]:
    found = subprocess.run(
        ["pgrep", "-f", str(tmp_path)], capture_output=True, text=True
    ).stdout.split()
    return [p for p in found if int(p) != os.getpid()]


@pytest.mark.parametrize("perf", ["off", pytest.param("auto", marks=pytest.mark.needs_perf)])
def test_sigkill_of_the_sweep_process_group_leaves_no_process_behind(tmp_path, perf):
    sleepy = tmp_path / "python"
    sleepy.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/worker.pid\nexec sleep 120\n")
    sleepy.chmod(sleepy.stat().st_mode | stat.S_IEXEC)
    code = SWEEP_SCRIPT.format(
        perf=perf, out=str(tmp_path / "res"), journal=str(tmp_path / "j.json"), python=str(sleepy)
    )
    sweep = subprocess.Popen([sys.executable, "-c", code], cwd=tmp_path, start_new_session=True)
    pid_file = tmp_path / "worker.pid"
    deadline = time.monotonic() + 60
    while not pid_file.exists() or not pid_file.read_text().strip():
        assert sweep.poll() is None and time.monotonic() < deadline, (
            "the sweep never started its worker"
        )
        time.sleep(0.05)
    worker = int(pid_file.read_text())
    run_dirs = list(Path(os.environ.get("TMPDIR", "/tmp")).glob(f"hb-run-{sweep.pid}-*"))
    assert run_dirs, "the run's temporary directory is named after the sweep"
    os.killpg(
        sweep.pid, signal.SIGKILL
    )  # the user's `kill -9 -PGID`: nothing gets a chance to clean up
    sweep.wait(timeout=10)
    deadline = time.monotonic() + 10
    while _alive(worker) and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        assert not _alive(worker), "the worker outlived the sweep"
        # hb-exec ends the run's tree when its parent dies, then itself: give it the same bounded time
        while (left := _left_behind(tmp_path)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert left == [], "a process of the sweep outlived it"
    finally:
        if _alive(worker):
            os.kill(worker, signal.SIGKILL)
    assert set(run_dirs) <= set(
        remove_stale_run_dirs()
    )  # the next sweep clears what the dead one left
    assert not any(d.exists() for d in run_dirs)
