"""``hugebench worker SCHEDULER``: a Dask worker for one machine — one thread, the resources ``machine`` and
``host:<name>``, and the machine plugin; SIGTERM, SIGINT and SIGHUP close it, which restores the knobs.

It runs as root and Dask runs whatever a connected peer sends, so it serves only a ``tls://`` scheduler with
the lab's certificates (``--certs DIR``, see ``certs``): every connection, to the scheduler and to the worker's
own port, is mutual TLS with the lab's CA. A plain ``tcp://`` scheduler is refused unless the user accepts, by
a flag that says so, that anyone who reaches it runs code here."""

from __future__ import annotations

import asyncio
import logging
import signal
import socket
import sys

import click

from hugebench.errors import HugebenchError
from hugebench.experiment.cluster import (
    RESOURCE,
    ClusterValueError,
    host_resource,
    safe_host,
    scheduler_address,
)
from hugebench.kernel import Host


@click.command("worker")
@click.argument("scheduler")
@click.option(
    "--certs",
    envvar="HUGEBENCH_CERTS",
    default=None,
    metavar="DIR",
    help="the lab's certificates (`hugebench cluster certs DIR`: ca.pem, worker.pem, worker-key.pem) "
    "for a tls:// scheduler",
)
@click.option(
    "--insecure-accept-any-client",
    "insecure",
    is_flag=True,
    help="serve a plain tcp:// scheduler, which authenticates nobody: anyone who reaches it runs code "
    "as root on this machine",
)
@click.option(
    "--host-name",
    envvar="HUGEBENCH_HOST_NAME",
    default=None,
    help="name of this machine in results (default: its host name)",
)
@click.option(
    "--sys-root",
    envvar="HUGEBENCH_SYS_ROOT",
    default="/sys",
    help="where sysfs is (tests: a fake tree)",
)
@click.option("--proc-root", envvar="HUGEBENCH_PROC_ROOT", default="/proc", help="where procfs is")
@click.option("--journal", envvar="HUGEBENCH_JOURNAL", default=None, help="restore journal file")
@click.option(
    "--lock", "lock", envvar="HUGEBENCH_LOCK", default=None, help="host-wide sweep lock file"
)
@click.option(
    "--idle-restore",
    type=click.FloatRange(min=0.1),
    default=30.0,
    show_default=True,
    help="seconds without a run after which this machine's knobs are restored and its lock dropped",
)
@click.option(
    "--death-timeout",
    type=click.FloatRange(min=1),
    default=None,
    help="exit when the scheduler has been unreachable this long (default: keep trying)",
)
def worker(
    scheduler,
    certs,
    insecure,
    host_name,
    sys_root,
    proc_root,
    journal,
    lock,
    idle_restore,
    death_timeout,
):
    """Serve this machine to the Dask scheduler at SCHEDULER (tls://HOST:8786) for cluster sweeps."""
    try:
        from hugebench.cluster.machine import MachinePlugin
    except ImportError:
        raise click.ClickException(
            "hugebench worker needs Dask: pip install 'hugebench[cluster]'"
        ) from None
    security = worker_security(scheduler, certs, insecure)
    host = safe_host(host_name or socket.gethostname())
    plugin = MachinePlugin(
        host,
        machine_host=Host.at(sys_root, proc_root),
        journal=journal,
        lock=lock,
        python=sys.executable,
        idle_s=idle_restore,
    )
    asyncio.run(serve(scheduler, host, plugin, death_timeout, security))


def worker_security(scheduler: str, certs: str | None, insecure: bool):
    """The worker's Dask ``Security`` (None: Dask's default, plain tcp://, accepted by ``insecure``); a
    clean refusal of a bad address, a tcp:// scheduler not accepted, or certificates that do not load."""
    try:
        scheme = scheduler_address(scheduler, "SCHEDULER")
    except ClusterValueError as exc:
        raise click.BadParameter(exc.message, param_hint="SCHEDULER") from None
    if scheme == "tls":
        if insecure:
            raise click.UsageError(
                "--insecure-accept-any-client accepts a plain tcp:// scheduler that authenticates "
                f"nobody; {scheduler} is tls://, where --certs authenticates every peer: leave the "
                "flag out"
            )
        if certs is None:
            raise click.UsageError(
                "a tls:// scheduler needs the lab's certificates: --certs DIR (made by "
                "`hugebench cluster certs DIR`)"
            )
        from hugebench.cluster.certs import security

        return security(certs, "worker")
    if certs is not None:
        raise click.UsageError(
            f"--certs is for a tls:// scheduler; {scheduler} is plain tcp://: start the scheduler with "
            "the certificates and give tls://HOST:PORT"
        )
    if not insecure:
        raise click.UsageError(
            f"refusing to serve {scheduler}: Dask's tcp:// authenticates nobody, and anyone who reaches "
            "the scheduler would run code as root on this machine. Make the lab's certificates with "
            "`hugebench cluster certs DIR`, start the scheduler with them and run `hugebench worker "
            "tls://HOST:PORT --certs DIR` (docs: cluster); or, on a network you trust, accept the risk "
            "with --insecure-accept-any-client"
        )
    click.echo(
        f"hugebench worker: WARNING: serving {scheduler} without authentication "
        "(--insecure-accept-any-client): anyone who reaches it runs code as root on this machine",
        err=True,
    )
    return None


