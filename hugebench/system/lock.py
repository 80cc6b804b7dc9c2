"""One sweep at a time per machine, whoever runs it: two sweeps would flip each other's THP settings mid-run.

A sweep holds an exclusive ``flock`` on the host's lock file for as long as it runs; the file says who holds
it, so a second sweep is refused with the holder's pid, experiment and start time. The kernel drops the lock
when the holder dies, however it dies, so a lock is never stale.

Every sweep takes the lock, also one that changes no kernel knob: its rows are measured under the THP mode it
found, and a sweep that flips that mode mid-run (or merely competes for the CPUs) would falsify them.

The lock works across users. The host's lock files are ``/run/lock/hugebench.lock`` and
``/tmp/hugebench.lock``: a sweep locks each one, creating it where it may, so two sweeps always meet on
``/tmp``'s (any user may create it there) and on ``/run/lock``'s when it exists (the only one older
versions of hugebench lock). A file is created mode 0666 whatever the umask; one that is not
writable (made 0644 by an older version) is still locked, through a read-only descriptor — ``flock`` needs
no write access. ``HUGEBENCH_LOCK`` replaces both with the one file it names (then sweeps using other files
do not see each other). A symlink or a non-regular file is refused: ``/tmp`` is shared.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import stat
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Literal

from hugebench._util import printable
from hugebench.errors import SystemStateError
from hugebench.kernel.host import LOCAL, Host

LOCK_NAME = "hugebench.lock"
HOST_LOCK_DIRS = ("/run/lock", "/tmp")
LOCK_MODE = 0o666


def _fix(path) -> str:
    return (
        f"root can make the lock usable by every user (`sudo chmod 666 {path}`, or `sudo rm {path}`: the next "
        f"sweep creates it so), or set HUGEBENCH_LOCK to a file you may write (sweeps using another lock file "
        f"do not see yours)"
    )


def default_lock_paths(host: Host = LOCAL) -> tuple[Path, ...]:
    """The lock files a sweep takes: HUGEBENCH_LOCK alone when set; for a fake /sys tree (tests), a lock
    beside it, so a fake sweep never blocks a real one; else the host's lock files (see the module header)."""
    if os.environ.get("HUGEBENCH_LOCK"):
        return (Path(os.environ["HUGEBENCH_LOCK"]),)
    if host.sys.resolve() != Path("/sys"):
        return (host.sys.resolve().parent / LOCK_NAME,)
    return tuple(Path(d) / LOCK_NAME for d in HOST_LOCK_DIRS if Path(d).is_dir()) or (
        Path("/tmp") / LOCK_NAME,
    )


def default_lock_path(host: Host = LOCAL) -> Path:
    """The first of :func:`default_lock_paths`."""
    return default_lock_paths(host)[0]


def _paths(path) -> tuple[Path, ...]:
    if isinstance(path, (str, os.PathLike)):
        return (Path(path),)
    return tuple(Path(p) for p in path)


