"""The ``hashsets`` workload's Python side: every set kind side by side in one process (csrc/workloads/hashsets.h).

One run builds each kind of ``set_kinds`` from the same keys, then times rounds of lookups in which every kind
takes one chunk. Its row holds, per kind, ``set.<kind>.ns_per_lookup``, ``.insert_s``, ``.round_ns`` (ns per
lookup of the kind's chunk in each round) and ``set.<kind>.vs_base``: the median over rounds of the kind's chunk
time over the first kind's chunk time in the same round. A drift of the machine between runs, or within a run
over more than a round, hits both sides of each such ratio alike.

:func:`side_by_side` is the report's table: per cell of the sweep's other axes, each kind's median latency
and its ratio to the base kind, the median of the per-round ratios pooled over the cell's runs, with a
bootstrap CI over those rounds.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pandas as pd

from .stats import bootstrap_ci, min_runs_for, ok_rows

MAX_ROUNDS = 64  # a row keeps each kind's per-round times; the worker keeps lists of up to 64 values
PREFIX = "set."


def kinds(set_kinds: str) -> list[str]:
    """The kinds of a ``set_kinds`` string, in order (the first is the base of the ratios)."""
    return [k.strip() for k in str(set_kinds).split(",")]


def check(params: dict, known: Sequence[str], built: Sequence[str], packages: dict) -> None:
    """Refuse unknown, repeated or unbuilt kinds (naming the package) and too many rounds, before any run."""
    names = kinds(params["set_kinds"])
    if len(names) < 2:
        raise ValueError(f"set_kinds needs at least two kinds, comma-separated, the first the baseline "
                         f"(e.g. flat,boost); got {params['set_kinds']!r}")
    for name in names:
        if name not in known:
            raise ValueError(f"set_kinds: {name!r} is not a set kind; known: {', '.join(known)}")
        if names.count(name) > 1:
            raise ValueError(f"set_kinds names {name!r} twice")
        if name not in built:
            raise ValueError(f"set_kinds: {name!r} is not in this build of hugebench._core (it has "
                             f"{', '.join(built)}): apt-get install {packages[name]}, then rebuild with "
                             f"pip install --no-build-isolation .")
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


def report_metrics(params: dict) -> tuple:
    """The main table's columns: each kind's latency, then each other kind's ratio to the first."""
    names = kinds(params.get("set_kinds") or DEFAULT_KINDS)
    base = names[0]
    columns = [(f"{PREFIX}{n}.ns_per_lookup", f"{n} ns", ".1f") for n in names]
    columns += [(f"{PREFIX}{n}.vs_base", f"{n}/{base}", ".3f") for n in names[1:]]
    return tuple(columns) + (("peak_rss_bytes", "Peak RSS", "bytes"),)


def primary(params: dict) -> tuple:
    base = kinds(params.get("set_kinds") or DEFAULT_KINDS)[0]
    return f"{PREFIX}{base}.ns_per_lookup", f"{base} ns", ".1f", "lower"


DEFAULT_KINDS = "flat,robin,absl,boost,node"


def side_by_side(df: pd.DataFrame, axes: Sequence[str], level: float = 0.95, n_boot: int = 2000,
                 seed: int = 0) -> pd.DataFrame:
    """Per cell of ``axes`` and kind: runs, median ns, median insert s, and the ratio to the base kind with its CI.

    The ratio pools the per-round ratios of all the cell's runs; ``resolved`` is False where the CI holds 1,
    None for the base kind or too few rounds.
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
            pooled = np.concatenate([round_ratios(r, name, names[0]) for r in cell.to_dict("records")] or [[]])
            is_base = name == names[0]
            lo, hi = (math.nan, math.nan) if is_base else bootstrap_ci(pooled, level=level, n_boot=n_boot, seed=seed)
            resolved = None
            if not is_base and not math.isnan(lo):
                resolved = False if lo <= 1.0 <= hi else (True if pooled.size >= min_runs_for(level) else None)
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
    headers = [*(a.capitalize() for a in shown), "Set kind", "n", "rounds", "ns/lookup", "insert s",
               f"vs base [{level:.0%} CI]", "resolved"]
    body = []
    for row in table.to_dict("records"):
        if row["set_kind"] == row["base"]:
            ratio, verdict = "base", ""
        elif math.isnan(row["ratio.ci_lo"]):
            ratio, verdict = f"{row['ratio']:.3f}", ""
        else:
            ratio = f"{row['ratio']:.3f} [{row['ratio.ci_lo']:.3f}, {row['ratio.ci_hi']:.3f}]"
            verdict = {True: "yes", False: "no", None: "too few rounds"}[row["resolved"]]
        body.append([*(format_axis(row[a]) for a in shown), row["set_kind"], row["n"], row["rounds"],
                     f"{row['ns_per_lookup']:.1f}", f"{row['insert_s']:.2f}", ratio, verdict])
    title = ("Set kinds side by side (one process per run; each ratio is the median of the per-round ratios "
             "to the base kind, pooled over the cell's runs)")
    return [(title, display_frame(headers, body), table)]
