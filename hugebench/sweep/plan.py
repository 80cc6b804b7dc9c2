"""ExperimentSpec -> ordered list of RunSpec. Pure: no I/O; the same spec and seed give the same runs and ids.

Order. ``interleaved`` (default): repetition r is a block holding one run of every cell, shuffled with a
seed derived from (spec seed, r), so slow drift of a shared machine spreads over all cells instead of
biasing the ones that happened to run last. ``grouped``: inside each block the cells are grouped by their
kernel knob values (groups in shuffled order, cells shuffled inside a group), so THP is flipped at most
once per group per block — fewer knob flips (and less khugepaged churn after each flip) at the cost of
correlating a knob's cells in time.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field

from hugebench import experiment as spec_mod
from hugebench.experiment import (
    DEFAULT_ALLOCATOR,
    MEMORY_AXIS,
    REGIME_AXIS,
    TEXT_AXIS,
    TOOL_AXES,
    ExperimentSpec,
    is_knob,
)
from hugebench.workloads import Workload


@dataclass(frozen=True)
class RunSpec:
    """One worker run: everything the orchestrator needs, plus the ids that make resume and pairing work."""

    run_id: str
    cell_id: str
    experiment: str
    workload: str
    repetition: int  # -1 for warm-up runs
    order_index: int
    allocator: str
    params: dict  # full workload parameters (defaults filled in)
    system: dict  # kernel knobs for this run (fixed + axis), canonical names
    cell: dict  # the axis values of this cell, under their axis names (row columns)
    timeout: float
    warmup: bool = False
    # an untimed run of the configuration just before one of its timed runs (``try``'s back-to-back
    # regime: a job run again at once follows its own run, not another configuration's); never probed
    lead_in: bool = False
    memory_estimate: int | None = None
    time_estimate: float | None = None
    text_pages: str | None = (
        None  # off | thp | hugetlb | file-thp: where the program's text goes (None: untouched)
    )
    memory_state: str | None = (
        None  # fresh | fragmented:P%: the free memory it starts with (None: as found)
    )
    regime: str | None = None  # warm | cold:Ns: the conditions before it (None: as found)
    memory_limit: int | None = None  # bytes the run's processes may use together (None: no limit)
    workload_def: Workload | None = field(
        default=None, compare=False, repr=False
    )  # the spec's, as a value

    def to_dict(self) -> dict:
        """The run as plain data (the worker's request): ``workload_module`` instead of the workload itself, so
        that a worker process finds a workload registered outside hugebench by importing its module."""
        out = {k: getattr(self, k) for k in self.__dataclass_fields__ if k != "workload_def"}
        out["workload_module"] = self.workload_def.module if self.workload_def else ""
        return out


def content_hash(obj) -> str:
    """The id of a cell or run: a short hash of its content (the same content, the same id, on any machine)."""
    return hashlib.sha1(json.dumps(obj, sort_keys=True, default=str).encode()).hexdigest()[:16]


def cells(spec: ExperimentSpec) -> list[dict]:
    """All cells (axis name -> value) of the cartesian product, minus excluded ones, in YAML order."""
    return spec_mod.cells(spec)


def _cell_run(spec: ExperimentSpec, cell: dict) -> dict:
    """The content of a cell that defines what runs (its id is a hash of this)."""
    params = {name: p.default for name, p in spec.workload_def.params.items()}
    params.update(spec.params)
    system = dict(spec.system)
    for name, value in cell.items():
        if name in TOOL_AXES:
            continue
        if is_knob(name):
            system[name] = value
        else:
            params[name] = value
    allocator = cell.get("allocator", DEFAULT_ALLOCATOR)
    if spec.allocator_table[allocator].mode == "void":
        params["allocator_mode"] = (
            "void"  # harness-only run: the workload's loop without any malloc
        )
    content = {
        "workload": spec.workload,
        "allocator": allocator,
        "allocator_def": spec.allocators.get(allocator),
        "params": params,
        "system": system,
    }
    for axis in (
        TEXT_AXIS,
        MEMORY_AXIS,
        REGIME_AXIS,
    ):  # only then: cells without the axis keep the ids they always had
        if axis in cell:
            content[axis] = cell[axis]
    if (
        spec.memory_limit is not None
    ):  # a limit changes what is measured; without one, ids as before
        content["memory_limit"] = spec.memory_limit
    return content


def plan(spec: ExperimentSpec, repetitions: int | None = None) -> list[RunSpec]:
    """Expand the spec into runs: warm-ups first, then one block per repetition in seeded order.

    ``repetitions`` (default: the spec's; with ``repetitions: {auto: ...}`` the blocks always run) plans more
    or fewer blocks: block r has the same runs, ids and order whatever the number of blocks.
    """
    reps = spec.repetitions if repetitions is None else repetitions
    # the run count is checked at load (experiment.cells), -r included: it is applied before validation
    blocks = [(-1, True)] * spec.warmup + [(r, False) for r in range(reps)]
    return _runs(spec, list(enumerate(blocks)))


def block(spec: ExperimentSpec, repetition: int, cell_ids=None) -> list[RunSpec]:
    """The runs of repetition block ``repetition`` (as :func:`plan` with more blocks has them), optionally only
    those of the cells ``cell_ids``, in the block's order (adaptive repetitions add blocks this way)."""
    runs = _runs(spec, [(spec.warmup + repetition, (repetition, False))])
    return [run for run in runs if cell_ids is None or run.cell_id in cell_ids]


# the last spec expanded and its cells (try plans one block at a time)
_last_cells: list = [None, []]


def _cells_of(spec: ExperimentSpec) -> list[dict]:
    """``cells(spec)``, expanded once for the spec object a sweep plans block after block (a try's matrix
    checks thousands of axis combinations against its excludes: ~70 ms a block)."""
    if _last_cells[0] is not spec:
        _last_cells[:] = [spec, cells(spec)]
    return _last_cells[1]


def _runs(spec: ExperimentSpec, blocks: list) -> list[RunSpec]:
    workload = spec.workload_def
    base, estimates = [], {}
    for cell in _cells_of(spec):
        content = _cell_run(spec, cell)
        cell_id = content_hash(content)
        base.append((cell, content, cell_id))
        params = content["params"]  # the models are per cell: computed once, not once per run
        estimates[cell_id] = (
            workload.memory_estimate(params) if workload.memory_estimate else None,
            workload.time_estimate(params) if workload.time_estimate else None,
        )
    runs: list[RunSpec] = []
    for block_no, (rep, warm) in blocks:
        order = _block_order(base, spec, block_no)
        for position, (cell, content, cell_id) in enumerate(order):
            tag = f"w{block_no}" if warm else rep
            runs.append(
                RunSpec(
                    run_id=content_hash([cell_id, tag, spec.seed]),
                    cell_id=cell_id,
                    experiment=spec.name,
                    workload=spec.workload,
                    repetition=rep,
                    order_index=block_no * len(base) + position,
                    allocator=content["allocator"],
                    text_pages=content.get(TEXT_AXIS),
                    memory_state=content.get(MEMORY_AXIS),
                    regime=content.get(REGIME_AXIS),
                    params=content["params"],
                    system=content["system"],
                    cell=dict(cell),
                    timeout=spec.timeout,
                    memory_limit=spec.memory_limit,
                    warmup=warm,
                    memory_estimate=estimates[cell_id][0],
                    time_estimate=estimates[cell_id][1],
                    workload_def=workload,
                )
            )
    return runs


def _block_order(base: list, spec: ExperimentSpec, block_no: int) -> list:
    rng = random.Random(f"{spec.seed}:{block_no}")
    shuffled = list(base)
    rng.shuffle(shuffled)
    if spec.order != "grouped":
        return shuffled
    groups: dict[str, list] = {}
    for item in shuffled:
        groups.setdefault(json.dumps(item[1]["system"], sort_keys=True), []).append(item)
    return [item for group in groups.values() for item in group]


def summary(runs: list[RunSpec], measured: dict | None = None) -> dict:
    """Counts for ``hugebench plan``: runs, cells, kernel knobs set, knob flips between runs, largest memory
    estimate, estimated time.

    ``measured`` (cell id -> median wall seconds of runs already stored) replaces the workload's rough
    time model for the cells it knows; the price is :func:`hugebench.sweep.estimate.estimate`'s, the one source.
    """
    from hugebench.sweep.estimate import History, estimate

    measured = measured or {}
    flips = sum(1 for a, b in zip(runs, runs[1:]) if a.system != b.system)
    estimates = [r.memory_estimate for r in runs if r.memory_estimate]
    return {
        "seconds": estimate(runs, History(measured)).seconds,
        "measured_cells": len({r.cell_id for r in runs} & set(measured)),
        "runs": len(runs),
        "cells": len({r.cell_id for r in runs}),
        "warmup_runs": sum(r.warmup for r in runs),
        "knob_changes": flips,
        "knobs": sorted(
            {name for r in runs for name in r.system}
        ),  # set before the first run, fixed or not
        "max_memory_bytes": max(estimates) if estimates else None,
        "memory_state_knobs": memory_state_knobs(runs),
        "regime_knobs": regime_knobs(runs),
    }


def regime_knobs(runs: list[RunSpec]) -> dict[str, str]:
    """knob -> what the runs' regimes set it to (``system.regime.knobs_set``)."""
    from hugebench.system.regime import knobs_set

    merged: dict[str, str] = {}
    for value in dict.fromkeys(r.regime for r in runs if r.regime):
        merged.update(knobs_set(value))
    return merged


def memory_state_knobs(runs: list[RunSpec]) -> dict[str, str]:
    """knob -> what the runs' memory states set it to and for how long (``system.aging.knobs_set``);
    a knob set by several states lists each way once."""
    from hugebench.system.aging import knobs_set

    merged: dict[str, list[str]] = {}
    for value in dict.fromkeys(r.memory_state for r in runs if r.memory_state):
        for knob, how in knobs_set(value).items():
            if how not in merged.setdefault(knob, []):
                merged[knob].append(how)
    return {knob: "; ".join(hows) for knob, hows in merged.items()}
