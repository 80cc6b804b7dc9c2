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

With ``try --aged`` the configurations come in groups, one per memory state, each with its own as-is
(``bases``): every rule above holds within a group (a fragmented configuration is compared with as-is on a
fragmented machine, dropped by it or by its group's leader), the first block runs every group's as-is, a cut
keeps whole configurations (all their states), and the schedule stops when every group has its answer.
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
NO_DIFFERENCE = (
    "no difference worth deploying: every configuration left is within the smallest effect of as-is"
)


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
    answered: dict = field(
        default_factory=dict
    )  # a group's as-is -> why that group needs no more runs
    leaders: dict = field(
        default_factory=dict
    )  # a group's as-is -> (its leader, the leader's ratio)

    def stopped_for(self, base: str) -> str:
        """Why the runs of the group of ``base`` ended (the whole schedule's reason when it was not its own)."""
        return self.answered.get(base) or self.stopped

    def left_s(self) -> float:
        return self.budget_s - (time.monotonic() - self.started) - END_RESERVE_S


def no_difference(rows: list, active: list, base: str, metric: str) -> bool:
    """Every configuration still running shows *no difference worth deploying* from as-is: its ratio's CI
    lies within ``stability.SMALLEST_EFFECT`` of 1 both ways (``stability.equivalent``, the one rule)."""
    others = [c for c in active if c != base]
    if not others:
        return False
    base_steady = steadiness(rows, base, metric)
    return all(
        stability.equivalent(
            ratio_to(rows, c, base, metric), steadiness(rows, c, metric), base_steady
        )
        for c in others
    )


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

    frame = pd.DataFrame(
        [r for r in rows if r.get("cell_id") in (cell, base) and not r.get("warmup")]
    )
    if frame.empty or metric not in frame.columns:
        return None
    return stats.compare(frame[frame["cell_id"] == cell], frame[frame["cell_id"] == base], metric)


def leader(
    rows: list, active: list, base: str, metric: str, better: str
) -> tuple[str | None, stats.Ratio | None]:
    """The active configuration with the best median ratio to as-is (and that ratio)."""
    best, best_ratio = None, None
    for cell in active:
        if cell == base:
            continue
        ratio = ratio_to(rows, cell, base, metric)
        if ratio is None or not np.isfinite(ratio.value):
            continue
        if best_ratio is None or better_ratio(ratio.value, better) < better_ratio(
            best_ratio.value, better
        ):
            best, best_ratio = cell, ratio
    return best, best_ratio


class Schedule:
    """The batches generator a sweep runs (``SweepOptions.batches``), plus what it decided."""

    def __init__(
        self,
        order: list[str],
        base: str,
        metric: str,
        better: str,
        budget_s: float,
        started: float,
        on_change: Callable | None = None,
        bases: Mapping[str, str] | None = None,
    ):
        self.order, self.base, self.metric, self.better = order, base, metric, better
        # cell id -> the as-is it is compared with (one group per as-is; one group unless try --aged)
        self.bases = dict(bases) if bases else {cell: base for cell in order}
        self.groups = list(dict.fromkeys(self.bases[c] for c in order))
        self.state = Progress(started, budget_s)
        self.on_change = on_change or (lambda state: None)

    def __call__(self, spec, runs, read_rows: Callable, plan_block: Callable):
        state = self.state
        timing = [
            r for r in plan_block(spec, 0, set(self.groups))
        ]  # every group's as-is: what a run costs
        yield from self._timed(timing)
        self._cut(read_rows())
        for block in range(MAX_BLOCKS):
            todo = [
                r for r in plan_block(spec, block, set(state.active)) if r.cell_id in state.active
            ]
            if block == 0:
                todo = [r for r in todo if r.cell_id not in self.groups]
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
        for base in self.groups:
            if not values_of(rows, [base], self.metric)[base]:
                failed = next(
                    (r for r in rows if r.get("cell_id") == base and r.get("status") != "ok"), None
                )
                why = (failed or {}).get("error") or "no value of the metric"
                raise HugebenchError(
                    f"the first run of as-is did not succeed ({why}); nothing to compare against"
                )
        groups = len(self.groups)
        fit = (
            int(state.left_s() // max(state.run_s or 1.0, 1e-3)) + groups
        )  # the timing runs are as-is's block 0
        least = 2 * groups  # as-is and one configuration in every group
        if fit < least * MIN_BLOCKS:
            need = (
                least * MIN_BLOCKS * state.run_s
                + END_RESERVE_S
                + (time.monotonic() - state.started)
                - groups * state.run_s
            )
            who = (
                "two configurations need"
                if groups == 1
                else f"two configurations in each of {groups} memory states need"
            )
            raise BudgetTooSmall(
                f"one run takes {state.run_s:.1f} s; the budget of {state.budget_s:.0f} s fits "
                f"about {fit} run(s), and {who} at least {least * MIN_BLOCKS} ({MIN_BLOCKS} "
                f"each): give --budget {int(need) + 1}s or more"
            )
        keep = max(
            least, min(len(self.order), (fit - least * (RESOLVE_BLOCKS - MIN_BLOCKS)) // MIN_BLOCKS)
        )
        keep -= (
            keep % groups
        )  # whole configurations: every memory state of each (the order keeps them together)
        state.kept, state.cut = self.order[:keep], self.order[keep:]
        state.active = list(state.kept)

    def _fits(self, todo: list) -> bool:
        return self.state.left_s() >= len(todo) * (self.state.run_s or 0)

    def _shrink(self, spec, block: int, plan_block) -> list:
        """Each unanswered group's leader and as-is only, when those pairs still fit."""
        state = self.state
        pairs = set()
        for base in self.groups:
            lead = state.leaders.get(base, (None, None))[0]
            if lead and base not in state.answered:
                pairs |= {base, lead}
        todo = [r for r in plan_block(spec, block, pairs)] if pairs else []
        return todo if todo and self._fits(todo) else []

    def _decide(self, rows: list, blocks: int) -> bool:
        """After a block: drop what is clearly worse or failing, pick each group's leader; True to stop."""
        state = self.state
        values = values_of(rows, state.active, self.metric)
        for cell in list(state.active):
            if cell not in self.groups and not stats.finite(values[cell]).size:
                state.dropped[cell] = "every run failed"
        for base in self.groups:
            if base not in state.answered:
                self._decide_group(rows, values, base, blocks)
        first = state.leaders.get(self.groups[0], (None, None))
        state.leader, state.leader_ratio = first
        answered = [c for c in state.active if self.bases[c] in state.answered]
        state.active = [c for c in state.active if c not in state.dropped and c not in answered]
        self.on_change(state)
        if len(state.answered) < len(self.groups):
            return False
        reasons = list(dict.fromkeys(state.answered[b] for b in self.groups))
        state.stopped = reasons[0] if len(reasons) == 1 else "every memory state answered"
        return True

    def _decide_group(self, rows: list, values: dict, base: str, blocks: int) -> None:
        """One group's part of :meth:`_decide`: its leader, what it drops, and whether it is answered."""
        state = self.state
        members = [c for c in state.active if self.bases[c] == base and c not in state.dropped]
        lead, lead_ratio = leader(rows, members, base, self.metric, self.better)
        state.leaders[base] = (lead, lead_ratio)
        for cell in members:
            if cell in (base, lead):
                continue
            for ref, name in ((base, "as-is"), (lead, "the leader")):
                if ref and clearly_worse(values[cell], values[ref], self.better):
                    state.dropped[cell] = f"clearly worse than {name} after {blocks} runs"
                    break
        members = [c for c in members if c not in state.dropped]
        if len(members) < 2:
            state.answered[base] = "no configuration but as-is left"
            return
        steady = [steadiness(rows, c, self.metric) for c in (lead, base) if c]
        if (
            blocks >= RESOLVE_BLOCKS
            and _resolved(lead_ratio, *steady)
            and not stability.equivalent(lead_ratio, *steady)
        ):  # a resolved 2 % is no answer yet
            state.answered[base] = "the leader's ratio to as-is is resolved"
        elif blocks >= RESOLVE_BLOCKS and no_difference(rows, members, base, self.metric):
            state.answered[base] = NO_DIFFERENCE
