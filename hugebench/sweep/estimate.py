"""How long a sweep will take: the one source of every duration hugebench prints before running.

A run is priced from the measured history of its cell when a results directory holds successful runs of it
(the median worker wall time, ``wall_s``, of those runs), otherwise from the workload's time model
(``Workload.time_estimate``); a workload without a model (``workload: command``) and without history has no
price, and the estimate says so rather than guess. Runs already stored as ``ok`` are not priced: a resumed
sweep skips them. When a stored sweep recorded its own wall time, the orchestration overhead measured there
(sweep wall time over the sum of worker wall times) scales the total. :meth:`Estimate.text` says what the
number rests on; :func:`format_duration` is the one way a duration is written.
"""

from __future__ import annotations

import os
import statistics
import warnings
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hugebench.system.aging import prepare_seconds


@dataclass(frozen=True)
class History:
    """What a results directory knows: median wall seconds per cell id, ids of finished runs, and the
    orchestration overhead factor of its sweeps (None when none recorded its end)."""

    wall_by_cell: Mapping[str, float] = field(default_factory=dict)
    done: frozenset = frozenset()
    overhead: float | None = None


@dataclass(frozen=True)
class Estimate:
    seconds: float | None  # None: some run left has neither history nor a model
    left: int  # runs still to do
    done: int  # runs of the plan already stored as ok
    from_history: int  # of the runs left, priced from stored runs of their cell
    from_model: int  # ... from the workload's model
    unpriced: int  # ... with neither
    overhead: float | None = None

    def text(self) -> str:
        """ "~3.2 min for 84 runs (all from the workload's time model)" and the like."""
        done = f"{self.done} of {self.done + self.left} runs already done; " if self.done else ""
        if self.left == 0:
            return f"{done}nothing left to run"
        if self.seconds is None:
            return (
                f"{done}unknown for {self.left} runs: {self.unpriced} have no stored runs of their cell and "
                "their workload no time model (after a first sweep, `hugebench plan -o DIR` prices them)"
            )
        return (
            f"{done}{format_duration(self.seconds)} for the {self.left} runs left ({self.basis()})"
        )

    def basis(self) -> str:
        parts = []
        if self.from_history:
            parts.append(
                f"{self.from_history} from the measured wall time of stored runs of the same cells"
            )
        if self.from_model:
            parts.append(f"{self.from_model} from the workload's time model")
        text = ", ".join(parts) if len(parts) > 1 else ("all " + parts[0].split(" ", 1)[1])
        if self.overhead:
            text += f"; x{self.overhead:.2f} orchestration overhead measured in stored sweeps"
        return text


def format_duration(seconds: float | None) -> str:
    """A duration as a person reads it: "~40 s", "~3.5 min", "~25 min", "~2.4 h"; "unknown" for None."""
    if seconds is None:
        return "unknown"
    if seconds < 60:
        return f"~{max(seconds, 1):.0f} s"
    minutes = seconds / 60
    if minutes < 10:
        return f"~{minutes:.1f} min"
    if minutes < 90:
        return f"~{minutes:.0f} min"
    return f"~{minutes / 60:.1f} h"


def estimate(runs: Iterable, history: History = History()) -> Estimate:
    """Price the runs of a plan (RunSpecs with ``run_id``, ``cell_id``, ``time_estimate``) not yet done."""
    runs = list(runs)
    left = [r for r in runs if r.run_id not in history.done]
    measured = [r for r in left if r.cell_id in history.wall_by_cell]
    modelled = [r for r in left if r.cell_id not in history.wall_by_cell and r.time_estimate]
    unpriced = len(left) - len(measured) - len(modelled)
    seconds = None
    if not unpriced:
        seconds = sum(history.wall_by_cell[r.cell_id] for r in measured) + sum(
            r.time_estimate for r in modelled
        )
        seconds *= history.overhead or 1.0
        seconds += sum(
            prepare_seconds(getattr(r, "memory_state", None)) for r in left
        )  # outside a worker's wall
    return Estimate(
        seconds,
        len(left),
        len(runs) - len(left),
        len(measured),
        len(modelled),
        unpriced,
        history.overhead,
    )


def read_history(path: str | os.PathLike) -> History:
    """The :class:`History` of a results directory (empty when there is none yet)."""
    from hugebench.store import ResultStore, measured_wall_times

    if not Path(path, "runs.jsonl").exists():
        return History()
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore"
        )  # a torn store: the report says so; an estimate uses what it can read
        store = ResultStore(path)
        ratios = [
            c["sweep_wall_s"] / c["worker_wall_s_sum"]
            for c in store.contexts().values()
            if isinstance(c.get("sweep_wall_s"), (int, float)) and c.get("worker_wall_s_sum")
        ]
        return History(
            measured_wall_times(path),
            frozenset(store.completed_run_ids()),
            statistics.median(ratios) if ratios else None,
        )
