"""How ``hugebench try`` spends its budget: which runs of the experiment's plan it makes, in what order, and
when it stops. Every run is one the plan names (same ids as ``hugebench sweep`` of the file would make).

1. One run of as-is (block 0) tells how long a run takes. If fewer than two configurations x
   :data:`MIN_BLOCKS` runs fit in what is left of the budget, try refuses (:class:`BudgetTooSmall`). If not
   every configuration fits, the plan is cut to the first ones in the matrix's keep order, and says so.
2. Interleaved blocks (one run of each active configuration, in the plan's seeded order) follow. After
   :data:`MIN_BLOCKS` blocks a configuration *clearly worse* (:func:`clearly_worse`) than as-is or than the
   leader is dropped; one whose runs all failed is dropped after its first block.
3. Blocks go on for the contenders until the leader's ratio to as-is is resolved (:func:`_resolved`), every
   configuration left shows no difference worth deploying (:func:`no_difference`: each ratio's CI within
   ``stability.SMALLEST_EFFECT`` of 1), no configuration but as-is is left, or the next block does not fit
   in the budget (then only the leader and as-is are run while a pair of them fits).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from .. import stability, stats
from ..errors import HugebenchError

MIN_BLOCKS = 3  # runs of every kept configuration before any is dropped
RESOLVE_BLOCKS = stats.min_runs_for(0.95)  # pairs a 95% verdict needs (6)
MAX_BLOCKS = 200  # a sanity bound: far beyond any budget's worth of a short program
END_RESERVE_S = 4.0  # the verdict, the report and the store's last writes, inside the budget
NO_DIFFERENCE = "no difference worth deploying: every configuration left is within the smallest effect of as-is"


class BudgetTooSmall(HugebenchError):
    """The budget cannot give two configurations their first blocks."""

    exit_code = 2


def _resolved(ratio: stats.Ratio | None, *stabilities) -> bool:
    """THE rule deciding whether the leader's effect is resolved (when try stops, what the verdict calls
    resolved): the 95% interval of its ratio to as-is excludes 1, on enough pairs (``stats.Ratio.resolved``),
    and neither cell is unstable by the one stability rule every verdict uses (``hugebench.stability.guard``:
    spread, outliers, disturbed runs)."""
    if ratio is None:
        return False
    return stability.guard(ratio.resolved is True, *stabilities)[0] is True


@dataclass
class Progress:
    """What the schedule knows now: shown on the progress line and kept for the verdict."""

    started: float
    budget_s: float
    run_s: float | None = None  # one run's cost (the timing run), then the median seen
    kept: list = field(default_factory=list)  # cell ids of the (possibly cut) plan
    cut: list = field(default_factory=list)  # cell ids left out to fit the budget
    dropped: dict = field(default_factory=dict)  # cell id -> why (clearly worse, failed)
    active: list = field(default_factory=list)
    leader: str | None = None
    leader_ratio: stats.Ratio | None = None
    blocks: int = 0
    stopped: str = ""  # why the schedule ended
    costs: list = field(default_factory=list)

    def left_s(self) -> float:
        return self.budget_s - (time.monotonic() - self.started) - END_RESERVE_S


def no_difference(rows: list, active: list, base: str, metric: str) -> bool:
    """Every configuration still running shows *no difference worth deploying* from as-is: its ratio's CI
    lies within ``stability.SMALLEST_EFFECT`` of 1 both ways (``stability.equivalent``, the one rule)."""
    others = [c for c in active if c != base]
    if not others:
        return False
    base_steady = steadiness(rows, base, metric)
    return all(stability.equivalent(ratio_to(rows, c, base, metric), steadiness(rows, c, metric), base_steady)
               for c in others)


def steadiness(rows: list, cell: str, metric: str) -> stability.Stability:
    """The stability of one configuration's runs so far, by the one rule (spread, outliers, disturbed runs)."""
    import pandas as pd

    frame = pd.DataFrame([r for r in rows if r.get("cell_id") == cell])
    return stability.cell_stability(frame, metric)


def better_ratio(ratio: float, better: str) -> float:
    """A ratio to as-is as 'smaller is better' (1/x for a higher-is-better metric)."""
    return ratio if better == "lower" else (1.0 / ratio if ratio else float("inf"))


def clearly_worse(values: Iterable[float], reference: Iterable[float], better: str) -> bool:
    """Every value of a configuration is worse than every value of the reference, with at least
    MIN_BLOCKS of each: a configuration that can at best tie gets no more of the budget."""
    a, b = stats.finite(list(values)), stats.finite(list(reference))
    if a.size < MIN_BLOCKS or b.size < MIN_BLOCKS:
        return False
    return bool(a.min() > b.max()) if better == "lower" else bool(a.max() < b.min())


def values_of(rows: Iterable[Mapping], cell_ids, metric: str) -> dict[str, list]:
    out = {c: [] for c in cell_ids}
    for row in rows:
        if row.get("cell_id") in out and row.get("status") == "ok" and not row.get("warmup"):
            out[row["cell_id"]].append(row.get(metric))
    return out


def ratio_to(rows: list, cell: str, base: str, metric: str) -> stats.Ratio | None:
    import pandas as pd

    frame = pd.DataFrame([r for r in rows if r.get("cell_id") in (cell, base) and not r.get("warmup")])
    if frame.empty or metric not in frame.columns:
        return None
    return stats.compare(frame[frame["cell_id"] == cell], frame[frame["cell_id"] == base], metric)


