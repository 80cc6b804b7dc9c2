"""One run, start to row: :func:`run_one` is the public function every sweep calls for each planned run,
the local loop (``hugebench.sweep.orchestrator``) and a cluster machine (``hugebench.cluster.machine``) alike.

It enters the run's kernel state (knobs, memory conditioning) on the sweep's ``SystemState``, launches one
worker (under perf stat when enabled) in a fresh run directory and the run's own containment, and turns
whatever happens (a reply, a crash, a signal, a timeout, an OOM kill, a changed knob) into one row.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from hugebench import kernel
from hugebench.kernel.host import Host
from hugebench.machine.environment import worker_environment
from hugebench.machine.launch import Launched, signal_name, tail
from hugebench.measure import disturbance
from hugebench.measure import perf as perf_mod
from hugebench.run import inprocess
from hugebench.run.argv import measured_argv
from hugebench.run.rows import base_row, failure, measured_apart, oom_verdict, reply_fields
from hugebench.run.rundir import RunDir
from hugebench.system import regime as regime_mod
from hugebench.system.aging import AgedMemory
from hugebench.system.containment import RunContainer, record_dir

SUPERVISOR_GRACE_S = (
    30.0  # a program's worker: its start-up, the server's stop and the reply, past the timeout
)


def run_one(run, setup, state, options) -> dict:
    """The row of ``run`` (a ``RunSpec``) under the sweep's ``setup`` (``preflight.SweepSetup``), with its
    kernel state entered on ``state`` (``SystemState``) and ``options`` (``SweepOptions``: python, /proc root,
    journal)."""
    row = base_row(run, setup.sweep_id)
    skip = setup.skip.get(run.cell_id)
    if skip:
        row.update(failure("skipped", skip))
        return row
    try:
        knobs = state.apply(setup.system_for(run))
    except Exception as exc:  # a knob the kernel refused fails this run, not the sweep
        row.update(failure("failed", f"kernel state: {exc}"))
        return row
    if not run.memory_state:
        if setup.condition_memory:
            state.condition_memory(**setup.condition_memory)
        if _regime_entered(run, state, row):
            _measure(run, setup, state, options, row, knobs)
        return row
    aged = AgedMemory(
        run.memory_state,
        state,
        host=options.host,
        records=record_dir(options.journal),
        reserve_bytes=run.memory_estimate,
        run_id=run.run_id,
        drop_caches=bool(setup.condition_memory.get("drop_caches")),
    )
    try:
        if _entered(aged).failed is None and _regime_entered(run, state, row):
            _measure(run, setup, state, options, row, knobs)
    finally:
        row.update(aged.close())
    if aged.failed and row.get("status", "ok") == "ok":
        row.update(failure("failed", aged.failed))
    return row


def _regime_entered(run, state, row: dict) -> bool:
    """The run's regime (hugebench.system.regime) entered last, just before it: False (the row failed)
    when the kernel refused it."""
    if not run.regime:
        return True
    try:
        row.update(regime_mod.enter(run.regime, state))
    except Exception as exc:
        row.update(failure("failed", f"regime {run.regime}: {exc}"))
        return False
    return True


def _entered(aged: AgedMemory) -> AgedMemory:
    """The memory state entered; a kernel that refused a step fails this run, not the sweep."""
    try:
        return aged.enter()
    except Exception as exc:
        aged.failed = f"memory_state {aged.value}: {exc}"
        return aged


def _measure(run, setup, state, options, row: dict, knobs: dict) -> dict:
    """Measure the run in the kernel state entered; its columns added to ``row``."""
    before = state.snapshot()
    row.update({f"knob.{k}": v for k, v in before.items()})
    row.update(_buddy_columns(options.host))
    row.update(knobs_applied=json.dumps(knobs, sort_keys=True))
    machine_before = disturbance.snapshot(options.host)
    reporting_before = regime_mod.before_run(options.host)
    row.update(measured_apart(execute(run, setup, options), run.cell))
    row.update(regime_mod.after_run(reporting_before, options.host))
    row.update(disturbance.run_columns(machine_before, row, options.host))
    after = state.snapshot()  # once: each snapshot reads every knob
    changed = {k: (v, after.get(k)) for k, v in before.items() if after.get(k) != v}
    if changed and row["status"] == "ok":
        what = ", ".join(f"{k} {a} -> {b}" for k, (a, b) in changed.items())
        row.update(
            failure(
                "disturbed",
                f"kernel settings changed during the run ({what}): "
                "someone else changed them; the row is kept out of statistics",
            )
        )
    return row


def _buddy_columns(host: Host) -> dict:
    """Free blocks per order over all zones before the run (huge-page supply), and free 2 MiB blocks."""
    try:
        info = kernel.read_buddyinfo(host)
    except OSError:
        return {}
    orders = [sum(counts) for counts in zip(*info.get("zones", {}).values())]
    columns = {f"buddy.order{n}": count for n, count in enumerate(orders)}
    columns["buddy.free_2mib_blocks"] = info.get("free_2mib_blocks")
    return columns


def execute(run, setup, options) -> dict:
    """Launch one worker (under perf stat when enabled) in the run's own directory and containment and turn
    whatever happens into row fields."""
    oom_before = kernel.read_vmstat(options.host).get("oom_kill", 0)
    limit = getattr(run, "memory_limit", None)
    with (
        RunDir.create() as rundir,
        RunContainer(run.run_id, record_dir(options.journal), memory_limit=limit) as container,
    ):
        if container.limit_error:  # a limit asked for and not had: nothing runs
            return failure("failed", f"memory_limit {limit} B: {container.limit_error}")
        request = setup.request_for(run)
        page_cache: dict = {}
        if inprocess.applies(run, request):  # a command run: supervised from here (run.inprocess)
            fields = inprocess.supervise(request, rundir, container)
        else:
            fields, page_cache = _in_worker(run, setup, options, request, rundir, container)
        if container.limit_error:
            fields.update(failure("failed", f"memory_limit: {container.limit_error}"))
        if setup.perf:
            fields.update(perf_mod.perf_columns(rundir.perf_text(), setup.perf.choices))
        if run.text_pages:
            fields.update(page_cache)
            fields.update(_text_columns(run.text_pages, rundir.text, fields))
    fields.update(container.columns)
    return oom_verdict(fields, kernel.read_vmstat(options.host).get("oom_kill", 0) - oom_before)


def _in_worker(
    run, setup, options, request, rundir: RunDir, container: RunContainer
) -> tuple[dict, dict]:
    """The row fields of a run in a worker process of its own (its end and its reply) and the page-cache
    columns of its text."""
    request.write(rundir.request)
    argv, timeout, page_cache = _worker_argv(run, setup, options, rundir)
    fields = _spawn(argv, worker_environment({}), timeout, rundir, container)
    fields["launcher"] = "worker"
    if container.limit_error:  # the limit's failure says it (execute); the reply is not read
        return fields, page_cache
    fields.update(reply_fields(rundir.reply, fields))
    return fields, page_cache


def _worker_argv(run, setup, options, rundir: RunDir) -> tuple[list[str], float, dict]:
    """The worker's command line, its timeout and the page-cache columns of its text (built-in workloads)."""
    worker = [
        options.python,
        "-m",
        "hugebench.run.worker",
        "--request",
        str(rundir.request),
        "--reply",
        str(rundir.reply),
    ]
    if run.workload_def.runner:
        # The worker supervises a program: the allocator, perf and the text library are for the program,
        # which the worker starts the same way (see run.supervisor), reporting here too. The
        # worker enforces the run's timeout on the program; this one only catches a stuck worker.
        return measured_argv(worker, {}, rundir), run.timeout + SUPERVISOR_GRACE_S, {}
    page_cache = {}
    if run.text_pages:
        from hugebench.machine import textpages as text

        rundir.text.mkdir()
        page_cache = text.prepare_page_cache(os.path.realpath(options.python), run.text_pages)
    perf = setup.perf
    argv = measured_argv(
        worker,
        setup.allocators[run.allocator].environment(),
        rundir,
        perf_bin=perf.bin if perf else None,
        perf_events=perf.events if perf else (),
        text_pages=run.text_pages,
    )
    return argv, run.timeout, page_cache


