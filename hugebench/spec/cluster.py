"""Where a cluster sweep runs: the ``cluster:`` block of an experiment file or the ``--cluster`` flag.

No Dask here: a file with a ``cluster:`` block is checked (and planned) on a machine without Dask too.

    cluster:
      scheduler: tcp://lab1:8786     # a running scheduler (`dask scheduler` + `hugebench worker` per machine)
      # ssh: [lab1, lab2, lab3]      # or: start one with distributed's SSHCluster (the first also schedules)
      machines: each                 # each: every cell on every machine | spread: blocks over identical ones
      workers: 2                     # wait until this many machines have joined (default 1)
      wait: 120                      # ... for at most this many seconds (default 60)
      lost_after: 300                # a machine without a worker this long is lost (default 300)
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..errors import SpecError

MODES = ("each", "spread")
MAX_SECONDS = 7 * 24 * 3600  # wait and lost_after: at most a week
KEYS = {
    "scheduler": "address of a running Dask scheduler, tcp://HOST:PORT",
    "ssh": "list of machines to start a Dask cluster on with SSHCluster (the first also runs the scheduler)",
    "machines": "each (every cell on every machine; host becomes an axis) | spread (repetition blocks over "
    "identical machines)",
    "workers": "how many machines to wait for before planning (int >= 1, default 1)",
    "wait": "seconds to wait for them (default 60)",
    "lost_after": "seconds a machine may be without a worker mid-sweep before it is lost: its block goes to "
    "another machine (spread) or its runs fail as lost (each) (default 300)",
}
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
_HOST = re.compile(rf"^{_USER}{_HOSTNAME}(?::\d{{1,5}})?$")
_ADDRESS = re.compile(rf"^(tcp|tls|ucx|ws|wss)://{_HOSTNAME}:\d{{1,5}}$")


def host_resource(host: str) -> str:
    return f"{HOST_PREFIX}{host}"


def safe_host(name: str) -> str:
    """A host name as it goes into sweep ids and file names (letters, digits, . _ -)."""
    return _UNSAFE.sub("_", name) or "unknown"


@dataclass(frozen=True)
class ClusterConfig:
    """A validated cluster: exactly one of ``scheduler`` and ``ssh``."""

    scheduler: str | None = None
    ssh: tuple[str, ...] = ()
    machines: str = "each"
    workers: int = 1
    wait: float = 60.0
    lost_after: float = 300.0

    def describe(self) -> str:
        return self.scheduler or f"ssh://{','.join(self.ssh)}"


def parse_block(block, where) -> dict:
    """The ``cluster:`` block of an experiment file, checked; errors name file, line and key."""
    if block is None:
        return {}
    if not isinstance(block, dict):
        raise where.error(
            ("cluster",), "must be a mapping, e.g. {scheduler: tcp://lab1:8786, machines: each}"
        )
    for key in block:
        if key not in KEYS:
            raise where.error(("cluster", key), f"unknown key; allowed: {', '.join(KEYS)}")
    try:
        config = from_values(
            block.get("scheduler"),
            block.get("ssh"),
            block.get("machines"),
            block.get("workers"),
            block.get("wait"),
            block.get("lost_after"),
        )
    except _KeyError as exc:
        raise where.error(("cluster", exc.key), exc.message) from None
    return {**block, "machines": config.machines}


class _KeyError(Exception):
    def __init__(self, key: str, message: str):
        self.key, self.message = key, message


def from_values(
    scheduler=None, ssh=None, machines=None, workers=None, wait=None, lost_after=None
) -> ClusterConfig:
    """A ClusterConfig from plain values (the YAML block, or the CLI flags over it)."""
    if (scheduler is None) == (ssh is None):
        raise _KeyError(
            "scheduler" if scheduler is not None else "machines",
            "give exactly one of scheduler (tcp://HOST:PORT) and ssh (a list of machines)",
        )
    if scheduler is not None and (not isinstance(scheduler, str) or not _ADDRESS.match(scheduler)):
        raise _KeyError("scheduler", f"must be an address like tcp://lab1:8786, got {scheduler!r}")
    if ssh is not None and (
        not isinstance(ssh, list)
        or not ssh
        or not all(isinstance(h, str) and _HOST.match(h) for h in ssh)
    ):
        bad = (
            next((h for h in ssh if not (isinstance(h, str) and _HOST.match(h))), ssh)
            if isinstance(ssh, list) and ssh
            else ssh
        )
        raise _KeyError(
            "ssh",
            f"must be a non-empty list of host names or addresses ([user@]host[:port], not "
            f"starting with '-'), got {str(bad)[:80]!r}",
        )
    machines = "each" if machines is None else machines
    if machines not in MODES:
        raise _KeyError("machines", f"must be one of {', '.join(MODES)}; got {machines!r}")
    workers = 1 if workers is None else workers
    if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= 10_000:
        raise _KeyError("workers", f"must be an integer from 1 to 10000, got {workers!r}")
    wait = _seconds("wait", wait, 60.0)
    return ClusterConfig(
        scheduler,
        tuple(ssh or ()),
        machines,
        workers,
        wait,
        _seconds("lost_after", lost_after, 300.0),
    )


def _seconds(key: str, value, default: float) -> float:
    value = default if value is None else value
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0 < value <= MAX_SECONDS
    ):
        raise _KeyError(
            key, f"must be a number of seconds > 0 and <= {MAX_SECONDS} (a week), got {value!r}"
        )
    return float(value)


def resolve(block: dict, flag: str | None, machines: str | None, workers: int | None, source: str):
    """The cluster to run on: ``--cluster`` (tcp://HOST:PORT or ssh://h1,h2) and ``--machines``/``--workers``
    beat the file's block; None when neither names one (a local sweep)."""
    values = dict(block or {})
    if flag:
        values.pop("scheduler", None)
        values.pop("ssh", None)
        if flag.startswith("ssh://"):
            values["ssh"] = [h for h in flag.removeprefix("ssh://").split(",") if h]
        else:
            values["scheduler"] = flag
    if machines:
        values["machines"] = machines
    if workers:
        values["workers"] = workers
    if "scheduler" not in values and "ssh" not in values:
        if machines or workers:
            raise SpecError(
                f"{source}: --machines/--workers need a cluster: give --cluster tcp://HOST:PORT "
                "or a cluster: block in the file"
            )
        return None
    try:
        return from_values(
            values.get("scheduler"),
            values.get("ssh"),
            values.get("machines"),
            values.get("workers"),
            values.get("wait"),
            values.get("lost_after"),
        )
    except _KeyError as exc:
        raise SpecError(f"{source}: cluster {exc.key}: {exc.message}") from None
