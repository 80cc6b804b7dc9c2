"""The host's sweep lock across users: a lock root left behind, one nobody may create, /run/lock for root
alone, planted symlinks and FIFOs, a holder that wrote nothing.

Run for real as a user without root (the ``unprivileged`` fixture drops privileges in a child when the tests
run as root), on stand-in directories for /run/lock and /tmp, so no sweep of another session is disturbed.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from hugebench.errors import SystemStateError
from hugebench.system import SweepLock, lock_status
from hugebench.system import lock as lock_mod

TAKE_LOCK = """
import sys
from hugebench.errors import HugebenchError
from hugebench.system import SweepLock
try:
    with SweepLock({paths!r}, "experiment 'user'") as held:
        print("held", *held.notes, sep="\\n")
        sys.stdout.flush()
        sys.stdin.read()  # hold it until the test closes stdin
except HugebenchError as exc:
    print("refused:", exc)
"""


def _take_as_user(unprivileged, paths, env=None):
    return unprivileged.python_code(TAKE_LOCK.format(paths=[str(p) for p in paths]), env=env)


def _shared_dir(path: Path, mode: int) -> Path:
    path.mkdir()
    path.chmod(mode)
    return path


def _legacy_root_lock(path: Path) -> Path:
    """A lock file as root's sweeps made it before: 0644 under the usual umask."""
    old = os.umask(0o022)
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT, 0o666))
    finally:
        os.umask(old)
    return path


@pytest.mark.needs_root
def test_a_lock_root_left_0644_is_taken_by_another_user(unprivileged):
    # Before: os.open(O_RDWR) of root's 0644 lock raised a raw PermissionError for every other user.
    shared = _shared_dir(unprivileged.home.parent / "run-lock", 0o1777)
    lock = _legacy_root_lock(shared / "hugebench.lock")
    ran = _take_as_user(unprivileged, [lock])
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stdout.startswith("held") and "locked read-only" in ran.stdout, ran.stdout
    with SweepLock(
        lock, "experiment 'root'"
    ):  # and while root holds it, the user is refused by name
        refused = _take_as_user(unprivileged, [lock])
    assert (
        f"refused: another sweep is running on this machine (pid {os.getpid()}, experiment 'root'"
        in refused.stdout
    )
    shutil.rmtree(shared)


@pytest.mark.needs_root
def test_root_creates_and_heals_the_lock_for_every_user(tmp_path):
    old = os.umask(0o022)
    try:
        with SweepLock(tmp_path / "new.lock", "x"):
            pass
        legacy = _legacy_root_lock(tmp_path / "legacy.lock")
        with SweepLock(legacy, "x"):
            pass
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.lock").stat().st_mode) == 0o666
    assert stat.S_IMODE(legacy.stat().st_mode) == 0o666


def test_a_lock_nobody_may_create_is_a_clean_error_with_the_fix(unprivileged):
    closed = (
        unprivileged.home.parent / "closed"
    )  # a directory the user may not write (root's, or read-only)
    closed.mkdir(exist_ok=True)
    closed.chmod(0o555)
    ran = _take_as_user(unprivileged, [closed / "hugebench.lock"])
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    assert (
        "refused: cannot take the host's sweep lock" in ran.stdout
        and "HUGEBENCH_LOCK" in ran.stdout
    ), ran.stdout
    (unprivileged.home / "exp.yaml").write_text(
        "name: t\nworkload: hashlookup\nparams: {keys: 100}\n"
    )
    swept = unprivileged.hugebench(
        "sweep", "exp.yaml", env={"HUGEBENCH_LOCK": str(closed / "hugebench.lock")}
    )
    assert swept.returncode != 0 and "Traceback" not in swept.stderr, swept.stderr
    assert (
        "cannot take the host's sweep lock" in swept.stderr
        and not (unprivileged.home / "results").exists()
    )
    closed.chmod(0o755)
    closed.rmdir()


