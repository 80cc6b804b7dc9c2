"""The client's runs in flight on the machines, and what happens when a machine goes away.

``Dispatch`` sends each machine its part once (``machine.hold_part``, kept on that machine's worker), then one
task per run that names the part and carries only its own run. While tasks are out it asks the scheduler,
every ``POLL_S``, which machines still have a worker. A machine without one for ``lost_after`` seconds (the
cluster's ``lost_after``) is lost for the rest of the sweep: its unfinished tasks are cancelled, and

- ``machines: spread``: the runs of its block that had not finished go, as a block, to the next free machine
  (runs it finished stay, under its own sweep id: pairs never cross machines); with no machine left, they
  are lost as below;
- ``machines: each``: they become failed rows, ``machine X lost at T: ...`` (T: when its worker left), shown
  in every report like any failure; a resumed sweep runs them again.

So a dead machine never makes the client wait forever; a worker that comes back within ``lost_after`` gets
its runs back (the scheduler keeps them queued for that machine) and nothing is lost.
"""

from __future__ import annotations

import time
from datetime import datetime, timezone

from hugebench.cluster.machine import hold_part, preflight_task, run_task
from hugebench.cluster.placement import blocks
from hugebench.errors import HugebenchError
from hugebench.experiment.cluster import HOST_PREFIX, RESOURCE, host_resource
from hugebench.run.rows import failed_row

POLL_S = 1.0


def pinned(host: str) -> dict:
    return {RESOURCE: 1, host_resource(host): 1}


def present_hosts(client, **all_workers) -> set[str]:
    """The machines that have a hugebench worker now (a refused second worker has 0 of its resources)."""
    info = client.scheduler_info(**all_workers)["workers"]
    return {
        k.removeprefix(HOST_PREFIX)
        for w in info.values()
        for k, v in (w.get("resources") or {}).items()
        if k.startswith(HOST_PREFIX) and v
    }


