"""``hugebench advice NAME``: one pack run here within a budget, through the sweep's own path.

The pack's experiment (``pack.to_spec``) is planned and run by ``orchestrator.run_sweep`` exactly as
``hugebench sweep`` runs a file (knobs journaled and restored, every server started and stopped by the run,
one row per run); only who decides the blocks differs: the first block (one run of each preset's cell) is
always run, and another block follows while the time the last one took still fits in the budget, up to the
pack's ``max_repetitions``. Programs the pack needs are looked for first: a pack that cannot run here is
refused before any knob is touched, naming what is missing.
"""

from __future__ import annotations

import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from hugebench.advice.pack import Pack, load_pack, to_spec
from hugebench.errors import HugebenchError, SpecError, ToolMissingError
from hugebench.stats import min_runs_for
from hugebench.sweep.orchestrator import SweepOptions, SweepResult, run_sweep
from hugebench.sweep.plan import plan


@dataclass(frozen=True)
class Listing:
    name: str
    title: str
    presets: tuple
    claims: int
    missing: tuple  # programs it needs that are not on PATH
    verdict_s: float | None  # about how long 6 blocks take here (the fewest runs for a 95% verdict)


def listing() -> list[Listing]:
    """Every shipped pack, with what it lacks here."""
    from hugebench.advice.pack import pack_names

    out = []
    for name in pack_names():
        pack = load_pack(name)
        lacking = missing(pack)
        verdict_s = (
            None  # a pack that cannot run here is not planned (its programs are checked then)
        )
        if not lacking:
            try:
                cells = len({r.cell_id for r in plan(to_spec(pack), repetitions=1)})
                verdict_s = cells * pack.run_s * min_runs_for(0.95)
            except HugebenchError as exc:  # e.g. an allocator library this machine lacks
                lacking = (str(exc),)
        out.append(
            Listing(name, pack.title, tuple(pack.presets), len(pack.claims), lacking, verdict_s)
        )
    return out


def missing(pack: Pack, path: str | None = None) -> tuple:
    """The programs the pack needs that the user's PATH does not have."""
    search = path if path is not None else os.environ.get("PATH", os.defpath)
    return tuple(p for p in pack.needs if shutil.which(p, path=search) is None)


def budget_batches(budget_s: float, max_blocks: int, clock=time.monotonic):
    """A sweep's ``batches``: the planned first block, then block after block while the slowest block so
    far still fits in what is left of ``budget_s`` (at most ``max_blocks`` in all)."""

    def batches(spec, runs, read_rows, plan_block):
        started = clock()
        yield runs
        slowest = clock() - started
        for repetition in range(1, max_blocks):
            if clock() - started + slowest > budget_s:
                return
            begun = clock()
            yield plan_block(spec, repetition)
            slowest = max(slowest, clock() - begun)

    return batches


def run_pack(
    name: str,
    budget_s: float,
    out: Path | None = None,
    quiet: bool = False,
    params: dict | None = None,
    blocks: int | None = None,
    **sweep,
) -> tuple[Pack, SweepResult]:
    """Run pack ``name`` here within ``budget_s`` seconds; its rows go to ``out`` (default
    results/advice-<name>). ``params`` replaces some of the experiment's parameters and ``blocks`` caps the
    repetitions below the pack's ``max_repetitions`` (the tests' size);
    ``sweep``: more :class:`SweepOptions` (journal, roots)."""
    pack = load_pack(name)
    lacking = missing(pack)
    if lacking:
        raise ToolMissingError(
            f"advice pack {pack.name!r} needs {', '.join(lacking)} on PATH, which this machine "
            f"lacks; install them (the pack judges {pack.judges})"
        )
    spec = to_spec(pack, repetitions=pack.max_repetitions, params=params)
    first = plan(spec, repetitions=1)
    cells = len({r.cell_id for r in first})
    if cells * pack.run_s > budget_s:
        raise SpecError(
            f"--budget {budget_s:g}s: one run of each of the pack's {cells} cells takes about "
            f"{cells * pack.run_s:g}s here, and a verdict needs several; give at least "
            f"{_minutes(cells * pack.run_s * 3)}"
        )
    out = Path(out) if out else Path("results") / spec.name
    options = SweepOptions(
        out=out,
        quiet=quiet,
        spec_source=f"advice pack {pack.name}",
        batches=budget_batches(budget_s, min(blocks or pack.max_repetitions, pack.max_repetitions)),
        **sweep,
    )
    return pack, run_sweep(spec, first, options)


def _minutes(seconds: float) -> str:
    return f"{int(seconds // 60) + 1}m"
