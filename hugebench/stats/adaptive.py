"""Adaptive repetitions (``repetitions: {auto: {min, max, target}}``): which cells get another block, and when to stop.

The rule, a pure function of the values measured so far (:func:`next_cells`):

* blocks ``0 .. min-1`` are whole blocks, exactly as fixed repetitions;
* before block ``r`` (``min <= r < max``) a cell is *too wide* when the 95% bootstrap CI of its median
  (``stats.bootstrap_ci``, the report's own interval) is wider than ``target`` x its median, or when it has a
  single value; a cell with no successful run is never repeated (it fails or was skipped: more runs of it
  cannot narrow anything);
* block ``r`` holds the too-wide cells plus their *partners* (the baseline cell each is compared with in the
  report, the other side of each ``expected:`` ratio), in the block's seeded order with the ids plain fixed
  repetitions give block ``r``: every extra run has a partner measured next to it in time, so paired ratios
  keep using all of it, and a resumed sweep finds the runs it already did;
* no cell too wide, or ``r == max``: stop. A cell never gets more than ``max`` runs (one per block).

Stopping looks at precision only, never at whether a difference looks significant: stopping when a ratio's
CI first excludes 1 would pick the moment noise happens to look like an effect, and inflates false positives.
Decisions for block ``r`` read only runs of blocks ``< r``, so a resumed sweep makes the same ones.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

from hugebench.stats import bootstrap_ci, finite


def relative_width(values: Sequence[float], level: float = 0.95) -> float:
    """Width of the bootstrap CI of the median over the median (inf when it cannot be known: < 2 values, 0)."""
    data = finite(values)
    if data.size < 2:
        return math.inf
    lo, hi = bootstrap_ci(data, np.median, level)
    median = float(np.median(data))
    return (hi - lo) / abs(median) if median else math.inf


def too_wide(
    values_by_cell: Mapping[str, Sequence[float]], target: float, level: float = 0.95
) -> list[str]:
    """Cells (ids) whose median's CI is wider than ``target`` x the median; cells without any value are left out."""
    return [
        cell
        for cell, values in values_by_cell.items()
        if finite(values).size and relative_width(values, level) > target
    ]


def next_cells(
    values_by_cell: Mapping[str, Sequence[float]],
    rule: Mapping,
    block: int,
    partners: Mapping[str, Iterable[str]] | None = None,
    level: float = 0.95,
) -> list[str]:
    """The cells block ``block`` runs (empty: stop). ``values_by_cell`` holds every planned cell's values from
    blocks before ``block``; ``rule`` is the spec's ``adaptive`` ({min, max, target})."""
    if block < rule["min"]:
        return list(values_by_cell)
    if block >= rule["max"]:
        return []
    wide = too_wide(values_by_cell, rule["target"], level)
    chosen = set(wide)
    for cell in wide:
        chosen.update(
            p for p in (partners or {}).get(cell, ()) if finite(values_by_cell.get(p, ())).size
        )
    return [cell for cell in values_by_cell if cell in chosen]  # in plan order


def values_by_cell(
    rows: Iterable[Mapping], cell_ids: Sequence[str], metric: str, before: int
) -> dict[str, list]:
    """Each planned cell's ``metric`` values from successful, non-warm-up runs of blocks ``< before``."""
    values: dict[str, list] = {cell: [] for cell in cell_ids}
    for row in rows:
        rep = row.get("repetition")
        if (
            row.get("cell_id") in values
            and row.get("status", "ok") == "ok"
            and not row.get("warmup")
            and isinstance(rep, (int, float, np.number))
            and not isinstance(rep, bool)
            and 0 <= rep < before
        ):
            values[row["cell_id"]].append(row.get(metric))
    return values


def partners_of(spec, runs: Sequence) -> dict[str, set]:
    """cell id -> the cells its numbers are compared with: its baseline cell and the other side of each claim."""
    ids: dict[str, dict] = {}
    for run in runs:
        ids.setdefault(run.cell_id, run.cell)
    out: dict[str, set] = {cell_id: set() for cell_id in ids}

    def find(cell: Mapping) -> str | None:
        return next((cid for cid, c in ids.items() if c == cell), None)  # the very cell, no other

    if spec.baseline:
        for cell_id, cell in ids.items():
            base = find({**cell, **spec.baseline})
            if base and base != cell_id:
                out[cell_id].add(base)
                out[base].add(cell_id)
    for claim in spec.expected.claims if spec.expected else ():
        a, b = find(claim["cell"]), find(claim["vs"]) if claim.get("vs") else None
        if a and b:
            out[a].add(b)
            out[b].add(a)
    return out


def batches(
    spec, runs: list, read_rows: Callable[[], Iterable[Mapping]], plan_block: Callable
) -> Iterator[list]:
    """The planned ``runs``, then (``repetitions: auto`` only) one block at a time while cells are too wide.

    ``read_rows()`` returns the store's rows as they are now; ``plan_block(spec, r, cell_ids)`` the runs of
    block r for those cells (``plan.block``).
    """
    yield runs
    if spec.adaptive is None:
        return
    rule = spec.adaptive.to_dict()  # as the report reads it from the context file
    cell_ids = list(dict.fromkeys(r.cell_id for r in runs if not r.warmup))
    partners = partners_of(spec, runs)
    for block in range(spec.repetitions, rule["max"]):
        chosen = next_cells(
            values_by_cell(read_rows(), cell_ids, rule["metric"], block), rule, block, partners
        )
        if not chosen:
            return
        yield plan_block(spec, block, set(chosen))


def max_runs(spec, runs: list) -> int:
    """Most runs the sweep can make: ``runs`` plus every adaptive block up to ``max`` (an upper bound)."""
    cells = len({r.cell_id for r in runs if not r.warmup})
    return len(runs) + (cells * (spec.adaptive.max - spec.repetitions) if spec.adaptive else 0)


def describe(values: Mapping[str, Sequence[float]], rule: Mapping, level: float = 0.95) -> str:
    """One line for the report: runs per cell and how many cells reached the target or stopped at max."""
    counts = [finite(v).size for v in values.values()]
    if not counts:
        return ""
    tight = sum(
        1 for v in values.values() if finite(v).size and relative_width(v, level) <= rule["target"]
    )
    at_max = sum(1 for n in counts if n >= rule["max"])
    return (
        f"repetitions auto (min {rule['min']}, max {rule['max']}, target: 95% CI of the median of "
        f"{rule['metric']} within {rule['target']:.0%} of it): {min(counts)}-{max(counts)} runs per cell "
        f"({sum(counts)} in all); {tight} of {len(counts)} cells within the target, {at_max} stopped at max."
    )
