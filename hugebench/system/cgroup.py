"""A cgroup v2 per run: created under ``<v2 mount>/hugebench/``, joined by the run's first process between
fork and exec (so every descendant is in it from its first instruction), ended with ``cgroup.kill`` and
removed; its memory accounting (``memory.peak``, ``memory.events`` oom_kill, ``memory.stat`` anon_thp) is read
where the hierarchy has the memory controller.

What belongs here: the cgroup files themselves. What does not: which processes a run has when there is no
cgroup, and the clean-up of dead sweeps (``hugebench.system.containment``).
"""

from __future__ import annotations

import errno
import os
import signal
import time
from dataclasses import dataclass
from pathlib import Path

from hugebench import kernel
from hugebench.errors import UnsafePathError
from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.parse import parse_int
from hugebench.safefs import SafeDir

PARENT = "hugebench"  # every run's cgroup is a child of <mount>/hugebench
EMPTY_TIMEOUT_S = 5.0


@dataclass(frozen=True)
class Cgroup:
    """One run's cgroup directory."""

    path: Path

    def join(self, pid: int) -> None:
        """Move ``pid`` into the cgroup (the launched child calls this on itself before exec)."""
        fd = os.open(self.path / "cgroup.procs", os.O_WRONLY)
        try:
            os.write(fd, str(pid).encode())
        finally:
            os.close(fd)

    def procs(self) -> list[int]:
        """The processes in the cgroup and in every cgroup below it."""
        pids: list[int] = []
        for directory, _, _ in os.walk(self.path):
            text = kernel.read_optional(Path(directory) / "cgroup.procs") or ""
            pids.extend(int(p) for p in text.split() if p.isdigit())
        return pids

    def populated(self) -> bool:
        text = kernel.read_optional(self.path / "cgroup.events") or ""
        return "populated 1" in text

    def kill(self) -> None:
        """SIGKILL every process in the cgroup and below, forks racing with it included (``cgroup.kill``,
        Linux >= 5.14); on an older kernel, each process listed until none is left."""
        try:  # the directory and its file opened without following a link: only a cgroup is written
            with SafeDir.open(self.path) as directory:
                fd = os.open(
                    "cgroup.kill", os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=directory.fd
                )
            try:
                os.write(fd, b"1")
                return
            finally:
                os.close(fd)
        except (OSError, UnsafePathError):
            pass
        for _ in range(100):
            pids = self.procs()
            if not pids:
                return
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass
            time.sleep(0.01)

    def wait_empty(self, timeout: float = EMPTY_TIMEOUT_S) -> bool:
        deadline = time.monotonic() + timeout
        while self.populated() or self.procs():
            if time.monotonic() > deadline:
                return False
            time.sleep(0.01)
        return True

    def remove(self) -> bool:
        """End what is left and remove the directory (children first). True when it is gone."""
        if not self.path.exists():
            return True
        self.kill()
        self.wait_empty()
        for directory, _, _ in sorted(os.walk(self.path), key=lambda entry: -len(entry[0])):
            for _ in range(50):
                try:
                    os.rmdir(directory)
                    break
                except FileNotFoundError:
                    break
                except OSError as exc:
                    if exc.errno != errno.EBUSY:
                        return False
                    time.sleep(0.02)
        return not self.path.exists()

    # -- memory accounting -----------------------------------------------------------------------

    def has_memory(self) -> bool:
        return (self.path / "memory.events").exists()

    def memory_peak(self) -> int | None:
        return parse_int(kernel.read_optional(self.path / "memory.peak"))

    def oom_kills(self) -> int | None:
        return keyed(self.path / "memory.events").get("oom_kill")

    def anon_thp(self) -> int | None:
        return keyed(self.path / "memory.stat").get("anon_thp")


def keyed(path: Path) -> dict[str, int]:
    """A flat-keyed cgroup file ('name value' per line)."""
    out = {}
    for line in (kernel.read_optional(path) or "").splitlines():
        name, _, value = line.partition(" ")
        if value.strip().isdigit():
            out[name] = int(value)
    return out


def hierarchy(host: Host = LOCAL) -> tuple[Path | None, str | None]:
    """The cgroup v2 mount point, or None and why there is none."""
    mounts = kernel.cgroup_mounts(host)
    if mounts["v2"] is None:
        return None, f"no cgroup v2 hierarchy is mounted ({Path(host.proc, 'self', 'mountinfo')})"
    return Path(mounts["v2"]), None


def create(name: str, host: Host = LOCAL) -> tuple[Cgroup | None, str | None]:
    """``<v2 mount>/hugebench/<name>``, ready to be joined; or None and why it cannot be had here."""
    mount, why = hierarchy(host)
    if mount is None:
        return None, why
    parent = mount / PARENT
    try:
        parent.mkdir(exist_ok=True)
        _enable_memory(parent)
        path = parent / name
        path.mkdir()
    except OSError as exc:
        return None, (
            f"cannot create a cgroup under {parent} ({exc.strerror}): it needs root or a delegated "
            "cgroup v2 subtree"
        )
    if not os.access(path / "cgroup.procs", os.W_OK):
        os.rmdir(path)
        return None, f"{path / 'cgroup.procs'} is not writable"
    return Cgroup(path), None


def _enable_memory(parent: Path) -> None:
    """Memory accounting for the runs' cgroups, where the hierarchy offers the controller to ours (we never
    change a cgroup that is not ours)."""
    offered = (kernel.read_optional(parent / "cgroup.controllers") or "").split()
    enabled = (kernel.read_optional(parent / "cgroup.subtree_control") or "").split()
    if "memory" in offered and "memory" not in enabled:
        try:
            (parent / "cgroup.subtree_control").write_text("+memory")
        except OSError:
            pass  # then the runs have no memory accounting, which their rows say


def no_memory_reason(cgroup: Cgroup, host: Host = LOCAL) -> str:
    mounts = kernel.cgroup_mounts(host)
    where = f"the cgroup v2 hierarchy at {mounts['v2']} has no memory controller"
    if "memory" in mounts["v1"]:
        return f"{where} (memory is a cgroup v1 controller here, at {mounts['v1']['memory']})"
    return where


def run_cgroup(name: str, host: Host = LOCAL) -> Cgroup | None:
    """The run cgroup ``<v2 mount>/hugebench/<name>`` when it exists as a directory of that hierarchy (a
    plain name, no link on the way): the only cgroup a run record may make us end."""
    mount, _ = hierarchy(host)
    if mount is None or not name or "/" in name or name in (".", ".."):
        return None
    try:
        with SafeDir.open(mount / PARENT) as parent:
            parent.subdir(name).close()
    except (OSError, UnsafePathError):
        return None
    return Cgroup(mount / PARENT / name)


def run_cgroups(host: Host = LOCAL) -> list[Cgroup]:
    """Every run cgroup that exists now (live sweeps' and dead ones') that we may end."""
    mount, _ = hierarchy(host)
    parent = mount / PARENT if mount else None
    if parent is None or not parent.is_dir():
        return []
    return [
        Cgroup(p)
        for p in sorted(parent.iterdir())
        if p.is_dir() and os.access(p / "cgroup.procs", os.W_OK)
    ]