async def serve(
    scheduler: str, host: str, plugin, death_timeout: float | None, security=None
) -> None:
    """Run the worker until it is closed (by the scheduler, a signal, or a lost scheduler)."""
    from distributed import Worker

    _one_line_logs()
    await claim_first(scheduler, host, plugin, security)
    worker = Worker(
        scheduler,
        security=security,
        name=host,
        nthreads=1,
        resources={RESOURCE: 1, host_resource(host): 1},
        plugins=(plugin,),
        death_timeout=death_timeout,
    )
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        loop.add_signal_handler(sig, lambda: asyncio.ensure_future(worker.close()))
    try:
        await worker
    except Exception as exc:
        if plugin.refused:  # this machine already has a worker: say so, without Dask's traceback
            raise HugebenchError(plugin.refused) from None
        raise HugebenchError(_not_started(scheduler, exc, death_timeout)) from None
    await worker.finished()


def _not_started(scheduler: str, exc: BaseException, death_timeout: float | None) -> str:
    """Why the Dask worker did not start, in one line (Dask says it with a chain of tracebacks)."""
    while exc.__cause__ is not None and str(exc).startswith("Worker "):
        exc = (
            exc.__cause__
        )  # "Worker failed to start." / "Worker start timed out": the cause says why
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)):
        within = f"within --death-timeout {death_timeout:g} s" if death_timeout else "in time"
        return (
            f"the scheduler at {scheduler} did not answer {within}: "
            "is a Dask scheduler running there, on tls:// with the lab's certificates?"
        )
    return f"the worker could not join the scheduler at {scheduler}: {_said(exc)}"


def _said(exc: BaseException) -> str:
    return f"{type(exc).__name__}: {exc}".replace("\n", " ")[:300]


class _OneLine(logging.Filter):
    """A Dask log record with a traceback keeps its message and the exception's line, not the traceback."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info and record.exc_info[1] is not None:
            exc = record.exc_info[1]
            record.msg = f"{record.getMessage()} {_said(exc)}".strip()
            record.args, record.exc_info, record.exc_text = None, None, None
        return True


def _one_line_logs() -> None:
    """Dask's log lines, one line each: what failed is said by hugebench's one error at the end."""
    for logger in (logging.getLogger("distributed"), logging.getLogger()):
        for handler in logger.handlers:
            if not any(isinstance(f, _OneLine) for f in handler.filters):
                handler.addFilter(_OneLine())


async def claim_first(scheduler: str, host: str, plugin, security=None) -> None:
    """Claim the machine before a Dask worker exists: a refusal is then this one message, not a worker that
    fails to start (Dask logs that with a traceback). An unreachable scheduler: the worker waits for it as
    always, and its plugin claims once it is there."""
    from distributed.comm.core import FatalCommClosedError
    from distributed.core import rpc

    from hugebench.cluster.claims import claim, refusal

    try:
        args = security.get_connection_args("worker") if security is not None else {}
        async with rpc(scheduler, timeout=10, connection_args=args) as scheduler_rpc:
            answer = await claim(scheduler_rpc, host, plugin.token, resource=host_resource(host))
    except FatalCommClosedError as exc:  # TLS: the scheduler's CA is not ours, or ours is refused
        cause = exc.__cause__ or exc.__context__ or exc
        raise HugebenchError(
            f"the scheduler at {scheduler} and this worker's certificates do not match ({_said(cause)}): "
            "give --certs the lab's certificates (the scheduler's CA), valid today; `hugebench "
            "cluster certs DIR` makes new ones"
        ) from None
    except OSError:
        return
    if answer is not None and not answer["ok"]:
        raise HugebenchError(
            refusal(host, answer["holder"], f"hugebench worker on {socket.gethostname()}")
        )
