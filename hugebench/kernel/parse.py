"""Pure parsers of /proc and /sys text: no I/O, so every kernel format is tested on strings."""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

KIB = 1024


@dataclass(frozen=True)
class Reading:
    """What a knob file says: the active value and, for bracketed files, every accepted value."""

    value: str
    choices: tuple[str, ...] = ()


def parse_choice(text: str) -> Reading:
    """`always [madvise] never` -> Reading('madvise', choices); `511` -> Reading('511'). ValueError otherwise."""
    tokens = text.split()
    if not tokens:
        raise ValueError("empty knob file")
    bracketed = [t for t in tokens if t.startswith("[") and t.endswith("]")]
    if not bracketed:
        if len(tokens) != 1:
            raise ValueError(f"no [active] value in {text.strip()!r}")
        return Reading(tokens[0])
    choices = tuple(t.strip("[]") for t in tokens)
    return Reading(bracketed[0].strip("[]"), choices)


def selected(text: str | None) -> str | None:
    """The active value of a knob file's text, or None when there is none to be had."""
    if text is None:
        return None
    try:
        return parse_choice(text).value
    except ValueError:
        return None


def parse_kb_fields(text: str) -> dict[str, int]:
    """'Key:   123 kB' lines (meminfo, smaps_rollup, status) -> {Key: bytes}; lines without kB are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[key.strip()] = int(parts[0]) * KIB
    return out


def parse_status_number(text: str, key: str) -> int | None:
    """The value of a unitless 'Key:<tab>N' line of /proc/PID/status (THP_enabled, Threads), or None."""
    for line in text.splitlines():
        name, sep, rest = line.partition(":")
        if sep and name == key and rest.strip().isdigit():
            return int(rest.strip())
    return None


def parse_vmstat(text: str) -> dict[str, int]:
    """/proc/vmstat -> {name: value}."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, value = line.partition(" ")
        if value.strip().lstrip("-").isdigit():
            out[name] = int(value)
    return out


def counter_delta(
    before: Mapping[str, int], after: Mapping[str, int], keys: Iterable[str] | None = None
) -> dict[str, float]:
    """after - before. With ``keys``: one entry per key, NaN where either side lacks it (a counter this
    kernel does not have). Without: every counter present on both sides."""
    if keys is None:
        return {name: after[name] - before[name] for name in after if name in before}
    return {k: (after[k] - before[k]) if k in before and k in after else math.nan for k in keys}


def parse_buddyinfo(text: str) -> dict[str, list[int]]:
    """/proc/buddyinfo -> {'0/Normal': [free blocks of order 0, 1, ...]}."""
    return _zone_lines(text, int)


def parse_extfrag(text: str) -> dict[str, list[float]]:
    """debugfs extfrag/unusable_index (or extfrag_index) -> {'0/Normal': [index at order 0, 1, ...]}."""
    return _zone_lines(text, float)


def _zone_lines(text: str, cast) -> dict:
    zones = {}
    for line in text.splitlines():
        match = re.match(r"Node\s+(\d+),\s+zone\s+(\S+)\s+(.*)", line)
        if match:
            zones[f"{match.group(1)}/{match.group(2)}"] = [cast(c) for c in match.group(3).split()]
    return zones


def pcp_page_count(zoneinfo: str) -> int:
    """/proc/zoneinfo -> pages on every per-CPU free list (the ``count:`` of each zone's pagesets)."""
    return sum(int(m) for m in re.findall(r"^\s+count:\s+(\d+)", zoneinfo, flags=re.M))


def huge_blocks_by_zone(zones: Mapping[str, list[int]], huge_order: int = 9) -> dict[str, int]:
    """Free blocks of ``2**huge_order`` pages per zone (an order-10 block counts twice)."""
    return {
        zone: sum(
            count << (order - huge_order)
            for order, count in enumerate(counts)
            if order >= huge_order
        )
        for zone, counts in zones.items()
    }


def summarize_buddyinfo(
    zones: Mapping[str, list[int]], page_bytes: int, huge_bytes: int = 2 << 20
) -> dict:
    """How much free memory could back a huge page right now.

    Returns {'zones': zones, 'free_kib', 'free_2mib_blocks', 'free_2mib_fraction' (share of free memory in
    blocks of at least ``huge_bytes``)}.
    """
    page_kib = page_bytes // KIB
    huge_order = (huge_bytes // page_bytes).bit_length() - 1
    free_kib = huge_kib = blocks = 0
    for counts in zones.values():
        for order, count in enumerate(counts):
            kib = count * page_kib << order
            free_kib += kib
            if order >= huge_order:
                huge_kib += kib
                blocks += count << (order - huge_order)
    fraction = huge_kib / free_kib if free_kib else 0.0
    return {
        "zones": dict(zones),
        "free_kib": free_kib,
        "free_2mib_blocks": blocks,
        "free_2mib_fraction": fraction,
    }


def parse_start_ticks(stat_text: str) -> int:
    """Field 22 of /proc/PID/stat (start time in clock ticks since boot).

    comm (field 2) may contain spaces and parentheses; the fields after the last ')' start at field 3.
    """
    return int(stat_text.rsplit(")", 1)[1].split()[19])


def parse_ppid(stat_text: str) -> int:
    """Field 4 of /proc/PID/stat (the parent's pid)."""
    return int(stat_text.rsplit(")", 1)[1].split()[1])


def parse_pmu_format(text: str) -> list[tuple[str, int, int]]:
    """A sysfs PMU format file: 'config:0-7,32-35' -> [('config', 0, 7), ('config', 32, 35)]; 'config:23' -> one bit."""
    field_name, _, ranges = text.strip().partition(":")
    out = []
    for part in ranges.split(","):
        lo, _, hi = part.partition("-")
        out.append((field_name, int(lo), int(hi or lo)))
    return out


def parse_cache_size(text: str | None) -> int | None:
    """'48K' / '2048K' / '300M' (sysfs cache sizes) -> bytes."""
    match = re.fullmatch(r"(\d+)\s*([KMG]?)i?B?", text or "")
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[match.group(2)]


def parse_int(text: str | None) -> int | None:
    """An integer file's value, or None."""
    return int(text) if text and text.strip().lstrip("-").isdigit() else None


def parse_cgroup_mounts(mountinfo: str) -> dict:
    """/proc/PID/mountinfo -> {"v2": mount point of the cgroup2 hierarchy or None, "v1": {controller: mount
    point}} (a hybrid machine has both; the v1 controllers are the ones its v2 hierarchy cannot have)."""
    found: dict = {"v2": None, "v1": {}}
    for line in mountinfo.splitlines():
        left, sep, right = line.partition(" - ")
        fields, tail = left.split(), right.split()
        if not sep or len(fields) < 5 or len(tail) < 3:
            continue
        point = _unescape_mount(fields[4])
        if tail[0] == "cgroup2" and found["v2"] is None:
            found["v2"] = point
        elif tail[0] == "cgroup":
            for option in tail[2].split(","):
                if option not in ("rw", "ro") and "=" not in option:
                    found["v1"].setdefault(option, point)
    return found


def _unescape_mount(field: str) -> str:
    """mountinfo writes space, tab, newline and backslash in paths as octal escapes (\\040 ...)."""
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), field)
