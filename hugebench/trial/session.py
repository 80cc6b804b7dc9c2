"""One ``hugebench try``, start to verdict: refuse what cannot work, plan the matrix, write the experiment
file, run it through the ordinary load -> plan -> sweep path with the budget's schedule, build the verdict.

The parts it calls are their own modules (see the package's docstring); the CLI (hugebench/cli/try_.py)
only parses options and prints.
"""

from __future__ import annotations

import dataclasses
import math
import os
import re
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from hugebench.errors import HugebenchError, SpecError
from hugebench.kernel.host import LOCAL, Host
from hugebench.system.regime import MAX_IDLE_S
from hugebench.trial import matrix as matrix_mod
from hugebench.trial import options
from hugebench.trial import sizes as sizes_mod
from hugebench.trial.matrix import Request
from hugebench.trial.runs import CPU_COLUMN
from hugebench.trial.schedule import END_RESERVE_S, MIN_BLOCKS, BudgetTooSmall, Schedule
from hugebench.trial.verdict_types import Ratio, Session, Verdict

MIN_BUDGET_S = (
    10.0  # below this not even two configurations' first blocks of the shortest program fit
)
EXPERIMENT_FILE = "experiment.yaml"


@dataclass
class Outcome:
    verdict: Verdict
    plan_lines: list
    out: Path
    experiment_file: Path
    runs: int


def refuse(request: Request) -> None:
    """The refusals a try makes before anything runs: program missing, static or setuid (LD_PRELOAD would
    not take), a budget too small, a server without its ready condition."""
    from hugebench.machine.elf import why_preload_cannot_take
    from hugebench.machine.program import resolve, user_path

    if not request.argv:
        raise SpecError("give the program to try after --: hugebench try -- PROGRAM ARGS...")
    if request.budget_s < MIN_BUDGET_S:
        raise BudgetTooSmall(
            f"--budget {request.budget_s:g}s is too small for two configurations; give at least "
            f"{MIN_BUDGET_S:g}s (the default is 10m)"
        )
    cwd = os.path.abspath(request.cwd or ".")
    if not os.path.isdir(cwd):
        raise SpecError(f"--cwd {request.cwd}: not a directory")
    path_env = user_path(request.env)
    measured = request.server.split()[0] if request.server else request.argv[0]
    for program in dict.fromkeys([request.argv[0], measured]):
        path, why = resolve(program, path_env, cwd)
        if path is None:
            raise SpecError(f"cannot try {program}: {why}")
    found = resolve(measured, path_env, cwd)[0]  # found: the loop above refused a missing program
    why = why_preload_cannot_take(found, path_env, cwd) if found is not None else None
    if why:
        raise SpecError(f"cannot try {measured}: {why}; an allocator cannot be preloaded into it")
    if request.stdin and not os.path.isfile(os.path.join(cwd, request.stdin)):
        raise SpecError(f"--stdin {request.stdin}: not a readable file")
    if request.ready and not request.server:
        raise SpecError(
            "--ready says when the --server takes requests: give --server CMD with it, or leave it out"
        )
    if request.aged_level is not None and not request.aged:
        raise SpecError("--aged-level is the fragmented state of --aged: give --aged with it")
    if not (math.isfinite(request.idle_s) and 0 <= request.idle_s <= MAX_IDLE_S):
        raise SpecError(f"--idle {request.idle_s:g}: give the seconds of idle, 0 to {MAX_IDLE_S:g}")


def refuse_idle(request: Request, cells: list) -> None:
    """A cold regime idles ``--idle`` seconds before each run: refused when the budget cannot hold the
    first blocks of two configurations that way (it would sleep past the budget with no verdict)."""
    if not any(str(cell.get("regime", "")).startswith("cold") for cell in cells):
        return
    runs = 2 * MIN_BLOCKS
    least = runs * request.idle_s + END_RESERVE_S
    if least > request.budget_s:
        most = max(0.0, (request.budget_s - END_RESERVE_S) / runs)
        raise BudgetTooSmall(
            f"--idle {request.idle_s:g}: each cold run idles {request.idle_s:g} s first, and two "
            f"configurations need at least {runs} runs ({least:.0f} s); the budget of "
            f"{request.budget_s:.0f} s cannot hold them: give --idle {int(most)} or less, or "
            f"--budget {int(least) + 1}s or more"
        )