def leader(rows: list, active: list, base: str, metric: str, better: str) -> tuple[str | None, stats.Ratio | None]:
    """The active configuration with the best median ratio to as-is (and that ratio)."""
    best, best_ratio = None, None
    for cell in active:
        if cell == base:
            continue
        ratio = ratio_to(rows, cell, base, metric)
        if ratio is None or not np.isfinite(ratio.value):
            continue
        if best_ratio is None or better_ratio(ratio.value, better) < better_ratio(best_ratio.value, better):
            best, best_ratio = cell, ratio
    return best, best_ratio


class Schedule:
    """The batches generator a sweep runs (``SweepOptions.batches``), plus what it decided."""

    def __init__(self, order: list[str], base: str, metric: str, better: str, budget_s: float, started: float,
                 on_change: Callable | None = None):
        self.order, self.base, self.metric, self.better = order, base, metric, better
        self.state = Progress(started, budget_s)
        self.on_change = on_change or (lambda state: None)

    def __call__(self, spec, runs, read_rows: Callable, plan_block: Callable):
        state = self.state
        timing = [r for r in plan_block(spec, 0, {self.base})]
        yield from self._timed(timing)
        self._cut(read_rows())
        for block in range(MAX_BLOCKS):
            todo = [r for r in plan_block(spec, block, set(state.active)) if r.cell_id in state.active]
            if block == 0:
                todo = [r for r in todo if r.cell_id != self.base]
            if not self._fits(todo):
                todo = self._shrink(spec, block, plan_block)
                if not todo:
                    state.stopped = state.stopped or "budget ended"
                    break
            for run in todo:
                if state.left_s() < (state.run_s or 0):
                    state.stopped = "budget ended"
                    return
                yield from self._timed([run])
            state.blocks = block + 1
            if self._decide(read_rows(), block + 1):
                break
        else:
            state.stopped = f"{MAX_BLOCKS} blocks"

    def _timed(self, batch):
        begun = time.monotonic()
        yield batch
        if batch:
            self.state.costs.append((time.monotonic() - begun) / len(batch))
            self.state.run_s = float(np.median(self.state.costs))

    def _cut(self, rows: list) -> None:
        state = self.state
        if not values_of(rows, [self.base], self.metric)[self.base]:
            failed = next((r for r in rows if r.get("cell_id") == self.base and r.get("status") != "ok"), None)
            why = (failed or {}).get("error") or "no value of the metric"
            raise HugebenchError(f"the first run, as-is, did not succeed ({why}); nothing to compare against")
        fit = int(state.left_s() // max(state.run_s or 1.0, 1e-3)) + 1  # the timing run is block 0 of as-is
        if fit < 2 * MIN_BLOCKS:
            need = (2 * MIN_BLOCKS) * state.run_s + END_RESERVE_S + (time.monotonic() - state.started) \
                - state.run_s
            raise BudgetTooSmall(f"one run takes {state.run_s:.1f} s; the budget of {state.budget_s:.0f} s fits "
                                 f"about {fit} run(s), and two configurations need at least {2 * MIN_BLOCKS} "
                                 f"({MIN_BLOCKS} each): give --budget {int(need) + 1}s or more")
        keep = max(2, min(len(self.order), (fit - 2 * (RESOLVE_BLOCKS - MIN_BLOCKS)) // MIN_BLOCKS))
        state.kept, state.cut = self.order[:keep], self.order[keep:]
        state.active = list(state.kept)

    def _fits(self, todo: list) -> bool:
        return self.state.left_s() >= len(todo) * (self.state.run_s or 0)

    def _shrink(self, spec, block: int, plan_block) -> list:
        """The leader and as-is only, when a pair of them still fits."""
        state = self.state
        pair = {self.base, state.leader} if state.leader else set()
        todo = [r for r in plan_block(spec, block, pair)] if len(pair) == 2 else []
        return todo if todo and self._fits(todo) else []

    def _decide(self, rows: list, blocks: int) -> bool:
        """After a block: drop what is clearly worse or failing, pick the leader; True to stop."""
        state = self.state
        values = values_of(rows, state.active, self.metric)
        for cell in list(state.active):
            if cell != self.base and not stats.finite(values[cell]).size:
                state.dropped[cell] = "every run failed"
        state.leader, state.leader_ratio = leader(rows, [c for c in state.active if c not in state.dropped],
                                                  self.base, self.metric, self.better)
        for cell in state.active:
            if cell in (self.base, state.leader) or cell in state.dropped:
                continue
            for ref, name in ((self.base, "as-is"), (state.leader, "the leader")):
                if ref and clearly_worse(values[cell], values[ref], self.better):
                    state.dropped[cell] = f"clearly worse than {name} after {blocks} runs"
                    break
        state.active = [c for c in state.active if c not in state.dropped]
        self.on_change(state)
        if len(state.active) < 2:
            state.stopped = "no configuration but as-is left"
            return True
        steady = [steadiness(rows, c, self.metric) for c in (state.leader, self.base) if c]
        if blocks >= RESOLVE_BLOCKS and _resolved(state.leader_ratio, *steady) \
                and not stability.equivalent(state.leader_ratio, *steady):  # a resolved 2 % is no answer yet
            state.stopped = "the leader's ratio to as-is is resolved"
            return True
        if blocks >= RESOLVE_BLOCKS and no_difference(rows, state.active, self.base, self.metric):
            state.stopped = NO_DIFFERENCE
            return True
        return False
