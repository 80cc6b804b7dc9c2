"""The client's side of a cluster sweep: plan, place runs on machines, keep the one store.

The client connects to a Dask scheduler (or starts one with SSHCluster), finds the hugebench workers (one per
machine, each with the resource ``host:<name>``), decides which runs go to which machine, asks each machine
to prepare (its context becomes ``sweeps/<sweep id>.<host>.json``), then submits the runs the store lacks as
tasks pinned to their machine and appends each row as it comes back, through the same loop as a local
sweep (``orchestrator.record_runs``). ``dispatch`` keeps the tasks: a machine whose worker dies gets its runs
back when a worker for it joins again within ``lost_after`` seconds; after that the machine is lost (its
block goes to another machine with ``spread``, its runs are failed rows with ``each``), never an endless wait.
Where runs go is ``placement``'s (``hugebench plan`` shows the same).

``machines: each`` runs every cell on every machine: run and cell ids include the host, and ``host`` is an
axis of the results (ratios stay within one machine). ``machines: spread`` gives whole repetition blocks to
machines as they become free; the machines must be identical as the metadata describes them (CPU model,
kernel, THP support), and each machine's rows carry its own sweep id, so pairs of a ratio never cross
machines.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterable
from pathlib import Path

from hugebench.cluster import certs
from hugebench.cluster.dispatch import Dispatch, pinned, present_hosts
from hugebench.cluster.machine import AdoptPlugin, Part, release_task
from hugebench.cluster.placement import blocks, on_host, place  # noqa: F401  (blocks, on_host: public here as before)
from hugebench.errors import HugebenchError, SpecError
from hugebench.experiment.cluster import ADAPTIVE_ON_EACH, RESOURCE, ClusterConfig
from hugebench.stats import adaptive
from hugebench.store import ResultStore
from hugebench.sweep.orchestrator import SweepResult, record_runs
from hugebench.sweep.plan import block as plan_block
from hugebench.sweep.preflight import check_compatible, new_sweep_id

RELEASE_TIMEOUT_S = 60.0


def run_cluster_sweep(spec, runs: list, options) -> SweepResult:
    """Run ``runs`` on the cluster ``options.cluster``; rows go to ``options.out`` as in a local sweep."""
    config: ClusterConfig = options.cluster
    if spec.adaptive and config.machines == "each":
        raise SpecError(f"{spec.source}: {ADAPTIVE_ON_EACH}")
    store = ResultStore(options.out)
    store.check_writable()  # a planted link in the results directory is refused before anything runs
    check_compatible(spec, store)
    sweep_id = new_sweep_id(spec)
    with _connect(config) as client:
        hosts = _hosts(client, config)
        spread = config.machines == "spread"
        placed = {h: runs for h in hosts} if spread else place(runs, hosts)
        parts = {
            h: Part(sweep_id, spec, tuple(rs), options.perf, options.spec_source)
            for h, rs in placed.items()
        }
        dispatch = Dispatch(client, parts, config.lost_after, _all_workers(client))
        try:
            prepared = dispatch.preflight()
            if spread:
                check_identical({h: p["context"].get("machine") or {} for h, p in prepared.items()})
            for pre in prepared.values():
                store.write_context(
                    pre["sweep_id"], cluster_context(pre["context"], config, hosts, sweep_id)
                )
            planned = runs if spread else [r for h in hosts for r in placed[h]]
            host_of = {r.run_id: h for h, rs in placed.items() for r in rs}

            def execute_runs(todo):
                return dispatch.spread(todo) if spread else dispatch.each(todo, host_of)

            result, done = SweepResult(sweep_id, Path(options.out)), store.completed_run_ids()
            batches: Iterable[list]
            if (
                spread
            ):  # run ids are the plan's: repetitions: auto adds blocks exactly as in a local sweep
                batches = adaptive.batches(spec, runs, store.rows, plan_block)
                total = adaptive.max_runs(spec, runs) - len(done & {r.run_id for r in runs})
            else:
                batches, total = [planned], sum(r.run_id not in done for r in planned)
            record_runs(
                store,
                batches,
                done,
                execute_runs,
                options,
                result,
                total,
                tuple(p["sweep_id"] for p in prepared.values()),
            )
            for (
                host,
                why,
            ) in dispatch.lost.items():  # provenance: this machine's part ended early, and why
                store.update_context(dispatch.sweep_of(host), cluster_lost=why)
            return result
        finally:
            _release(client, dispatch.alive, sweep_id)


# -- placing runs on machines ----------------------------------------------------------------------


def identity(machine: dict) -> dict:
    """What makes two machines the same for ``machines: spread``."""
    memory = machine.get("memory") or {}
    thp = memory.get("thp") or {}
    return {
        "CPU model": (machine.get("cpu") or {}).get("model_name"),
        "kernel": (machine.get("kernel") or {}).get("release"),
        "THP support": {
            "pmd size": memory.get("hpage_pmd_size"),
            "knobs": sorted(k for k in thp if k != "mthp"),
            "mTHP sizes": sorted(thp.get("mthp") or {}),
        },
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
                    f"{host} out of the cluster"
                )


def cluster_context(context: dict, config: ClusterConfig, hosts: list[str], sweep_id: str) -> dict:
    """A machine's context as the store keeps it: host is an axis in ``each`` mode."""
    out = dict(context)
    if config.machines == "each" and "host" not in (out.get("axes") or []):
        out["axes"] = [*(out.get("axes") or []), "host"]
    out["cluster"] = {
        "mode": config.machines,
        "hosts": list(hosts),
        "client_sweep_id": sweep_id,
        "where": config.describe(),
        "authentication": f"mutual TLS, the lab's certificates in {config.certs}"
        if config.certs
        else "none: tcp:// accepted with insecure_accept_any_client",
    }
    return out