def default_name(request: Request) -> str:
    program = os.path.basename(request.server.split()[0] if request.server else request.argv[0])
    return request.name or ("try-" + re.sub(r"[^A-Za-z0-9._-]", "-", program))[:90]


def run_try(
    request: Request,
    out: Path | None = None,
    started: float | None = None,
    echo: Callable[[str], None] = lambda line: None,
    host: Host = LOCAL,
) -> Outcome:
    """Refuse or plan, run within the budget, and return the verdict."""
    started = time.monotonic() if started is None else started
    refuse(request)
    mx = matrix_mod.build(request, host)
    refuse_idle(request, mx.cells)
    if len(mx.cells) < 2:
        raise HugebenchError(
            "only as-is can run here (no other allocator installed and no THP mode this user "
            "may set): nothing to compare; install libjemalloc2 or run as root"
        )
    name = default_name(request)
    out = Path(out or Path("results") / name)
    timeout = max(5.0, request.budget_s / (2 * MIN_BLOCKS))
    data = matrix_mod.experiment(request, mx, name, timeout)
    spec, runs = options.checked(data, _header(request, None))  # refused here: nothing written yet
    path = options.write(data, out / EXPERIMENT_FILE, _header(request, None))
    for note in mx.notes:  # after every refusal: a refused try prints its error alone
        echo(f"note: {note}")
    return _run(request, mx, data, spec, runs, path, out, started, echo, host)


def _page_size_cells(ids: list, cells: list, names: dict, bases: dict) -> dict:
    """The page-size configurations (THP always and the size sets, at the as-is allocator) the schedule
    may find redundant by their folios (trial.sizes.same_folios); none with memory states (--aged)."""
    if len(set(bases.values())) != 1:
        return {}
    return {
        cid: (-1.0 if cid == ids[0] else sizes_mod.rank(cell), names[cid])  # as-is is never dropped
        for cid, cell in zip(ids, cells)
        if cell.get("allocator") == "as-is" and (cell.get("mthp") or cell.get("thp") == "always")
    }


def _run(request, mx, data, spec, runs, path, out, started, echo, host) -> Outcome:
    from hugebench.sweep.orchestrator import SweepOptions, run_sweep
    from hugebench.workloads import get

    ids = _cell_ids(runs, mx.cells)
    base = ids[0]
    wall, _, _, better = get("command").primary_for(spec.params)
    metric = CPU_COLUMN if request.metric == "cpu" else wall
    names = {
        cid: matrix_mod.describe(cell, mx.thp_found, mx.linked) for cid, cell in zip(ids, mx.cells)
    }
    bases = _bases(ids, mx.cells)
    huge = [cid for cid, cell in zip(ids, mx.cells) if matrix_mod.uses_huge_pages(cell)]
    schedule = Schedule(
        ids,
        base,
        metric,
        better,
        request.budget_s,
        started,
        bases=bases,
        huge=huge,
        page_sizes=_page_size_cells(ids, mx.cells, names, bases),
    )
    progress = _progress_line(schedule, names, echo, better)
    echo(
        f"trying {len(ids)} configurations of {' '.join(request.argv)} within {request.budget_s:.0f} s; "
        f"baseline: {' and '.join(names[b] for b in dict.fromkeys(bases.values()))} (as-is); results in {out}"
    )
    result = run_sweep(
        spec,
        runs,
        SweepOptions(
            out=out,
            quiet=True,
            spec_source=str(path),
            host=host,
            batches=schedule,
            progress=progress,
        ),
    )
    state = schedule.state
    data = {**data, "repetitions": max(1, state.blocks)}
    options.write(data, path, _header(request, state))
    plan_lines = _plan_lines(state, names, result, started, request.budget_s)
    from hugebench.workloads.command.checks import guarded

    guards = guarded(spec.params)
    verdict = _verdict(out, spec, ids, mx, metric, better, state, wall, guards)
    by_state = verdict.states()
    if by_state:  # the whole try's line once; each state's own cut under its verdict
        plan_lines = plan_lines[:1]
        plans = {
            name: _cut_lines(state, names, [c for c in ids if c in (each.cells or ())])
            for name, each in by_state.items()
        }
        verdict = with_state_plans(verdict, plans)
        from hugebench.trial.regimes import disagreement

        verdict = dataclasses.replace(verdict, disagreement=disagreement(verdict))
    verdict = with_session(
        verdict,
        program=list(request.argv),
        results=str(out),
        experiment_file=str(path),
        runs=result.rows_written,
        wall_s=round(time.monotonic() - started, 1),
        budget_s=request.budget_s,
        plan=plan_lines,
    )
    return Outcome(verdict, plan_lines, out, path, result.rows_written)


