"""One hugebench worker per machine, decided by the scheduler in one step.

A worker claims its machine (the host name in ``host:<name>``) from the scheduler before it takes a run. The
scheduler answers from its own state inside one handler call, and its event loop runs one handler at a time:
two workers asking at the same instant get one yes and one no, where asking "who else serves this machine?"
and then taking the machine (two steps) let both pass. The handler comes with a scheduler plugin that the
first worker installs (idempotent, so installing is one step too). The scheduler needs hugebench importable
for it (SSHCluster and dask-jobqueue run it where the client or the first host has hugebench); a bare ``dask
scheduler`` without it makes the worker fall back to the two-step check, with a warning in its log.

A claim holds while its worker is registered; one made before registering (``hugebench worker`` asks before it
starts its Dask worker) holds ``PENDING_S`` seconds until the worker's address is known. A worker that leaves
the cluster (stopped, killed) drops its claim at once, so a new worker for that machine may join.
"""

from __future__ import annotations

import logging
import time
import uuid

from distributed.diagnostics.plugin import SchedulerPlugin

log = logging.getLogger(__name__)

HANDLER = "hugebench_claim"
PENDING_S = 60.0


class ClaimPlugin(SchedulerPlugin):
    """On the scheduler: host -> the one worker that serves it (token, address or None, when claimed)."""

    name = "hugebench-claims"

    def __init__(self):
        self.claims: dict[str, tuple[str, str | None, float]] = {}
        self.scheduler = None

    def start(  # type: ignore[override]  # distributed awaits start only when it returns an awaitable
        self, scheduler
    ) -> None:  # not async: installing it is one step of the scheduler's loop
        self.scheduler = scheduler
        scheduler.handlers[HANDLER] = self.claim

    def claim(
        self, host: str, token: str, address: str | None = None, resource: str | None = None
    ) -> dict:
        """Give ``host`` to the claimant ``token`` unless another live worker holds it: ``{"ok": bool,
        "holder": who}``. ``resource`` (``host:<name>``): a worker registered with it counts as a holder."""
        held = self.claims.get(host)
        if held is not None and held[0] != token and self._alive(held):
            return {"ok": False, "holder": self._who(held[1])}
        for other, state in self.scheduler.workers.items():
            if (
                other != address
                and resource
                and state.resources.get(resource)
                and (held is None or held[1] != other)
            ):
                return {"ok": False, "holder": self._who(other)}
        self.claims[host] = (token, address, time.monotonic())
        return {"ok": True, "holder": None}

    def remove_worker(self, scheduler, worker, **kwargs) -> None:
        for host, held in list(self.claims.items()):
            if held[1] == worker:
                del self.claims[host]

    def _alive(self, held) -> bool:
        _, address, at = held
        return (
            address is not None and address in self.scheduler.workers
        ) or time.monotonic() - at < PENDING_S

    def _who(self, address: str | None) -> str:
        if address is None:
            return "a worker that is starting"
        state = self.scheduler.workers.get(address)
        return f"{state.name if state is not None else address} at {address}"


def new_token() -> str:
    return uuid.uuid4().hex


async def claim(
    scheduler_rpc, host: str, token: str, address: str | None = None, resource: str | None = None
) -> dict | None:
    """Ask the scheduler (an rpc to it) for ``host``: its answer, or None where it cannot decide (no hugebench
    there); OSError where it cannot be reached."""
    from distributed.protocol.pickle import dumps

    try:
        await scheduler_rpc.register_scheduler_plugin(
            plugin=dumps(ClaimPlugin()), name=ClaimPlugin.name, idempotent=True
        )
        return await getattr(scheduler_rpc, HANDLER)(
            host=host, token=token, address=address, resource=resource
        )
    except OSError:  # the scheduler is not reachable: the caller decides
        raise
    except Exception as exc:  # e.g. the scheduler cannot import hugebench to load the plugin
        log.warning(
            "the scheduler cannot decide claims (%s: %s); checking for another worker of machine %s "
            "in two steps instead",
            type(exc).__name__,
            str(exc).splitlines()[0][:200] if str(exc) else "",
            host,
        )
        return None


def refusal(host: str, holder: str, me: str) -> str:
    """The one message of a refused worker."""
    return (
        f"refused: machine {host} already has a hugebench worker ({holder}), and one machine runs one sweep "
        f"at a time; stop this worker ({me}) or give it its own name (--host-name, HUGEBENCH_HOST_NAME)"
    )
