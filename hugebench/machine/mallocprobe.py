"""What a program we did not write really ran under, as told by ``libhbprobe.so`` from inside each process.

The runner preloads the probe after the allocator (``LD_PRELOAD="<allocator.so> <probe>"``) and sets
``HB_PROBE_DIR``; every process of the program then leaves, in that directory:

* ``probe-<pid>.json`` at load (``probe-<pid>-<n>.json`` for the n-th later program a pid execs):
  ``pid``, ``ppid``, ``image``, ``exe``, ``preload``, ``malloc`` and ``free`` (the real path of the object
  each symbol resolves to), ``knobs`` (the keys of :func:`hugebench.machine.allocators.probe_knobs`) and ``api``
  (where ``mallctl``, ``nallocx``, ``mi_version``, ``tc_malloc`` resolve: a malloc library the program links
  stays mapped and answers them even when the preload made ``malloc`` resolve elsewhere);
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

from hugebench.machine.allocators import check_expected, is_glibc, served_name
from hugebench.machine.environment import probe_library  # noqa: F401  (found beside hb-exec; re-exported for callers here)

PROBE_DIR_ENV = "HB_PROBE_DIR"

_PROBE_NAME = re.compile(r"probe-(\d+)(?:-(\d+))?\.json")
_EXIT_NAME = re.compile(r"exit-(\d+)\.json")


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
        if match and probe is not None:
            found.append(((int(match.group(1)), int(match.group(2) or 0)), probe))
    return [probe for _, probe in sorted(found, key=lambda item: item[0])]


def read_exits(directory: str | os.PathLike) -> dict[int, dict]:
    """pid -> the readable ``exit-<pid>.json`` of that process (sizes in bytes)."""
    exits = {}
    for path in Path(directory).glob("exit-*.json"):
        match = _EXIT_NAME.fullmatch(path.name)
        record = _load(path) if match else None
        if match and record is not None:
            exits[int(match.group(1))] = record
    return exits


def _serves(provider: object, expected_real: str | None) -> bool:
    if not isinstance(provider, str) or not provider:
        return False
    if expected_real is None:
        return is_glibc(provider)
    return provider == expected_real


def verify(
    name: str, expected_path: str | None, probes: list[dict], expect: Mapping, as_is: bool = False
) -> dict:
    """Check that the allocator ``name`` served every process of the program; return its row columns.

    ``expected_path`` is the library that must provide ``malloc`` and ``free`` in every probed process
    (``None``: glibc's ``libc.so.6``); ``expect`` is the allocator's ``expect`` (knob values the first
    process must report). Raises RuntimeError naming the processes where it did not hold.
    ``allocator_processes`` counts probed program images: a process that execs counts once per program.
    ``as_is``: nothing was preloaded, so any malloc may serve; the row records which one did.
    ``allocator_served`` names the allocator that served malloc in one word (glibc, jemalloc ...; several
    joined by '; ' when the processes differ).
    """
    if not probes:
        raise RuntimeError(
            f"allocator {name!r}: no process of the program wrote a probe file: LD_PRELOAD did not "
            "take (a static or setuid program?), or the probe library is not in LD_PRELOAD"
        )
    served = "; ".join(dict.fromkeys(served_name(p.get("malloc"), p.get("exe")) for p in probes))
    if as_is:
        return {
            "allocator_malloc_from": probes[0].get("malloc"),
            "allocator_served": served,
            "allocator_processes": len(probes),
            **{f"allocator.{k}": v for k, v in own_knobs(probes[0]).items()},
        }
    expected_real = os.path.realpath(expected_path) if expected_path is not None else None
    wanted = expected_real or "glibc's libc.so.6"
    wrong = [
        f"pid {p.get('pid')} ({p.get('exe') or '?'}): malloc from {p.get('malloc') or 'unknown'}, "
        f"free from {p.get('free') or 'unknown'}"
        for p in probes
        if not (_serves(p.get("malloc"), expected_real) and _serves(p.get("free"), expected_real))
    ]
    if wrong:
        shown = "; ".join(wrong[:5]) + (f"; and {len(wrong) - 5} more" if len(wrong) > 5 else "")
        raise RuntimeError(
            f"allocator {name!r}: malloc/free do not resolve to {wanted} in {len(wrong)} of "
            f"{len(probes)} processes: {shown}"
        )
    knobs = own_knobs(probes[0])
    check_expected(name, expect, knobs)
    return {
        "allocator_malloc_from": probes[0]["malloc"],
        "allocator_served": served,
        "allocator_processes": len(probes),
        **{f"allocator.{k}": v for k, v in knobs.items()},
        **linked_allocators(probes, wanted),
    }


# Which entry point answers for the knobs of each library the probe reads (hb_probe.cpp write_knobs).
KNOB_SOURCES = {"jemalloc.": "mallctl", "mimalloc.": "mi_version"}


def own_knobs(probe: Mapping) -> dict:
    """The knobs of the allocator that serves ``malloc``: a knob read through an entry point of another
    library (the jemalloc a program links, under a glibc cell) is that library's, not the cell's."""
    knobs, api = probe.get("knobs") or {}, probe.get("api")
    if not isinstance(api, Mapping):
        return dict(knobs)  # a probe library from before "api": nothing to tell them apart by
    return {
        k: v
        for k, v in knobs.items()
        if not any(
            k.startswith(prefix) and api.get(symbol) != probe.get("malloc")
            for prefix, symbol in KNOB_SOURCES.items()
        )
    }


def linked_allocators(probes: list[dict], wanted: str) -> dict:
    """``allocator_linked`` (the malloc libraries mapped beside the one that serves malloc, e.g. the jemalloc
    Debian's redis-server links) and ``allocator_note``, what the preload proved and what it did not."""
    linked: dict[str, set] = {}
    for probe in probes:
        api = probe["api"] if isinstance(probe.get("api"), Mapping) else {}
        for symbol, source in api.items():
            if isinstance(source, str) and source and source != probe.get("malloc"):
                linked.setdefault(source, set()).add(symbol)
    if not linked:
        return {}
    names = "; ".join(sorted(linked))
    answers = "/".join(sorted({s for symbols in linked.values() for s in symbols}))
    return {
        "allocator_linked": names,
        "allocator_note": f"proved: malloc and free resolve to {wanted} in all {len(probes)} processes; not "
        f"proved: that {names} (linked by the program) is unused — it stays mapped and its "
        f"{answers} still answer; its knobs are not this cell's and are not shown",
    }
