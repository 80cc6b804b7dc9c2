"""The crash journal: a sweep killed with -9 leaves it behind; it blocks the next sweep and
`hugebench system restore` (function and CLI) puts every knob back exactly."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import ROOT, TESTS

from hugebench.cli.system import system
from hugebench.errors import SystemStateError
from hugebench.system import check_no_stale_journal, default_journal_path, restore_from_journal

SOURCE_DIR = ROOT
TESTS_DIR = TESTS

CRASHING_SWEEP = """
import sys, time
sys.path[:0] = [{source!r}, {tests!r}]
from conftest import FakeKernel
from hugebench.system import SystemState
kernel = FakeKernel({root!r})
state = SystemState(kernel.host, {journal!r}).__enter__()
state.apply({{"thp.enabled": "always", "thp.defrag": "never", "thp.khugepaged.max_ptes_none": 17,
              "thp.mthp.2048kB": "never", "hugetlb.2MB": 3, "hugetlb.1GB": 1}})
print("applied", flush=True)
time.sleep(60)
"""


def crash_a_sweep(fake) -> int:
    """Run a sweep in a child that changes knobs on the fake tree, then kill it with SIGKILL."""
    code = CRASHING_SWEEP.format(
        source=str(SOURCE_DIR),
        tests=str(TESTS_DIR),
        root=str(fake.root),
        journal=str(fake.journal_path),
    )
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert child.stdout.readline().strip() == "applied"
    finally:
        child.send_signal(signal.SIGKILL)
        child.wait(timeout=10)
    return child.pid


@pytest.fixture
def crashed(fake_sys):
    before = fake_sys.files()
    pid = crash_a_sweep(fake_sys)
    after_crash = fake_sys.files()
    assert after_crash != before
    assert fake_sys.read("proc/sys/vm/nr_hugepages") == "3"
    return fake_sys, before, pid


def test_stale_journal_blocks_the_next_sweep(crashed):
    fake, _, pid = crashed
    with pytest.raises(SystemStateError) as info:
        check_no_stale_journal(fake.journal_path)
    message = str(info.value)
    assert f"a previous sweep (pid {pid}, started " in message
    assert "run `hugebench system restore` (as root)" in message


def test_restore_from_journal_puts_everything_back(crashed):
    fake, before, _ = crashed
    report = restore_from_journal(fake.journal_path, fake.host)
    assert fake.files() == before
    assert report["restored"]["thp.enabled"] == {"from": "always", "to": "madvise"}
    assert set(report["restored"]) == {
        "thp.enabled",
        "thp.defrag",
        "thp.khugepaged.max_ptes_none",
        "thp.mthp.2048kB",
        "hugetlb.2MB",
        "hugetlb.1GB",
    }
    check_no_stale_journal(fake.journal_path)  # the journal is gone
    assert restore_from_journal(fake.journal_path, fake.host)["found"] is False


def test_restore_cli_with_env_roots(crashed, monkeypatch):
    fake, before, pid = crashed
    monkeypatch.setenv("HUGEBENCH_SYS_ROOT", str(fake.sys_root))
    monkeypatch.setenv("HUGEBENCH_PROC_ROOT", str(fake.proc_root))
    result = CliRunner().invoke(system, ["restore"])
    assert result.exit_code == 0, result.output
    assert f"pid {pid}" in result.output
    assert "restored thp.enabled: always -> madvise" in result.output
    assert "restored hugetlb.2MB: 3 -> 0" in result.output
    assert fake.files() == before
    again = CliRunner().invoke(system, ["restore"])
    assert "nothing to restore" in again.output


def test_restore_cli_with_root_options(crashed):
    fake, before, _ = crashed
    args = [
        "--sys-root",
        str(fake.sys_root),
        "--proc-root",
        str(fake.proc_root),
        "--journal",
        str(fake.journal_path),
    ]
    result = CliRunner().invoke(system, [*args, "restore"])
    assert result.exit_code == 0, result.output
    assert fake.files() == before


def test_journal_of_a_running_sweep_is_refused_and_not_restored(fake_sys):
    from hugebench.system import SystemState

    with SystemState(fake_sys.host, fake_sys.journal_path) as state:
        state.apply({"thp.enabled": "never"})
        record = json.loads(fake_sys.journal_path.read_text())
        record["pid"] = os.getppid()  # pretend another live process owns it
        record["pid_start"] = None
        fake_sys.journal_path.write_text(json.dumps(record))
        with pytest.raises(SystemStateError, match="is running"):
            check_no_stale_journal(fake_sys.journal_path)
        with pytest.raises(SystemStateError, match="still running"):
            restore_from_journal(fake_sys.journal_path, fake_sys.host)
    assert fake_sys.read("sys/kernel/mm/transparent_hugepage/enabled") == "always [madvise] never"


def test_reused_pid_counts_as_dead(fake_sys):
    from hugebench.system.journal import JournalRecord

    record = JournalRecord.new("sweep", fake_sys.host, {})
    assert record.owner_alive()
    assert not JournalRecord(
        **{**record.__dict__, "pid_start": (record.pid_start or 0) + 1}
    ).owner_alive()


def test_corrupt_journal_is_an_error_naming_the_file(fake_sys):
    fake_sys.journal_path.write_text("{not json")
    with pytest.raises(SystemStateError, match=str(fake_sys.journal_path)):
        check_no_stale_journal(fake_sys.journal_path)


def test_default_journal_path(monkeypatch, tmp_path):
    monkeypatch.delenv("HUGEBENCH_JOURNAL", raising=False)
    assert default_journal_path(euid=0) == Path("/var/lib/hugebench/journal.json")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    assert default_journal_path(euid=1000) == tmp_path / ".cache/hugebench/journal.json"
    monkeypatch.setenv("HUGEBENCH_JOURNAL", "/x/j.json")
    assert default_journal_path(euid=0) == Path("/x/j.json")
