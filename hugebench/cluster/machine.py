"""The worker's side of a cluster sweep: one machine, one run at a time, its own knobs, journal and lock.

``MachinePlugin`` is a Dask worker plugin. For the part of a sweep its machine runs it does what a local sweep
does, with the same pieces: ``preflight.prepare_machine`` (preflight on *this* machine), the host-wide
``SweepLock``, ``SystemState`` (journal before the first write, restore at the end) and
``run.execute.run_one``. The part ends — knobs restored, lock dropped — when the client says so, when the
machine has been idle for ``idle_s``, when another sweep's part starts, or when the worker shuts down.

Preflight is per machine: a run whose allocator is missing here, or whose knob this kernel lacks or refuses,
becomes a failed row saying so, and the rest of the machine's runs go on.
"""

from __future__ import annotations

import logging
import os
import socket
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from distributed.diagnostics.plugin import WorkerPlugin

from hugebench import system
from hugebench.cluster.claims import claim, new_token, refusal
from hugebench.errors import HugebenchError
from hugebench.experiment.cluster import RESOURCE, host_resource, safe_host
from hugebench.experiment.model import ExperimentSpec, PerfSetting
from hugebench.kernel import Host
from hugebench.machine import allocators as alloc_mod
from hugebench.machine import metadata
from hugebench.run.execute import run_one
from hugebench.run.rows import failed_row
from hugebench.sweep.orchestrator import SweepOptions, end_stale_runs
from hugebench.sweep.preflight import SweepSetup, context, prepare_machine
from hugebench.system import SweepLock, SystemState, default_lock_paths

log = logging.getLogger(__name__)

PLUGIN_NAME = "hugebench-machine"


@dataclass(frozen=True)
class Part:
    """What a machine needs to run its part of a sweep: the spec, the machine's runs, the sweep id and the CLI's
    perf override. Sent once per machine (``hold_part``); its tasks name it, so a restarted worker of the
    machine gets it again and prepares again, and a run task carries only its own run."""

    sweep_id: str  # the client's; the machine's is sweep_id + "." + host
    spec: ExperimentSpec
    runs: tuple
    perf: PerfSetting | None = None
    spec_source: str = "FILE"


@dataclass
class _Prepared:
    sweep_id: str
    setup: SweepSetup | None
    failures: (
        dict  # cell_id -> why this machine cannot run it (any repetition, also one planned later)
    )
    context: dict
    options: SweepOptions
    lock: SweepLock | None = None
    state: SystemState | None = None