@pytest.mark.needs_root
def test_a_user_and_root_meet_on_the_host_lock_where_run_lock_is_roots_alone(unprivileged):
    # /run/lock writable by root only (Fedora's): the user's sweep creates the /tmp stand-in and holds it;
    # root's sweep creates its own lock there and must still be refused, by the one they share.
    base = unprivileged.home.parent
    run_lock, tmp = _shared_dir(base / "run", 0o755), _shared_dir(base / "tmp", 0o1777)
    paths = [run_lock / "hugebench.lock", tmp / "hugebench.lock"]
    user = subprocess.Popen(
        [unprivileged.python, "-c", TAKE_LOCK.format(paths=[str(p) for p in paths])],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=unprivileged.home,
        env={"HOME": str(unprivileged.home), "PATH": "/usr/bin:/bin"},
        **(
            {"user": unprivileged.uid, "group": unprivileged.gid, "extra_groups": []}
            if unprivileged.dropping
            else {}
        ),
    )
    try:
        assert user.stdout.readline().strip() == "held"
        assert not paths[0].exists() and stat.S_IMODE(paths[1].stat().st_mode) == 0o666
        with pytest.raises(
            SystemStateError, match=rf"another sweep is running .*pid {user.pid}.*{paths[1]}"
        ):
            with SweepLock(paths, "experiment 'root'"):
                pass
        assert paths[0].exists()  # root created its own on the way, 0666 for the next user
        assert stat.S_IMODE(paths[0].stat().st_mode) == 0o666
    finally:
        user.stdin.close()
        user.wait(timeout=30)
    with SweepLock(paths, "experiment 'root'"):  # the user's sweep ended: both are free
        ran = _take_as_user(unprivileged, paths)
    assert "refused: another sweep is running" in ran.stdout and str(paths[0]) in ran.stdout
    shutil.rmtree(run_lock)
    shutil.rmtree(tmp)


def test_the_host_lock_files_and_what_doctor_says_of_them(tmp_path, monkeypatch):
    monkeypatch.delenv("HUGEBENCH_LOCK")
    assert lock_mod.default_lock_paths() == tuple(
        Path(d, "hugebench.lock") for d in lock_mod.HOST_LOCK_DIRS
    )
    monkeypatch.setattr(lock_mod, "HOST_LOCK_DIRS", (str(tmp_path / "a"), str(tmp_path / "b")))
    (tmp_path / "b").mkdir()
    assert lock_mod.default_lock_paths() == (
        tmp_path / "b/hugebench.lock",
    )  # a directory that is missing
    ok, detail = lock_status([tmp_path / "b/hugebench.lock"])
    assert ok and detail == f"{tmp_path}/b/hugebench.lock: created mode 0666 by the next sweep"
    with SweepLock([tmp_path / "b/hugebench.lock"], "x"):
        ok, detail = lock_status([tmp_path / "b/hugebench.lock"])
    assert ok and f"mode 0666, writable, held now by pid {os.getpid()}" in detail


def test_a_symlink_or_fifo_planted_as_the_lock_is_refused(tmp_path):
    victim = tmp_path / "precious"
    victim.write_text("data")
    (tmp_path / "link.lock").symlink_to(victim)
    with pytest.raises(SystemStateError, match="symbolic link"):
        with SweepLock(tmp_path / "link.lock", "x"):
            pass
    assert victim.read_text() == "data"  # never truncated through the link
    os.mkfifo(tmp_path / "fifo.lock")
    with pytest.raises(SystemStateError, match="not a regular file"):  # and no hang opening it
        with SweepLock(tmp_path / "fifo.lock", "x"):
            pass


def test_a_holder_that_wrote_nothing_is_named_from_proc_locks(tmp_path):
    import fcntl

    path = tmp_path / "quiet.lock"
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(SystemStateError, match=rf"\(pid {os.getpid()}; lock {path}\)"):
            with SweepLock(path, "x"):
                pass
    finally:
        os.close(fd)
