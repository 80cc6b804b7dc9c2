"""A run row as the store writes it: flattened (``{"smaps": {"Rss": 1}}`` -> ``smaps.Rss``), checked
(``run_id``, a known ``status``), plain JSON values (NaN -> null, numpy -> Python), appended as one line with
one write and fsync (a torn last line of a crash isolated first).

Used by ``hugebench.store`` (``ResultStore.append``, the context files); nothing here reads a store.
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import math
import os
import stat
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from hugebench.columns import SCHEMA_VERSION

STATUSES = ("ok", "failed", "timeout", "crashed", "oom", "skipped", "disturbed")
REQUIRED_KEYS = ("run_id", "status")


def normalise_row(row: Mapping[str, Any]) -> dict:
    if not isinstance(row, Mapping):
        raise TypeError(f"a run row must be a mapping, got {type(row).__name__}")
    flat = {"schema_version": SCHEMA_VERSION, **_flatten(row)}
    missing = [key for key in REQUIRED_KEYS if key not in flat]
    if missing:
        raise ValueError(f"run row lacks {', '.join(missing)}: {sorted(flat)}")
    if flat["status"] not in STATUSES:
        raise ValueError(f"run status {flat['status']!r} is not one of {', '.join(STATUSES)}")
    return {key: plain(value) for key, value in flat.items()}


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict:
    flat = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def plain(value: Any) -> Any:
    """JSON has no NaN: a missing measurement is stored as null (also inside lists and dicts)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, Mapping):
        return {key: plain(v) for key, v in value.items()}
    return value


def json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return plain(value)
    if isinstance(value, np.ndarray):
        return plain(value.tolist())
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return plain(dataclasses.asdict(value))
    raise TypeError(f"{type(value).__name__} is not JSON serializable: {value!r}")


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def append_line(fd: int, line: bytes) -> None:
    """Write ``line`` at the end in one write and fsync it; on any failure cut the file back to where it was."""
    regular = stat.S_ISREG(os.fstat(fd).st_mode)
    size = os.fstat(fd).st_size if regular else 0
    if regular and _ends_torn(fd):
        line = b"\n" + line  # isolate a torn fragment left by a crash
    try:
        written = os.write(fd, line)
        if written != len(line):
            raise OSError(
                errno.ENOSPC,
                f"only {written} of {len(line)} bytes of the row could be written (disk full?)",
            )
        os.fsync(fd)
    except OSError:
        if regular:
            with contextlib.suppress(OSError):
                os.ftruncate(fd, size)
        raise
