"""Run a plan: kernel state, the worker's environment, the perf wrapper, timeouts, rows, resume, progress.

Each run is a fresh ``python -m hugebench.worker`` process; whatever happens to it (crash, signal, timeout,
OOM kill, bad reply) becomes one row with a ``status`` and the sweep goes on. Every finished row is appended
to the store at once, so an interrupted sweep loses nothing and a re-run resumes where it stopped.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from . import adaptive, kernel, workloads
from .columns import add_user_columns, clashes
from .environment import launch_argv, measured_environment, worker_environment
from .launch import Launched, oom_verdict, tail
from .measure import perf as perf_mod
from .plan import RunSpec, block as plan_block
from .setup import SweepSetup, prepare
from .errors import HugebenchError
from .store import ResultStore, StoreWarning
from .system import SweepLock, SystemState, default_lock_paths
from .system.containment import RunContainer, end_leftovers, record_dir

SCHEMA_VERSION = 1
SUPERVISOR_GRACE_S = 30.0  # a program's worker: its start-up, the server's stop and the reply, past the timeout
RUN_DIR_PREFIX = "hb-run-"  # + the sweep's pid: a dead sweep's leftovers are recognised and removed
@dataclass
class SweepOptions:
    """How to run a planned sweep (CLI flags land here)."""

    out: Path
    quiet: bool = False
    perf: object = None  # None: from the spec; "off"/"auto"/list overrides it
    sys_root: str = "/sys"
    proc_root: str = "/proc"
    journal: Path | None = None
    python: str = sys.executable
    progress: Callable | None = None  # progress(run, row, done, total) for custom front ends
    spec_source: str = "FILE"  # named in the fix of a privilege error
    lock: Path | None = None  # the host-wide sweep lock (default: system.default_lock_path)
    cluster: object = None  # a hugebench.cluster.ClusterConfig: run on Dask workers, keep the store here
    # batches(spec, runs, read_rows, plan_block) -> iterator of run lists: who decides the runs after the plan
    # (default: adaptive.batches; ``hugebench try`` passes its budget schedule, hugebench.trial.schedule)
    batches: Callable | None = None


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


def run_sweep(spec, runs: list[RunSpec], options: SweepOptions) -> SweepResult:
    """Preflight everything, then run every planned run not already in the store (here, or on the cluster
    named by ``options.cluster``)."""
    if options.cluster is not None:
        from .cluster import run_cluster_sweep

        return run_cluster_sweep(spec, runs, options)
    with SweepLock(options.lock or default_lock_paths(options.sys_root), f"experiment {spec.name!r}"):
        return _run_locked(spec, runs, options)


def _run_locked(spec, runs: list[RunSpec], options: SweepOptions) -> SweepResult:
    end_stale_runs(options.journal)  # first: whatever this sweep then refuses, a dead one's processes end
    store = ResultStore(options.out)
    setup = prepare(spec, runs, store, options)
    store.write_context(setup.sweep_id, dict(setup.context))
    with SystemState(options.sys_root, options.proc_root, options.journal) as state:
        def execute_runs(todo):
            for run in todo:
                yield run, _one_run(run, setup, state, options)

        result = SweepResult(setup.sweep_id, Path(options.out))
        # The planned runs, then, with repetitions: auto, blocks of the cells still too wide (hugebench.adaptive).
        batches = (options.batches or adaptive.batches)(spec, runs, store.rows, plan_block)
        total = adaptive.max_runs(spec, runs) - len(setup.done & {r.run_id for r in runs})
        return record_runs(store, batches, setup.done, execute_runs, options, result, total)


def record_runs(store: ResultStore, batches, done, execute_runs: Callable, options: SweepOptions,
                result: SweepResult, total: int, context_ids: tuple[str, ...] = ()) -> SweepResult:
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
                store.update_context(sweep_id, ended_at=_now(), sweep_wall_s=result.wall_s,
                                     worker_wall_s_sum=worker_wall[sweep_id], rows_written=result.rows_written)
            except HugebenchError as exc:
                if not failing:
                    raise
                # the sweep is already failing (e.g. the disk is full): its error is the one to show
                warnings.warn(f"the end of sweep {sweep_id} was not recorded: {exc}", StoreWarning, stacklevel=2)
    return result


def _tally(result: SweepResult, row: dict) -> None:
    result.rows_written += 1
    result.worker_wall_s += row.get("wall_s") or 0.0
    result.statuses[row["status"]] = result.statuses.get(row["status"], 0) + 1
    if row["status"] != "ok":
        result.failed += 1


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def base_row(run: RunSpec, sweep_id: str) -> dict:
    """The identifying columns every row has, success or failure."""
    row = {
        "schema_version": SCHEMA_VERSION, "run_id": run.run_id, "cell_id": run.cell_id, "sweep_id": sweep_id,
        "experiment": run.experiment, "workload": run.workload, "repetition": run.repetition,
        "order_index": run.order_index, "warmup": run.warmup, "status": "ok", "error": None,
        "stderr_tail": None, "started_at": _now(), "wall_s": None,
    }
    row["allocator"] = run.allocator  # also when the file has no allocator axis
    add_user_columns(row, {k: v for k, v in run.cell.items() if k != "allocator"}, "axis")
    row.update({f"param.{k}": v for k, v in run.params.items()})
    return row


def _one_run(run: RunSpec, setup: SweepSetup, state: SystemState, options: SweepOptions) -> dict:
    row = base_row(run, setup.sweep_id)
    skip = setup.skip.get(run.cell_id)
    if skip:
        row.update(status="skipped", error=skip)
        return row
    try:
        knobs = state.apply(setup.system_for(run))
    except Exception as exc:  # a knob the kernel refused fails this run, not the sweep
        row.update(status="failed", error=f"kernel state: {exc}")
        return row
    if setup.condition_memory:
        state.condition_memory(**setup.condition_memory)
    before = state.snapshot()
    row.update({f"knob.{k}": v for k, v in before.items()})
    row.update(_buddy_columns(options.proc_root))
    row.update(knobs_applied=json.dumps(knobs, sort_keys=True))
    row.update(execute(run, setup, options))
    changed = {k: (v, now) for k, v in before.items() if (now := state.snapshot().get(k)) != v}
    if changed and row["status"] == "ok":
        what = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items())
        row.update(status="disturbed", error=f"kernel settings changed during the run ({what}): "
                                             "someone else changed them; the row is kept out of statistics")
    return row


def _buddy_columns(proc_root: str) -> dict:
    """Free blocks per order over all zones before the run (huge-page supply), and free 2 MiB blocks."""
    try:
        info = kernel.read_buddyinfo(proc_root)
    except OSError:
        return {}
    orders = [sum(counts) for counts in zip(*info.get("zones", {}).values())]
    columns = {f"buddy.order{n}": count for n, count in enumerate(orders)}
    columns["buddy.free_2mib_blocks"] = info.get("free_2mib_blocks")
    return columns


def execute(run: RunSpec, setup: SweepSetup, options: SweepOptions) -> dict:
    """Launch one worker (under perf stat when enabled) in the run's own containment and turn whatever
    happens into row fields."""
    oom_before = kernel.read_vmstat(options.proc_root).get("oom_kill", 0)
    with tempfile.TemporaryDirectory(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-") as tmp, \
            RunContainer(run.run_id, record_dir(options.journal)) as container:
        request_path, reply_path = Path(tmp, "request.json"), Path(tmp, "reply.json")
        status_path, perf_out = Path(tmp, "status.json"), Path(tmp, "perf.csv")
        setup.request_for(run).write(request_path)
        worker = [options.python, "-m", "hugebench.worker", "--request", str(request_path),
                  "--reply", str(reply_path)]
        timeout, text_dir, page_cache = run.timeout, Path(tmp, "text"), {}
        if workloads.get(run.workload).runner:
            # The worker supervises a program: the allocator, perf and the text library are for the program,
            # which the worker starts the same way (see hugebench.command.runner), reporting here too. The
            # worker enforces the run's timeout on the program; this one only catches a stuck worker.
            argv = launch_argv(worker, {}, status_path)
            timeout += SUPERVISOR_GRACE_S
        else:
            if run.text_pages:
                from . import text

                text_dir.mkdir()
                page_cache = text.prepare_page_cache(os.path.realpath(options.python), run.text_pages)
            env = measured_environment(setup.allocators[run.allocator].environment(), text_pages=run.text_pages,
                                       text_dir=text_dir)
            argv = launch_argv(worker, env, status_path)
            if setup.perf and setup.perf.events:
                argv = perf_mod.perf_stat_argv(setup.perf.bin, list(setup.perf.events), str(perf_out)) + argv
        fields = _spawn(argv, worker_environment({}), timeout, tmp, status_path, container)
        fields.update(_read_reply(reply_path, fields))
        if setup.perf:
            fields.update(_perf_columns(perf_out, setup.perf.choices))
        if run.text_pages:
            fields.update(page_cache)
            fields.update(_text_columns(run.text_pages, text_dir, fields))
    fields.update(container.columns)
    return oom_verdict(fields, kernel.read_vmstat(options.proc_root).get("oom_kill", 0) - oom_before)


def _text_columns(mode: str, text_dir: Path, fields: dict) -> dict:
    """Where the program's text really was (each process's own report); a mode that did not take fails the
    run, also when everything else went well."""
    from . import text

    try:
        return text.verify(mode, text.read_reports(text_dir))
    except RuntimeError as exc:
        if fields.get("status", "ok") != "ok":
            return {}  # the run already failed for its own reason
        return {"status": "failed", "error": f"text_pages {mode}: {exc}"}


def _spawn(argv, env, timeout, cwd, status_path: Path, container: RunContainer) -> dict:
    """Run argv in its own session and the run's containment; its real end comes from hb-exec's status file
    (perf hides signals)."""
    stderr_path = Path(cwd, "stderr.txt")
    launched = Launched(argv, env, cwd, stdout=stderr_path, status_path=status_path, container=container)
    ended = launched.wait(timeout)
    fields = {"wall_s": ended.wall_s, "exit_code": ended.code, "stderr_tail": tail(stderr_path)}
    fields.update({f"worker.{k}": v for k, v in ended.status.items()})
    code = ended.code
    if ended.timed_out:
        fields.update(status="timeout", error=f"worker ran past its timeout of {timeout:g} s and was killed")
    elif code < 0 or code > 128:
        sig = -code if code < 0 else code - 128
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
        fields.update(status="crashed", error=f"worker died of signal {name}", signal=name)
    return fields


def end_stale_runs(journal) -> list[dict]:
    """Before a sweep: end every process and remove every run directory a dead sweep left (killed with -9,
    its runs could not end themselves); warn about the processes."""
    remove_stale_run_dirs()
    ended = end_leftovers(record_dir(journal))
    killed = sum(e["killed"] for e in ended)
    if killed:
        owners = ", ".join(sorted({str(e["owner_pid"]) for e in ended}))
        warnings.warn(f"ended {killed} process(es) left running by a sweep that died (pid {owners})", stacklevel=2)
    return ended


def remove_stale_run_dirs(tmp_root: str | None = None) -> list[Path]:
    """Remove the temporary run directories of sweeps that are gone (killed with -9); return them."""
    removed = []
    for path in Path(tmp_root or tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*-*"):
        pid = path.name.removeprefix(RUN_DIR_PREFIX).split("-", 1)[0]
        if pid.isdigit() and kernel.process_start_ticks(int(pid)) is None:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed


def _read_reply(path: Path, fields: dict) -> dict:
    if fields.get("status"):
        return {}
    try:
        reply = json.loads(path.read_text())
    except (OSError, ValueError):
        code = fields.get("exit_code")
        return {"status": "failed", "error": f"worker exited with code {code} without a reply"}
    if reply.get("status") != "ok":
        status = reply.get("status") if reply.get("status") in ("failed", "crashed", "timeout") else "failed"
        return {"status": status, "error": reply.get("error") or "worker reported failure",
                "stdout_tail": reply.get("output_tail"), "signal": reply.get("signal")}
    out = dict(reply["row"])
    clash = clashes(out)
    if clash:  # names are checked at load; a reply that would rewrite who the run is, or how it ended, is a bug
        return {"status": "failed", "error": f"the worker's reply would replace the row's own column(s) "
                                             f"{', '.join(clash)}; nothing of it was kept"}
    if fields.get("exit_code"):
        out.update(status="failed", error=f"worker replied but exited with code {fields['exit_code']}")
    return out


def _perf_columns(path: Path, choices) -> dict:
    try:
        text = path.read_text()
    except OSError:
        text = None
    return perf_mod.perf_columns(text, choices)


class _NullProgress:
    def __call__(self, run, row, done):
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
    from .progress import RichProgress

    return RichProgress(total)