def _text_columns(mode: str, text_dir: Path, fields: dict) -> dict:
    """Where the program's text really was (each process's own report); a mode that did not take fails the
    run, also when everything else went well."""
    from hugebench.machine import textpages as text

    try:
        return text.verify(mode, text.read_reports(text_dir))
    except RuntimeError as exc:
        if fields.get("status", "ok") != "ok":
            return {}  # the run already failed for its own reason
        return failure("failed", f"text_pages {mode}: {exc}")


def _spawn(argv, env, timeout, rundir: RunDir, container: RunContainer) -> dict:
    """Run argv in its own session and the run's containment; its real end comes from hb-exec's status file
    (perf hides signals)."""
    launched = Launched(
        argv, env, rundir.path, stdout=rundir.stderr, status_path=rundir.status, container=container
    )
    ended = launched.wait(timeout)
    fields = {"wall_s": ended.wall_s, "exit_code": ended.code, "stderr_tail": tail(rundir.stderr)}
    fields.update({f"worker.{k}": v for k, v in ended.status.items()})
    code = ended.code
    if ended.timed_out:
        fields.update(
            failure("timeout", f"worker ran past its timeout of {timeout:g} s and was killed")
        )
    elif code < 0 or code > 128:
        name = signal_name(-code if code < 0 else code - 128)
        fields.update(failure("crashed", f"worker died of signal {name}", signal=name))
    return fields