class MachinePlugin(WorkerPlugin):
    """Installed on each hugebench worker: by ``hugebench worker``, or by ``AdoptPlugin`` on a plain Dask worker
    (host name, roots, journal and lock then come from the HUGEBENCH_* environment, as for the commands)."""

    name = PLUGIN_NAME

    def __init__(
        self,
        host: str | None = None,
        machine_host: Host | None = None,
        journal: str | None = None,
        lock: str | None = None,
        python: str = sys.executable,
        idle_s: float = 30.0,
    ):
        # Unset: what the worker's environment says, as for the hugebench commands (HUGEBENCH_SYS_ROOT, ...).
        host = host or os.environ.get("HUGEBENCH_HOST_NAME")
        self.host = safe_host(host) if host else None
        # ``host`` is this machine's name; ``machine_host`` its /proc, /sys and knob writer (kernel.Host)
        self.machine_host = machine_host or Host.at(
            os.environ.get("HUGEBENCH_SYS_ROOT"), os.environ.get("HUGEBENCH_PROC_ROOT")
        )
        self.journal = journal or os.environ.get("HUGEBENCH_JOURNAL")
        self.lock_path = lock
        self.python = python
        self.idle_s = idle_s
        self._mutex = threading.RLock()
        self._part: _Prepared | None = None
        self._timer: threading.Timer | None = None
        self.refused: str | None = None  # why this worker takes no runs (its machine has another)
        self.token = new_token()  # this worker's claim on its machine (see claims)

    # -- worker life ---------------------------------------------------------------------------

    async def setup(self, worker):
        host = self.host = self.host or safe_host(socket.gethostname())
        wanted = host_resource(host)
        holder = await self._holder(worker, host, wanted)
        if (
            holder is not None
        ):  # one worker per machine: this one takes no runs (its lock would fail them all)
            self.refused = refusal(self.host, holder, worker.address)
            log.error("%s", self.refused)
            if not getattr(
                worker.state, "address", None
            ):  # `hugebench worker`, before it registers: it does not start at all
                raise HugebenchError(self.refused)
            await worker.set_resources(
                **{RESOURCE: 0, wanted: 0}
            )  # adopted after joining: it stays idle
            return
        if wanted not in (
            worker.state.total_resources or {}
        ):  # registered by a client (SSHCluster)
            await worker.set_resources(**{RESOURCE: 1, wanted: 1})

    async def _holder(self, worker, host: str, wanted: str) -> str | None:
        """Who else serves this machine, as the scheduler decides in one step (claiming it for this worker
        if nobody does); where the scheduler cannot, asked in two steps."""
        answer = await claim(worker.scheduler, host, self.token, worker.address, wanted)
        if answer is None:
            return await other_holder(worker, wanted)
        return answer["holder"]

    def teardown(self, worker):
        self.release()

    # -- the tasks' entry points ---------------------------------------------------------------

    def preflight(self, part: Part) -> dict:
        """Prepare this machine for its part; return its sweep id, context and the runs it cannot do."""
        with self._mutex:
            prepared = self._prepared(part)
            return {
                "host": self.host,
                "sweep_id": prepared.sweep_id,
                "context": prepared.context,
                "failures": dict(prepared.failures),
            }

    def run(self, part: Part, run) -> dict:
        """One run on this machine, as a local sweep runs it; always a row."""
        with self._mutex:
            self._cancel_timer()
            try:
                prepared = self._prepared(part)
                row = self._row(prepared, run)
            finally:
                self._arm_timer()
        row["host"] = self.host
        return row

    def release(self, sweep_id: str | None = None) -> dict:
        """End this machine's part (of ``sweep_id``, or whatever part is open): restore knobs, drop the lock."""
        with self._mutex:
            self._cancel_timer()
            part = self._part
            if part is None or (
                sweep_id is not None and not part.sweep_id.startswith(f"{sweep_id}.")
            ):
                return {"host": self.host, "released": None}
            self._part = None
            try:
                if part.state is not None:
                    part.state.__exit__(None, None, None)
            finally:
                if part.lock is not None:
                    part.lock.__exit__(None, None, None)
            restored = part.state.restored if part.state is not None else {}
            return {"host": self.host, "released": part.sweep_id, "restored": restored}

    # -- inside ----------------------------------------------------------------------------------

    def _prepared(self, part: Part) -> _Prepared:
        sweep_id = f"{part.sweep_id}.{self.host}"
        if self._part is not None and self._part.sweep_id == sweep_id:
            return self._part
        self.release()  # another sweep's part was still open (its client died): end it first
        options = SweepOptions(
            out=Path("."),
            quiet=True,
            perf=part.perf,
            host=self.machine_host,
            journal=Path(self.journal) if self.journal else None,
            python=self.python,
            spec_source=part.spec_source,
        )
        end_stale_runs(self.journal)
        setup, failures, ctx = machine_preflight(part.spec, list(part.runs), options, sweep_id)
        ctx["cluster_host"] = self.host
        self._part = _Prepared(sweep_id, setup, failures, ctx, options)
        return self._part

    def _row(self, prepared: _Prepared, run) -> dict:
        why = prepared.failures.get(run.cell_id)
        if why is None and prepared.setup is None:
            why = "this machine could not prepare the sweep"
        if why is None:
            why = self._enter(prepared)
        if why is not None:
            return failed_row(run, prepared.sweep_id, "failed", why)
        return run_one(run, prepared.setup, prepared.state, prepared.options)

    def _enter(self, prepared: _Prepared) -> str | None:
        """Take the machine's sweep lock and open its SystemState once per part; the reason if not."""
        if prepared.state is not None:
            return None
        options = prepared.options
        lock = SweepLock(
            self.lock_path or default_lock_paths(options.host),
            f"cluster sweep {prepared.sweep_id} (worker {self.host})",
        )
        try:
            lock.__enter__()
        except HugebenchError as exc:
            return f"on {self.host}: {exc}"
        try:
            state = SystemState(options.host, options.journal).__enter__()
        except BaseException as exc:
            lock.__exit__(None, None, None)
            if isinstance(exc, HugebenchError):
                return f"on {self.host}: {exc}"
            raise
        prepared.lock, prepared.state = lock, state
        return None

    def _arm_timer(self) -> None:
        self._timer = threading.Timer(self.idle_s, self.release)
        self._timer.daemon = True
        self._timer.start()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None