def with_state_counts(verdict: Verdict, cells: list[str], rows) -> Verdict:
    """A memory state's (or regime's) verdict with its cells and the number of its rows."""
    runs = int(rows["cell_id"].isin(list(cells)).sum())
    return dataclasses.replace(verdict, cells=tuple(cells), runs=runs)


def by_condition(each: dict[str, Verdict], axis: str) -> Verdict:
    """The try's verdict with --aged or --regime: the first state's, with every state's under ``axis``."""
    return dataclasses.replace(next(iter(each.values())), by_condition=(axis, dict(each)))


def with_state_plans(verdict: Verdict, plans: dict[str, list[str]]) -> Verdict:
    """Each state's verdict with its own plan lines (what the cut left out among its configurations)."""
    axis, each = verdict.by_condition or ("", {})
    each = {k: dataclasses.replace(v, plan=tuple(plans[k])) for k, v in each.items()}
    return dataclasses.replace(verdict, by_condition=(axis, each))


def with_session(verdict: Verdict, **keys) -> Verdict:
    """The verdict with the whole try's keys (:class:`~.verdict_types.Session`)."""
    keys.update(program=tuple(keys["program"]), plan=tuple(keys["plan"]))
    return dataclasses.replace(verdict, session=Session(**keys))


# The axes a try measures every configuration under, each value with its own verdict (--aged, --regime).
CONDITION_AXES = ("memory_state", "regime")


def _condition(cell: dict) -> str | None:
    """The cell's condition (a memory state or a regime), None without --aged or --regime."""
    return next((cell[a] for a in CONDITION_AXES if a in cell), None)


def _bases(ids: list[str], cells: list[dict]) -> dict[str, str]:
    """Each configuration's as-is: the first cell (as-is) in the same condition (memory state or regime)."""
    first: dict[str | None, str] = {}
    for cid, cell in zip(ids, cells):
        first.setdefault(_condition(cell), cid)
    return {cid: first[_condition(cell)] for cid, cell in zip(ids, cells)}


def _cell_ids(runs, cells) -> list[str]:
    """The plan's cell id of each matrix cell (the plan names the thp axis by its knob, thp.enabled)."""
    from hugebench.experiment import canonical_knob

    def key(cell):
        return tuple(
            sorted(
                (canonical_knob(k) if k == "thp" else k, v) for k, v in cell.items() if k != "mthp"
            )
        )

    by_cell = {key(r.cell): r.cell_id for r in runs}
    return [by_cell[key(c)] for c in cells]


def _verdict(out, spec, ids, mx, metric, better, state, wall=None, guards=()) -> Verdict:
    from hugebench.machine.textpages import text_library
    from hugebench.store import load
    from hugebench.trial import verdict as verdict_mod

    rows = load(out, hosts=False)
    rows = rows[rows["cell_id"].isin(ids)] if "cell_id" in rows.columns else rows
    try:
        library = text_library()
    except (
        Exception
    ):  # the text library is only needed for a text_pages configuration's deploy line
        library = None
    cells = dict(zip(ids, mx.cells))
    axis = next((a for a in CONDITION_AXES if any(a in c for c in mx.cells)), None)
    states = list(dict.fromkeys(c[axis] for c in mx.cells if axis in c)) if axis else []

    def build(mine: dict) -> Verdict:  # against the first cell given, as-is of its state
        inputs = verdict_mod.VerdictInputs(
            rows=rows,
            cells=mine,
            base_id=next(iter(mine)),
            metric=metric,
            better=better,
            spec=spec,
            thp_found=mx.thp_found,
            state=state,
            text_library=library,
            wall=wall,
            linked=mx.linked,
            guards=guards,
        )
        return verdict_mod.build(inputs)

    if not states or axis is None:  # (states come from the axis)
        return build(cells)
    # --aged / --regime: one verdict per state, each against as-is in the same state (as-is comes first)
    each = {}
    for memory in states:
        mine = {cid: cell for cid, cell in cells.items() if cell[axis] == memory}
        each[memory] = with_state_counts(build(mine), list(mine), rows)
    return by_condition(each, axis)


