"""Load drivers hugebench knows: a user names the driver (``metric: {driver: redis-benchmark}``) and gets its
metrics, each named with its direction, read from the output the driver prints.

What belongs here: one :class:`Driver` per tool (its quantities in the order they are judged, the first the
primary by default, and a parser of its printed output); nothing that runs a driver. The parsers read the
formats each tool prints (checked against real output where the tool is installed here: redis-benchmark 7.0
and pgbench 15; memtier_benchmark, memaslap, wrk and fio by their documented output):

- redis-benchmark: ``--csv`` lines (``"GET","107526.88","0.255",...``), the full report's ``====== GET ======``
  sections (``throughput summary:`` and ``latency summary (msec):``), or ``-q`` lines (rps and p50 only).
- pgbench: ``tps = ...``, ``latency average = ... ms``, ``latency stddev = ... ms``, failed transactions.
- memtier_benchmark: the ``Totals`` row under its ``Type Ops/sec ... p99 Latency ...`` header.
- memaslap: ``Run time: ...s Ops: N TPS: N``.
- wrk: ``Requests/sec:``, the ``Latency`` thread-stats line and, with ``--latency``, the distribution.
- fio: ``--output-format=json``: summed IOPS and bandwidth, the completion-latency percentiles of its jobs.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import dataclass

HIGHER, LOWER = "higher", "lower"


@dataclass(frozen=True)
class Driver:
    name: str
    quantities: (
        tuple  # ((name, better), ...): the first is the primary unless the user names another
    )
    parse: Callable[[str, str], dict]  # (output, test) -> {quantity: value} of what it printed
    tests: bool = False  # the output has one section per test (redis-benchmark's SET, GET...)
    hint: str = ""  # how to make the driver print what a missing quantity needs


_LAT = (
    ("avg_ms", LOWER),
    ("p50_ms", LOWER),
    ("p95_ms", LOWER),
    ("p99_ms", LOWER),
    ("max_ms", LOWER),
)


def _num(text: str | float | None) -> float | None:
    """The finite number ``text`` reads as (a JSON value may be a number already), or None."""
    if text is None:
        return None
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if value == value and abs(value) != float("inf") else None


def _lines(output: str) -> list[str]:
    """The output's lines, each as a terminal shows it (a progress line rewritten with \\r: its last part)."""
    return [line.rsplit("\r", 1)[-1] for line in output.splitlines()]


def _pick(sections: dict, test: str) -> dict:
    """The section of ``test`` (case-insensitive), or the only one; ValueError when that is ambiguous."""
    if not sections:
        return {}
    if test:
        found = {k.upper(): v for k, v in sections.items()}.get(test.upper())
        if found is None:
            raise ValueError(f"no test {test!r} in its output (it ran: {', '.join(sections)})")
        return found
    if len(sections) > 1:
        raise ValueError(
            f"it ran several tests ({', '.join(sections)}): name one with test: (e.g. test: "
            f"{next(iter(sections))})"
        )
    return next(iter(sections.values()))


_CSV_KEYS = {
    "rps": "rps",
    "avg_latency_ms": "avg_ms",
    "p50_latency_ms": "p50_ms",
    "p95_latency_ms": "p95_ms",
    "p99_latency_ms": "p99_ms",
    "max_latency_ms": "max_ms",
}
_SUMMARY = ("avg_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms")


def redis_benchmark(output: str, test: str) -> dict:
    sections: dict[str, dict] = {}
    header: list[str] = []
    current = None
    lines = _lines(output)
    for i, line in enumerate(lines):
        text = line.strip()
        if text.startswith('"test",'):
            header = [h.strip('"') for h in text.split(",")]
            continue
        if header and text.startswith('"'):
            cells = [c.strip('"') for c in text.split('","')]
            if len(cells) == len(header):
                values = dict(zip(header[1:], cells[1:]))
                sections[cells[0]] = {q: _num(values.get(k)) for k, q in _CSV_KEYS.items()}
            continue
        m = re.fullmatch(r"=+ (.+?) =+", text)
        if m:
            current = sections.setdefault(m.group(1), {})
            continue
        m = re.match(r"throughput summary: ([0-9.]+) requests per second", text)
        if m and current is not None:
            current["rps"] = _num(m.group(1))
        if text.startswith("avg") and "p99" in text and current is not None and i + 1 < len(lines):
            names = text.split()
            for name, value in zip(names, lines[i + 1].split()):
                current[f"{name}_ms"] = _num(value)
            continue
        m = re.match(r"(\S.*?): ([0-9.]+) requests per second(?:, p50=([0-9.]+) msec)?", text)
        if m and "rps=" not in text:
            q = sections.setdefault(m.group(1), {})
            q["rps"] = _num(m.group(2))
            if m.group(3):
                q["p50_ms"] = _num(m.group(3))
    return {k: v for k, v in _pick(sections, test).items() if v is not None}


def pgbench(output: str, test: str) -> dict:
    out = {}
    patterns = {
        "tps": r"^tps = ([0-9.]+)",
        "latency_avg_ms": r"^latency average = ([0-9.]+) ms",
        "latency_stddev_ms": r"^latency stddev = ([0-9.]+) ms",
        "failed": r"^number of failed transactions: ([0-9]+)",
    }
    for quantity, pattern in patterns.items():
        found = re.findall(pattern, output, re.MULTILINE)
        if found:
            out[quantity] = _num(found[-1])
    return {k: v for k, v in out.items() if v is not None}


