"""A journal and its run records are root's state (issue 53): another user (``nobody``) who plants a journal,
a run record or a tree of links where root's sweep or ``system restore`` looks gets a clear refusal, and
nothing is killed, no victim file written, no knob touched."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import FakeKernel, refused_once

from hugebench import kernel
from hugebench.cli import main

THP_ENABLED = "kernel/mm/transparent_hugepage/enabled"

pytestmark = pytest.mark.needs_root  # nobody plants; root is the one it attacks


@pytest.fixture
def sticky(unprivileged):
    """A world-writable sticky directory (as /tmp is) that nobody can reach."""
    if not unprivileged.dropping:
        pytest.skip("needs root, to plant files as another user")
    path = unprivileged.home.parent / f"{unprivileged.home.name}-sticky"
    path.mkdir()
    path.chmod(0o1777)
    yield path
    shutil.rmtree(path, ignore_errors=True)


@pytest.fixture
def victim(tmp_path):
    """A root process and a root file that a forged record aims at."""
    process = subprocess.Popen(["sleep", "300"], start_new_session=True)
    path = tmp_path / "victim"
    path.write_text("precious\n")
    yield process, path
    process.kill()
    process.wait()


def _plant_record(unprivileged, sticky: Path, victim_pid: int, victim_file: Path) -> None:
    """As nobody: STICKY/j-runs/ with a record naming root's process, and a 'cgroup' directory whose
    cgroup.kill is a link to root's file."""
    owner = subprocess.Popen(["true"])
    owner.wait()  # a dead sweep: its pid is gone
    name = f"{owner.pid}-1-forged"
    record = {
        "format": 1,
        "name": name,
        "token": f"{name}-x",
        "owner_pid": owner.pid,
        "owner_start": 1,
        "cgroup": str(sticky / "evil"),
        "pids": {str(victim_pid): kernel.process_start_ticks(victim_pid)},
    }
    code = textwrap.dedent(f"""\
        import json, os
        os.makedirs({str(sticky / "j-runs")!r})
        os.makedirs({str(sticky / "evil")!r})
        os.symlink({str(victim_file)!r}, {str(sticky / "evil/cgroup.kill")!r})
        with open({str(sticky / f"j-runs/{name}.json")!r}, "w") as f:
            json.dump({record!r}, f)
    """)
    done = unprivileged.python_code(code)
    assert done.returncode == 0, done.stderr
    assert (sticky / "j-runs").stat().st_uid == unprivileged.uid


@pytest.mark.parametrize("command", ["sweep", "system restore"])
def test_a_record_planted_in_a_sticky_directory_kills_nothing(
    command, sticky, victim, unprivileged, tmp_path
):
    process, victim_file = victim
    _plant_record(unprivileged, sticky, process.pid, victim_file)
    journal = str(sticky / "j.json")
    if command == "sweep":
        spec = tmp_path / "ok.yaml"
        spec.write_text(
            f"name: ok\nworkload: command\nperf: off\nparams: {{argv: [{sys.executable}, -c, '1']}}\n"
        )
        args = ["sweep", str(spec), "-o", str(tmp_path / "res"), "--journal", journal]
    else:
        args = ["system", "--journal", journal, "restore"]
    result = CliRunner().invoke(main, args)
    refused_once(result, str(sticky), "writable by others", "--journal")
    assert process.poll() is None, "root's process was killed on a forged record"
    assert victim_file.read_text() == "precious\n"
    assert not (tmp_path / "res").exists()


def test_a_journal_planted_in_a_sticky_directory_isrefused_once(sticky, unprivileged):
    journal = sticky / "j.json"
    done = unprivileged.python_code(
        f"open({str(journal)!r}, 'w').write('{{}}')"  # its content does not matter: its place does
    )
    assert done.returncode == 0, done.stderr
    result = CliRunner().invoke(main, ["system", "--journal", str(journal), "restore"])
    refused_once(result, str(sticky), "writable by others")


def _nobodys_tree(unprivileged, victim_file: Path) -> FakeKernel:
    """A /sys + /proc tree nobody owns whose THP mode file is a link to root's file."""
    tree = FakeKernel(unprivileged.home / "tree").build()
    enabled = tree.sys_root / THP_ENABLED
    victim_file.write_text(enabled.read_text())
    enabled.unlink()
    enabled.symlink_to(victim_file)
    for path in [tree.root, *tree.root.rglob("*")]:
        os.chown(path, unprivileged.uid, unprivileged.gid, follow_symlinks=False)
    return tree


def test_a_journal_naming_another_sys_root_is_refused_and_the_victim_untouched(
    tmp_path, victim, unprivileged
):
    if not unprivileged.dropping:
        pytest.skip("needs root, to plant files as another user")
    _, victim_file = victim
    tree = _nobodys_tree(unprivileged, victim_file)
    before = victim_file.read_text()
    journal = tmp_path / "j.json"  # root's own place: only what the journal names is forged
    journal.write_text(
        json.dumps(
            {
                "format": 1,
                "pid": 1,
                "pid_start": 1,  # pid 1 started at 1 tick: not a live sweep
                "started": "2026-01-01T00:00:00+00:00",
                "purpose": "set",
                "sys_root": str(tree.sys_root),
                "proc_root": str(tree.proc_root),
                "saved": {"thp.enabled": "never"},
                "touched": ["thp.enabled"],
            }
        )
    )
    result = CliRunner().invoke(main, ["system", "--journal", str(journal), "restore"])
    refused_once(
        result, str(journal), str(tree.sys_root), "a journal never chooses where root writes"
    )
    assert victim_file.read_text() == before and journal.exists()
    # root naming that tree itself: its knob file leads elsewhere through a link, and is refused
    roots = ["--sys-root", str(tree.sys_root), "--proc-root", str(tree.proc_root)]
    result = CliRunner().invoke(main, ["system", *roots, "--journal", str(journal), "restore"])
    refused_once(result, "thp.enabled", "through a link")
    assert victim_file.read_text() == before


def test_a_journal_or_record_another_user_owns_in_roots_directory_isrefused_once(
    tmp_path, victim, unprivileged
):
    if not unprivileged.dropping:
        pytest.skip("needs root, to plant files as another user")
    process, _ = victim
    journal = tmp_path / "j.json"
    journal.write_text("{}")
    os.chown(journal, unprivileged.uid, unprivileged.gid)
    result = CliRunner().invoke(main, ["system", "--journal", str(journal), "restore"])
    refused_once(result, str(journal), f"owned by uid {unprivileged.uid}")
    journal.unlink()
    runs = tmp_path / "j-runs"
    runs.mkdir()
    os.chown(runs, unprivileged.uid, unprivileged.gid)
    result = CliRunner().invoke(main, ["system", "--journal", str(journal), "restore"])
    refused_once(result, str(runs), f"owned by uid {unprivileged.uid}")
    assert process.poll() is None