class AdoptPlugin(WorkerPlugin):
    """Registered by the client on every worker: a plain Dask worker started with the resource machine=1
    (SSHCluster, dask-jobqueue, ``dask worker --nthreads 1 --resources machine=1``) becomes a hugebench
    machine named by its host name; a ``hugebench worker`` already is one and is left alone."""

    name = "hugebench-adopt"

    async def setup(self, worker):
        if PLUGIN_NAME not in worker.plugins and worker.state.total_resources.get(RESOURCE):
            await worker.plugin_add(MachinePlugin(), name=PLUGIN_NAME)


async def other_holder(worker, resource: str) -> str | None:
    """The address of another worker that already serves ``resource`` (a machine's ``host:<name>``), if any."""
    info = await worker.scheduler.identity()
    for address, other in (info.get("workers") or {}).items():
        if address != worker.address and (other.get("resources") or {}).get(resource):
            return f"{other.get('name') or address} at {address}"
    return None


def machine_preflight(spec, runs: list, options: SweepOptions, sweep_id: str):
    """``prepare_machine`` on this machine, but a cell it cannot do fails alone: -> (setup or None,
    {cell_id: reason}, context). A problem of the whole machine (a stale journal, ...) fails all its runs."""
    failures: dict[str, str] = {}
    table = alloc_mod.registry(spec.allocators)
    for name in sorted({r.allocator for r in runs}):
        try:
            table[name].resolve()
        except HugebenchError as exc:
            failures.update(
                {r.cell_id: f"not on this machine: {exc}" for r in runs if r.allocator == name}
            )
    for settings in {_key(r.system) for r in runs}:
        try:
            system.check_privileges(
                [dict(settings)],
                options.host,
                allow_prctl_never=True,
                rerun="hugebench worker ... (as root), then the sweep",
            )
        except HugebenchError as exc:
            failures.update(
                {
                    r.cell_id: f"kernel state on this machine: {exc}"
                    for r in runs
                    if _key(r.system) == settings
                }
            )
    left = [r for r in runs if r.cell_id not in failures]
    setup = None
    try:
        if left:
            setup = prepare_machine(spec, left, options, sweep_id)
    except HugebenchError as exc:
        failures.update({r.cell_id: f"this machine cannot run the sweep: {exc}" for r in left})
    if setup is not None:
        return setup, failures, dict(setup.context)
    bare = SweepSetup(sweep_id=sweep_id, context={}, allocators={})
    machine = metadata.machine_context(host=options.host)
    return None, failures, context(spec, runs, bare, {}, machine)


def _key(settings: dict) -> tuple:
    return tuple(sorted((k, str(v)) for k, v in settings.items()))


def _plugin() -> MachinePlugin:
    from distributed import get_worker

    plugin = get_worker().plugins.get(PLUGIN_NAME)
    if not isinstance(plugin, MachinePlugin):  # None: no hugebench plugin
        raise HugebenchError(
            "this Dask worker has no hugebench plugin: start it with `hugebench worker`"
        )
    return plugin


# Task functions: module-level, so Dask sends them by name (the worker has hugebench installed).


def hold_part(part: Part) -> Part:
    """The machine's part, kept on its worker: each run task names it instead of carrying it (the scheduler
    computes it again on a new worker of that machine if the old one died)."""
    return part


def preflight_task(part: Part) -> dict:
    return _plugin().preflight(part)


def run_task(part: Part, run) -> dict:
    return _plugin().run(part, run)


def release_task(sweep_id: str) -> dict:
    return _plugin().release(sweep_id)
