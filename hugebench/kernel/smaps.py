"""A process's mappings one by one: /proc/PID/smaps parsed into :class:`Vma` values, and where its threads'
stacks are (/proc/PID/task/TID/syscall: the stack pointer of each thread blocked in the kernel).

What belongs here: reading and parsing these files. What does not: deciding why a mapping is not on huge
pages (``hugebench.measure.coverage_gap``) or what its folios are (``kernel.folios``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.read import read_optional, read_text

_HEADER = re.compile(r"^([0-9a-f]+)-([0-9a-f]+) (\S{4}) [0-9a-f]+ \S+ \d+\s*(.*)$")
_FIELD = re.compile(r"^(\w+):\s+(\d+)(?: kB)?$")


@dataclass
class Vma:
    """One mapping: its range, permissions and name (a file's path, ``[heap]``, ``[stack]``, '' for an
    anonymous mapping), the kB fields of its smaps block in bytes, ``THPeligible`` and its ``VmFlags``."""

    start: int
    end: int
    perms: str
    name: str
    fields: dict[str, int] = field(default_factory=dict)
    thp_eligible: int | None = None
    flags: frozenset[str] = frozenset()

    @property
    def size(self) -> int:
        return self.end - self.start

    @property
    def file_backed(self) -> bool:
        """Mapped from a file (not anonymous memory, the heap or the stack; shmem and memfd count as files)."""
        return bool(self.name) and not self.name.startswith("[")

    def label(self) -> str:
        name = self.name or "anonymous"
        return f"{self.start:x}-{self.end:x} {self.perms} {name}"


def parse_smaps(text: str) -> list[Vma]:
    """The text of /proc/PID/smaps -> its mappings in address order."""
    vmas: list[Vma] = []
    for line in text.splitlines():
        header = _HEADER.match(line)
        if header:
            start, end, perms, name = header.groups()
            vmas.append(Vma(int(start, 16), int(end, 16), perms, name.strip()))
            continue
        if not vmas:
            continue
        if line.startswith("VmFlags:"):
            vmas[-1].flags = frozenset(line.split()[1:])
            continue
        match = _FIELD.match(line)
        if not match:
            continue
        key, value = match.group(1), int(match.group(2))
        if key == "THPeligible":
            vmas[-1].thp_eligible = value
        else:
            vmas[-1].fields[key] = value * 1024
    return vmas


def read_smaps(pid: int | str = "self", host: Host = LOCAL) -> list[Vma]:
    """The mappings of ``pid`` (OSError when it is gone or not ours to read)."""
    return parse_smaps(read_text(host.proc / str(pid) / "smaps"))


def parse_syscall_sp(text: str) -> int | None:
    """The stack pointer in a /proc/PID/task/TID/syscall line ('nr a1 .. a6 sp pc' or '-1 sp pc');
    None for 'running' (the kernel does not say while the thread runs)."""
    parts = text.split()
    if len(parts) < 3 or parts[0] == "running":
        return None
    try:
        return int(parts[-2], 16)
    except ValueError:
        return None


def thread_stack_pointers(pid: int | str, host: Host = LOCAL) -> list[int]:
    """The stack pointers of the threads of ``pid`` that are blocked now (root reads them; [] otherwise)."""
    out = []
    try:
        tasks = list((host.proc / str(pid) / "task").iterdir())
    except OSError:
        return []
    for task in tasks:
        text = read_optional(task / "syscall")
        sp = parse_syscall_sp(text) if text else None
        if sp:
            out.append(sp)
    return out
