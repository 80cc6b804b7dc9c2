"""One sweep at a time per machine: two sweeps would flip each other's THP settings mid-run.

A sweep holds an exclusive ``flock`` on a host-wide lock file for as long as it runs; the file says who
holds it, so a second sweep is refused with the holder's pid, experiment and start time. The kernel drops
the lock when the holder dies, however it dies, so a lock is never stale.
"""

from __future__ import annotations

import fcntl
import json
import os
import tempfile
from datetime import datetime, timezone
from pathlib import Path

from hugebench.errors import SystemStateError

LOCK_NAME = "hugebench.lock"


def default_lock_path(sys_root: str | os.PathLike = "/sys") -> Path:
    """HUGEBENCH_LOCK, else /run/lock/hugebench.lock for the real kernel (the temp dir if that is not
    writable); for a fake /sys tree (tests), a lock beside it, so a fake sweep never blocks a real one."""
    if os.environ.get("HUGEBENCH_LOCK"):
        return Path(os.environ["HUGEBENCH_LOCK"])
    if Path(sys_root).resolve() != Path("/sys"):
        return Path(sys_root).resolve().parent / LOCK_NAME
    run_lock = Path("/run/lock")
    return run_lock / LOCK_NAME if os.access(run_lock, os.W_OK) else Path(tempfile.gettempdir()) / LOCK_NAME


class SweepLock:
    """``with SweepLock(path, "experiment tlb"):`` — raises SystemStateError naming the holder if taken."""

    def __init__(self, path: str | os.PathLike, what: str):
        self.path, self.what = Path(path), what
        self._fd: int | None = None

    def __enter__(self) -> SweepLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _describe(os.pread(fd, 4096, 0))
            os.close(fd)
            raise SystemStateError(
                f"another sweep is running on this machine ({holder}; lock {self.path}); two sweeps at once "
                f"would change each other's kernel settings mid-run. Wait for it to end, or stop it") from None
        me = {"pid": os.getpid(), "what": self.what, "started": datetime.now(timezone.utc).isoformat(timespec="seconds")}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(me).encode(), 0)
        self._fd = fd
        return self

    def __exit__(self, *exc) -> bool:
        if self._fd is not None:
            os.ftruncate(self._fd, 0)
            os.close(self._fd)  # closing drops the flock
            self._fd = None
        return False


def _describe(raw: bytes) -> str:
    try:
        holder = json.loads(raw)
        return f"pid {holder['pid']}, {holder['what']}, started {holder['started']}"
    except (ValueError, KeyError, TypeError):
        return "holder unknown"
