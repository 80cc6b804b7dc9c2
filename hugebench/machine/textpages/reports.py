"""What ``libhbtext.so`` did in each process, read from its report files, and whether that is what was asked.

Every program image the library is preloaded into (with ``HB_TEXT_REPORT_DIR`` set) leaves:

* ``text-<pid>.json`` at load (``text-<pid>-<n>.json`` for the n-th later image a pid execs): ``pid``,
  ``image``, ``exe``, ``mode``, ``text_start``/``text_end`` (its largest executable PT_LOAD),
  ``interior_start``/``interior_end`` (the 2 MiB-aligned part), ``head_bytes``, ``tail_bytes``, ``segments``,
  ``action`` (moved, madvised, none, error), ``error``, ``collapse_errno``, ``seconds``, and the smaps sums
  of the interior right after the action;
* ``text-exit-<pid>[-<n>].json`` at ``exit()``: the same identity and the smaps sums at the end
  (``AnonHugePages``, ``FilePmdMapped``, ``Private_Hugetlb``, ``Shared_Hugetlb``, ``Rss``, ``huge_bytes``,
  bytes). A forked child that exits writes its own, with ``forked_from``; its text is its parent's.
"""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

from hugebench.errors import ToolMissingError

MODES = ("off", "thp", "hugetlb", "file-thp")
LIBRARY_NAME = "libhbtext.so"
FILL_TOOL_NAME = "hb-textfill"
PAGES_ENV = "HB_TEXT_PAGES"
REPORT_DIR_ENV = "HB_TEXT_REPORT_DIR"
FAIL_ENV = (
    "HB_TEXT_FAIL"  # test hook of the library: "mremap" or "mremap-early"; never set in a sweep
)
HUGE = 2 << 20
OFF_TOLERANCE = 0.01  # off: at most this share of the interior on huge pages (none is expected)

_START_NAME = re.compile(r"text-(\d+)(?:-(\d+))?\.json")
_EXIT_NAME = re.compile(r"text-exit-(\d+)(?:-(\d+))?\.json")
_HUGE_FIELDS = ("AnonHugePages", "FilePmdMapped", "Private_Hugetlb", "Shared_Hugetlb")


def _installed(name: str) -> str:
    path = Path(__file__).resolve().parents[2] / name
    if not path.is_file():
        raise ToolMissingError(
            f"{path} is missing: reinstall hugebench (pip install .) to build it "
            "from csrc/preload/hb_text.cpp"
        )
    return str(path)


def text_library() -> str:
    """Path of ``libhbtext.so`` installed beside the package."""
    return _installed(LIBRARY_NAME)


def fill_tool() -> str:
    """Path of ``hb-textfill`` (the file-thp helper) installed beside the package."""
    return _installed(FILL_TOOL_NAME)


