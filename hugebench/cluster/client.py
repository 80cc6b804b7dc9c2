"""The client's side of a cluster sweep: plan, place runs on machines, keep the one store.

The client connects to a Dask scheduler (or starts one with SSHCluster), finds the hugebench workers (one per
machine, each with the resource ``host:<name>``), decides which runs go to which machine, asks each machine
to prepare (its context becomes ``sweeps/<sweep id>.<host>.json``), then submits the runs the store lacks as
tasks pinned to their machine and appends each row as it comes back, through the same loop as a local
sweep (``orchestrator.record_runs``). A machine whose worker dies gets its runs back when a worker for it
joins again (the scheduler re-queues them); the client keeps waiting.

``machines: each`` runs every cell on every machine: run and cell ids include the host, and ``host`` is an
axis of the results (ratios stay within one machine). ``machines: spread`` gives whole repetition blocks to
machines as they become free; the machines must be identical as the metadata describes them (CPU model,
kernel, THP support), and each machine's rows carry its own sweep id, so pairs of a ratio never cross
machines.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path

from .. import adaptive
from ..errors import HugebenchError, SpecError
from ..orchestrator import SweepResult, record_runs
from ..run.rows import failed_row
from ..plan import block as plan_block, content_hash
from ..preflight import check_compatible, new_sweep_id
from ..store import ResultStore
from .config import ADAPTIVE_ON_EACH, HOST_PREFIX, RESOURCE, ClusterConfig, host_resource
from .machine import AdoptPlugin, Part, preflight_task, release_task, run_task

RELEASE_TIMEOUT_S = 60.0


def run_cluster_sweep(spec, runs: list, options) -> SweepResult:
    """Run ``runs`` on the cluster ``options.cluster``; rows go to ``options.out`` as in a local sweep."""
    config: ClusterConfig = options.cluster
    if spec.adaptive and config.machines == "each":
        raise SpecError(f"{spec.source}: {ADAPTIVE_ON_EACH}")
    store = ResultStore(options.out)
    check_compatible(spec, store)
    sweep_id = new_sweep_id(spec)
    with _connect(config) as client:
        hosts = _hosts(client, config)
        spread = config.machines == "spread"
        placed = {h: runs for h in hosts} if spread else place(runs, hosts)
        parts = {h: Part(sweep_id, spec, tuple(rs), options.perf, options.spec_source) for h, rs in placed.items()}
        try:
            prepared = _preflight(client, parts)
            if spread:
                check_identical({h: p["context"].get("machine") or {} for h, p in prepared.items()})
            for host, pre in prepared.items():
                store.write_context(pre["sweep_id"], cluster_context(pre["context"], config, hosts, sweep_id))
            planned = runs if spread else [r for h in hosts for r in placed[h]]
            host_of = {r.run_id: h for h, rs in placed.items() for r in rs}

            def execute_runs(todo):
                if spread:
                    return _execute_spread(client, parts, todo, hosts)
                return _execute(client, parts, todo, host_of)

            result, done = SweepResult(sweep_id, Path(options.out)), store.completed_run_ids()
            if spread:  # run ids are the plan's: repetitions: auto adds blocks exactly as in a local sweep
                batches = adaptive.batches(spec, runs, store.rows, plan_block)
                total = adaptive.max_runs(spec, runs) - len(done & {r.run_id for r in runs})
            else:
                batches, total = [planned], sum(r.run_id not in done for r in planned)
            return record_runs(store, batches, done, execute_runs, options, result, total,
                               tuple(p["sweep_id"] for p in prepared.values()))
        finally:
            _release(client, hosts, sweep_id)


# -- placing runs on machines ----------------------------------------------------------------------


def place(runs: list, hosts: list[str]) -> dict[str, list]:
    """``each``: host -> every run, as that host does it (ids made per host)."""
    return {h: [on_host(r, h) for r in runs] for h in hosts}


def blocks(runs: list) -> list[list]:
    """The runs by repetition block (each warm-up block too), in plan order: at most one run of each cell."""
    cells = len({r.cell_id for r in runs}) or 1
    grouped: dict[tuple, list] = {}
    for run in runs:  # warm-ups all have repetition -1 and come first, one whole block of cells after another
        key = (0, run.order_index // cells) if run.warmup else (1, run.repetition)
        grouped.setdefault(key, []).append(run)
    return [grouped[b] for b in sorted(grouped)]


def on_host(run, host: str):
    """The run as machine ``host`` does it in ``machines: each``: host is part of its cell."""
    return dataclasses.replace(run, run_id=content_hash([run.run_id, host]), cell_id=content_hash([run.cell_id, host]),
                               cell={**run.cell, "host": host})


def identity(machine: dict) -> dict:
    """What makes two machines the same for ``machines: spread``."""
    memory = machine.get("memory") or {}
    thp = memory.get("thp") or {}
    return {
        "CPU model": (machine.get("cpu") or {}).get("model_name"),
        "kernel": (machine.get("kernel") or {}).get("release"),
        "THP support": {"pmd size": memory.get("hpage_pmd_size"),
                        "knobs": sorted(k for k in thp if k != "mthp"), "mTHP sizes": sorted(thp.get("mthp") or {})},
    }


def check_identical(machines: dict[str, dict]) -> None:
    """Refuse ``machines: spread`` over machines that differ, naming what differs on which host."""
    ids = {host: identity(m) for host, m in machines.items()}
    first_host, first = next(iter(ids.items()))
    for host, other in ids.items():
        for what, value in other.items():
            if value != first[what]:
                raise SpecError(
                    f"machines: spread needs identical machines, but their {what} differs: {first_host} has "
                    f"{first[what]!r}, {host} has {value!r}. Use machines: each to compare them, or leave "
                    f"{host} out of the cluster")


def cluster_context(context: dict, config: ClusterConfig, hosts: list[str], sweep_id: str) -> dict:
    """A machine's context as the store keeps it: host is an axis in ``each`` mode."""
    out = dict(context)
    if config.machines == "each" and "host" not in (out.get("axes") or []):
        out["axes"] = [*(out.get("axes") or []), "host"]
    out["cluster"] = {"mode": config.machines, "hosts": list(hosts), "client_sweep_id": sweep_id,
                      "where": config.describe()}
    return out


