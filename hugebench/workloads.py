"""Registry of the C++ workloads: their parameters (types, defaults, allowed values) and result metrics.

Each workload is a function of ``hugebench._core`` taking keyword arguments (its parameters plus ``hook``)
and returning a dict. ``hook(phase, edge)`` is called from the calling thread with the GIL held, with
edge ``"begin"`` right before a phase's timer starts and ``"end"`` right after it stops, so the worker can
snapshot /proc and rusage per phase without touching the timed region.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any


@dataclass(frozen=True)
class Param:
    """One workload parameter: its type, default and (optionally) the values allowed."""

    type: type
    default: Any
    choices: tuple = ()
    minimum: float | None = None
    help: str = ""

    def check(self, name: str, value: Any) -> Any:
        """Return the value coerced to the parameter type, or raise ValueError with the reason."""
        if self.type is not bool and isinstance(value, bool):
            raise ValueError(f"{name} must be {self.type.__name__}, got {value!r} (YAML reads unquoted "
                             "yes/no/on/off/true/false as a boolean: quote the word)")
        if self.type is float and isinstance(value, int):
            value = float(value) if abs(value) < 2**1000 else math.inf
        if self.type is int and isinstance(value, str):
            value = parse_count(value)
        if not isinstance(value, self.type):
            raise ValueError(f"{name} must be {self.type.__name__}, got {value!r}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"{name} must be a finite number, got {value!r}")
        if self.type is int and not -MAX_INT <= value <= MAX_INT:
            raise ValueError(f"{name} must be at most {MAX_INT} (a 64-bit integer), got {value!r}")
        if self.choices and value not in self.choices:
            raise ValueError(f"{name} must be one of {', '.join(map(str, self.choices))}; got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{name} must be >= {self.minimum}, got {value!r}")
        return value


MAX_INT = 2**63 - 1  # what the C++ workloads take
_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}
_COUNT = re.compile(r"([+-]?)(\d+(?:\.\d*)?|\.\d+)\s*(ki|mi|gi|k|m|g)?")


def parse_count(text: str) -> int:
    """Parse '10M', '1.5G', '64Ki', '4GiB' or '30000' into an int (decimal k/M/G, binary Ki/Mi/Gi).

    Raises ValueError for anything else, including inf, nan and exponents (1e400).
    """
    s = text.strip().lower().removesuffix("b").replace("_", "")
    match = _COUNT.fullmatch(s) if len(s) <= 40 else None
    if match is None:
        raise ValueError(f"{text[:40]!r} is not a count like 30000, 10M, 1.5G or 64Ki")
    sign, number, suffix = match.groups()
    value = Fraction(number) * _SUFFIXES.get(suffix, 1)
    if value.denominator != 1:
        raise ValueError(f"{text!r} is not a whole number")
    return -int(value) if sign == "-" else int(value)


@dataclass(frozen=True)
class BarPlot:
    """Grouped bars of the median of ``y`` per cell of ``groups``, annotated with the ratio to the baseline.

    The last group axis picks a bar's colour, the others name the groups; every other sweep axis that varies
    gets a figure of its own. A knob axis matches its shorthand column too (``thp.enabled`` a ``thp`` column).
    """

    groups: tuple[str, ...]
    y: str
    label: str  # the y axis label
    title: str  # after "<experiment>: "
    name: str  # file name: <experiment>-<name>[-<axis><value>...]


@dataclass(frozen=True)
class XYPlot:
    """One mark per run, not a median: ``kind`` "series" draws each run's list columns ``y`` against ``x`` (a
    time series), "scatter" one point per run. Coloured by ``hue``; a figure per other varying axis."""

    kind: str  # "series" or "scatter"
    x: str
    y: str
    hue: str
    xlabel: str
    ylabel: str
    title: str
    name: str


@dataclass(frozen=True)
class RatioTable:
    """An extra report table: each column's median as a ratio to the baseline cell, with its CI, and a flag on
    the cells where both ``flag`` columns rise (e.g. more time in malloc *and* more throughput)."""

    columns: tuple[tuple[str, str], ...]  # (column, label)
    title: str
    flag: tuple[str, str] = ()  # (cost column, gain column)
    flag_label: str = "flag"


@dataclass(frozen=True)
class Workload:
    """A C++ workload: the ``_core`` function name, its parameters and the phase that is timed."""

    name: str
    function: str
    params: dict[str, Param]
    timed_phase: str
    primary_metric: str
    ops_column: str = ""  # result column counting the timed phase's operations (for per-op metrics)
    memory_estimate: Any = None  # callable(params) -> bytes, for the plan's memory preflight
    doc: str = ""
    metrics: tuple = ()  # report columns: (column, label, fmt) — the primary metric first
    plots: tuple = ()  # (x, y, hue, y label) line plots written by `hugebench report --plots`
    bars: tuple[BarPlot, ...] = ()  # grouped bar plots written by `hugebench report --plots`
    xy_plots: tuple[XYPlot, ...] = ()  # per-run series and scatter plots written by `hugebench report --plots`
    ratio_tables: tuple[RatioTable, ...] = ()  # extra tables of `hugebench report` (ratios to the baseline)
    extra_metrics: Any = None  # callable(row) -> dict of workload-specific derived columns
    time_estimate: Any = None  # callable(params) -> seconds of one run on a small VM (for `hugebench plan`)
    # A workload that runs no _core code: "module:function" the worker calls with (request, its directory).
    runner: str = ""
    open_params: bool = False  # parameters beyond `params` are allowed (strings, numbers: {name} fields)
    check_params: Any = None  # callable(params) raising ValueError, run when the file is loaded
    prepare_params: Any = None  # callable(params, experiment file's directory) -> params
    primary_for: Any = None  # callable(params) -> (column, label, fmt, better): a primary metric of the file's
    metrics_for: Any = None  # callable(params) -> report columns, for a workload whose columns follow its params
    report_sections: Any = None  # callable(rows, axes, level) -> [(title, display DataFrame, data DataFrame)]
    better: str = "lower"  # which direction of primary_metric is an improvement (higher for throughput)

    def report_metrics(self, params: dict) -> tuple[str, tuple, str]:
        """(primary column, report columns with the primary first, 'lower' or 'higher' is better)."""
        metrics = self.metrics_for(params) if self.metrics_for else self.metrics
        if self.primary_for is None:
            return self.primary_metric, metrics, self.better
        column, label, fmt, better = self.primary_for(params)
        return column, ((column, label, fmt),) + tuple(m for m in metrics if m[0] != column), better


def _codetlb_time(p: dict) -> float:
    # ~6 s to build 64 MiB once (cached after), ~300 ns per call on 4 KiB pages in a 2-core KVM guest.
    return STARTUP_S + 0.5 + 3e-7 * p["calls"] + 1e-9 * p["footprint_bytes"] * 0.1


def _codetlb_memory(p: dict) -> int:
    return int(p["footprint_bytes"] * 2 + p["calls"] * 4 + (64 << 20))  # text (file + a copy), the order


def _command_check(params: dict) -> None:
    from .command.checks import check_params

    check_params(params)


def _command_prepare(params: dict, base_dir) -> dict:
    from .command.checks import prepare

    return prepare(params, base_dir)


def _command_metrics(params: dict) -> tuple:
    from .command.checks import coverage_metrics

    return COMMAND_METRICS[:3] + coverage_metrics(params) + COMMAND_METRICS[3:]


def _command_primary(params: dict) -> tuple:
    from .command.checks import primary

    return primary(params)


COMMAND_METRICS = (("window_s", "Window s", ".3f"), ("utime_s", "User s", ".2f"), ("stime_s", "Sys s", ".2f"),
                   ("peak_rss_bytes", "Peak RSS", "bytes"), ("minflt", "Minor faults", "si"))
STARTUP_S = 0.6  # a worker's interpreter, imports and /proc reads


# hashlookup's set kinds and hashes, with the Debian package that provides each optional one.
SET_KINDS = ("flat", "node", "robin", "absl", "boost")
HASHES = ("own", "xxh3")
SET_PACKAGES = {"robin": "robin-map-dev", "absl": "libabsl-dev", "boost": "libboost1.81-dev"}
HASH_PACKAGES = {"xxh3": "libxxhash-dev"}

# Measured on the 2-core KVM guest at 10M keys (experiments/sets.yaml, ns per key): inserting, and one lookup on
# one thread. Both grow with the table beyond that (caches, TLB, page walks): at 30M keys inserts took ~1.8x and
# lookups ~1.35x as long, hence the exponents of _set_scale.
_SET_INSERT_NS = {"flat": 600, "node": 1200, "robin": 950, "absl": 650, "boost": 600}
_SET_LOOKUP_NS = {"flat": 340, "node": 610, "robin": 380, "absl": 470, "boost": 390}


def _set_scale(keys: int, exponent: float) -> float:
    return max(1.0, keys / 1e7) ** exponent


def _hashlookup_time(p: dict) -> float:
    # ~130 ns/key generating and 70 shuffling, plus the set kind's insert and lookup.
    kind = p["set_kind"]
    lookups = p["lookups"] or p["keys"]
    per_key = 130 + _SET_INSERT_NS[kind] * _set_scale(p["keys"], 0.52) + 70
    lookup_ns = _SET_LOOKUP_NS[kind] * _set_scale(p["keys"], 0.28)
    return STARTUP_S + 1e-9 * (p["keys"] * per_key + lookups * lookup_ns / min(p["threads"], 2))


def _hashlookup_check(p: dict) -> None:
    """Refuse a set kind or hash this build of _core lacks, naming the package that provides it."""
    from . import _core

    info = _core.build_info()
    for name, built, packages in (("set_kind", info.get("set_kinds", ["flat", "node"]), SET_PACKAGES),
                                  ("hash", info.get("hashes", ["own"]), HASH_PACKAGES)):
        if p[name] not in built:
            raise ValueError(f"{name}: {p[name]!r} is not in this build of hugebench._core (it has "
                             f"{', '.join(built)}): apt-get install {packages[p[name]]}, then rebuild with "
                             f"pip install --no-build-isolation .")


def _alloctest_slots(p: dict) -> int:
    """Slots over all threads, as the workload derives them."""
    slots = p.get("slots", 0)
    if slots:
        return slots * p.get("threads", 1) if p.get("slots_per") == "thread" else slots
    return round(2 * p.get("total_bytes", 0) / _alloctest_mean_size(p))


def _alloctest_mean_size(p: dict) -> float:
    """Mean block size of the size law (bands: the original's power-of-two bands; inverse: p ~ 1/size)."""
    hi = p.get("max_size", 65536)
    if p.get("size_law", "bands") == "bands":
        m = max(4, int(hi).bit_length() - 1)
        return sum(2.0 ** -(min(k, m - 2) - 1) * (1.5 * 2**k + 0.5) for k in range(2, m))
    lo, hi = p.get("min_size", 8), hi + 1
    return (hi - lo) / math.log(hi / lo) if hi > lo + 1 else lo


def _alloctest_ops(p: dict) -> int:
    """Picks (warmup + timed) over all threads."""
    picks = p["iterations"] + p["warmup_iterations"]
    return picks * p["threads"] if p.get("iterations_per", "thread") == "thread" else picks


def _alloctest_time(p: dict) -> float:
    # Seen on a 2-core KVM guest, 1 thread, write-read, glibc: ~1.5 us per pick with inverse sizes to 64 KiB
    # (memset-bound), ~0.35 us with the original's bands over 2^25 slots (cache and TLB misses on the cold
    # slots); fill and teardown ~0.15 us per slot. An in-process void pass repeats the run at ~40% of it.
    per_pick = 1.5e-6 if p.get("size_law") == "inverse" else 0.35e-6
    seconds = per_pick * _alloctest_ops(p) / min(p["threads"], 2) + 1.5e-7 * _alloctest_slots(p)
    if p.get("void_run") == "in-process":
        seconds *= 1.4
    return STARTUP_S + seconds


def _faultstorm_time(p: dict) -> float:
    # ~1 s per GiB obtained and released, ~200 ns per random page access (faulting ones dominate).
    return STARTUP_S + p["buffer_bytes"] / 2**30 + 2e-7 * p["threads"] * p["ops_per_thread"] / min(p["threads"], 2)


_COMMON_METRICS = (
    ("hp_coverage", "HP coverage", ".0%"),
    ("peak_rss_bytes", "Peak RSS", "bytes"),
    ("minflt", "Minor faults", "si"),
)


def _alloctest_extra(row: dict) -> dict:
    """Memory overhead = peak RSS / peak bytes requested (RSS in real bytes from /proc, any page size).

    ``memory_overhead_net`` first takes away the RSS the worker had before the workload started (the
    interpreter and libraries), which matters at small sizes.
    """
    requested = row.get("peak_requested_bytes") or 0
    peak, before = row.get("peak_rss_bytes"), row.get("rss_before_workload_bytes")
    if not requested or peak is None or row.get("allocator_mode") == "void":
        return {"memory_overhead": None, "memory_overhead_net": None}
    return {"memory_overhead": peak / requested,
            "memory_overhead_net": (peak - (before or 0)) / requested}


def _alloctest_memory(p: dict) -> int:
    # Steady state: each slot is full half the time, blocks average the size law's mean plus the allocator's
    # header and rounding (+16 B), x1.5 for its overhead (jemalloc ~1.3x with large blocks) and drift. Plus
    # the slot table (16 B a slot, from the allocator: void runs have it too), the scattering permutation
    # (4 B a slot), each thread's void block (16 MiB for an in-process void pass) and the interpreter.
    slots = _alloctest_slots(p)
    blocks = slots / 2 * (_alloctest_mean_size(p) + 16) * 1.5
    if p.get("allocator_mode") == "void":
        blocks = 0
    table = slots * (16 + (4 if p.get("hot_slots") == "scattered" else 0))
    void_block = max(p.get("max_size", 65536), 16 << 20 if p.get("void_run") == "in-process" else 0)
    return int(blocks + table + p.get("threads", 1) * void_block + (32 << 20))


def _hashlookup_memory(p: dict) -> int:
    # The set's growth rule and bytes per slot, the old table alive while it doubles, both copies of each key
    # (hugebench/hashsets.py: peak_bytes), Zipf indices; +10%.
    from .hashsets import peak_bytes

    zipf = 4 * (p.get("lookups") or p["keys"]) if p.get("order") == "zipf" else 0
    return int(1.1 * peak_bytes([p["set_kind"]], p["keys"], p.get("key_min", 10), p.get("key_max", 19), zipf))


def _hashsets_check(p: dict) -> None:
    from . import hashsets

    hashsets.check(p, SET_KINDS)
    for kind in hashsets.kinds(p["set_kinds"]):  # an unbuilt kind or hash: refused naming its package
        _hashlookup_check({"set_kind": kind, "hash": p["hash"]})


def _hashsets_memory(p: dict) -> int:
    # Every kind's set alive at once over one query vector, built in the order given; +10%.
    from .hashsets import kinds, peak_bytes

    names = [k for k in kinds(p["set_kinds"]) if k in SET_KINDS]
    order = names[::-1] if p.get("build_order") == "reversed" else names
    return int(1.1 * peak_bytes(order, p["keys"], p["key_min"], p["key_max"]))


def _hashsets_time(p: dict) -> float:
    from .hashsets import kinds

    names = [k for k in kinds(p["set_kinds"]) if k in SET_KINDS]
    per_kind = (p["lookups"] or p["keys"])
    insert, lookup = _set_scale(p["keys"], 0.52), _set_scale(p["keys"], 0.28)
    return (STARTUP_S + 1e-9 * p["keys"] * 200
            + 1e-9 * sum(p["keys"] * _SET_INSERT_NS[k] * insert + per_kind * _SET_LOOKUP_NS[k] * lookup for k in names))


def _hashsets_metrics(p: dict) -> tuple:
    from .hashsets import report_metrics

    return report_metrics(p)


def _hashsets_primary(p: dict) -> tuple:
    from .hashsets import primary

    return primary(p)


def _hashsets_sections(rows, axes, level) -> list:
    from .hashsets import sections

    return sections(rows, axes, level)


def _hashsets_extra(row: dict) -> dict:
    from .hashsets import metrics

    return metrics(row)


def _faultstorm_memory(p: dict) -> int:
    # The buffer itself, every thread's page permutation (4 B per page, ops mode only) and the check's
    # one byte per page; hugetlb pages come out of the pool but are memory all the same.
    buffer = p.get("buffer_bytes", 256 << 20)
    pages = buffer // 4096
    permutations = 0 if p.get("requests_per_thread", 0) else p.get("threads", 1) * pages * 4
    return int(buffer + permutations + pages + (16 << 20))


def _tlbprobe_nodes(p: dict) -> int:
    unit = 4096 if p.get("pattern") == "reach" else 64
    return min(p["working_set_bytes"] // unit, p["max_nodes"])


def _tlbprobe_memory(p: dict) -> int:
    # The buffer (hugetlb pages come out of the pool but are memory all the same) and 20 B per node for
    # the cycle's order and addresses while it is linked.
    page = {"hugetlb-1g": 1 << 30}.get(p["backing"], 2 << 20)
    return int(-(-p["working_set_bytes"] // page) * page + 20 * _tlbprobe_nodes(p) + (32 << 20))


def _tlbprobe_time(p: dict) -> float:
    # ~0.5 s per GiB populated on 4 KiB pages, ~150 ns per node linked, up to ~400 ns per timed access
    # (plus a quarter untimed) over 4 GiB on 4 KiB pages in a 2-core KVM guest.
    return STARTUP_S + 0.5 * p["working_set_bytes"] / 2**30 + 1.5e-7 * _tlbprobe_nodes(p) + 1.25 * 2e-7 * p["accesses"]


def _tlbprobe_extra(row: dict) -> dict:
    from .probe.coverage import page_check

    return page_check(row)


FLEET_SIZE_MIX = "64:55,256:25,1024:12,8192:6,65536:1.8,1048576:0.2"  # mostly small, a tail to 1 MiB


def _fleet_mean_size(p: dict) -> float:
    """Mean object size of ``size_mix`` (classes "max:weight", sizes uniform in (previous max, max])."""
    lo, total, weighted = 16, 0.0, 0.0
    for item in p.get("size_mix", FLEET_SIZE_MIX).split(","):
        hi, weight = item.split(":")
        total += float(weight)
        weighted += float(weight) * (lo + int(hi)) / 2
        lo = int(hi) + 1
    return weighted / total


def _fleet_memory(p: dict) -> int:
    # The peak live set, x1.5 for allocator overhead and fragmentation, the object table, the interpreter.
    return int(p["objects"] * (_fleet_mean_size(p) * 1.5 + 24) + (64 << 20))


def _fleet_time(p: dict) -> float:
    # Duration-bounded; the grow phase writes a word per 64-byte line (~1 GB/s here) and teardown frees.
    return STARTUP_S + p["duration_s"] + 2e-9 * p["objects"] * _fleet_mean_size(p) + 1e-6 * p["objects"]


def _fleet_extra(row: dict) -> dict:
    from .fleet import fleet_metrics

    return fleet_metrics(row)


# The key parameters hashlookup and hashsets share: one definition each.
_KEY_PARAMS = {
    "key_min": Param(int, 10, minimum=1, help="shortest key, bytes"),
    "key_max": Param(int, 19, minimum=1, help="longest key, bytes"),
}
_SEED_PARAM = Param(int, 1, minimum=0, help="seed of key generation and order")
_HASH_PARAM = Param(str, "own", choices=HASHES, help="own: hugebench's mum-style hash; xxh3: XXH3-64")


WORKLOADS: dict[str, Workload] = {
    "hashlookup": Workload(
        name="hashlookup",
        function="hashlookup",
        params={
            "keys": Param(int, 1_000_000, minimum=1, help="number of distinct random keys"),
            "set_kind": Param(str, "flat", choices=SET_KINDS,
                              help="flat: open-addressing set written here; node: std::unordered_set; robin: "
                                   "tsl::robin_set; absl: absl::flat_hash_set; boost: boost::unordered_flat_set "
                                   "(the last three where the build found them: _core.build_info())"),
            "hash": _HASH_PARAM,
            "threads": Param(int, 1, minimum=1, help="lookup threads over the shared read-only set"),
            "lookups": Param(int, 0, minimum=0, help="lookups in the timed phase (0: one per key)"),
            **_KEY_PARAMS,
            "order": Param(str, "uniform", choices=("uniform", "zipf"), help="lookup key order"),
            "zipf_s": Param(float, 0.99, minimum=0.0, help="Zipf exponent when order is zipf"),
            "chunks": Param(int, 64, minimum=1, help="equal slices the timed phase is split into"),
            "seed": _SEED_PARAM,
        },
        timed_phase="lookup",
        primary_metric="ns_per_lookup",
        ops_column="lookups",
        memory_estimate=_hashlookup_memory,
        time_estimate=_hashlookup_time,
        check_params=_hashlookup_check,
        doc="Random short strings in a hash set; mean point-lookup latency (the TLB experiment).",
        metrics=(("ns_per_lookup", "Latency ns", ".1f"), ("chunk_ns_p10", "p10 chunk ns", ".1f"),
                 ("cycles_per_op", "Cycles/lookup", ".0f"),
                 ("stlb_misses_per_1k_ops", "STLB misses/1k", ".1f")) + _COMMON_METRICS,
        bars=(BarPlot(("allocator", "thp.enabled"), "ns_per_lookup", "ns per lookup", "lookup latency", "latency"),),
    ),
    "hashsets": Workload(
        name="hashsets",
        function="hashsets",
        params={
            "keys": Param(int, 1_000_000, minimum=1, help="number of distinct random keys, the same for every kind"),
            "set_kinds": Param(str, "flat,robin,absl,boost,node",
                               help="comma-separated set kinds of hashlookup, each built in this one process; "
                                    "the first is the base of the ratios"),
            "hash": _HASH_PARAM,
            "lookups": Param(int, 0, minimum=0, help="lookups per kind (0: one per key)"),
            **_KEY_PARAMS,
            "rounds": Param(int, 32, minimum=2, help="rounds of one chunk per kind, the kinds' order rotating "
                                                     "(at most 64)"),
            "build_order": Param(str, "listed", choices=("listed", "reversed"),
                                 help="build the sets in set_kinds' order or the reverse (the base stays the "
                                      "first listed)"),
            "seed": _SEED_PARAM,
        },
        timed_phase="lookup",
        primary_metric="set.flat.ns_per_lookup",
        memory_estimate=_hashsets_memory,
        time_estimate=_hashsets_time,
        check_params=_hashsets_check,
        doc="Every set kind built from the same keys in one process, lookups interleaved by round: paired ratios.",
        metrics_for=_hashsets_metrics,
        primary_for=_hashsets_primary,
        extra_metrics=_hashsets_extra,
        report_sections=_hashsets_sections,
    ),
    "faultstorm": Workload(
        name="faultstorm",
        function="faultstorm",
        params={
            "backing": Param(str, "mmap-private",
                             choices=("vector", "new", "malloc", "mmap-private", "mmap-private-populate",
                                      "mmap-shared", "mmap-shared-populate", "madv-hugepage", "madv-populate",
                                      "hugetlb"),
                             help="how the buffer is obtained (vector zero-fills it in 'obtain'; new/malloc/"
                                  "mmap-* without populate leave it unmapped)"),
            "buffer_bytes": Param(int, 256 << 20, minimum=4096, help="buffer size, a multiple of 4 KiB"),
            "threads": Param(int, 1, minimum=1, help="steady-phase threads (may exceed the cores)"),
            "ops_per_thread": Param(int, 1_000_000, minimum=1,
                                    help="page accesses per thread at random page offsets (ops mode)"),
            "write_ratio": Param(float, 0.5, minimum=0.0, help="share of accesses (or requests) that write"),
            "first_touch": Param(bool, False, help="one thread writes a byte per page before the steady phase"),
            "requests_per_thread": Param(int, 0, minimum=0,
                                         help="> 0: requests mode, each request scans request_bytes"),
            "request_bytes": Param(int, 1 << 20, minimum=1, help="slice one request scans (requests mode)"),
            "chunks": Param(int, 64, minimum=1, help="equal slices of each thread's steady phase"),
            "seed": Param(int, 1, minimum=0, help="seed of the access order"),
        },
        timed_phase="steady",
        primary_metric="ns_per_op",
        ops_column="ops",
        memory_estimate=_faultstorm_memory,
        time_estimate=_faultstorm_time,
        doc="Threads hit a big buffer at random pages; where its page faults land depends on the backing.",
        metrics=(("ns_per_op", "ns/op (steady)", ".1f"), ("chunk_ns_p10", "p10 chunk ns", ".1f"),
                 ("phase.steady.minflt", "Steady faults", "si"),
                 ("steady_thread_stime_share", "Sys share", ".0%"), ("phase.obtain.s", "Obtain s", ".3f"),
                 ("cycles_per_op", "Cycles/op", ".0f")) + _COMMON_METRICS[:2],
        plots=(("threads", "phase.steady.s", "backing", "Steady phase (s)"),
               ("threads", "steady_thread_stime_share", "backing", "System-time share of the steady phase")),
    ),
    "alloctest": Workload(
        name="alloctest",
        function="alloctest",
        params={
            # Defaults: ITHare's alloc-test as its published program runs (2^25 slots in total, 100M
            # operations per thread, power-of-two size bands, six-level 80/20 slots, hot slots first).
            "threads": Param(int, 1, minimum=1,
                             help="threads, each with its own slots (1 .. 2x the hardware threads; rows record "
                                  "`oversubscribed` when above)"),
            "iterations": Param(int, 100_000_000, minimum=1,
                                help="timed operations (slot picks: each one malloc or one free), see iterations_per"),
            "iterations_per": Param(str, "thread", choices=("thread", "total"),
                                    help="thread: iterations and warmup_iterations per thread (the original); "
                                         "total: split over the threads"),
            "warmup_iterations": Param(int, 0, minimum=0, help="picks after the fill, before timing"),
            "slots": Param(int, 1 << 25, minimum=0,
                           help="slots, see slots_per (0: 2 * total_bytes / mean size, over all threads)"),
            "slots_per": Param(str, "total", choices=("total", "thread"),
                               help="total: split evenly over the threads (the original); thread: each thread's"),
            "total_bytes": Param(int, 0, minimum=0,
                                 help="steady-state live requested bytes over all threads (when slots is 0)"),
            "size_law": Param(str, "bands", choices=("bands", "inverse"),
                              help="bands: (2^k, 2^(k+1)] with probability 2^-(k-1), mean ~45.5 B (the original); "
                                   "inverse: p(size) ~ 1/size on [min_size, max_size]"),
            "slot_law": Param(str, "pareto6", choices=("pareto6", "powerlaw"),
                              help="pareto6: six-level 80/20 split (the original); powerlaw: continuous "
                                   "p(rank) ~ rank^-s fitted to 80/20"),
            "hot_slots": Param(str, "contiguous", choices=("contiguous", "scattered"),
                               help="contiguous: the hottest slots are the lowest indices (the original); "
                                    "scattered: a random permutation spreads them"),
            "min_size": Param(int, 5, minimum=1, help="smallest block, bytes (inverse; bands needs 5)"),
            "max_size": Param(int, 65536, minimum=1, help="largest block, bytes (bands: a power of two)"),
            "touch": Param(str, "write-read", choices=("none", "write-read", "full"),
                           help="none; write-read: memset after malloc, verify before free; full: also "
                                "verify right after the memset"),
            "allocator_mode": Param(str, "malloc", choices=("malloc", "void"),
                                    help="void: same loop, no real malloc/free (the harness cost)"),
            "void_run": Param(str, "separate", choices=("separate", "in-process"),
                              help="separate: the sweep's `void` allocator cell, another process, pre-touched "
                                   "block; in-process: the original's void pass right after the real run, "
                                   "*_net columns computed here"),
            "chunks": Param(int, 64, minimum=1, help="equal slices of each thread's timed phase"),
            "seed": Param(int, 1, minimum=0, help="seed of the slot picks, sizes and slot permutation"),
        },
        timed_phase="run",
        primary_metric="ns_per_pair",
        ops_column="pairs",
        memory_estimate=_alloctest_memory,
        time_estimate=_alloctest_time,
        doc="ITHare's alloc-test: 80/20-picked slots toggled by malloc/free, blocks written and verified.",
        metrics=(("ns_per_pair", "ns/pair", ".1f"), ("chunk_ns_p10", "p10 chunk ns", ".1f"),
                 ("ns_per_op", "ns/op", ".1f"), ("ms_per_mop", "ms/Mop (whole)", ".1f"),
                 ("realised_mean_size", "Mean block B", ".1f"), ("hot_share", "Picks to hottest 0.16%", ".1%"),
                 ("cycles_per_op", "Cycles/pair", ".0f"),
                 ("memory_overhead", "RSS/requested", ".2f"), ("stime_s", "Sys s", ".2f")) + _COMMON_METRICS,
        plots=(("threads", "ns_per_pair", "allocator", "ns per malloc/free pair"),
               ("threads", "memory_overhead", "allocator", "Peak RSS / peak bytes requested")),
        extra_metrics=_alloctest_extra,
    ),
    "fleet": Workload(
        name="fleet",
        function="fleet",
        params={
            "threads": Param(int, 1, minimum=1, help="request threads, each with its own share of the objects"),
            "objects": Param(int, 200_000, minimum=1, help="live objects at the peak, over all threads"),
            "size_mix": Param(str, FLEET_SIZE_MIX,
                              help="object sizes: classes max_bytes:weight, uniform in (previous max, max], from 16 B"),
            "lookups": Param(int, 16, minimum=0,
                             help="K: reads per request into random live objects (header + one line); "
                                  "0 = the allocator-only microbenchmark"),
            "replacements": Param(int, 1, minimum=0, help="R: objects freed and replaced per request"),
            "temporaries": Param(int, 4, minimum=0, help="short-lived blocks each request allocates and frees"),
            "temp_max_bytes": Param(int, 1024, minimum=16, help="temporaries are uniform in [16, temp_max_bytes]"),
            "duration_s": Param(float, 20.0, minimum=0.1, help="seconds of requests (peak + churn phases)"),
            "peak_share": Param(float, 0.5, minimum=0.0, help="share of duration_s before the shrink"),
            "shrink_fraction": Param(float, 0.75, minimum=0.0, help="share of the objects the shrink frees"),
            "alloc_sample_every": Param(int, 64, minimum=0,
                                        help="time one malloc/free in this many (random gaps; 0 = off)"),
            "sample_interval_s": Param(float, 1.0, minimum=0.01,
                                       help="seconds between smaps_rollup samples (at most ~60 per run)"),
            "chunks": Param(int, 20, minimum=1, help="time slices of each steady phase, per thread"),
            "seed": Param(int, 1, minimum=0, help="seed of sizes, picks and sampling gaps"),
        },
        timed_phase="churn",
        primary_metric="requests_per_s",
        ops_column="requests",
        memory_estimate=_fleet_memory,
        time_estimate=_fleet_time,
        doc="Temeraire's fleet view: requests over a live object set; throughput beside time in malloc.",
        metrics=(("requests_per_s", "Requests/s", ".0f"), ("request_ns_p50", "p50 ns", ".0f"),
                 ("request_ns_p99", "p99 ns", ".0f"), ("alloc_time_share", "Time in alloc", ".1%"),
                 ("peak_rss_bytes", "Peak RSS", "bytes"), ("fragmentation", "Fragmentation", ".2f"),
                 ("rss_returned_share", "Returned", ".0%"), ("hp_coverage_tw", "HP cov. (time-wtd)", ".0%"),
                 ("vmstat.thp_fault_alloc", "THP faults", "si"), ("vmstat.thp_split_pmd", "PMD splits", "si")),
        better="higher",
        extra_metrics=_fleet_extra,
        xy_plots=(XYPlot("series", "series_t_s", "series_coverage", "allocator", "seconds since the grow phase",
                         "AnonHugePages / Rss", "huge-page coverage over time", "coverage"),
                  XYPlot("series", "series_t_s", "series_rss_bytes", "allocator", "seconds since the grow phase",
                         "Rss (bytes)", "RSS over time", "rss"),
                  XYPlot("scatter", "alloc_time_share", "requests_per_s", "allocator", "time in malloc/free (share)",
                         "requests/s", "throughput vs time in the allocator", "tradeoff")),
        ratio_tables=(RatioTable((("alloc_time_share", "Time in alloc"), ("requests_per_s", "Requests/s"),
                                  ("request_ns_p99", "p99"), ("peak_rss_bytes", "Peak RSS"),
                                  ("fragmentation", "Fragmentation"), ("hp_coverage_tw", "HP coverage")),
                                 "the Temeraire trade-off, each as a ratio to the baseline [95% CI]",
                                 flag=("alloc_time_share", "requests_per_s"),
                                 flag_label="more malloc, more req/s"),),
    ),
    "codetlb": Workload(
        name="codetlb",
        function="",
        runner="hugebench.codegen.codetlb:run",
        params={
            "footprint_bytes": Param(int, 64 << 20, minimum=1 << 20, help="text the functions span (16Mi..256Mi)"),
            "layout": Param(str, "sparse", choices=("sparse", "dense"),
                            help="sparse: one tiny function per 4 KiB page (iTLB-bound); dense: packed bodies"),
            "func_bytes": Param(int, 256, minimum=16, help="bytes of straight-line code per function (dense)"),
            "link_align": Param(str, "4k", choices=("4k", "2m"),
                                help="2m links with -z max-page-size=2M so the text starts 2 MiB-aligned"),
            "calls": Param(int, 5_000_000, minimum=1, help="calls in the timed window"),
            "order": Param(str, "uniform", choices=("uniform", "zipf"), help="which function each call picks"),
            "zipf_s": Param(float, 1.0, minimum=0.0, help="Zipf exponent when order is zipf"),
            "seed": Param(int, 1, minimum=0, help="seed of the call order"),
        },
        timed_phase="window",
        primary_metric="ns_per_call",
        memory_estimate=_codetlb_memory,
        time_estimate=_codetlb_time,
        doc="A generated large-code program: functions over a text footprint called in random order (iTLB).",
        metrics=(("ns_per_call", "ns/call", ".1f"), ("text.coverage", "Text on huge pages", ".0%"),
                 ("text.huge_bytes", "Text huge bytes", "bytes"), ("text_bytes", "Text", "bytes"),
                 ("perf.itlb_misses", "iTLB walks", "si"), ("perf.itlb_misses_4k", "iTLB walks to 4K", "si"),
                 ("build_s", "Build s", ".1f")),
        plots=(("footprint_bytes", "ns_per_call", "text_pages", "ns per call"),),
    ),
    "command": Workload(
        name="command",
        function="",
        runner="hugebench.command.runner:run",
        params={
            "argv": Param(list, None, help="the program and its arguments, a list; {name} takes a parameter"),
            "cwd": Param(str, ".", help="working directory, relative to the experiment file"),
            "env": Param(dict, None, help="added to the program's environment (not the allocator's variables)"),
            "metric": Param(object, "wall", help="wall | {regex: ..., name: ..., better: higher} | {json: KEY}"),
            "setup": Param(list, None, help="a command run before each measured run, not measured"),
            "server": Param(dict, None, help="{argv, ready: {path|port|log}}: the server is measured, argv "
                                             "is its load driver"),
            "sample_interval": Param(float, 1.0, minimum=0.05, help="seconds between coverage samples"),
            "stdin": Param(str, None, help="a file the program reads as its standard input (default: /dev/null); "
                                           "relative to cwd"),
            "stdout": Param(str, None, help="a file its standard output goes to, or discard (default: a file in "
                                            "the run's directory, of which the row keeps a short text tail)"),
            "window": Param(str, "process", choices=("process", "markers"),
                            help="process: the whole run is timed; markers: the program marks its windows"),
        },
        timed_phase="window",
        primary_metric="window_s",
        doc="Your own program (or a server under a load driver) as the measured process.",
        metrics=COMMAND_METRICS,  # and the coverage columns that fit the file's window (metrics_for)
        metrics_for=_command_metrics,
        open_params=True,
        check_params=_command_check,
        prepare_params=_command_prepare,
        primary_for=_command_primary,
        xy_plots=(XYPlot("series", "series_t_s", "series_coverage", "allocator", "seconds since the first sample",
                         "AnonHugePages / Rss", "huge-page coverage over the run", "coverage"),),
    ),
    "tlbprobe": Workload(
        name="tlbprobe",
        function="tlbprobe",
        params={
            "backing": Param(str, "4k", choices=("4k", "thp", "hugetlb-2m", "hugetlb-1g"),
                             help="4k: MADV_NOHUGEPAGE; thp: MADV_HUGEPAGE (coverage checked); hugetlb-*: the pool"),
            "working_set_bytes": Param(int, 64 << 20, minimum=256 << 10, help="buffer the nodes spread over"),
            "pattern": Param(str, "chase", choices=("chase", "mlp", "reach"),
                             help="chase: one dependent chain; mlp: `chains` chains at once; reach: one "
                                  "cache-resident line per 4 KiB page (TLB reach)"),
            "chains": Param(int, 16, minimum=1, help="independent chains of the mlp pattern (1..64)"),
            "accesses": Param(int, 2_000_000, minimum=1, help="timed loads over all chains"),
            "max_nodes": Param(int, 1 << 22, minimum=2,
                               help="nodes at most; a larger working set gets one node per equal stratum"),
            "chunks": Param(int, 64, minimum=1, help="equal slices the timed phase is split into"),
            "seed": Param(int, 1, minimum=0, help="seed of the cycle and the nodes' lines"),
        },
        timed_phase="chase",
        primary_metric="ns_per_access",
        ops_column="accesses",
        memory_estimate=_tlbprobe_memory,
        time_estimate=_tlbprobe_time,
        doc="Dependent loads along one random cycle per page size: what a random access costs here (probe).",
        metrics=(("ns_per_access", "ns/access", ".1f"), ("chunk_ns_p10", "p10 chunk ns", ".1f"),
                 ("buffer_hp_coverage", "Buffer on huge pages", ".0%")),
        extra_metrics=_tlbprobe_extra,
    ),
}


def get(name: str) -> Workload:
    """Return the workload called ``name`` or raise KeyError listing the known ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}") from None