class SweepLock:
    """``with SweepLock(path_or_paths, "experiment tlb"):`` — raises SystemStateError naming the holder if
    taken, or saying how to fix it if no lock file can be opened by this user."""

    def __init__(self, path: str | os.PathLike | Sequence[str | os.PathLike], what: str):
        self.paths = _paths(path)
        self.path, self.what = self.paths[0], what
        self._fds: list[tuple[int, bool]] = []  # (fd, holder info written into it)
        self.notes: list[
            str
        ] = []  # what a user may want to know (a lock taken read-only, a file skipped)

    def __enter__(self) -> SweepLock:
        try:
            for path in self.paths:
                opened = _open(path, self.notes)
                if opened is not None:
                    self._take(opened, path)
        except BaseException:
            self._release()
            raise
        if not self._fds:
            self._release()
            raise SystemStateError(
                f"cannot take the host's sweep lock as uid {os.geteuid()}: "
                f"{'; '.join(self.notes)}. Fix: {_fix(self.path)}"
            )
        me = {
            "pid": os.getpid(),
            "what": self.what,
            "started": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        for fd, writable in self._fds:
            if writable:
                os.ftruncate(fd, 0)
                os.pwrite(fd, json.dumps(me).encode(), 0)
        return self

    def _take(self, fd: tuple[int, bool], path: Path) -> None:
        try:
            fcntl.flock(fd[0], fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(fd[0])
            os.close(fd[0])
            raise SystemStateError(
                f"another sweep is running on this machine ({holder}; lock {path}); two sweeps at once "
                f"would change each other's kernel settings mid-run. Wait for it to end, or stop it"
            ) from None
        self._fds.append(fd)

    def __exit__(self, *exc) -> Literal[False]:
        for fd, writable in self._fds:
            if writable:
                os.ftruncate(fd, 0)
        self._release()
        return False

    def _release(self) -> None:
        for fd, _ in self._fds:
            os.close(fd)  # closing drops the flock
        self._fds = []


_OPEN_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _open(path: Path, notes: list[str], create: bool = True) -> tuple[int, bool] | None:
    """(fd, writable) of the lock file ``path``: opened read-write, else read-only (enough for flock);
    created 0666 when missing; None (with a note) when missing and this user may not create it."""
    for flags, writable in ((os.O_RDWR, True), (os.O_RDONLY, False)):
        try:
            fd = os.open(path, flags | _OPEN_FLAGS)
        except FileNotFoundError:
            return _create(path, notes) if create else None
        except PermissionError:
            continue
        except OSError as exc:
            raise _bad_file(path, exc) from None
        _check_regular(fd, path)
        if not writable:
            notes.append(
                f"{path} is not writable by uid {os.geteuid()}, locked read-only "
                f"(root: `chmod 666 {path}`)"
            )
        return fd, writable and _heal_mode(fd)
    raise SystemStateError(
        f"cannot open the sweep lock {path} as uid {os.geteuid()} (not even for reading). "
        f"Fix: {_fix(path)}"
    )


def _create(path: Path, notes: list[str]) -> tuple[int, bool] | None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | _OPEN_FLAGS, LOCK_MODE)
    except FileExistsError:  # another sweep created it just now
        return _open(path, notes, create=False)
    except PermissionError:
        notes.append(f"{path} does not exist and uid {os.geteuid()} may not create it")
        return None
    except OSError as exc:
        raise _bad_file(path, exc) from None
    os.fchmod(fd, LOCK_MODE)  # the umask took bits off: every user must be able to lock it
    return fd, True


def _heal_mode(fd: int) -> bool:
    """Make a lock file of ours (or, as root, anyone's) writable by all, as a new one would be; True: the
    holder info may be written into it (a regular file with one link, so it is nothing else's content)."""
    info = os.fstat(fd)
    if info.st_nlink != 1:
        return False
    if stat.S_IMODE(info.st_mode) & LOCK_MODE != LOCK_MODE and os.geteuid() in (0, info.st_uid):
        os.fchmod(fd, stat.S_IMODE(info.st_mode) | LOCK_MODE)
    return True


def _check_regular(fd: int, path: Path) -> None:
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise SystemStateError(
            f"the sweep lock {path} is not a regular file; remove it (`sudo rm {path}`) "
            f"or set HUGEBENCH_LOCK to another file"
        )


def _bad_file(path: Path, exc: OSError) -> SystemStateError:
    if exc.errno == errno.ELOOP:
        return SystemStateError(
            f"the sweep lock {path} is a symbolic link, which a lock in a shared directory "
            f"must never follow; remove it (`sudo rm {path}`) or set HUGEBENCH_LOCK"
        )
    return SystemStateError(
        f"cannot open the sweep lock {path}: {exc.strerror or exc}. Fix: {_fix(path)}"
    )


def _describe(fd: int) -> str:
    """Who holds the lock, for a refused sweep's message. The file is writable by every user, so nothing of
    it is printed raw: the pid is the one /proc/locks names (else the file's, if it is a plain number), and
    only the ``what`` and ``started`` strings are shown, escaped and cut short (:func:`printable`)."""
    pid = _flock_holder(fd)
    try:
        holder = json.loads(os.pread(fd, 4096, 0))
    except (ValueError, OSError, RecursionError):
        holder = None
    holder = holder if isinstance(holder, dict) else {}
    claimed = holder.get("pid")
    if pid is None and type(claimed) is int and 0 < claimed < 1 << 22:
        pid = claimed
    parts = [f"pid {pid}" if pid else "holder unknown"]
    if isinstance(holder.get("what"), str):
        parts.append(printable(holder["what"], 100))
    if isinstance(holder.get("started"), str):
        parts.append(f"started {printable(holder['started'], 32)}")
    return ", ".join(parts)


def _flock_holder(fd: int) -> int | None:
    """The pid /proc/locks names for the flock on this file (its holder could not write its name into it)."""
    info = os.fstat(fd)
    inode = f"{os.major(info.st_dev):02x}:{os.minor(info.st_dev):02x}:{info.st_ino}"
    try:
        lines = Path("/proc/locks").read_text().splitlines()
    except OSError:
        return None
    for line in lines:
        fields = line.split()
        if len(fields) > 5 and fields[1] == "FLOCK" and fields[5] == inode and fields[4].isdigit():
            return int(fields[4])
    return None


def lock_status(paths: Sequence[str | os.PathLike]) -> tuple[bool, str]:
    """For ``hugebench doctor``: can this user take the sweep lock, and where is it (nothing is locked).
    (ok, detail): ok when a sweep of this user would hold at least one of the lock files."""
    parts, have = [], False
    for path in _paths(paths):
        try:
            info = path.lstat()
        except FileNotFoundError:
            creatable = _may_create(path)
            have |= creatable
            parts.append(
                f"{path}: created mode 0666 by the next sweep"
                if creatable
                else f"{path}: absent, and uid {os.geteuid()} may not create it"
            )
            continue
        except OSError as exc:
            parts.append(f"{path}: {exc.strerror}")
            continue
        if not stat.S_ISREG(info.st_mode):
            parts.append(f"{path}: not a regular file (a sweep refuses it)")
            continue
        readable = os.access(path, os.R_OK)
        how = (
            "writable"
            if os.access(path, os.W_OK)
            else "taken read-only"
            if readable
            else "not readable"
        )
        pid = _held_by(path)
        parts.append(
            f"{path}: mode {stat.S_IMODE(info.st_mode):04o}, {how}"
            + (f", held now by pid {pid}" if pid else "")
        )
        have |= readable
    return have, "; ".join(parts)


def _may_create(path: Path) -> bool:
    parent = path.parent
    while not parent.exists() and parent != parent.parent:
        parent = parent.parent
    return os.access(parent, os.W_OK | os.X_OK)


def _held_by(path: Path) -> int | None:
    try:
        fd = os.open(path, os.O_RDONLY | _OPEN_FLAGS)
    except OSError:
        return None
    try:
        return _flock_holder(fd)
    finally:
        os.close(fd)
