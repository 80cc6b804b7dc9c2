"""The local sweep: the host lock, the preflight, the machine's kernel state, and the one loop that records
rows (:func:`record_runs`, also the cluster client's), resume and progress.

Each run is :func:`hugebench.run.execute.run_one` (a fresh ``python -m hugebench.run.worker`` process); whatever
happens to it (crash, signal, timeout, OOM kill, bad reply) becomes one row with a ``status`` and the sweep
goes on. Every finished row is appended to the store at once, so an interrupted sweep loses nothing and a
re-run resumes where it stopped. A sweep on a cluster is ``hugebench.cluster``'s; the CLI picks which.
"""

from __future__ import annotations

import contextlib
import sys
import time
import warnings
from collections.abc import Callable, Iterable, Mapping, Set
from dataclasses import dataclass, field
from pathlib import Path

from hugebench.errors import HugebenchError
from hugebench.experiment.cluster import ClusterConfig
from hugebench.experiment.model import ExperimentSpec, PerfSetting
from hugebench.kernel.host import LOCAL, Host
from hugebench.measure import disturbance
from hugebench.run.execute import run_one
from hugebench.run.rows import now
from hugebench.run.rundir import remove_stale_run_dirs
from hugebench.stats import adaptive
from hugebench.store import ResultStore, StoreWarning, columnar
from hugebench.sweep.plan import RunSpec
from hugebench.sweep.plan import block as plan_block
from hugebench.sweep.preflight import prepare
from hugebench.system import SweepLock, SystemState, default_lock_paths
from hugebench.system.containment import end_leftovers, record_dir

# progress(run, row, done, total): a custom front end's view of the sweep
ProgressHook = Callable[[RunSpec, dict, int, int], None]
# batches(spec, runs, read_rows, plan_block) -> the run lists to run, one after the other: who decides the
# runs after the plan (stats.adaptive.batches; `try`'s budget schedule)
BatchSource = Callable[
    [ExperimentSpec, list[RunSpec], Callable[[], Iterable[Mapping]], Callable],
    Iterable[list[RunSpec]],
]
# execute_runs(todo) -> (run, row) of each run, in whatever order they finish (this machine, or a cluster)
RunExecutor = Callable[[list[RunSpec]], Iterable[tuple[RunSpec, dict]]]


@dataclass
class SweepOptions:
    """How to run a planned sweep (CLI flags land here)."""

    out: Path
    quiet: bool = False
    perf: PerfSetting | None = None  # None: from the spec; "off"/"auto"/list overrides it
    host: Host = LOCAL
    journal: Path | None = None
    python: str = sys.executable
    progress: ProgressHook | None = None  # for custom front ends
    spec_source: str = "FILE"  # named in the fix of a privilege error
    lock: Path | None = None  # the host-wide sweep lock (default: system.default_lock_path)
    cluster: ClusterConfig | None = None  # the CLI then runs it with hugebench.cluster
    quiet_machine: float | None = (
        None  # seconds to wait, before each block, for a quiet machine (disturbance)
    )
    label: str | None = (
        None  # the user's label of this sweep, kept in its context (hugebench history)
    )
    # who decides the runs after the plan (default: adaptive.batches; ``hugebench try`` passes its budget
    # schedule, hugebench.trial.schedule)
    batches: BatchSource | None = None


@dataclass
class SweepResult:
    sweep_id: str
    out: Path
    rows_written: int = 0
    skipped_done: int = 0
    failed: int = 0
    wall_s: float = 0.0
    worker_wall_s: float = 0.0
    statuses: dict = field(default_factory=dict)


def run_sweep(spec: ExperimentSpec, runs: list[RunSpec], options: SweepOptions) -> SweepResult:
    """Preflight everything, then run every planned run not already in the store, on this machine."""
    with SweepLock(options.lock or default_lock_paths(options.host), f"experiment {spec.name!r}"):
        return _run_locked(spec, runs, options)