class Dispatch:
    """Tasks of one cluster sweep: ``parts`` (host -> machine.Part), the live hosts, the lost ones."""

    def __init__(self, client, parts: dict, lost_after: float, all_workers: dict | None = None):
        self.client, self.parts, self.lost_after = client, parts, lost_after
        self.all_workers = all_workers or {}
        self.alive = list(parts)
        self.lost: dict[str, str] = {}  # host -> why ("machine X lost at T: ...")
        self.missing: dict[
            str, tuple[float, str]
        ] = {}  # host -> (monotonic, UTC) since it has had no worker
        self.running: dict = {}  # future -> (run, host)
        self.pending: list[list] = []  # spread: blocks no machine has yet
        self._polled = 0.0
        self.refs = {
            h: client.submit(
                hold_part,
                part,
                key=f"hb-part-{part.sweep_id}-{h}",
                resources=pinned(h),
                pure=False,
                priority=1_000_000,
            )
            for h, part in parts.items()
        }

    # -- preparing ----------------------------------------------------------------------------------

    def preflight(self) -> dict:
        """Each machine checks its part (a run it cannot do becomes a failed row later, not an error here);
        a machine lost meanwhile is an error: nothing has run yet."""
        futures = {
            self.client.submit(preflight_task, self.refs[h], resources=pinned(h), pure=False): h
            for h in self.alive
        }
        prepared = {}
        while futures:
            for future in self._finished(futures):
                host = futures.pop(future)
                prepared[host] = _prepared(future, host)
            for host in self._newly_lost():
                raise HugebenchError(f"{self.lost[host]}, while it prepared the sweep; nothing ran")
        return prepared

    # -- running ------------------------------------------------------------------------------------

    def each(self, todo: list, host_of: dict):
        """``each``: every run on its machine (in plan order); yield ``(run, row)`` as they finish."""
        for run in todo:
            self._submit(run, host_of[run.run_id])
        while self.running:
            yield from self._collect()
            for host in self._newly_lost():
                yield from self._lost_rows(self._withdraw(host), host)

    def spread(self, todo: list):
        """``spread``: a whole block to a machine at a time (a block's pairs stay within it), the next block
        to whichever machine finishes first; a lost machine's unfinished block goes to the next free one."""
        self.pending = blocks(todo)
        self._give_idle()
        while self.running:
            yield from self._collect()
            for host in self._newly_lost():
                withdrawn = self._withdraw(host)
                if withdrawn:
                    self.pending.insert(0, withdrawn)
            self._give_idle()
            if not self.alive and self.pending:  # nobody left to run them
                last = next(reversed(self.lost))
                yield from self._lost_rows([r for block in self.pending for r in block], last)
                self.pending = []

    def _give_idle(self) -> None:
        busy = {host for _, host in self.running.values()}
        for host in self.alive:
            if host not in busy and self.pending:
                for run in self.pending.pop(0):
                    self._submit(run, host)

    def _submit(self, run, host: str) -> None:
        part = self.parts[host]
        future = self.client.submit(
            run_task,
            self.refs[host],
            run,
            key=f"hb-{part.sweep_id}-{host}-{run.run_id}",
            resources=pinned(host),
            priority=-run.order_index,
            pure=False,
        )
        self.running[future] = run, host

    def _collect(self):
        for future in self._finished(self.running):
            run, host = self.running.pop(future)
            yield run, self._row(future, run, host)

    def _row(self, future, run, host: str) -> dict:
        try:
            row = future.result()
        except (
            Exception
        ) as exc:  # the task itself failed (its worker died too often, ...): a failed row
            row = failed_row(
                run,
                self.sweep_of(host),
                "failed",
                f"cluster task: {type(exc).__name__}: {exc}",
                host=host,
            )
        future.release()
        return row

    def sweep_of(self, host: str) -> str:
        return f"{self.parts[host].sweep_id}.{host}"

    # -- machines that go ---------------------------------------------------------------------------

    def _finished(self, futures) -> list:
        """The futures of ``futures`` that finished within ``POLL_S`` (maybe none)."""
        from distributed import wait

        if not futures:
            return []
        try:
            done, _ = wait(list(futures), timeout=POLL_S, return_when="FIRST_COMPLETED")
        except TimeoutError:
            return []
        except (
            Exception
        ):  # the scheduler cancelled some (lost dependencies, ...): their rows say why
            return [f for f in futures if f.status in ("finished", "error", "cancelled", "lost")]
        return list(done)

    def _newly_lost(self) -> list[str]:
        """Machines that have had no worker for ``lost_after`` seconds, now lost (checked every POLL_S)."""
        now = time.monotonic()
        if now - self._polled < POLL_S:
            return []
        self._polled = now
        present = present_hosts(self.client, **self.all_workers)
        gone = []
        for host in list(self.alive):
            if host in present:
                self.missing.pop(host, None)
                continue
            since, at = self.missing.setdefault(
                host, (now, datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"))
            )
            if now - since >= self.lost_after:
                self.alive.remove(host)
                self.lost[host] = (
                    f"machine {host} lost at {at}: its worker left the cluster and none came back "
                    f"within {self.lost_after:g} s (cluster lost_after)"
                )
                gone.append(host)
        return gone

    def _withdraw(self, host: str) -> list:
        """Cancel the lost machine's unfinished tasks (and its part); their runs, in plan order."""
        mine = [f for f, (_, h) in self.running.items() if h == host and not f.done()]
        runs = [self.running.pop(f)[0] for f in mine]
        self.client.cancel([*mine, self.refs[host]])
        return sorted(runs, key=lambda r: r.order_index)

    def _lost_rows(self, runs: list, host: str):
        why = (
            f"{self.lost[host]}; run `hugebench system restore` on {host}, then the same sweep command "
            f"runs these again"
        )
        for run in runs:
            yield run, failed_row(run, self.sweep_of(host), "failed", why, host=host)


def _prepared(future, host: str) -> dict:
    try:
        return future.result()
    except HugebenchError:
        raise
    except (
        Exception
    ) as exc:  # a bug or a broken install on that machine: say where, without a traceback
        raise HugebenchError(
            f"machine {host} could not prepare the sweep: {type(exc).__name__}: {exc}"
        ) from None
