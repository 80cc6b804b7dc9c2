"""A run's memory limit: the cgroup that caps the memory of every process of a run, and what it counted.

Where the run's cgroup v2 (``hugebench.system.cgroup``) has the memory controller, the limit is its
``memory.max`` (and ``memory.swap.max`` 0 where swap is accounted, so the limit is on memory, not on memory
plus swap). Where memory is a cgroup v1 controller (a hybrid machine: v2 mounted beside v1 controllers), it
is a v1 memory cgroup of the run's own, created under the cgroup this process is in (so the run stays inside
whatever limits the machine puts on us) with ``memory.limit_in_bytes`` (and ``memory.memsw.limit_in_bytes``
equal to it where swap is accounted). The run's first process joins it between fork and exec, as it joins
the v2 cgroup.

What belongs here: the limit's files (set, join, read, remove). What does not: containment and the end of
a run's processes (``hugebench.system.containment``), the row's verdict (``hugebench.run.rows``).
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from hugebench import kernel
from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.parse import parse_int
from hugebench.system import cgroup as cgroups

MIN_LIMIT_BYTES = 64 * 2**20  # the worker (a Python process) lives under the limit too


def describe(limit: int) -> str:
    """256 MiB, 1.5 GiB: a limit in words."""
    for unit, size in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
        if limit >= size:
            return f"{limit / size:.4g} {unit}"
    return f"{limit} B"


@dataclass(frozen=True)
class MemoryLimit:
    """The cgroup file that holds a run's limit. ``path`` is the cgroup directory; ``version`` 1 or 2."""

    path: Path
    version: int
    limit: int
    own: bool  # a v1 group of ours (removed at the end); a v2 limit is on the run's cgroup itself

    @property
    def knob(self) -> str:
        return "memory.max" if self.version == 2 else "memory.limit_in_bytes"

    def words(self) -> str:
        where = "" if self.version == 2 else " (cgroup v1)"
        return f"{self.knob}={describe(self.limit)}{where}"

    def join(self, pid: int) -> None:
        if self.own:
            (self.path / "cgroup.procs").write_text(str(pid))

    def holds(self, pid: int, host: Host = LOCAL) -> bool:
        """``pid`` is in the limited cgroup (the kernel may have refused the move)."""
        want = "0::" if self.version == 2 else ":memory:"
        for line in (kernel.read_optional(Path(host.proc, str(pid), "cgroup")) or "").splitlines():
            if want in line and line.endswith(f"/{self.path.name}"):
                return True
        return False

    def oom_kills(self) -> int | None:
        name = "memory.events" if self.version == 2 else "memory.oom_control"
        return cgroups.keyed(self.path / name).get("oom_kill")

    def peak(self) -> int | None:
        name = "memory.peak" if self.version == 2 else "memory.max_usage_in_bytes"
        return parse_int(kernel.read_optional(self.path / name))

    def usage(self) -> int | None:
        name = "memory.current" if self.version == 2 else "memory.usage_in_bytes"
        return parse_int(kernel.read_optional(self.path / name))

    def columns(self) -> dict:
        return {
            "memory_limit_bytes": self.limit,
            "memory_limit.knob": self.knob,
            "memory_limit.cgroup_version": self.version,
            "memory_limit.oom_kills": self.oom_kills(),
            "memory_limit.peak_bytes": self.peak(),
        }

    def remove(self) -> None:
        """A v1 group of ours, once its processes are gone (the run's containment killed them)."""
        if not self.own:
            return
        for _ in range(250):
            if not (kernel.read_optional(self.path / "cgroup.procs") or "").split():
                break
            time.sleep(0.02)
        for _ in range(50):
            try:
                os.rmdir(self.path)
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
        try:  # the hugebench/ directory above it, when no other run of ours is in it
            os.rmdir(self.path.parent)
        except OSError:
            pass


def apply(
    limit: int, name: str, v2: cgroups.Cgroup | None, host: Host = LOCAL
) -> tuple[MemoryLimit | None, str | None]:
    """The run's limit set on its v2 cgroup (``v2``, with the memory controller) or on a v1 memory cgroup of
    its own named ``name``; or None and why neither can hold it here."""
    if v2 is not None and v2.has_memory():
        try:
            (v2.path / "memory.max").write_text(str(limit))
            if (v2.path / "memory.swap.max").exists():
                (v2.path / "memory.swap.max").write_text("0")
        except OSError as exc:
            return None, f"cannot write {v2.path / 'memory.max'} ({exc.strerror})"
        return MemoryLimit(v2.path, 2, limit, own=False), None
    return _v1(limit, name, v2, host)


def _v1(
    limit: int, name: str, v2: cgroups.Cgroup | None, host: Host
) -> tuple[MemoryLimit | None, str | None]:
    mounts = kernel.cgroup_mounts(host)
    mount = mounts["v1"].get("memory")
    if mount is None:
        why = (
            f"the run's cgroup v2 ({v2.path}) has no memory controller"
            if v2 is not None
            else "the run has no cgroup v2"
        )
        return None, f"{why} and no cgroup v1 memory controller is mounted"
    here = _own_v1_path(host)
    path = Path(mount, here.lstrip("/"), cgroups.PARENT, name)
    try:
        path.mkdir(parents=True)
        (path / "memory.limit_in_bytes").write_text(str(limit))
        if (path / "memory.memsw.limit_in_bytes").exists():
            (path / "memory.memsw.limit_in_bytes").write_text(str(limit))
    except OSError as exc:
        if path.is_dir():
            os.rmdir(path)
        return None, f"cannot make the v1 memory cgroup {path} ({exc.strerror})"
    return MemoryLimit(path, 1, limit, own=True), None


def _own_v1_path(host: Host) -> str:
    """This process's v1 memory cgroup ('/' at the root)."""
    for line in (kernel.read_optional(Path(host.proc, "self", "cgroup")) or "").splitlines():
        parts = line.split(":", 2)
        if len(parts) == 3 and "memory" in parts[1].split(","):
            return parts[2]
    return "/"