def _run_locked(spec: ExperimentSpec, runs: list[RunSpec], options: SweepOptions) -> SweepResult:
    end_stale_runs(
        options.journal
    )  # first: whatever this sweep then refuses, a dead one's processes end
    store = ResultStore(options.out)
    setup = prepare(spec, runs, store, options)
    store.check_writable()  # a planted runs.jsonl or plots link is refused before any knob is touched
    store.write_context(
        setup.sweep_id, {**setup.context, **({"label": options.label} if options.label else {})}
    )
    disturbance.warn_if_busy(options.host, options.quiet_machine)
    gate = disturbance.QuietGate(options.quiet_machine, options.host)
    with SystemState(options.host, options.journal) as state:

        def execute_runs(todo):
            for run in todo:
                waited = gate(run)
                yield run, {**run_one(run, setup, state, options), **waited}

        result = SweepResult(setup.sweep_id, Path(options.out))
        # The planned runs, then, with repetitions: auto, blocks of the cells still too wide (hugebench.stats.adaptive).
        batches = (options.batches or adaptive.batches)(spec, runs, store.follow(), plan_block)
        total = adaptive.max_runs(spec, runs) - len(setup.done & {r.run_id for r in runs})
        return record_runs(store, batches, setup.done, execute_runs, options, result, total)


def record_runs(
    store: ResultStore,
    batches: Iterable[list[RunSpec]],
    done: Set[str],
    execute_runs: RunExecutor,
    options: SweepOptions,
    result: SweepResult,
    total: int,
    context_ids: tuple[str, ...] = (),
) -> SweepResult:
    """The one loop of every sweep, local or on a cluster: for each batch of runs (one batch: the plan; a
    generator may add more as results come in), hand the runs the store lacks to ``execute_runs(todo)`` (an
    iterator of ``(run, row)``, in whatever order they finish) and append each row at once. At the end, the
    end fields go into each context (``context_ids``, default the sweep's own; a cluster sweep has one per
    machine, whose worker wall time is that machine's rows'). ``total``: the runs the progress bar expects."""
    started = time.perf_counter()
    worker_wall = dict.fromkeys(context_ids or (result.sweep_id,), 0.0)
    reporter = _progress(options, total)
    try:
        for batch in batches:
            todo = [r for r in batch if r.run_id not in done]
            result.skipped_done += len(batch) - len(todo)
            reporter.pending(todo)
            for run, row in execute_runs(todo):
                store.append(row)
                _tally(result, row)
                if row["sweep_id"] in worker_wall:
                    worker_wall[row["sweep_id"]] += row.get("wall_s") or 0.0
                reporter(run, row, result.rows_written)
    finally:
        reporter.close()
        result.wall_s = time.perf_counter() - started
        failing = sys.exc_info()[1] is not None
        for sweep_id in context_ids or (result.sweep_id,):
            try:
                store.update_context(
                    sweep_id,
                    ended_at=now(),
                    sweep_wall_s=result.wall_s,
                    worker_wall_s_sum=worker_wall[sweep_id],
                    rows_written=result.rows_written,
                )
            except HugebenchError as exc:
                if not failing:
                    raise
                # the sweep is already failing (e.g. the disk is full): its error is the one to show
                warnings.warn(
                    f"the end of sweep {sweep_id} was not recorded: {exc}",
                    StoreWarning,
                    stacklevel=2,
                )
        if not failing:  # the next load() reads Parquet, not the new JSON lines (a store it cannot
            with contextlib.suppress(HugebenchError, OSError):  # write is read from the journal)
                columnar.build(store.runs_path)
    return result


def _tally(result: SweepResult, row: dict) -> None:
    result.rows_written += 1
    result.worker_wall_s += row.get("wall_s") or 0.0
    result.statuses[row["status"]] = result.statuses.get(row["status"], 0) + 1
    if row["status"] != "ok":
        result.failed += 1


def end_stale_runs(journal) -> list[dict]:
    """Before a sweep: end every process and remove every run directory a dead sweep left (killed with -9,
    its runs could not end themselves); warn about the processes."""
    remove_stale_run_dirs()
    ended = end_leftovers(record_dir(journal))
    killed = sum(e["killed"] for e in ended)
    if killed:
        owners = ", ".join(sorted({str(e["owner_pid"]) for e in ended}))
        warnings.warn(
            f"ended {killed} process(es) left running by a sweep that died (pid {owners})",
            stacklevel=2,
        )
    return ended


class _NullProgress:
    def __call__(self, run, row, done):
        pass

    def pending(self, runs):
        pass

    def close(self):
        pass


def _progress(options: SweepOptions, total: int):
    if options.progress is not None:
        fn = options.progress

        class _Custom(_NullProgress):
            def __call__(self, run, row, done):
                fn(run, row, done, total)

        return _Custom()
    if options.quiet:
        return _NullProgress()
    from hugebench.sweep.progress import RichProgress

    return RichProgress(total)
