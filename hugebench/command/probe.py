"""What a program we did not write really ran under, as told by ``libhbprobe.so`` from inside each process.

The runner preloads the probe after the allocator (``LD_PRELOAD="<allocator.so> <probe>"``) and sets
``HB_PROBE_DIR``; every process of the program then leaves, in that directory:

* ``probe-<pid>.json`` at load (``probe-<pid>-<n>.json`` for the n-th later program a pid execs):
  ``pid``, ``ppid``, ``image``, ``exe``, ``preload``, ``malloc`` and ``free`` (the real path of the object
  each symbol resolves to) and ``knobs`` (the keys of :func:`hugebench.allocators.probe_knobs`);
* ``exit-<pid>.json`` when it calls ``exit()``: ``pid``, ``ppid``, ``exe`` and, in bytes, ``Rss``,
  ``AnonHugePages``, ``FilePmdMapped``, ``ShmemPmdMapped``, ``Private_Hugetlb``, ``Shared_Hugetlb``,
  ``Anonymous`` (smaps_rollup) and ``VmHWM`` (status): its coverage at the end, which nobody can read
  after it is gone. A process that ends by ``_exit()``, a signal or exec leaves none.

This module finds the library, reads those files and decides whether the allocator really served the
program: :func:`verify` is the ``command`` workload's version of the worker's allocator check.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from pathlib import Path

from ..allocators import check_expected, is_glibc
from ..errors import ToolMissingError

LIBRARY_NAME = "libhbprobe.so"
PROBE_DIR_ENV = "HB_PROBE_DIR"

_PROBE_NAME = re.compile(r"probe-(\d+)(?:-(\d+))?\.json")
_EXIT_NAME = re.compile(r"exit-(\d+)\.json")


def probe_library() -> str:
    """Path of ``libhbprobe.so`` installed beside the package (built from csrc/preload/hb_probe.cpp)."""
    path = Path(__file__).resolve().parent.parent / LIBRARY_NAME
    if not path.is_file():
        raise ToolMissingError(f"{path} is missing: reinstall hugebench (pip install .) to build its probe library")
    return str(path)


def _load(path: Path) -> dict | None:
    try:
        value = json.loads(path.read_text(encoding="utf-8", errors="replace"))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def read_probes(directory: str | os.PathLike) -> list[dict]:
    """Every readable ``probe-*.json`` in ``directory``, ordered by pid, then by image (exec order)."""
    found = []
    for path in Path(directory).glob("probe-*.json"):
        match = _PROBE_NAME.fullmatch(path.name)
        probe = _load(path) if match else None
        if probe is not None:
            found.append(((int(match.group(1)), int(match.group(2) or 0)), probe))
    return [probe for _, probe in sorted(found, key=lambda item: item[0])]


def read_exits(directory: str | os.PathLike) -> dict[int, dict]:
    """pid -> the readable ``exit-<pid>.json`` of that process (sizes in bytes)."""
    exits = {}
    for path in Path(directory).glob("exit-*.json"):
        match = _EXIT_NAME.fullmatch(path.name)
        record = _load(path) if match else None
        if record is not None:
            exits[int(match.group(1))] = record
    return exits


def _serves(provider: object, expected_real: str | None) -> bool:
    if not isinstance(provider, str) or not provider:
        return False
    if expected_real is None:
        return is_glibc(provider)
    return provider == expected_real


def verify(name: str, expected_path: str | None, probes: list[dict], expect: Mapping) -> dict:
    """Check that the allocator ``name`` served every process of the program; return its row columns.

    ``expected_path`` is the library that must provide ``malloc`` and ``free`` in every probed process
    (``None``: glibc's ``libc.so.6``); ``expect`` is the allocator's ``expect`` (knob values the first
    process must report). Raises RuntimeError naming the processes where it did not hold.
    ``allocator_processes`` counts probed program images: a process that execs counts once per program.
    """
    if not probes:
        raise RuntimeError(f"allocator {name!r}: no process of the program wrote a probe file: LD_PRELOAD did not "
                           "take (a static or setuid program?), or the probe library is not in LD_PRELOAD")
    expected_real = os.path.realpath(expected_path) if expected_path is not None else None
    wanted = expected_real or "glibc's libc.so.6"
    wrong = [f"pid {p.get('pid')} ({p.get('exe') or '?'}): malloc from {p.get('malloc') or 'unknown'}, "
             f"free from {p.get('free') or 'unknown'}"
             for p in probes if not (_serves(p.get("malloc"), expected_real) and _serves(p.get("free"), expected_real))]
    if wrong:
        shown = "; ".join(wrong[:5]) + (f"; and {len(wrong) - 5} more" if len(wrong) > 5 else "")
        raise RuntimeError(f"allocator {name!r}: malloc/free do not resolve to {wanted} in {len(wrong)} of "
                           f"{len(probes)} processes: {shown}")
    knobs = probes[0].get("knobs") or {}
    check_expected(name, expect, knobs)
    return {"allocator_malloc_from": probes[0]["malloc"], "allocator_processes": len(probes),
            **{f"allocator.{k}": v for k, v in knobs.items()}}
