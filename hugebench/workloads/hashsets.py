"""The ``hashsets`` workload's Python side: every set kind side by side in one process (csrc/workloads/hashsets.h).

One run builds each kind of ``set_kinds`` from the same keys, then times rounds of lookups in which every kind
takes one chunk. Its row holds, per kind, ``set.<kind>.ns_per_lookup``, ``.insert_s``, ``.round_ns`` (ns per
lookup of the kind's chunk in each round) and ``set.<kind>.vs_base``: the median over rounds of the kind's chunk
time over the first kind's chunk time in the same round. A drift of the machine between runs, or within a run
over more than a round, hits both sides of each such ratio alike.

:func:`side_by_side` computes the report's table, declared as :data:`SIDE_BY_SIDE`: per cell of the sweep's
other axes, each kind's median latency and its ratio to the base kind, the median of the per-round ratios
pooled over the cell's runs, with a CI that resamples runs and then rounds (:func:`two_level_ci`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import numpy as np
    import pandas as pd

from hugebench.workloads.base import (
    STARTUP_S,
    Column,
    Param,
    RatioCI,
    TableSection,
    Workload,
    register,
)
from hugebench.workloads.sets import (
    HASH_PARAM,
    KEY_PARAMS,
    SEED_PARAM,
    SET_INSERT_NS,
    SET_KINDS,
    SET_LOOKUP_NS,
    check_built,
    peak_bytes,
    set_scale,
)

DEFAULT_KINDS = "flat,robin,absl,boost,node"
MAX_ROUNDS = (
    64  # a row keeps each kind's per-round times; the worker keeps lists of up to 64 values
)
PREFIX = "set."
# numpy and pandas are imported where used: a worker imports every workload module, and most never need them.


def kinds(set_kinds: str) -> list[str]:
    """The kinds of a ``set_kinds`` string, in order (the first is the base of the ratios)."""
    return [k.strip() for k in str(set_kinds).split(",")]


def check(params: dict, known: Sequence[str]) -> None:
    """Refuse unknown or repeated kinds and too many rounds, before any run (unbuilt kinds: the registry's check)."""
    names = kinds(params["set_kinds"])
    if len(names) < 2:
        raise ValueError(
            f"set_kinds needs at least two kinds, comma-separated, the first the baseline "
            f"(e.g. flat,boost); got {params['set_kinds']!r}"
        )
    for name in names:
        if name not in known:
            raise ValueError(f"set_kinds: {name!r} is not a set kind; known: {', '.join(known)}")
        if names.count(name) > 1:
            raise ValueError(f"set_kinds names {name!r} twice")
    if params["rounds"] > MAX_ROUNDS:
        raise ValueError(
            f"rounds must be at most {MAX_ROUNDS} (each kind's per-round times are kept in the row), "
            f"got {params['rounds']}"
        )
    if params["rounds"] > (params["lookups"] or params["keys"]):
        raise ValueError(f"rounds ({params['rounds']}) must not exceed the lookups per kind")


def round_ratios(row: dict, kind: str, base: str) -> np.ndarray:
    """Per round: the kind's chunk ns over the base kind's (NaN-free)."""
    import numpy as np

    a = np.asarray(row.get(f"{PREFIX}{kind}.round_ns") or [], dtype=float)
    b = np.asarray(row.get(f"{PREFIX}{base}.round_ns") or [], dtype=float)
    if a.size == 0 or a.size != b.size:
        return np.array([])
    keep = np.isfinite(a) & np.isfinite(b) & (b > 0)
    return a[keep] / b[keep]


def metrics(row: dict) -> dict:
    """``set.<kind>.vs_base`` per kind; raises when a kind missed a key (a broken table, not a measurement)."""
    import numpy as np

    names = list(row.get("kinds") or [])
    sizes = {row.get(f"{PREFIX}{n}.set_size") for n in names}
    if len(sizes) > 1:
        raise RuntimeError(
            f"the set kinds hold different numbers of keys: {sorted(map(str, sizes))}"
        )
    out = {}
    for name in names:
        found, lookups = row.get(f"{PREFIX}{name}.found"), row.get(f"{PREFIX}{name}.lookups")
        if found != lookups:
            raise RuntimeError(
                f"set kind {name!r} found {found} of the {lookups} keys it was asked for, all inserted"
            )
        ratios = round_ratios(row, name, names[0])
        out[f"{PREFIX}{name}.vs_base"] = float(np.median(ratios)) if ratios.size else math.nan
    return out


def _kinds_of(params: dict) -> list[str]:
    """The file's set_kinds, or the default where the file has none (or makes it an axis)."""
    return kinds(params.get("set_kinds") or DEFAULT_KINDS)


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


def two_level_ci(
    per_run: Sequence[np.ndarray], level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """CI of the median of pooled per-round ratios that resamples runs, then rounds within each run.

    Rounds of one run share that run's key layout and pages, so they are not independent draws: resampling
    only rounds would give a CI as narrow as one run's, however much runs disagree. Runs first keeps the
    between-run spread in the interval. NaN with fewer than two ratios.
    """
    import numpy as np

    runs = [np.asarray(r, dtype=float) for r in per_run if len(r)]
    if sum(r.size for r in runs) < 2:
        return math.nan, math.nan
    rng = np.random.default_rng(seed)
    stats = np.empty(n_boot)
    for b in range(n_boot):
        chosen = rng.integers(len(runs), size=len(runs))
        stats[b] = np.median(
            np.concatenate([runs[i][rng.integers(runs[i].size, size=runs[i].size)] for i in chosen])
        )
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [tail, 1.0 - tail])
    return float(lo), float(hi)


MIN_RUNS = 3  # below this many runs the between-run spread is barely seen: no verdict


def side_by_side(
    df: pd.DataFrame, axes: Sequence[str], level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> pd.DataFrame:
    """Per cell of ``axes`` and kind: runs, median ns, median insert s, and the ratio to the base kind with its CI.

    The ratio is the median of the per-round ratios pooled over the cell's runs, its CI from
    :func:`two_level_ci`; ``resolved`` is False where the CI holds 1, True where it excludes 1 over at least
    ``MIN_RUNS`` runs, None otherwise (and for the base kind).
    """
    import numpy as np
    import pandas as pd

    from hugebench.stats import ok_rows

    rows = ok_rows(df)
    if "kinds" not in rows.columns or rows.empty:
        return pd.DataFrame()
    rows = rows.assign(
        kinds=rows["kinds"].map(lambda v: ",".join(v) if isinstance(v, (list, tuple)) else str(v))
    )
    keys = [a for a in axes if a in rows.columns and a != "kinds"] + ["kinds"]
    records = []
    for key, cell in rows.groupby(keys, dropna=False, sort=True):
        key = key if isinstance(key, tuple) else (key,)
        names = kinds(key[-1])
        for name in names:
            per_run = [round_ratios(r, name, names[0]) for r in cell.to_dict("records")]
            pooled = np.concatenate(per_run or [np.zeros(0)])
            is_base = name == names[0]
            lo, hi = (math.nan, math.nan) if is_base else two_level_ci(per_run, level, n_boot, seed)
            resolved = None
            if not is_base and not math.isnan(lo):
                resolved = False if lo <= 1.0 <= hi else (True if len(cell) >= MIN_RUNS else None)
            ns = pd.to_numeric(cell.get(f"{PREFIX}{name}.ns_per_lookup"), errors="coerce")
            insert = pd.to_numeric(cell.get(f"{PREFIX}{name}.insert_s"), errors="coerce")
            records.append(
                {
                    **dict(zip(keys[:-1], key[:-1])),
                    "set_kind": name,
                    "base": names[0],
                    "n": len(cell),
                    "rounds": int(pooled.size),
                    "ns_per_lookup": float(ns.median()),
                    "insert_s": float(insert.median()),
                    "ratio": float(np.median(pooled)) if pooled.size else math.nan,
                    "ratio.ci_lo": lo,
                    "ratio.ci_hi": hi,
                    "resolved": resolved,
                }
            )
    return pd.DataFrame.from_records(records)


def _check(p: dict) -> None:
    check(p, SET_KINDS)
    for kind in kinds(p["set_kinds"]):  # an unbuilt kind or hash: refused naming its package
        check_built({"set_kind": kind, "hash": p["hash"]})


def _memory(p: dict) -> int:
    # Every kind's set alive at once over one query vector, built in the order given; +10%.
    names = [k for k in kinds(p["set_kinds"]) if k in SET_KINDS]
    order = names[::-1] if p.get("build_order") == "reversed" else names
    return int(1.1 * peak_bytes(order, p["keys"], p["key_min"], p["key_max"]))


def _time(p: dict) -> float:
    names = [k for k in kinds(p["set_kinds"]) if k in SET_KINDS]
    per_kind = p["lookups"] or p["keys"]
    insert, lookup = set_scale(p["keys"], 0.52), set_scale(p["keys"], 0.28)
    return (
        STARTUP_S
        + 1e-9 * p["keys"] * 200
        + 1e-9
        * sum(
            p["keys"] * SET_INSERT_NS[k] * insert + per_kind * SET_LOOKUP_NS[k] * lookup
            for k in names
        )
    )


SIDE_BY_SIDE = TableSection(
    title=(
        "Set kinds side by side (one process per run; each ratio is the median of the per-round ratios "
        "to the base kind, pooled over the cell's runs)"
    ),
    compute=side_by_side,
    columns=(
        Column("set_kind", "Set kind"),
        Column("n", "n"),
        Column("rounds", "rounds"),
        Column("ns_per_lookup", "ns/lookup", ".1f"),
        Column("insert_s", "insert s", ".2f"),
        RatioCI(
            "ratio",
            "vs base [{level:.0%} CI]",
            ".3f",
            base=("set_kind", "base"),
            verdict="resolved",
            undecided=f"n<{MIN_RUNS}",
        ),
    ),
    ci="two_level_ci: runs resampled, then rounds within each run",
)


WORKLOAD = register(
    Workload(
        name="hashsets",
        doc="Every set kind built from the same keys in one process, lookups interleaved by round: paired ratios.",
        params={
            "keys": Param(
                int,
                1_000_000,
                minimum=1,
                help="number of distinct random keys, the same for every kind",
            ),
            "set_kinds": Param(
                str,
                DEFAULT_KINDS,
                help="comma-separated set kinds of hashlookup, each built in this one process; "
                "the first is the base of the ratios",
            ),
            "hash": HASH_PARAM,
            "lookups": Param(int, 0, minimum=0, help="lookups per kind (0: one per key)"),
            **KEY_PARAMS,
            "rounds": Param(
                int,
                32,
                minimum=2,
                help="rounds of one chunk per kind, the kinds' order rotating (at most 64)",
            ),
            "build_order": Param(
                str,
                "listed",
                choices=("listed", "reversed"),
                help="build the sets in set_kinds' order or the reverse (the base stays the "
                "first listed)",
            ),
            "seed": SEED_PARAM,
        },
        timed_phase="lookup",
        primary_metric="set.flat.ns_per_lookup",
        memory_estimate=_memory,
        time_estimate=_time,
        check_params=_check,
        metrics_for=report_metrics,
        primary_for=primary,
        extra_metrics=metrics,
        tables=(SIDE_BY_SIDE,),
    )
)