# -- Dask -------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _connect(config: ClusterConfig):
    try:
        from distributed import Client
    except ImportError:
        raise HugebenchError(
            "a cluster sweep needs Dask: pip install 'hugebench[cluster]'"
        ) from None
    security = certs.security(config.certs, "client") if config.certs else None
    if config.scheduler:
        try:
            client = Client(config.scheduler, timeout=config.wait, security=security)
        except (OSError, TimeoutError) as exc:
            raise HugebenchError(
                f"cannot reach the Dask scheduler at {config.scheduler} ({exc}); start one with "
                f"`dask scheduler` and a `hugebench worker` per machine"
                + (" (all with the lab's certificates)" if security else "")
            ) from None
        with client:
            _adopt(client)
            yield client
        return
    with _ssh_cluster(config, security) as cluster, Client(cluster) as client:
        _adopt(client)
        yield client


@contextlib.contextmanager
def _ssh_cluster(config: ClusterConfig, security):
    """distributed's SSHCluster on ``config.ssh``; with certificates, its scheduler and workers find theirs
    at the same path on their machines (Dask hands them the client's configuration: paths, not keys)."""
    import dask
    from distributed import SSHCluster

    tls = certs.dask_config(config.certs) if config.certs else {}
    quiet = logging.getLogger(
        "distributed.deploy.spec"
    )  # its "closed without starting up": ours says why
    level = quiet.level
    with dask.config.set(tls):
        quiet.setLevel(logging.ERROR)
        try:
            cluster = SSHCluster(
                [config.ssh[0], *config.ssh],
                scheduler_options={
                    "dashboard_address": None,
                    **({"protocol": "tls"} if tls else {}),
                },
                worker_options={"nthreads": 1, "resources": {RESOURCE: 1}},
                security=security,
            )
        except Exception as exc:  # asyncssh, DNS and Dask's "Cluster failed to start" wrapping them
            raise HugebenchError(
                f"could not start the Dask cluster over ssh on {', '.join(config.ssh)}: {_root(exc)}; "
                "each host needs passwordless ssh (a key, its host key in ~/.ssh/known_hosts) and "
                "hugebench installed at the client's Python path"
            ) from None
        finally:
            quiet.setLevel(level)
        with cluster:
            yield cluster


def _root(exc: BaseException) -> str:
    """The first cause of a chain of exceptions, as one line (what went wrong, not how Dask wrapped it)."""
    seen: list[BaseException] = []
    cause: BaseException | None = exc
    while cause is not None and cause not in seen:
        seen.append(cause)
        cause = cause.__cause__ or cause.__context__
    root = seen[-1]
    return f"{type(root).__name__}: {root}".strip().splitlines()[0][:300]


def _adopt(client) -> None:
    register = getattr(client, "register_plugin", None) or client.register_worker_plugin
    register(AdoptPlugin(), name=AdoptPlugin.name)


def _hosts(client, config: ClusterConfig) -> list[str]:
    """The machines with a hugebench worker, once at least ``config.workers`` have joined."""
    deadline = time.monotonic() + config.wait
    while True:
        hosts = sorted(present_hosts(client, **_all_workers(client)))
        if len(hosts) >= config.workers:
            return hosts
        if time.monotonic() > deadline:
            raise HugebenchError(
                f"only {len(hosts)} of {config.workers} machines joined {config.describe()} within "
                f"{config.wait:g} s ({', '.join(hosts) or 'none'}); start `hugebench worker "
                f"{config.scheduler or 'tcp://SCHEDULER:8786'}` on each machine"
            )
        time.sleep(0.2)


def _all_workers(client) -> dict:
    import inspect

    return (
        {"n_workers": -1}
        if "n_workers" in inspect.signature(client.scheduler_info).parameters
        else {}
    )


def _release(client, hosts: list[str], sweep_id: str) -> None:
    """Each machine ends its part now: knobs restored, lock dropped (else they do so when idle)."""
    futures = [
        client.submit(release_task, sweep_id, resources=pinned(h), pure=False) for h in hosts
    ]
    from distributed import wait

    with contextlib.suppress(
        Exception
    ):  # a machine that is gone restores when its worker ends or on restore
        wait(futures, timeout=RELEASE_TIMEOUT_S)
