"""A real sweep killed with SIGKILL mid-run leaves a journal; the next sweep refuses to start; and
`hugebench system restore` puts every knob back exactly as it was before the sweep."""

from __future__ import annotations

import os
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

from hugebench.cli import main

TESTS_DIR = TESTS
THP = "/sys/kernel/mm/transparent_hugepage"

SWEEP = """
import sys
sys.path.insert(0, {tests!r})
from hugebench import experiment as spec
from hugebench.sweep import plan
from hugebench.kernel import Host
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
if {fake!r}:
    from conftest import FakeKernel
    Host.at = FakeKernel({root!r}).host_at()
s = spec.parse_spec('''
name: crash
workload: hashlookup
timeout: 600
perf: off
params: {{keys: 1000}}
axes: {{thp: [{mode}]}}
system: {{thp.defrag: {defrag}}}
''')
run_sweep(s, plan.plan(s), SweepOptions(out={out!r}, quiet=True, journal={journal!r},
                                        host=Host.at({sys_root!r}, {proc_root!r}), python={python!r}))
"""


def _sleeping_worker(tmp_path: Path) -> str:
    """A stand-in worker that records its pid and sleeps, so the sweep is caught mid-run."""
    path = tmp_path / "sleepy-python"
    path.write_text(f"#!/bin/sh\necho $$ > {tmp_path}/worker.pid\nexec sleep 120\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def _kill_sweep_mid_run(
    tmp_path, *, fake, root, sys_root, proc_root, mode, defrag, changed
) -> None:
    code = SWEEP.format(
        tests=str(TESTS_DIR),
        fake=fake,
        root=str(root),
        mode=mode,
        defrag=defrag,
        out=str(tmp_path / "res"),
        journal=str(tmp_path / "journal.json"),
        sys_root=sys_root,
        proc_root=proc_root,
        python=_sleeping_worker(tmp_path),
    )
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], cwd=tmp_path
    )  # the installed package
    try:
        deadline = time.monotonic() + 60
        while not ((tmp_path / "worker.pid").exists() and changed()):
            assert child.poll() is None, "the sweep ended before it could be killed"
            assert time.monotonic() < deadline, "the sweep never reached its first run"
            time.sleep(0.05)
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
        pid_file = tmp_path / "worker.pid"
        if pid_file.exists():
            try:
                os.kill(int(pid_file.read_text()), signal.SIGKILL)
            except ProcessLookupError:
                pass


def _restore_cli(tmp_path, sys_root, proc_root):
    env = {
        "HUGEBENCH_JOURNAL": str(tmp_path / "journal.json"),
        "HUGEBENCH_SYS_ROOT": sys_root,
        "HUGEBENCH_PROC_ROOT": proc_root,
    }
    return CliRunner().invoke(main, ["system", "restore"], env=env)


def test_killed_sweep_then_restore_on_fake_tree(fake_sys, tmp_path):
    before = fake_sys.files()
    sys_root, proc_root = str(fake_sys.sys_root), str(fake_sys.proc_root)
    _kill_sweep_mid_run(
        tmp_path,
        fake=True,
        root=fake_sys.root,
        sys_root=sys_root,
        proc_root=proc_root,
        mode="always",
        defrag="never",
        changed=lambda: "[always]" in fake_sys.read("sys/kernel/mm/transparent_hugepage/enabled"),
    )
    assert fake_sys.files() != before
    tiny = tmp_path / "tiny.yaml"
    tiny.write_text("name: tiny\nworkload: hashlookup\nparams: {keys: 100}\n")
    refused = CliRunner().invoke(
        main,
        ["sweep", str(tiny), "-o", str(tmp_path / "other")],
        env={"HUGEBENCH_JOURNAL": str(tmp_path / "journal.json")},
    )
    assert refused.exit_code != 0 and "hugebench system restore" in refused.output
    result = _restore_cli(tmp_path, sys_root, proc_root)
    assert result.exit_code == 0, result.output
    assert fake_sys.files() == before
    assert not (tmp_path / "journal.json").exists()


def _real(name: str) -> str:
    return Path(THP, name).read_text().strip()


@pytest.mark.needs_root
@pytest.mark.needs_thp
def test_killed_sweep_then_restore_on_this_kernel(tmp_path):
    before = {name: _real(name) for name in ("enabled", "defrag")}
    current = before["enabled"].split("[")[1].split("]")[0]
    mode = "never" if current != "never" else "always"
    defrag_now = before["defrag"].split("[")[1].split("]")[0]
    defrag = "defer" if defrag_now != "defer" else "never"
    try:
        _kill_sweep_mid_run(
            tmp_path,
            fake=False,
            root="",
            sys_root="/sys",
            proc_root="/proc",
            mode=mode,
            defrag=defrag,
            changed=lambda: f"[{mode}]" in _real("enabled") and f"[{defrag}]" in _real("defrag"),
        )
        result = _restore_cli(tmp_path, "/sys", "/proc")
        assert result.exit_code == 0, result.output
        assert {name: _real(name) for name in ("enabled", "defrag")} == before
    finally:
        if (
            tmp_path / "journal.json"
        ).exists():  # the test failed half-way: never leave the machine changed
            from hugebench.system import restore_from_journal

            restore_from_journal(tmp_path / "journal.json", force=True)
        for name, text in before.items():
            if _real(name) != text:
                word = text.split("[")[1].split("]")[0]
                Path(THP, name).write_text(word)