# -- Dask -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _connect(config: ClusterConfig):
    try:
        from distributed import Client
    except ImportError:
        raise HugebenchError("a cluster sweep needs Dask: pip install 'hugebench[cluster]'") from None
    if config.scheduler:
        try:
            client = Client(config.scheduler, timeout=config.wait)
        except (OSError, TimeoutError) as exc:
            raise HugebenchError(f"cannot reach the Dask scheduler at {config.scheduler} ({exc}); start one with "
                                 f"`dask scheduler` and a `hugebench worker` per machine") from None
        with client:
            _adopt(client)
            yield client
        return
    from distributed import SSHCluster

    cluster = SSHCluster([config.ssh[0], *config.ssh], scheduler_options={"dashboard_address": None},
                         worker_options={"nthreads": 1, "resources": {RESOURCE: 1}})
    with cluster, Client(cluster) as client:
        _adopt(client)
        yield client


def _adopt(client) -> None:
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin
    register(AdoptPlugin(), name=AdoptPlugin.name)


def _hosts(client, config: ClusterConfig) -> list[str]:
    """The machines with a hugebench worker, once at least ``config.workers`` have joined."""
    deadline = time.monotonic() + config.wait
    while True:
        info = client.scheduler_info(**_all_workers(client))["workers"]
        hosts = sorted({k.removeprefix(HOST_PREFIX) for w in info.values()  # 0: a refused second worker
                        for k, v in (w.get("resources") or {}).items() if k.startswith(HOST_PREFIX) and v})
        if len(hosts) >= config.workers:
            return hosts
        if time.monotonic() > deadline:
            raise HugebenchError(f"only {len(hosts)} of {config.workers} machines joined {config.describe()} within "
                                 f"{config.wait:g} s ({', '.join(hosts) or 'none'}); start `hugebench worker "
                                 f"{config.scheduler or 'tcp://SCHEDULER:8786'}` on each machine")
        time.sleep(0.2)


def _all_workers(client) -> dict:
    import inspect

    return {"n_workers": -1} if "n_workers" in inspect.signature(client.scheduler_info).parameters else {}


def _pinned(host: str) -> dict:
    return {RESOURCE: 1, host_resource(host): 1}


def _preflight(client, parts: dict) -> dict:
    """Each machine checks its part (a run it cannot do becomes a failed row later, not an error here)."""
    futures = {h: client.submit(preflight_task, part, resources=_pinned(h), pure=False) for h, part in parts.items()}
    prepared = {}
    for host, future in futures.items():
        try:
            prepared[host] = future.result()
        except HugebenchError:
            raise
        except Exception as exc:  # a bug or a broken install on that machine: say where, without a traceback
            raise HugebenchError(f"machine {host} could not prepare the sweep: {type(exc).__name__}: {exc}") from None
    return prepared


def _execute(client, parts: dict, todo: list, host_of: dict):
    """``each``: submit each run to its machine (in plan order), yield ``(run, row)`` as they finish."""
    from distributed import as_completed

    futures = {_submit(client, parts, run, host_of[run.run_id]): run for run in todo}
    for future in as_completed(futures):
        run = futures.pop(future)
        yield run, _row(future, run, parts, host_of[run.run_id])


def _execute_spread(client, parts: dict, todo: list, hosts: list[str]):
    """``spread``: a whole block to a machine at a time (so a block's pairs stay within it), the next block to
    whichever machine finishes its block first; a machine that dies keeps only its current block waiting."""
    from distributed import as_completed

    pending, owner, left = blocks(todo), {}, {}
    finished = as_completed()

    def give(host):
        left[host] = set()
        if pending:
            for run in pending.pop(0):
                future = _submit(client, parts, run, host)
                owner[future] = run, host
                left[host].add(future)
                finished.add(future)

    for host in hosts:
        give(host)
    for future in finished:
        run, host = owner.pop(future)
        left[host].discard(future)
        if not left[host]:
            give(host)
        yield run, _row(future, run, parts, host)


def _submit(client, parts: dict, run, host: str):
    return client.submit(run_task, parts[host], run, key=f"hb-{parts[host].sweep_id}-{run.run_id}",
                         resources=_pinned(host), priority=-run.order_index, pure=False)


def _row(future, run, parts: dict, host: str) -> dict:
    try:
        row = future.result()
    except Exception as exc:  # the task itself failed (its worker died too often, ...): a failed row
        row = failed_row(run, f"{parts[host].sweep_id}.{host}", "failed", f"cluster task: {type(exc).__name__}: {exc}",
                         host=host)
    future.release()
    return row


def _release(client, hosts: list[str], sweep_id: str) -> None:
    """Each machine ends its part now: knobs restored, lock dropped (else they do so when idle)."""
    futures = [client.submit(release_task, sweep_id, resources=_pinned(h), pure=False) for h in hosts]
    from distributed import wait

    with contextlib.suppress(Exception):  # a machine that is gone restores when its worker ends or on restore
        wait(futures, timeout=RELEASE_TIMEOUT_S)