_UNIT_MS = {"us": 1e-3, "ms": 1.0, "s": 1e3, "m": 60e3, "h": 3600e3}


def _ms(text: str) -> float | None:
    m = re.fullmatch(r"([0-9.]+)(us|ms|s|m|h)", text)
    value = _num(m.group(1)) if m else None
    return value * _UNIT_MS[m.group(2)] if m and value is not None else None


def wrk(output: str, test: str) -> dict:
    out = {}
    m = re.search(r"^Requests/sec:\s+([0-9.]+)", output, re.MULTILINE)
    if m:
        out["rps"] = _num(m.group(1))
    m = re.search(r"^\s+Latency\s+(\S+)\s+(\S+)\s+(\S+)", output, re.MULTILINE)
    if m:
        out["avg_ms"], out["max_ms"] = _ms(m.group(1)), _ms(m.group(3))
    for pct, value in re.findall(r"^\s+(50|75|90|99)(?:\.000)?%\s+(\S+)$", output, re.MULTILINE):
        out[f"p{pct}_ms"] = _ms(value)
    return {k: v for k, v in out.items() if v is not None}


def memtier(output: str, test: str) -> dict:
    header = None
    for line in _lines(output):
        if "Ops/sec" in line and "Type" in line:
            header = re.findall(
                r"Ops/sec|Hits/sec|Misses/sec|Avg\. Latency|p[0-9.]+ Latency|KB/sec", line
            )
        elif header and line.startswith("Totals"):
            values = line.split()[1:]
            names = {"Ops/sec": "ops_per_s", "Avg. Latency": "avg_ms", "KB/sec": "kb_per_s"}
            out = {}
            for name, value in zip(header, values):
                key = names.get(name) or (
                    "p" + name.split()[0][1:].replace(".", "_") + "_ms" if name[0] == "p" else ""
                )
                if key:
                    out[key] = _num(value)
            return {k: v for k, v in out.items() if v is not None}
    return {}


def memaslap(output: str, test: str) -> dict:
    m = re.findall(r"Run time: ([0-9.]+)s Ops: ([0-9]+) TPS: ([0-9]+)", output)
    return {"tps": float(m[-1][2])} if m else {}


def fio(output: str, test: str) -> dict:
    start = output.find("{")
    try:
        data = json.loads(output[start:]) if start >= 0 else None
    except ValueError:
        data = None
    if not isinstance(data, dict) or not isinstance(data.get("jobs"), list):
        return {}
    side = test or "read"
    jobs = [j[side] for j in data["jobs"] if isinstance(j, dict) and isinstance(j.get(side), dict)]
    if not jobs or not any(j.get("io_bytes") for j in jobs):
        return {}
    out: dict[str, float] = {"iops": sum(float(j.get("iops", 0)) for j in jobs)}
    out["bw_kib_s"] = sum(float(j.get("bw", 0)) for j in jobs)
    pct = [j.get("clat_ns", {}).get("percentile") or {} for j in jobs]
    for key, name in (("50.000000", "p50_ms"), ("99.000000", "p99_ms"), ("99.900000", "p99_9_ms")):
        values = [_num(p.get(key)) for p in pct if p.get(key) is not None]
        if values:
            out[name] = max(v for v in values if v is not None) / 1e6  # the worst job's
    return out


DRIVERS = {
    d.name: d
    for d in (
        Driver(
            "redis-benchmark",
            (("rps", HIGHER), *_LAT),
            redis_benchmark,
            True,
            "run it without -q (or with --csv) for its latency percentiles",
        ),
        Driver(
            "pgbench",
            (
                ("tps", HIGHER),
                ("latency_avg_ms", LOWER),
                ("latency_stddev_ms", LOWER),
                ("failed", LOWER),
            ),
            pgbench,
            False,
            "pgbench prints the latency stddev with --progress or --rate",
        ),
        Driver(
            "memtier_benchmark",
            (
                ("ops_per_s", HIGHER),
                ("avg_ms", LOWER),
                ("p50_ms", LOWER),
                ("p99_ms", LOWER),
                ("p99_9_ms", LOWER),
                ("kb_per_s", HIGHER),
            ),
            memtier,
        ),
        Driver("memaslap", (("tps", HIGHER),), memaslap),
        Driver(
            "wrk",
            (
                ("rps", HIGHER),
                ("avg_ms", LOWER),
                ("p50_ms", LOWER),
                ("p90_ms", LOWER),
                ("p99_ms", LOWER),
                ("max_ms", LOWER),
            ),
            wrk,
            False,
            "run it with --latency for its latency distribution",
        ),
        Driver(
            "fio",
            (
                ("iops", HIGHER),
                ("bw_kib_s", HIGHER),
                ("p50_ms", LOWER),
                ("p99_ms", LOWER),
                ("p99_9_ms", LOWER),
            ),
            fio,
            True,
            "run it with --output-format=json; test: read or write picks the side",
        ),
    )
}


def driver(name) -> Driver:
    """The driver of that name, or ValueError listing the known ones."""
    if name not in DRIVERS:
        raise ValueError(
            f"metric.driver {name!r} is not one hugebench knows; known: {', '.join(DRIVERS)}"
        )
    return DRIVERS[name]