def _progress_line(schedule, names, echo, better):
    from hugebench.trial.render import effect

    def progress(run, row, done, total):
        state = schedule.state
        used = time.monotonic() - state.started
        leaders = (
            [(lead, ratio) for lead, ratio in state.leaders.values() if lead]
            if len(state.leaders) > 1
            else [(state.leader, state.leader_ratio)]
            if state.leader
            else []
        )
        lead = (
            "leader: " + "; ".join(f"{names[c]} {effect(_ratio(r), better)}" for c, r in leaders)
            if leaders
            else "leader: none yet"
        )
        status = "" if row.get("status") == "ok" else f" [{row.get('status')}]"
        echo(
            f"[{used:5.0f}s/{state.budget_s:.0f}s] run {done}: {names.get(run.cell_id, run.cell_id)}{status}; {lead}"
        )

    return progress


def _ratio(r) -> Ratio | None:
    from hugebench.trial.verdict import _ratio_dict

    return _ratio_dict(r)


def _plan_lines(state, names, result, started, budget_s) -> list[str]:
    confirm = f"; confirmation: {state.confirm_pairs} fresh pairs" if state.confirm_pairs else ""
    took = (  # the answer was firm (resolved, or no difference) when the schedule stopped: how soon
        f", resolved in {state.answered_s:.0f} s"
        if state.answered_s is not None
        else f" in {time.monotonic() - started:.0f} s"
    )
    lines = [
        f"{result.rows_written} runs{took} of a {budget_s:.0f} s budget "
        f"(one run ~{state.run_s or 0:.1f} s); selection: {state.blocks} blocks, stopped: "
        f"{state.stopped or 'plan done'}{confirm}; warm-up: each configuration's first run, not paired"
        + (
            f"; back to back: each timed run right after an untimed run of its own configuration "
            f"({state.lead_ins} lead-ins)"
            if state.lead_ins
            else ""
        )
    ]
    return lines + _cut_lines(state, names, list(names))


def _cut_lines(state, names, ids: list[str]) -> list[str]:
    """The plan cut, among ``ids`` (one memory state's configurations with --aged, else all of them): what
    was left out and the budget that would have kept it."""
    cut = [c for c in ids if c in state.cut]
    if not cut:
        return []
    kept = [c for c in ids if c in state.kept]
    cover = f"; --budget {int(state.cover_s) + 1}s would cover them" if state.cover_s else ""
    likely = [c for c in state.likely if c in cut and c not in state.dropped]
    if likely and state.keep_cost:  # issue 55: the ones the evidence favours come first, by name
        each_s, rest_s = state.keep_cost
        # as the cut counts them: every kept configuration of every memory state or regime
        hold_s = (
            len(state.kept) + len([c for c in state.likely if c in state.cut])
        ) * each_s + rest_s
        rest = [c for c in cut if c not in likely]
        return [
            f"plan cut to fit the budget: {len(kept)} of {len(kept) + len(cut)} configurations run; "
            f"likely winners left out (huge pages, for a program this large): "
            f"{', '.join(names[c] for c in likely)}; --budget {int(hold_s) + 1}s would hold them"
            + (f"; also left out: {', '.join(names[c] for c in rest)}{cover}" if rest else "")
            + f" (at ~{state.run_s or 0:.1f} s a run)"
        ]
    if state.screened:
        return [
            f"plan cut to fit the budget after one run of each configuration: the {len(kept)} "
            f"best of {len(kept) + len(cut)} kept (with as-is); left after that run: "
            f"{', '.join(names[c] for c in cut)}{cover} (at ~{state.run_s or 0:.1f} s a run)"
        ]
    return [
        f"plan cut to fit the budget: {len(kept)} of {len(kept) + len(cut)} configurations run; "
        f"left out: {', '.join(names[c] for c in cut)}{cover} (at ~{state.run_s or 0:.1f} s a run)"
    ]


def _header(request: Request, state) -> str:
    import shlex

    text = (
        f"Written by: hugebench try -- {shlex.join(request.argv)}\n"
        "`hugebench sweep` of this file re-runs the same cells with the same run ids: into the same results\n"
        "directory it skips every run try made and adds only those try's budget left out."
    )
    if state is not None:
        text += (
            f"\nrepetitions: the {state.blocks} blocks try reached for its leader and as-is; configurations "
            "try dropped or cut have fewer there."
        )
    return text
