"""The machine hugebench reads and tunes, as one immutable value: where /proc and /sys are, and the knob writer.

A ``Host`` is built once at an entry point (a CLI command, the library sweep's ``SweepOptions.host``, ``try``, ``doctor``, a cluster
worker) and passed down as a unit; nothing below the entry points picks a root or a writer of its own.
``LOCAL`` is this machine (``/proc``, ``/sys``, plain file I/O), the default where a public function keeps one.
Tests build a ``Host`` over a fake tree whose writer answers the way sysfs does (tests/conftest.py ``fake_sys``).

What belongs here: the value and the plain writer. What does not: reading files (``procfs``, ``sysfs``) and
deciding what to write (``hugebench.system``, the only caller of ``io.write_text``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

from hugebench.kernel.read import read_text


class SysfsIO(Protocol):
    """How knob files are read and written: the real files, or a fake kernel in tests."""

    def read_text(self, path: Path) -> str: ...

    def write_text(self, path: Path, text: str) -> None: ...


class FileIO:
    """Plain file I/O. One write() call per value: sysfs handlers see the whole value at once."""

    def read_text(self, path: Path) -> str:
        return read_text(path)

    def write_text(self, path: Path, text: str) -> None:
        # never through a link at the knob's own name (a tree given with --sys-root may hold one)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NOCTTY
        with open(os.open(path, flags, 0o644), "w", encoding="ascii") as f:
            f.write(text)


@dataclass(frozen=True)
class Host:
    """The roots of /proc and /sys and the writer of their knobs. Pickles (a worker's copy keeps its writer)."""

    proc: Path = Path("/proc")
    sys: Path = Path("/sys")
    io: SysfsIO = field(default_factory=FileIO, compare=False, repr=False)

    def __post_init__(self) -> None:  # a root given as a string is held as a Path
        object.__setattr__(self, "proc", Path(self.proc))
        object.__setattr__(self, "sys", Path(self.sys))

    @classmethod
    def at(
        cls, sys_root: str | os.PathLike | None = None, proc_root: str | os.PathLike | None = None
    ) -> Host:
        """The host an entry point was pointed at (``--sys-root``/``--proc-root``; None: the real one)."""
        return cls(Path(proc_root or "/proc"), Path(sys_root or "/sys"), FileIO())

    def with_io(self, io: SysfsIO) -> Host:
        """The same roots with another writer."""
        return replace(self, io=io)


LOCAL = Host()
