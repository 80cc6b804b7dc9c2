"""How ``hugebench try`` spends its budget: which runs of the experiment's plan it makes, in what order, and
when it stops. Every run is one the plan names (same ids as ``hugebench sweep`` of the file would make).

1. One run of as-is (block 0) tells how long a run takes and how much memory it uses. Block 0 is every
   configuration's **warm-up**: run and recorded, never paired (:func:`.race.paired_only`). If fewer than
   two configurations x :data:`FIRST_DROP` runs (the warm-up and :data:`MIN_BLOCKS` pairs) fit in what is
   left of the budget, try refuses (:class:`BudgetTooSmall`). The
   configurations likely to win go first (:func:`likely_first`: those asking for huge pages when as-is's
   memory is well beyond the 4 KiB TLB's reach); if not every configuration fits beside the confirmation's
   reserve, the plan is cut, and says which were left out and what budget covers them. When the budget
   allows, every configuration runs once first (:meth:`Schedule._screen`) and the cut keeps the ones that
   measured best; otherwise it keeps the first ones in that order.
2. **Selection**: interleaved blocks (one run of each active configuration, in the plan's seeded order).
   After :data:`MIN_BLOCKS` pairs a configuration *clearly worse* (:func:`clearly_worse`) than as-is or
   than the leader is dropped; one whose runs all failed is dropped after its first block. Every ratio to
   as-is is a confidence sequence (:mod:`.sequential`) at ``alpha / K`` for the K configurations kept
   (Bonferroni), so looking after every block and picking the best are both paid for. Selection ends when
   the leader's interval excludes 1 (:func:`.race._resolved`), every configuration left shows no difference
   worth deploying (:func:`no_difference`), no configuration but as-is is left, or the next block would eat
   the confirmation's reserve.
3. **Confirmation**: the leader, when it is ahead of as-is, and as-is run on in fresh pairs (blocks from
   ``Progress.confirm_from``), judged on those pairs by the verdict's one interval
   (:func:`.race.the_interval`: their confidence sequence at ``alpha``, widened by the drift seen in every
   pair of the two), until it excludes 1, shows no difference worth deploying, or the budget ends: it stops
   as soon as the answer is firm (``Progress.answered_s``). The verdict's effect is this one.

**Back to back** (``regime.follows_itself``: ``back-to-back``, ``warm``), each timed run follows an
untimed *lead-in* run of its own configuration (:func:`lead_in`), not whichever configuration the
interleaving put before it: deployed, a job run again at once follows itself, and the free 2 MiB blocks its
previous run left are what its huge-page faults meet (the heap program: jemalloc with THP 1.0-1.8 s after
its own run, 2.2-4.6 s after another's, so the interleaved try said 1.47x as-is where the deployed line,
timed by hyperfine, ran at 0.58x: a resolved verdict of the wrong sign, docs/try.md). The pairs stay
interleaved in time; a back-to-back run costs two.

With ``try --aged`` the configurations come in groups, one per memory state, each with its own as-is
(``bases``): every rule above holds within a group (a fragmented configuration is compared with as-is on a
fragmented machine, dropped by it or by its group's leader), the first block runs every group's as-is, a cut
keeps whole configurations (all their states), each group confirms its own leader, and the schedule stops
when every group has its answer.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

import numpy as np

from hugebench import stats
from hugebench.errors import HugebenchError
from hugebench.stats import sequential, stability
from hugebench.sweep.plan import RunSpec, content_hash
from hugebench.system import regime
from hugebench.trial import sizes
from hugebench.trial.race import (
    MIN_BLOCKS,
    PAIRED_FROM,
    _resolved,
    as_frame,
    better_ratio,
    clearly_worse,
    leader,
    no_difference,
    paired_only,
    steadiness,
    the_interval,
    values_of,
)
from hugebench.trial.runs import (
    CPU_COLUMN,
    HUGE_FIRST_BYTES,
    likely_first,
    memory_of,
    window,
    with_cpu,
)

RESOLVE_BLOCKS = stats.min_runs_for(
    0.95
)  # blocks the leader and as-is are planned for beyond MIN_BLOCKS
CONFIRM_PAIRS = 10  # fresh pairs the selection leaves room for (7 all one way resolve at 95 %)
FIRST_DROP = (
    PAIRED_FROM + MIN_BLOCKS
)  # runs of a configuration before it can be dropped: warm-up, pairs
MAX_BLOCKS = 200  # a sanity bound: far beyond any budget's worth of a short program
END_RESERVE_S = 4.0  # the verdict, the report and the store's last writes, inside the budget
NO_DIFFERENCE = (
    "no difference worth deploying: every configuration left is within the smallest effect of as-is"
)
RESERVE_REACHED = "selection ended where the confirmation's reserve begins"


OUTPUT_LINES = 6  # the end of a failed run's output shown with try's error (a server's own reason)


def output_end(tail) -> str:
    """The last lines of a failed run's output (the program's, or a server's and its driver's), indented:
    a server that refuses to start says why there (PostgreSQL as root), and that reaches the terminal."""
    if not isinstance(tail, str):
        return ""
    lines = [ln.rstrip() for ln in tail.splitlines() if ln.strip()]
    return "\n".join(f"  {ln}" for ln in lines[-OUTPUT_LINES:])


class BudgetTooSmall(HugebenchError):
    """The budget cannot give two configurations their first blocks."""

    exit_code = 2


@dataclass
class Progress:
    """What the schedule knows now: shown on the progress line and kept for the verdict."""

    started: float
    budget_s: float
    run_s: float | None = None  # one run's cost (the timing run), then the median seen
    kept: list = field(default_factory=list)  # cell ids of the (possibly cut) plan
    cut: list = field(default_factory=list)  # cell ids left out to fit the budget
    cover_s: float | None = None  # the budget that would have kept every configuration
    # the configurations likely to win (huge pages for a program beyond runs.HUGE_FIRST_BYTES), in keep
    # order, and (seconds a kept configuration costs, seconds the rest costs): what budget holds n of them
    likely: list = field(default_factory=list)
    keep_cost: tuple[float, float] | None = None
    screened: list = field(
        default_factory=list
    )  # cell ids run once before the cut chose (screening)
    dropped: dict = field(default_factory=dict)  # cell id -> why (clearly worse, failed)
    active: list = field(default_factory=list)
    leader: str | None = None
    leader_ratio: stats.Ratio | None = None
    blocks: int = 0  # selection blocks
    stopped: str = ""  # why the selection ended
    costs: list = field(default_factory=list)
    answered: dict = field(default_factory=dict)  # a group's as-is -> why its selection ended
    leaders: dict = field(
        default_factory=dict
    )  # a group's as-is -> (its leader, the leader's ratio)
    alphas: dict = field(default_factory=dict)  # a group's as-is -> each selection interval's alpha
    confirm_from: int | None = None  # the first block of the confirmation (fresh pairs)
    confirmed: dict = field(default_factory=dict)  # a group's as-is -> how its confirmation ended
    confirm_pairs: int = 0  # confirmation blocks run
    answered_s: float | None = (
        None  # seconds from the start to the last group's answer (resolved or none)
    )
    lead_ins: int = 0  # untimed runs a back-to-back timed run followed (:func:`lead_in`)

    def stopped_for(self, base: str) -> str:
        """Why the selection of the group of ``base`` ended (the whole schedule's reason when it was not its
        own)."""
        return self.answered.get(base) or self.stopped

    def left_s(self) -> float:
        return self.budget_s - (time.monotonic() - self.started) - END_RESERVE_S


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
        huge: Iterable[str] = (),
        page_sizes: Mapping[str, tuple[float, str]] | None = None,
    ):
        self.order, self.base, self.metric, self.better = order, base, metric, better
        # cell id -> the as-is it is compared with (one group per as-is; one group unless try --aged)
        self.bases = dict(bases) if bases else {cell: base for cell in order}
        self.groups = list(dict.fromkeys(self.bases[c] for c in order))
        self.huge = set(huge)  # the configurations that ask for huge pages (likely_first)
        self.page_sizes = dict(page_sizes or {})  # cell id -> (rank, name): sizes.same_folios
        self.state = Progress(started, budget_s)
        self.on_change = on_change or (lambda state: None)
        self._warm: dict = {}  # cell id -> its warm-up runs not run yet
        self._lead: set = set()  # the configurations whose timed runs follow their own run
        self._last: str | None = None  # the configuration of the last run made
        self._rows: Callable = lambda: []

    def __call__(self, spec, runs, read_rows: Callable, plan_block: Callable):
        rows = (lambda: with_cpu(read_rows())) if self.metric == CPU_COLUMN else read_rows
        self._rows = rows
        # each configuration's warm-up runs (its verification: the probe says which malloc served, its
        # folios what pages it got), run just before its first timed run, so a cut one never pays for them
        for run in runs:
            if getattr(run, "warmup", False):
                self._warm.setdefault(run.cell_id, []).append(run)
            if regime.follows_itself(getattr(run, "regime", None)):
                self._lead.add(run.cell_id)
        timing = list(
            plan_block(spec, 0, set(self.groups))
        )  # every group's as-is: what a run costs
        yield from self._timed(timing)
        screen = self._screen(rows())
        if screen:  # one run of each, before the cut chooses which to keep by what they did
            for run in [r for r in plan_block(spec, 0, set(screen)) if r.cell_id in screen]:
                yield from self._timed([run])
            self.state.screened = screen
            self._same_folios(rows())
        self._cut(rows())
        start = yield from self._select(spec, rows, plan_block)
        yield from self._confirm(spec, rows, plan_block, start)

    def _select(self, spec, rows: Callable, plan_block: Callable):
        """The selection's blocks; returns the first block index the confirmation may use."""
        state = self.state
        for block in range(MAX_BLOCKS):
            todo = self._block_todo(spec, block, plan_block, set())
            if not self._fits(todo, self._reserve_s()) and (
                not self._fits(todo) or self._confirmation_due()
            ):  # the reserve is for a leader ahead of as-is; while there is none, it selects on
                state.stopped = state.stopped or (
                    RESERVE_REACHED if self._fits(todo) else "budget ended"
                )
                return block if block else 1
            ran: set[str] = set()
            while todo:
                for run in todo:
                    if run.cell_id not in state.active:  # dropped at its warm-up meanwhile
                        continue
                    if state.left_s() < (state.run_s or 0):
                        state.stopped = "budget ended"
                        return block + 1
                    yield from self._timed([run])
                    ran.add(run.cell_id)
                # a configuration promoted in a dropped one's place (:meth:`_promote`) runs this block too
                todo = self._block_todo(spec, block, plan_block, ran)
            state.blocks = block + 1
            if self._decide(window(rows(), 0, block + 1), block + 1):
                return block + 1
        state.stopped = f"{MAX_BLOCKS} blocks"
        return MAX_BLOCKS

    def _block_todo(self, spec, block: int, plan_block: Callable, ran: set) -> list:
        """The runs of ``block`` the active configurations still need (not those in ``ran``)."""
        state = self.state
        todo = [
            r
            for r in plan_block(spec, block, set(state.active))
            if r.cell_id in state.active and r.cell_id not in ran
        ]
        if block == 0:  # as-is's (and the screened configurations') block 0 ran before the cut
            done = set(self.groups) | set(state.screened)
            todo = [r for r in todo if r.cell_id not in done]
        return todo

    def _confirm(self, spec, rows: Callable, plan_block: Callable, start: int):
        """Fresh pairs of each group's leader and its as-is, judged on those pairs alone (at ``ALPHA``)."""
        state = self.state
        state.confirm_from = start
        todo = {}
        for base in self.groups:
            why = self._why_no_confirmation(base)
            if why:
                state.confirmed[base] = why
            else:
                todo[base] = state.leaders[base][0]
        for block in range(start, start + MAX_BLOCKS):
            if not todo:
                return
            cells = set(todo) | set(todo.values())
            runs = [r for r in plan_block(spec, block, cells) if r.cell_id in cells]
            if not self._fits(runs):
                break
            yield from self._timed(runs)
            state.confirm_pairs += 1
            seen = window(rows(), 0, block + 1)
            for base, lead in list(todo.items()):
                done = self._confirmation_ended(seen, start, lead, base)
                if done:
                    state.confirmed[base] = done
                    del todo[base]
        for base in todo:
            state.confirmed[base] = f"budget ended after {state.confirm_pairs} fresh pairs"

    def _confirmation_due(self) -> bool:
        """Whether some group has a leader ahead of its as-is (the confirmation would run now)."""
        return any(self._why_no_confirmation(base) is None for base in self.groups)

    def _why_no_confirmation(self, base: str) -> str | None:
        """Why a group's leader is not confirmed (nothing to confirm, or not ahead of as-is), else None."""
        lead, ratio = self.state.leaders.get(base, (None, None))
        answered = self.state.answered.get(base)
        if answered == NO_DIFFERENCE or lead is None or ratio is None:
            return f"not run: {answered or 'no configuration was compared with as-is'}"
        if not better_ratio(ratio.value, self.better) < 1:
            return "not run: no configuration was ahead of as-is in the selection"
        return None

    def _confirmation_ended(self, rows: list, start: int, lead: str, base: str) -> str | None:
        """How the confirmation of ``lead`` ended (None: go on), on the verdict's one interval
        (:func:`.race.the_interval`: the fresh pairs from block ``start``, widened by the drift of every
        pair so far): the confirmation stops as soon as the answer is firm, and on what the verdict says."""
        got = the_interval(rows, lead, base, self.metric, start, self.better)
        if got is None:
            return None
        fresh = as_frame(window(rows, start), self.metric)
        steady = [steadiness(fresh, c, self.metric) for c in (lead, base)]
        ratio = got[0]
        if stability.equivalent(ratio, *steady):
            return self._answered("no difference worth deploying")
        if _resolved(ratio):
            side = "better" if better_ratio(ratio.value, self.better) < 1 else "worse"
            return self._answered(f"resolved {side}")
        return None

    def _answered(self, how: str) -> str:
        """``how``, with the moment the answer was reached kept (``Progress.answered_s``)."""
        self.state.answered_s = time.monotonic() - self.state.started
        return how

    def _reserve_s(self) -> float:
        """What the confirmation needs: :data:`CONFIRM_PAIRS` pairs in every group."""
        return CONFIRM_PAIRS * 2 * len(self.groups) * (self.state.run_s or 0) * self._lead_factor()

    def _lead_factor(self) -> float:
        """Runs made per timed run, on average over the configurations: a back-to-back one's timed runs
        each follow a lead-in (:func:`lead_in`), so its runs cost two."""
        return 1.0 + len(self._lead & set(self.order)) / max(1, len(self.order))

    def _led(self, batch: list) -> list:
        """``batch`` with a lead-in just before each back-to-back run that would not follow a run of its
        own configuration."""
        out = []
        for run in batch:
            if run.cell_id in self._lead and self._last != run.cell_id:
                out.append(lead_in(run))
                self.state.lead_ins += 1
            out.append(run)
            self._last = run.cell_id
        return out

    def _timed(self, batch):
        begun, ran = time.monotonic(), len(batch)
        warm = [w for r in batch for w in self._warm.pop(r.cell_id, [])]
        if (
            warm
        ):  # the configurations' first runs: untimed, their evidence read before any timed run
            yield warm
            ran += len(warm)
            self._last = warm[-1].cell_id
            self._after_warmup(self._rows(), {w.cell_id for w in warm})
            batch = [r for r in batch if r.cell_id not in self.state.dropped]
        if batch:
            led = self._led(batch)
            ran += len(led) - len(batch)  # a lead-in is a run: ``run_s`` is the cost of one run
            yield led
        if ran:
            self.state.costs.append((time.monotonic() - begun) / ran)
            self.state.run_s = float(np.median(self.state.costs))

    def _after_warmup(self, rows: list, cells: set) -> None:
        """Drop, right after its warm-up run, a configuration whose verification failed (the allocator did
        not take: no timed run would measure it) or that asks for huge pages and got as-is's pages
        (:func:`sizes.same_pages_as_is`); a configuration the cut left out takes a dropped one's place
        while the selection is young, so that the budget goes to the ones that got huge pages."""
        state = self.state
        for cell in sorted(cells - set(self.groups) - set(state.dropped), key=self.order.index):
            failed = next(
                (
                    r
                    for r in rows
                    if r.get("cell_id") == cell and r.get("status") not in (None, "ok")
                ),
                None,
            )
            if failed is not None:
                state.dropped[cell] = (
                    f"its verification run failed: {failed.get('error') or 'failed'}"
                )
            elif cell in self.huge and cell not in self.page_sizes:
                why = sizes.same_pages_as_is(rows, cell, self.bases[cell])
                if why:
                    state.dropped[cell] = why + " (dropped after that one run)"
            if cell in state.dropped and cell in state.active:
                state.active.remove(cell)
                self._promote(cell)
        self._same_folios(rows)

    def _promote(self, dropped: str) -> None:
        """The first configuration the cut left out in ``dropped``'s group (its regime, or its memory
        state), kept instead of it when it was dropped at its first run (while the selection has not
        passed its first block). With two regimes, the default where the machine reports free pages,
        this was skipped: the heap program's one kept configuration (glibc's hugetlb tunable, 0% on huge
        pages) was dropped in both and the try ended after 30 s of 180, "no configuration but as-is
        left"."""
        state = self.state
        if not state.cut or state.blocks >= 1:
            return
        group = self.bases.get(dropped)
        cell = next((c for c in state.cut if self.bases.get(c) == group), None)
        if cell is not None:
            state.cut.remove(cell)
            state.kept.append(cell)
            state.active.append(cell)

    def _screen(self, rows: list) -> list[str]:
        """The configurations to run once before the cut, or none. When the budget cannot keep every
        configuration, choosing which by a fixed order (:func:`likely_first`) can keep only ones that do
        nothing for the program (glibc's hugetlb tunable for a program whose 256 KiB blocks each get their
        own mmap, issue 40's heap program, while jemalloc with THP was cut); one run of each is the
        cheapest measurement that ranks them. Screened when that run still leaves every kept configuration
        its blocks and the confirmation's reserve; with memory states (--aged) never (a cut keeps whole
        configurations across states)."""
        state = self.state
        if len(self.groups) != 1:
            return []
        run_s = max(state.run_s or 1.0, 1e-3) * self._lead_factor()
        fit = int(state.left_s() // run_s)
        least, candidates = 2, [c for c in self.order if c not in self.groups]
        extra = least * (RESOLVE_BLOCKS - MIN_BLOCKS) + CONFIRM_PAIRS * least
        warm = self._warmups()  # a kept configuration's warm-up (verification) runs come first
        if (fit + 1 - extra) // (FIRST_DROP + warm) >= len(self.order):
            return []  # every configuration fits: nothing to choose
        if fit - (1 + warm) * len(candidates) - CONFIRM_PAIRS * least < least * (FIRST_DROP - 1):
            return []  # the screening would eat what the kept ones need
        return candidates

    def _screened_order(self, rows: list) -> list[str]:
        """As-is, then the screened configurations by their one run's ratio to as-is's first run (the
        better first; one whose run failed or gave no value last)."""
        base = self.groups[0]
        values = values_of(rows, [base, *self.state.screened], self.metric)
        ref = next((v for v in values[base] if v), None)

        def key(cell):
            got = [v for v in values[cell] if v is not None and np.isfinite(v)]
            if not got or not ref:
                return (1, 0.0)
            return (0, better_ratio(got[0] / ref, self.better))

        return [base, *sorted(self.state.screened, key=key)]

    def _cut(self, rows: list) -> None:
        state = self.state
        for base in self.groups:
            if not values_of(rows, [base], self.metric)[base]:
                failed = next(
                    (r for r in rows if r.get("cell_id") == base and r.get("status") != "ok"), None
                )
                why = (failed or {}).get("error") or "no value of the metric"
                said = output_end((failed or {}).get("stdout_tail"))
                raise HugebenchError(
                    f"the first run of as-is did not succeed ({why}); nothing to compare against"
                    + (f"; its own output ends:\n{said}" if said else "")
                )
        groups = len(self.groups)
        run_s = max(state.run_s or 1.0, 1e-3) * self._lead_factor()  # a timed run and its lead-in
        fit = int(state.left_s() // run_s) + groups  # the timing runs are as-is's block 0
        least = 2 * groups  # as-is and one configuration in every group
        if fit < least * FIRST_DROP:
            raise BudgetTooSmall(self._too_small(fit, least))
        extra = least * (RESOLVE_BLOCKS - MIN_BLOCKS) + CONFIRM_PAIRS * least
        if (
            state.screened
        ):  # block 0 of every configuration ran: each kept one needs FIRST_DROP - 1 more
            order = [c for c in self._screened_order(rows) if c not in state.dropped]
            fit -= groups
            keep = max(least, min(len(order), (fit - extra) // (FIRST_DROP - 1)))
        else:
            order = likely_first(self.order, self.huge, memory_of(rows, self.groups[0]), groups)
            order = [c for c in order if c not in state.dropped]
            each = FIRST_DROP + self._warmups()  # a kept configuration's warm-up runs come first
            keep = max(least, min(len(order), (fit - extra) // each))
        keep -= keep % groups  # whole configurations: every memory state of each (kept together)
        state.kept, state.cut = order[:keep], order[keep:]
        state.active = list(state.kept)
        if state.cut:  # the budget that would have kept them all, by the same rule
            each_s = (FIRST_DROP + self._warmups()) * run_s
            rest_s = (extra - groups) * run_s + END_RESERVE_S + (time.monotonic() - state.started)
            state.cover_s = len(order) * each_s + rest_s
            if not state.screened:  # chosen by memory, not by a run: the huge-page ones likely win
                state.keep_cost = (each_s, rest_s)
                big = memory_of(rows, self.groups[0]) or 0
                state.likely = (
                    [c for c in order if c in self.huge] if big >= HUGE_FIRST_BYTES else []
                )
        for base in self.groups:
            kept = sum(1 for c in state.kept if self.bases[c] == base and c != base)
            # the screening chose among all it ran: the selection pays for every one of them
            state.alphas[base] = sequential.selection_alpha(max(kept, len(state.screened)))

    def _warmups(self) -> int:
        """Warm-up runs a configuration that has not run yet costs (its verification runs)."""
        return max((len(w) for w in self._warm.values()), default=0)

    def _too_small(self, fit: int, least: int) -> str:
        state, groups = self.state, len(self.groups)
        run_s = state.run_s
        assert run_s is not None  # the timing run priced a run before any fit
        each = run_s * self._lead_factor()
        need = (
            least * (FIRST_DROP + self._warmups()) * each
            + END_RESERVE_S
            + (time.monotonic() - state.started)
            - groups * each
        )
        who = (
            "two configurations need"
            if groups == 1
            else f"two configurations in each of {groups} regimes or memory states need"
        )
        return (
            f"one run takes {state.run_s:.1f} s; the budget of {state.budget_s:.0f} s fits "
            f"about {fit} run(s), and {who} at least {least * FIRST_DROP} ({FIRST_DROP} "
            f"each: a warm-up and {MIN_BLOCKS} pairs): give --budget {int(need) + 1}s or more"
        )

    def _fits(self, todo: list, reserve_s: float = 0.0) -> bool:
        runs = len(todo) + sum(r.cell_id in self._lead for r in todo)  # with their lead-ins
        return self.state.left_s() - reserve_s >= runs * (self.state.run_s or 0)

    def _decide(self, rows: list, blocks: int) -> bool:
        """After a block: drop what is clearly worse or failing, pick each group's leader; True to stop."""
        state = self.state
        self._same_folios(rows)
        values = values_of(rows, state.active, self.metric)
        timed = {r.get("cell_id") for r in rows if not r.get("warmup")}
        for cell in list(
            state.active
        ):  # (one not run yet is not failed: promoted in a block's last run)
            if cell not in self.groups and cell in timed and not stats.finite(values[cell]).size:
                state.dropped[cell] = "every run failed"
        values = values_of(paired_only(rows), state.active, self.metric)  # warm-ups judge nothing
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
        if reasons == [NO_DIFFERENCE]:  # a firm answer: nothing to confirm
            self._answered(NO_DIFFERENCE)
        return True

    def _same_folios(self, rows: list) -> None:
        """Drop a page-size configuration whose first run got the same folios as a kept one."""
        active = [c for c in self.page_sizes if c not in self.state.dropped]
        same = sizes.same_folios(rows, {c: self.page_sizes[c] for c in active})
        self.state.dropped.update(same)

    def _decide_group(self, rows: list, values: dict, base: str, blocks: int) -> None:
        """One group's part of :meth:`_decide`: its leader, what it drops, and whether it is answered."""
        state = self.state
        alpha = state.alphas.get(base, sequential.ALPHA)
        members = [c for c in state.active if self.bases[c] == base and c not in state.dropped]
        frame = as_frame(rows, self.metric)  # once for every question below: the race's columns
        lead, lead_ratio = leader(frame, members, base, self.metric, self.better, alpha)
        state.leaders[base] = (lead, lead_ratio)
        for cell in members:
            if cell in (base, lead):
                continue
            for ref, name in ((base, "as-is"), (lead, "the leader")):
                if ref and clearly_worse(values[cell], values[ref], self.better):
                    state.dropped[cell] = (
                        f"clearly worse than {name} after {blocks - PAIRED_FROM} pairs (and a warm-up)"
                    )
                    break
        members = [c for c in members if c not in state.dropped]
        if len(members) < 2:
            state.answered[base] = "no configuration but as-is left"
            return
        steady = [steadiness(frame, c, self.metric) for c in (lead, base) if c]
        if _resolved(lead_ratio) and not stability.equivalent(lead_ratio, *steady):
            state.answered[base] = "the leader's ratio to as-is is resolved"
        elif no_difference(frame, members, base, self.metric, alpha):
            state.answered[base] = NO_DIFFERENCE


def lead_in(run: RunSpec) -> RunSpec:
    """The untimed run of ``run``'s configuration made just before it, so that a back-to-back timed run
    follows its own configuration's run as a job run again at once does (``regime.follows_itself``):
    its own id, a warm-up (stored, never paired or counted), not probed (the program as deployed)."""
    return dataclasses.replace(
        run, run_id=content_hash([run.run_id, "lead-in"]), warmup=True, lead_in=True
    )
