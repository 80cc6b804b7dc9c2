"""The only place that opens a file under /proc or /sys for reading."""

from __future__ import annotations

import os
from pathlib import Path


def read_text(path: str | Path) -> str:
    """The whole file; OSError (e.g. FileNotFoundError) when the kernel does not have it."""
    with open(path, encoding="ascii", errors="replace") as f:
        return f.read()


def read_optional(path: str | Path) -> str | None:
    """The file's text, stripped, or None when it cannot be read (a missing detail is not an error)."""
    try:
        return read_text(path).strip()
    except OSError:
        return None


def writable(path: str | Path) -> bool:
    """Writable for us: the file exists, its permission bits allow it and its mount is read-write
    (containers often mount /sys read-only, where root still passes the permission check)."""
    path = Path(path)
    if not path.exists() or not os.access(path, os.W_OK):
        return False
    try:
        return not os.statvfs(path).f_flag & os.ST_RDONLY
    except OSError:
        return False


def read_ranges(path: str | Path, ranges: list[tuple[int, int]]) -> list[bytes]:
    """Pieces of a binary file (/proc/PID/pagemap, /proc/kpageflags): ``(offset, length)`` each, read with
    one open and one pread per piece (a piece can come back short where the file ends); OSError when the
    file cannot be opened (not root, the process gone)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return [os.pread(fd, length, offset) for offset, length in ranges]
    finally:
        os.close(fd)
