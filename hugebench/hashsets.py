"""The ``hashsets`` workload's Python side: every set kind side by side in one process (csrc/workloads/hashsets.h).

One run builds each kind of ``set_kinds`` from the same keys, then times rounds of lookups in which every kind
takes one chunk. Its row holds, per kind, ``set.<kind>.ns_per_lookup``, ``.insert_s``, ``.round_ns`` (ns per
lookup of the kind's chunk in each round) and ``set.<kind>.vs_base``: the median over rounds of the kind's chunk
time over the first kind's chunk time in the same round. A drift of the machine between runs, or within a run
over more than a round, hits both sides of each such ratio alike.

:func:`side_by_side` is the report's table: per cell of the sweep's other axes, each kind's median latency
and its ratio to the base kind, the median of the per-round ratios pooled over the cell's runs, with a
CI that resamples runs and then rounds (:func:`two_level_ci`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .stats import ok_rows

MAX_ROUNDS = 64  # a row keeps each kind's per-round times; the worker keeps lists of up to 64 values
PREFIX = "set."


def kinds(set_kinds: str) -> list[str]:
    """The kinds of a ``set_kinds`` string, in order (the first is the base of the ratios)."""
    return [k.strip() for k in str(set_kinds).split(",")]


def check(params: dict, known: Sequence[str]) -> None:
    """Refuse unknown or repeated kinds and too many rounds, before any run (unbuilt kinds: the registry's check)."""
    names = kinds(params["set_kinds"])
    if len(names) < 2:
        raise ValueError(f"set_kinds needs at least two kinds, comma-separated, the first the baseline "
                         f"(e.g. flat,boost); got {params['set_kinds']!r}")
    for name in names:
        if name not in known:
            raise ValueError(f"set_kinds: {name!r} is not a set kind; known: {', '.join(known)}")
        if names.count(name) > 1:
            raise ValueError(f"set_kinds names {name!r} twice")
    if params["rounds"] > MAX_ROUNDS:
        raise ValueError(f"rounds must be at most {MAX_ROUNDS} (each kind's per-round times are kept in the row), "
                         f"got {params['rounds']}")
    if params["rounds"] > (params["lookups"] or params["keys"]):
        raise ValueError(f"rounds ({params['rounds']}) must not exceed the lookups per kind")


def round_ratios(row: dict, kind: str, base: str) -> np.ndarray:
    """Per round: the kind's chunk ns over the base kind's (NaN-free)."""
    a = np.asarray(row.get(f"{PREFIX}{kind}.round_ns") or [], dtype=float)
    b = np.asarray(row.get(f"{PREFIX}{base}.round_ns") or [], dtype=float)
    if a.size == 0 or a.size != b.size:
        return np.array([])
    keep = np.isfinite(a) & np.isfinite(b) & (b > 0)
    return a[keep] / b[keep]


def metrics(row: dict) -> dict:
    """``set.<kind>.vs_base`` per kind; raises when a kind missed a key (a broken table, not a measurement)."""
    names = list(row.get("kinds") or [])
    sizes = {row.get(f"{PREFIX}{n}.set_size") for n in names}
    if len(sizes) > 1:
        raise RuntimeError(f"the set kinds hold different numbers of keys: {sorted(map(str, sizes))}")
    out = {}
    for name in names:
        found, lookups = row.get(f"{PREFIX}{name}.found"), row.get(f"{PREFIX}{name}.lookups")
        if found != lookups:
            raise RuntimeError(f"set kind {name!r} found {found} of the {lookups} keys it was asked for, all inserted")
        ratios = round_ratios(row, name, names[0])
        out[f"{PREFIX}{name}.vs_base"] = float(np.median(ratios)) if ratios.size else math.nan
    return out


def _kinds_of(params: dict) -> list[str]:
    """The file's set_kinds, or the registry's default where the file has none (or makes it an axis)."""
    from .workloads import WORKLOADS

    return kinds(params.get("set_kinds") or WORKLOADS["hashsets"].params["set_kinds"].default)


def report_metrics(params: dict) -> tuple:
    """The main table's columns: each kind's latency, then each other kind's ratio to the first."""
    names = _kinds_of(params)
    base = names[0]
    columns = [(f"{PREFIX}{n}.ns_per_lookup", f"{n} ns", ".1f") for n in names]
    columns += [(f"{PREFIX}{n}.vs_base", f"{n}/{base}", ".3f") for n in names[1:]]
    return tuple(columns) + (("peak_rss_bytes", "Peak RSS", "bytes"),)


def primary(params: dict) -> tuple:
    base = _kinds_of(params)[0]
    return f"{PREFIX}{base}.ns_per_lookup", f"{base} ns", ".1f", "lower"


# -- memory: what a set of each kind holds after inserting n distinct keys one at a time -------------------
# Each table's growth rule (measured capacities at 10M keys: flat 2^24 slots, robin 2^25, absl 2^24-1, Boost
# 2^20 groups of 15, node 12.1M buckets) and its bytes per slot; while a table doubles, its old half-size table
# is alive too. The model matches measured peaks: hashlookup flat at 30M keys 4.6 GiB (model 4.6), hashsets
# with all five kinds at 10M keys 4.47 GiB (model 4.45).
_STRING = 32  # sizeof(std::string) in libstdc++; up to 15 bytes inside it
_GROWTH = {  # kind: (first capacity, max load, bytes per slot)
    "flat": (16, 0.75, _STRING),
    "robin": (16, 0.5, 40),  # a bucket: the probe distance, padded, then the string
    "absl": (16, 0.875, _STRING + 1),  # a control byte per slot
    "boost": (16, 0.875, _STRING + 16 / 15),  # 15 slots and a 16-byte control word per group
}
_NODE_BYTES = 64  # glibc's chunk for a 48-byte node (next pointer, string, cached hash)
BASE_BYTES = 64 << 20  # the worker's interpreter and the extension


def _heap_per_key(key_min: int, key_max: int) -> float:
    """Mean malloc chunk bytes a copy of a key takes beyond its std::string (keys over 15 bytes)."""
    # A length n > 15 takes ceil((n + 9) / 16) * 16 bytes (never below 32 there); summed in closed form, so
    # that a key_max of 10^8 costs no more to estimate than 19.
    low = max(key_min, 16)
    if key_max < low:
        return 0.0
    return 16 * (_ceil16_sum(key_max + 9) - _ceil16_sum(low + 8)) / (key_max - key_min + 1)


def _ceil16_sum(m: int) -> int:
    """sum(ceil(i / 16) for i in 1..m)."""
    q, r = divmod(m, 16)
    return 16 * q * (q + 1) // 2 + r * (q + 1)


def table_bytes(kind: str, keys: int) -> tuple[float, float]:
    """(bytes of the table holding ``keys`` keys, bytes of the table it last grew from), key heap excluded."""
    if kind == "node":
        return keys * _NODE_BYTES + keys * 1.3 * 8, 0.0  # a bucket pointer per key at max load 1 (prime counts)
    capacity, load, per_slot = _GROWTH[kind]
    while keys > load * capacity:
        capacity *= 2
    return capacity * per_slot, (capacity // 2 * per_slot if capacity > _GROWTH[kind][0] else 0.0)


def peak_bytes(kinds: Sequence[str], keys: int, key_min: int, key_max: int, extra: float = 0.0) -> int:
    """Peak memory of a process that builds a set of each kind in turn from ``keys`` keys, over one query vector."""
    heap = keys * _heap_per_key(key_min, key_max)
    held = BASE_BYTES + extra + keys * _STRING + heap  # the keys, later the queries
    peak = held
    for kind in kinds:
        table, old = table_bytes(kind, keys)
        peak = max(peak, held + table + old + heap)
        held += table + heap
    return int(peak)


def two_level_ci(per_run: Sequence[np.ndarray], level: float = 0.95, n_boot: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """CI of the median of pooled per-round ratios that resamples runs, then rounds within each run.

    Rounds of one run share that run's key layout and pages, so they are not independent draws: resampling
    only rounds would give a CI as narrow as one run's, however much runs disagree. Runs first keeps the
    between-run spread in the interval. NaN with fewer than two ratios.
    """
    runs = [np.asarray(r, dtype=float) for r in per_run if len(r)]
    if sum(r.size for r in runs) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    stats = np.empty(n_boot)
    for b in range(n_boot):
        chosen = rng.integers(len(runs), size=len(runs))
        stats[b] = np.median(np.concatenate([runs[i][rng.integers(runs[i].size, size=runs[i].size)] for i in chosen]))
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [tail, 1.0 - tail])
    return float(lo), float(hi)


MIN_RUNS = 3  # below this many runs the between-run spread is barely seen: no verdict


def side_by_side(df: pd.DataFrame, axes: Sequence[str], level: float = 0.95, n_boot: int = 2000,
                 seed: int = 0) -> pd.DataFrame:
    """Per cell of ``axes`` and kind: runs, median ns, median insert s, and the ratio to the base kind with its CI.

    The ratio is the median of the per-round ratios pooled over the cell's runs, its CI from
    :func:`two_level_ci`; ``resolved`` is False where the CI holds 1, True where it excludes 1 over at least
    ``MIN_RUNS`` runs, None otherwise (and for the base kind).
    """
    rows = ok_rows(df)
    if "kinds" not in rows.columns or rows.empty:
        return pd.DataFrame()
    rows = rows.assign(kinds=rows["kinds"].map(lambda v: ",".join(v) if isinstance(v, (list, tuple)) else str(v)))
    keys = [a for a in axes if a in rows.columns and a != "kinds"] + ["kinds"]
    records = []
    for key, cell in rows.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        names = kinds(key[-1])
        for name in names:
            per_run = [round_ratios(r, name, names[0]) for r in cell.to_dict("records")]
            pooled = np.concatenate(per_run or [[]])
            is_base = name == names[0]
            lo, hi = (math.nan, math.nan) if is_base else two_level_ci(per_run, level, n_boot, seed)
            resolved = None
            if not is_base and not math.isnan(lo):
                resolved = False if lo <= 1.0 <= hi else (True if len(cell) >= MIN_RUNS else None)
            ns = pd.to_numeric(cell.get(f"{PREFIX}{name}.ns_per_lookup"), errors="coerce")
            insert = pd.to_numeric(cell.get(f"{PREFIX}{name}.insert_s"), errors="coerce")
            records.append({**dict(zip(keys[:-1], key[:-1])), "set_kind": name, "base": names[0], "n": len(cell),
                            "rounds": int(pooled.size), "ns_per_lookup": float(ns.median()),
                            "insert_s": float(insert.median()),
                            "ratio": float(np.median(pooled)) if pooled.size else math.nan,
                            "ratio.ci_lo": lo, "ratio.ci_hi": hi, "resolved": resolved})
    return pd.DataFrame.from_records(records)


def sections(rows: pd.DataFrame, axes: Sequence[str], level: float = 0.95) -> list[tuple]:
    """The report's section: (title, display rows as a DataFrame of text, the numbers)."""
    from .report.rendering import display_frame, format_axis

    table = side_by_side(rows, axes, level)
    if table.empty:
        return []
    shown = [a for a in axes if a in table.columns]
    headers = [*(a.replace("_", " ").capitalize() for a in shown), "Set kind", "n", "rounds", "ns/lookup", "insert s",
               f"vs base [{level:.0%} CI]", "resolved"]
    body = []
    for row in table.to_dict("records"):
        if row["set_kind"] == row["base"]:
            ratio, verdict = "base", ""
        elif math.isnan(row["ratio.ci_lo"]):
            ratio, verdict = f"{row['ratio']:.3f}", ""
        else:
            ratio = f"{row['ratio']:.3f} [{row['ratio.ci_lo']:.3f}, {row['ratio.ci_hi']:.3f}]"
            verdict = {True: "yes", False: "no", None: f"n<{MIN_RUNS}"}[row["resolved"]]
        body.append([*(format_axis(row[a]) for a in shown), row["set_kind"], row["n"], row["rounds"],
                     f"{row['ns_per_lookup']:.1f}", f"{row['insert_s']:.2f}", ratio, verdict])
    title = ("Set kinds side by side (one process per run; each ratio is the median of the per-round ratios "
             "to the base kind, pooled over the cell's runs)")
    return [(title, display_frame(headers, body), table)]
