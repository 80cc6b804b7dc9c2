"""Where a cluster sweep runs: the ``cluster:`` block of an experiment file or the ``--cluster`` flag.

No Dask here: a file with a ``cluster:`` block is checked (and planned) on a machine without Dask too.

    cluster:
      scheduler: tls://lab1:8786     # a running scheduler (`dask scheduler` + `hugebench worker` per machine)
      # ssh: [lab1, lab2, lab3]      # or: start one with distributed's SSHCluster (the first also schedules)
      certs: /etc/hugebench/certs    # the lab's certificates (`hugebench cluster certs DIR`): mutual TLS
      # insecure_accept_any_client: true   # tcp:// or ssh without certs: anyone reaching it runs code
      machines: each                 # each: every cell on every machine | spread: blocks over identical ones
      workers: 2                     # wait until this many machines have joined (default 1)
      wait: 120                      # ... for at most this many seconds (default 60)
      lost_after: 300                # a machine without a worker this long is lost (default 300)
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from hugebench.errors import SpecError

MODES = ("each", "spread")
MAX_SECONDS = 7 * 24 * 3600  # wait and lost_after: at most a week
KEYS = {
    "scheduler": "address of a running Dask scheduler, tls://HOST:PORT (tcp:// only with "
    "insecure_accept_any_client)",
    "ssh": "list of machines to start a Dask cluster on with SSHCluster (the first also runs the scheduler)",
    "machines": "each (every cell on every machine; host becomes an axis) | spread (repetition blocks over "
    "identical machines)",
    "workers": "how many machines to wait for before planning (int >= 1, default 1)",
    "wait": "seconds to wait for them (default 60)",
    "lost_after": "seconds a machine may be without a worker mid-sweep before it is lost: its block goes to "
    "another machine (spread) or its runs fail as lost (each) (default 300)",
    "certs": "directory of the lab's certificates (`hugebench cluster certs DIR`): ca.pem, client.pem, "
    "client-key.pem (and, with ssh, the scheduler's and workers' at the same path on their machines)",
    "insecure_accept_any_client": "true: use tcp:// (or ssh without certs), where anyone who reaches the "
    "scheduler runs code as root on the workers (default false)",
}
# Refused unless the user accepts it by name: Dask's tcp:// authenticates nobody.
INSECURE = (
    "Dask's tcp:// authenticates nobody: anyone who reaches the scheduler runs code as root on every "
    "worker. Make the lab's certificates with `hugebench cluster certs DIR`, start the scheduler with them "
    "and use tls://HOST:PORT with certs: DIR (--certs DIR), or accept the risk on a network you trust with "
    "insecure_accept_any_client: true (--insecure-accept-any-client)"
)
# One refusal, by the file's check (spec) and by a sweep whose --machines flag makes it so (client).
ADAPTIVE_ON_EACH = (
    "repetitions: auto needs machines: spread on a cluster (with machines: each, every machine "
    "would need its own decisions); give a number of repetitions"
)
RESOURCE = "machine"  # every hugebench worker has 1 and one thread: one run at a time per machine
HOST_PREFIX = "host:"  # + the host name: the resource that pins a task to one machine
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
# A host is a name or an address, never an option: ssh would read "-oProxyCommand=..." as one. So: an optional
# user@, then a DNS name (labels of letters, digits, - and _, not starting with -), an IPv4 address or a bracketed
# IPv6 one, then an optional :port.
_USER = r"(?:[A-Za-z0-9_][A-Za-z0-9_.-]*@)?"
_NAME = r"(?:[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)(?:\.[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?)*\.?"
_HOSTNAME = rf"(?:{_NAME}|\[[0-9A-Fa-f:.]+\])"
_HOST = re.compile(rf"^{_USER}{_HOSTNAME}(?::(?P<port>\d{{1,5}}))?$")
_ADDRESS = re.compile(rf"^(?P<scheme>tcp|tls)://{_HOSTNAME}:(?P<port>\d{{1,5}})$")


def host_resource(host: str) -> str:
    return f"{HOST_PREFIX}{host}"


def safe_host(name: str) -> str:
    """A host name as it goes into sweep ids and file names (letters, digits, . _ -)."""
    return _UNSAFE.sub("_", name) or "unknown"


@dataclass(frozen=True)
class ClusterConfig:
    """A validated cluster: exactly one of ``scheduler`` and ``ssh``; ``certs`` (the lab's certificates) or,
    accepted by name, ``insecure`` (tcp://, anyone who reaches the scheduler runs code on the workers)."""

    scheduler: str | None = None
    ssh: tuple[str, ...] = ()
    machines: str = "each"
    workers: int = 1
    wait: float = 60.0
    lost_after: float = 300.0
    certs: str | None = None
    insecure: bool = False

    def describe(self) -> str:
        return self.scheduler or f"ssh://{','.join(self.ssh)}"


@dataclass(frozen=True)
class ClusterBlock:
    """The ``cluster:`` block of a file, checked, with its values as written (the command line's flags
    override them before :func:`resolve` types the cluster as a :class:`ClusterConfig`); a key the file
    left out is None, but ``machines`` (each, then). ``to_dict()``: the block as the context file stores
    it, key for key in the file's order (``written``), ``machines`` last when the file left it out."""

    machines: str
    scheduler: str | None = None
    ssh: tuple[str, ...] | None = None
    workers: int | None = None
    wait: float | None = None
    lost_after: float | None = None
    certs: str | None = None
    insecure_accept_any_client: bool | None = None
    written: tuple[str, ...] = ()  # the keys the file gave, in its order

    def to_dict(self) -> dict[str, Any]:
        keys = self.written + (() if "machines" in self.written else ("machines",))
        out = {key: getattr(self, key) for key in keys}
        return {**out, "ssh": list(self.ssh)} if self.ssh is not None else out


def parse_block(block, where) -> ClusterBlock | None:
    """The ``cluster:`` block of an experiment file, checked (None: the file has none); errors name file,
    line and key."""
    if block is None:
        return None
    if not isinstance(block, dict):
        raise where.error(
            ("cluster",), "must be a mapping, e.g. {scheduler: tls://lab1:8786, certs: DIR}"
        )
    for key in block:
        if key not in KEYS:
            raise where.error(("cluster", key), f"unknown key; allowed: {', '.join(KEYS)}")
    try:
        config = from_values(**{key: block.get(key) for key in KEYS})
    except ClusterValueError as exc:
        raise where.error(("cluster", exc.key), exc.message) from None
    values = {key: value for key, value in block.items() if key != "machines"}
    if values.get("ssh") is not None:
        values["ssh"] = tuple(values["ssh"])
    return ClusterBlock(machines=config.machines, written=tuple(block), **values)


class ClusterValueError(Exception):
    """A bad value of the cluster key ``key``; the caller names where it came from (file line, option)."""

    def __init__(self, key: str, message: str):
        self.key, self.message = key, message


def from_values(
    scheduler=None,
    ssh=None,
    machines=None,
    workers=None,
    wait=None,
    lost_after=None,
    certs=None,
    insecure_accept_any_client=None,
) -> ClusterConfig:
    """A ClusterConfig from plain values (the YAML block, or the CLI flags over it)."""
    if (scheduler is None) == (ssh is None):
        raise ClusterValueError(
            "scheduler" if scheduler is not None else "machines",
            "give exactly one of scheduler (tls://HOST:PORT) and ssh (a list of machines)",
        )
    if scheduler is not None:
        scheduler_address(scheduler)
    if ssh is not None:
        _check_ssh(ssh)
    machines = "each" if machines is None else machines
    if machines not in MODES:
        raise ClusterValueError("machines", f"must be one of {', '.join(MODES)}; got {machines!r}")
    workers = 1 if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 10_000:
        raise ClusterValueError("workers", f"must be an integer from 1 to 10000, got {workers!r}")
    wait = _seconds("wait", wait, 60.0)
    insecure = _insecure(scheduler, certs, insecure_accept_any_client)
    return ClusterConfig(
        scheduler,
        tuple(ssh or ()),
        machines,
        workers,
        wait,
        _seconds("lost_after", lost_after, 300.0),
        certs,
        insecure,
    )


def scheduler_address(address, key: str = "scheduler") -> str:
    """``address`` checked: tcp:// or tls://, a host name or address, a port from 1 to 65535 (0 would mean
    "any free port", which a scheduler listens on but nobody can name); -> its scheme."""
    match = _ADDRESS.match(address) if isinstance(address, str) else None
    if not match:
        raise ClusterValueError(
            key, f"must be an address like tls://lab1:8786, got {str(address)[:80]!r}"
        )
    _port(key, match["port"], address)
    return match["scheme"]


def _port(key: str, port: str | None, where: str) -> None:
    if port is not None and not 1 <= int(port) <= 65535:
        raise ClusterValueError(
            key, f"port {int(port)} in {where[:80]!r} is out of range: give 1 to 65535"
        )


def _check_ssh(ssh) -> None:
    if not isinstance(ssh, list) or not ssh:
        raise ClusterValueError(
            "ssh", f"must be a non-empty list of host names, got {str(ssh)[:80]!r}"
        )
    for host in ssh:
        match = _HOST.match(host) if isinstance(host, str) else None
        if not match:
            raise ClusterValueError(
                "ssh",
                f"must be a non-empty list of host names or addresses ([user@]host[:port], not "
                f"starting with '-'), got {str(host)[:80]!r}",
            )
        _port("ssh", match["port"], host)


def _insecure(scheduler, certs, accepted) -> bool:
    """Whether the user accepted an unauthenticated cluster; refuse one they did not accept."""
    if accepted is not None and not isinstance(accepted, bool):
        raise ClusterValueError(
            "insecure_accept_any_client", f"must be true or false, got {accepted!r}"
        )
    if certs is not None and (not isinstance(certs, str) or not certs):
        raise ClusterValueError("certs", f"must be a directory path, got {certs!r}")
    tcp = scheduler is not None and scheduler.startswith("tcp://")
    if accepted and certs is not None:
        raise ClusterValueError(
            "insecure_accept_any_client",
            "accepts a cluster that authenticates nobody (tcp://, or ssh without certs); with certs "
            "every peer is authenticated: leave it out",
        )
    if accepted and scheduler is not None and not tcp:
        raise ClusterValueError(
            "insecure_accept_any_client",
            f"accepts a plain tcp:// scheduler; {scheduler} is tls://, which needs the lab's "
            "certificates: give certs: DIR (--certs DIR) instead",
        )
    if certs is not None and tcp:
        raise ClusterValueError(
            "scheduler", f"{scheduler} is plain tcp://; with certs the scheduler is tls://HOST:PORT"
        )
    if certs is None and not accepted:
        if tcp or scheduler is None:
            raise ClusterValueError("scheduler" if tcp else "ssh", INSECURE)
        raise ClusterValueError(
            "certs",
            "a tls:// scheduler needs the lab's certificates: give certs: DIR (--certs DIR), made by "
            "`hugebench cluster certs DIR`",
        )
    return bool(accepted) and certs is None


def _seconds(key: str, value, default: float) -> float:
    value = default if value is None else value
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value <= MAX_SECONDS
    ):
        raise ClusterValueError(
            key, f"must be a number of seconds > 0 and <= {MAX_SECONDS} (a week), got {value!r}"
        )
    return float(value)


_FLAGS = {  # the option that gives a key's value
    "scheduler": "--cluster",
    "ssh": "--cluster",
    "certs": "--certs",
    "machines": "--machines",
    "workers": "--workers",
    "insecure_accept_any_client": "--insecure-accept-any-client",
}


def resolve(
    block: ClusterBlock | Mapping[str, Any] | None,
    flag: str | None,
    machines: str | None,
    workers: int | None,
    source: str,
    certs: str | None = None,
    insecure: bool = False,
) -> ClusterConfig | None:
    """The cluster to run on: ``--cluster`` (tls://HOST:PORT or ssh://h1,h2), ``--certs``,
    ``--insecure-accept-any-client``, ``--machines`` and ``--workers`` beat the file's block; None when
    neither names one (a local sweep)."""
    values = block.to_dict() if isinstance(block, ClusterBlock) else dict(block or {})
    given = {"machines": machines, "workers": workers, "certs": certs}
    if flag:
        values.pop("scheduler", None)
        values.pop("ssh", None)
        if flag.startswith("ssh://"):
            values["ssh"] = [h for h in flag.removeprefix("ssh://").split(",") if h]
        else:
            values["scheduler"] = flag
    values.update({key: value for key, value in given.items() if value})
    if insecure:
        values["insecure_accept_any_client"] = True
    if "scheduler" not in values and "ssh" not in values:
        if machines or workers or certs or insecure:
            raise SpecError(
                f"{source}: --machines/--workers/--certs/--insecure-accept-any-client need a cluster: "
                "give --cluster tls://HOST:PORT or a cluster: block in the file"
            )
        return None
    try:
        return from_values(**{key: values.get(key) for key in KEYS})
    except ClusterValueError as exc:
        typed = {
            "--cluster": flag,
            "--certs": certs,
            "--machines": machines,
            "--workers": workers,
            "--insecure-accept-any-client": insecure,
        }
        option = _FLAGS.get(exc.key)
        if exc.key == "certs" and flag and not block:
            option = "--cluster"  # a tls:// address typed without --certs
        where = option if option and typed.get(option) else f"cluster {exc.key}"
        raise SpecError(f"{source}: {where}: {exc.message}") from None
