"""An experiment's ``memory_limit:``: the most memory a run's processes may use together (the worker that
supervises a program included), enforced by the run's memory cgroup (``hugebench.system.memlimit``): a run
that goes over it is OOM-killed, and that is its result (status ``oom``), not a crash.

What belongs here: reading the key. What does not: setting the limit (``hugebench.system.memlimit``).
"""

from __future__ import annotations

import re

from hugebench.system.memlimit import MIN_LIMIT_BYTES, describe

MAX_LIMIT_BYTES = 2**50  # 1 PiB: far above any machine, low enough to refuse a typo
_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*(k|m|g|t)?(?:i?b)?", re.IGNORECASE)
_UNITS = {None: 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}


def parse_size(text: str) -> int:
    """'256M', '256MiB', '1.5G', '300000000': bytes; K, M, G, T are binary, as in cgroup files."""
    match = _SIZE.fullmatch(text.strip()) if len(text) <= 40 else None
    if match is None:
        raise ValueError(f"{text[:40]!r} is not a size like 256M, 1.5G or 300000000")
    unit = match.group(2).lower() if match.group(2) else None
    return int(float(match.group(1)) * _UNITS[unit])


def memory_limit(data: dict, where) -> int | None:
    """The ``memory_limit:`` key in bytes, or None when the file has none."""
    value = data.get("memory_limit")
    if value is None:
        return None
    try:
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise ValueError(f"{value!r} is not a size like 256M, 1.5G or 300000000")
        limit = value if isinstance(value, int) else parse_size(value)
    except ValueError as exc:
        raise where.error(("memory_limit",), str(exc)) from None
    if not MIN_LIMIT_BYTES <= limit <= MAX_LIMIT_BYTES:
        raise where.error(
            ("memory_limit",),
            f"must be from {describe(MIN_LIMIT_BYTES)} (the run's worker lives under it too) "
            f"to {describe(MAX_LIMIT_BYTES)}, got {value!r}",
        )
    return limit