def interior(start: int, end: int, huge: int = HUGE) -> tuple[int, int, int, int]:
    """The ``huge``-aligned part of [start, end): (interior_start, interior_end, head_bytes, tail_bytes).

    Head and tail are what stays on small pages before and after it. Without a whole aligned page inside,
    the interior is empty at ``start`` and everything counts as tail; head + interior + tail == end - start.
    """
    if end < start:
        raise ValueError(f"range end {end:#x} before its start {start:#x}")
    lo = -(-start // huge) * huge
    hi = end // huge * huge
    if hi <= lo:
        return start, start, 0, end - start
    return lo, hi, lo - start, end - hi


def _records(directory: Path, pattern: re.Pattern, glob: str) -> dict[tuple[int, int], dict]:
    """(pid, image) -> the JSON object of each file named like ``pattern``; unreadable files are skipped
    (the library writes whole files or none, so a broken one is not ours)."""
    found = {}
    for path in directory.glob(glob):
        match = pattern.fullmatch(path.name)
        if match is None:
            continue
        try:
            record = json.loads(path.read_text(encoding="utf-8", errors="replace"))
        except (OSError, ValueError):
            continue
        if isinstance(record, dict):
            found[(int(match.group(1)), int(match.group(2) or 0))] = record
    return found


def read_reports(directory: str | os.PathLike) -> list[dict]:
    """One dict per program image, ordered by pid then image: the start record's fields, with the exit
    record (if the process called ``exit()``) under ``"exit"``. A forked child that only left an exit
    record appears with that record under ``"exit"`` and its identity (``forked_from``), but no ``action``."""
    directory = Path(directory)
    starts = _records(directory, _START_NAME, "text-*.json")
    starts = {
        key: value for key, value in starts.items() if "action" in value
    }  # text-exit-* match too
    exits = _records(directory, _EXIT_NAME, "text-exit-*.json")
    merged = []
    for key in sorted(set(starts) | set(exits)):
        if key in starts:
            merged.append({**starts[key], **({"exit": exits[key]} if key in exits else {})})
        else:
            identity = {k: v for k, v in exits[key].items() if k not in _HUGE_FIELDS and k != "Rss"}
            merged.append({**identity, "exit": exits[key]})
    return merged


def _interior_bytes(report: dict) -> int:
    return max(0, int(report.get("interior_end", 0)) - int(report.get("interior_start", 0)))


def _huge_bytes(report: dict) -> tuple[int | None, str]:
    """Bytes of the interior on huge pages: at exit when the process wrote that, else right after load."""
    for source, record in (("exit", report.get("exit")), ("load", report)):
        if isinstance(record, dict) and "AnonHugePages" in record:
            return sum(int(record.get(f, 0)) for f in _HUGE_FIELDS), source
    return None, "none"


def _describe(report: dict) -> str:
    return f"pid {report.get('pid')} ({report.get('exe') or '?'})"


def _shortfall(mode: str, report: dict, threshold: float) -> str | None:
    """Why this process's text is not in the condition ``mode`` asked for, or None."""
    size = _interior_bytes(report)
    huge, _ = _huge_bytes(report)
    if size == 0:
        return None
    why = f": {report['error']}" if report.get("error") else ""
    if huge is None:
        return f"{_describe(report)}: no smaps reading of its text{why}"
    if mode == "off":
        if huge > OFF_TOLERANCE * size:
            return (
                f"{_describe(report)}: {huge} of {size} interior bytes on huge pages, so the control was not on "
                "4 KiB pages (e.g. the page cache held large folios of the binary: evict it first with "
                "prepare_page_cache)"
            )
        return None
    if huge < threshold * size:
        return (
            f"{_describe(report)}: {huge} of {size} interior bytes on huge pages "
            f"({huge / size:.0%} < {threshold:.0%}), action {report.get('action')}{why}"
        )
    return None


def verify(mode: str, reports: list[dict], threshold: float = 0.9) -> dict:
    """Check that every program image that had a 2 MiB-aligned text interior got ``mode``; row columns.

    thp, hugetlb, file-thp: at least ``threshold`` of each interior on huge pages (AnonHugePages,
    FilePmdMapped or hugetlb, from smaps at exit, else right after load). off: (almost) none. Raises
    RuntimeError naming the processes where it did not hold. The columns describe the image with the most
    text (cc1plus, not the g++ driver that ran it; the first image on a tie); ``text.coverage`` is NaN when
    its text has no interior, and ``text.image`` names it.
    """
    if mode not in MODES:
        raise ValueError(f"unknown text_pages mode {mode!r}: one of {', '.join(MODES)}")
    loaded = [r for r in reports if "action" in r]
    if not loaded:
        raise RuntimeError(
            f"text_pages {mode!r}: no process wrote a text report: LD_PRELOAD of {LIBRARY_NAME} "
            "did not take (a static or setuid program?), or HB_TEXT_REPORT_DIR was not set"
        )
    wrong = [why for why in (_shortfall(mode, r, threshold) for r in loaded) if why]
    if wrong:
        shown = "; ".join(wrong[:5]) + (f"; and {len(wrong) - 5} more" if len(wrong) > 5 else "")
        raise RuntimeError(
            f"text_pages {mode!r} did not hold in {len(wrong)} of {len(loaded)} processes: {shown}"
        )
    main = max(
        loaded, key=lambda r: r["text_end"] - r["text_start"]
    )  # max() keeps the first on a tie
    size = _interior_bytes(main)
    huge, source = _huge_bytes(main)
    return {
        "text.start": main["text_start"],
        "text.bytes": main["text_end"] - main["text_start"],
        "text.interior_bytes": size,
        "text.head_bytes": main["head_bytes"],
        "text.tail_bytes": main["tail_bytes"],
        "text.huge_bytes": huge,
        "text.coverage": huge / size if size and huge is not None else math.nan,
        "text.measured_at": source,
        "text.action": main["action"],
        "text.seconds": main.get("seconds"),
        "text.processes": len(reports),
        "text.image": main.get("exe"),
    }
