"""Every process of a run, found and ended, whatever happens to the sweep.

A run's processes are contained three ways at once:
* a cgroup v2 per run where the machine lets us create one (``hugebench.system.cgroup``): the first process
  joins it before exec, so nothing the run starts can leave it; ``cgroup.kill`` ends all of it;
* a token in the environment every process of the run inherits (``HUGEBENCH_RUN``), found in
  ``/proc/PID/environ`` even after a daemon called ``setsid()`` and was reparented to PID 1;
* a record file per run (beside the journal: ``<journal stem>-runs/``) naming the sweep that owns the run, its
  cgroup, its token and the pids seen in its tree (with their start times, so a reused pid is never killed).

A run ends with ``RunContainer.close()``. A sweep that cannot end its runs (killed with -9) leaves its records
and cgroups behind; ``end_leftovers()``, called when the next sweep starts and by ``hugebench system restore``,
ends every run whose sweep is gone. The records are root's state (``hugebench.system.journal``): read only
from a directory no one else can write, without following a link, and what one names is ended only when it
is provably the run's: a process whose start time matches and that is in the run's cgroup or holds its
token, a cgroup directory under hugebench's own hierarchy. hb-exec's own subreaper kills (csrc/tools/hb_exec.cpp) come first: this
is what is left when they could not run.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import signal
import time
import warnings
from pathlib import Path

from hugebench import kernel
from hugebench.errors import HugebenchError
from hugebench.kernel.host import LOCAL, Host
from hugebench.system import cgroup as cgroups
from hugebench.system import memlimit
from hugebench.system.journal import read_state_file, records_dir, records_path

TOKEN = "HUGEBENCH_RUN"
TRACK_INTERVAL_S = 1.0  # how often the tree of a run without a cgroup is looked at (and recorded)
RECORD_FORMAT = 1


def record_dir(journal: str | os.PathLike | None = None) -> Path:
    """Where runs are recorded: beside the journal (``$HUGEBENCH_JOURNAL`` or the default), so the sweep and
    ``system restore`` given the same journal find the same runs."""
    return records_path(journal)


def alive(pid: int, start: int | None, host: Host = LOCAL) -> bool:
    """``pid`` exists, is not a zombie, and (when ``start`` is known) is the process that started then."""
    stat = kernel.read_optional(Path(host.proc, str(pid), "stat"))
    if not stat:
        return False
    after = stat.rsplit(")", 1)[1].split()
    return after[0] != "Z" and (start is None or int(after[19]) == start)


def token_holders(token: str, host: Host = LOCAL) -> list[int]:
    """The processes that inherited ``HUGEBENCH_RUN=token`` (never this one)."""
    me = os.getpid()
    return [
        int(entry.name)
        for entry in host.proc.iterdir()
        if entry.name.isdigit() and int(entry.name) != me and holds(int(entry.name), token, host)
    ]


def holds(pid: int, token: str, host: Host = LOCAL) -> bool:
    """``pid``'s environment has ``HUGEBENCH_RUN=token`` (the whole entry)."""
    environ = kernel.process_environ(pid, host)
    return environ is not None and f"{TOKEN}={token}".encode() in environ


def end_processes(token: str | None, pids: dict[int, int], host: Host = LOCAL) -> int:
    """SIGKILL the recorded pids that are still the same processes and every holder of ``token``, until none
    is left; the number of processes ended."""
    ended: set[int] = set()
    for _ in range(50):
        victims = {p for p, start in pids.items() if alive(p, start, host)}
        victims.update(token_holders(token, host) if token else ())
        victims.discard(os.getpid())
        if not victims:
            break
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
                ended.add(pid)
            except (ProcessLookupError, PermissionError):
                pass
        time.sleep(0.02)
    return len(ended)


class RunContainer:
    """The processes of one run. Use as a context manager around the run; ``columns`` then say how it was
    contained and what its cgroup measured."""

    def __init__(
        self,
        run_id: str,
        records: str | os.PathLike,
        *,
        host: Host = LOCAL,
        use_cgroup: bool = True,
        memory_limit: int | None = None,
    ):
        pid = os.getpid()
        self.host = host
        self.name = f"{pid}-{kernel.process_start_ticks(pid, host)}-{run_id[:12]}"
        self.token = f"{self.name}-{secrets.token_hex(6)}"
        self.cgroup, self.reason = (
            cgroups.create(self.name, host)
            if use_cgroup
            else (None, "cgroups not used for this run")
        )
        # the run's memory limit (memory_limit: bytes), or why it cannot be had (then the run must not start)
        self.limit: memlimit.MemoryLimit | None = None
        self.limit_error: str | None = None
        if memory_limit is not None:
            self.limit, self.limit_error = memlimit.apply(
                memory_limit, self.name, self.cgroup, host
            )
        self.records = Path(records)
        self.record_path: Path | None = self.records / f"{self.name}.json"
        self.pids: dict[int, int] = {}
        self.columns: dict = {}
        self._anon_thp_peak: int | None = None
        self._last_track = 0.0
        self._write_record()

    def __enter__(self) -> RunContainer:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def env(self) -> dict[str, str]:
        """What the run's first process must inherit."""
        return {TOKEN: self.token}

    def enter(self) -> None:
        """In the launched child, between fork and exec: join the run's cgroup (a refusal is found by
        ``adopt`` in the parent; an exception here would only say "Exception occurred in preexec_fn")."""
        for group in (self.cgroup, self.limit):
            if group is not None:
                try:
                    group.join(os.getpid())
                except OSError:
                    pass

    def adopt(self, pid: int) -> None:
        """In the parent, once ``pid`` runs: if it is not in the run's cgroup (the kernel refused the move, as
        in some containers), the run goes on without the cgroup, under the pid record, and says so. A run
        whose memory limit did not take is stopped here: ``limit_error`` says why."""
        if self.limit is not None and not self.limit.holds(pid, self.host):
            self.limit_error = f"the run's process is not in {self.limit.path}: no memory limit"
            self.kill()
        if self.cgroup is None:
            return
        line = next(
            (
                ln
                for ln in (
                    kernel.read_optional(Path(self.host.proc, str(pid), "cgroup")) or ""
                ).splitlines()
                if ln.startswith("0::")
            ),
            "",
        )
        if line.endswith(f"/{cgroups.PARENT}/{self.name}"):
            return
        self.reason = (
            f"could not move the run into {self.cgroup.path} (its process is in {line[3:] or '?'})"
        )
        self.cgroup.remove()
        self.cgroup = None
        self._write_record()

    def add(self, pid: int) -> None:
        """Record ``pid`` as the run's now (a helper started outside the run's launcher)."""
        start = kernel.process_start_ticks(pid, self.host)
        if start is not None:
            self.pids[pid] = start
            self._write_record()

    def track(self, root: int) -> None:
        """While the run goes on (called often, acts once a second): sample the cgroup's huge-page memory, or
        without a cgroup record the pids of the tree under ``root``."""
        now = time.monotonic()
        if now - self._last_track < TRACK_INTERVAL_S:
            return
        self._last_track = now
        if self.cgroup is not None:
            thp = self.cgroup.anon_thp() if self.cgroup.has_memory() else None
            if thp is not None:
                self._anon_thp_peak = max(thp, self._anon_thp_peak or 0)
            return
        new = {
            p: s
            for p in kernel.process_tree(root, self.host)
            if p not in self.pids and (s := kernel.process_start_ticks(p, self.host)) is not None
        }
        if new:
            self.pids.update(new)
            self._write_record()

    def join_files(self) -> list[str]:
        """The cgroup.procs files a process writes its pid to, to join the run's cgroups (``enter``'s, for a
        launcher that joins them itself: hb-exec --enter)."""
        groups = [self.cgroup, self.limit if self.limit is not None and self.limit.own else None]
        return [str(g.path / "cgroup.procs") for g in groups if g is not None]

    def members(self) -> list[int] | None:
        """The run's processes now, from its cgroup (None without one): where its trees are found
        without reading every process on the machine."""
        return self.cgroup.procs() if self.cgroup is not None else None

    def kill(self) -> int:
        """End every process of the run now (a timeout, SIGTERM or the end of the run)."""
        if self.cgroup is not None:
            count = len(self.cgroup.procs())
            self.cgroup.kill()
            return count
        return end_processes(self.token, self.pids, self.host)

    def close(self) -> dict:
        """End what is left, read the cgroup's accounting, remove the cgroup and the record; the run's
        containment columns."""
        if "containment" in self.columns:
            return self.columns
        columns: dict[str, object] = {
            "containment": "cgroup" if self.cgroup else "subreaper+pid record",
            "containment.killed_at_end": self.kill(),
        }
        if self.cgroup is None:
            columns["containment.reason"] = self.reason
        else:
            self.cgroup.wait_empty()
            columns.update(self._memory_columns())
        if self.limit is not None:
            columns.update(self.limit.columns())
            self.limit.remove()
        if self.cgroup is not None:
            self.cgroup.remove()
        if self.record_path is not None:
            _remove_record(self.records, self.record_path.name)
        self.columns = columns
        return columns

    def _memory_columns(self) -> dict:
        assert self.cgroup is not None  # called only for a run in a cgroup
        if not self.cgroup.has_memory():
            return {"cgroup.memory.reason": cgroups.no_memory_reason(self.cgroup, self.host)}
        return {
            "cgroup.memory_peak_bytes": self.cgroup.memory_peak(),
            "cgroup.oom_kills": self.cgroup.oom_kills(),
            "cgroup.anon_thp_peak_bytes": self._anon_thp_peak,
        }

    def _write_record(self) -> None:
        if self.record_path is None:
            return
        record = {
            "format": RECORD_FORMAT,
            "name": self.name,
            "token": self.token,
            "owner_pid": os.getpid(),
            "owner_start": kernel.process_start_ticks(os.getpid(), self.host),
            "cgroup": str(self.cgroup.path) if self.cgroup else None,
            "pids": {str(p): s for p, s in self.pids.items()},
        }
        try:
            directory = records_dir(self.records, create=True)
            assert directory is not None  # made when missing
            with directory:
                directory.write_atomic(self.record_path.name, json.dumps(record) + "\n")
        except (OSError, HugebenchError) as exc:
            why = exc.strerror if isinstance(exc, OSError) else str(exc)
            self.reason = f"{self.reason}; no record of its processes ({why}: {self.record_path})"
            self.record_path = None


def end_leftovers(records: str | os.PathLike, host: Host = LOCAL) -> list[dict]:
    """End the runs of sweeps that are gone: every record whose owner is dead (its cgroup, recorded pids and
    token holders, each proven the run's), then every hugebench cgroup whose owner is dead. What was ended,
    per run. UnsafePathError, before anything is ended, when another user could write the records."""
    ended = []
    for name, record in _dead_records(records, host):
        killed = 0
        group = cgroups.run_cgroup(record["name"], host) if record["cgroup"] else None
        if group is not None:
            killed += len(group.procs())
            group.remove()
        pids = {
            int(p): s
            for p, s in record["pids"].items()
            if _the_runs(int(p), s, record["name"], record["token"], host)
        }
        killed += end_processes(record["token"], pids, host)
        _remove_record(records, name)
        ended.append({"run": record["name"], "owner_pid": record["owner_pid"], "killed": killed})
    for group in cgroups.run_cgroups(host):
        owner = _owner(group.path.name)
        if owner is None or alive(*owner, host):
            continue
        killed = len(group.procs())
        if group.remove():
            ended.append({"run": group.path.name, "owner_pid": owner[0], "killed": killed})
    return ended


def _dead_records(records: str | os.PathLike, host: Host) -> list[tuple[str, dict]]:
    """(file name, record) of every valid record in ``records`` whose sweep is gone; a file that is not a
    record of ours is left alone, with a warning."""
    directory = records_dir(records)
    if directory is None:
        return []
    found = []
    with directory:
        for name in sorted(n for n in os.listdir(directory.fd) if n.endswith(".json")):
            try:
                record, why = _parse_record(read_state_file(directory, name), name)
            except (OSError, HugebenchError) as exc:
                record, why = None, str(exc)
            if record is None:
                warnings.warn(
                    f"{Path(records, name)}: not a run record of hugebench's ({why}); left alone",
                    stacklevel=3,
                )
            elif not alive(record["owner_pid"], record["owner_start"], host):
                found.append((name, record))
    return found


def _parse_record(data: bytes | None, file_name: str) -> tuple[dict | None, str]:
    """A run record as written by ``RunContainer``, or None and why not: its name is its file's, says its
    owner (``PID-START-RUNID``), its token starts with its name, its cgroup is named after it."""
    try:
        record = json.loads(data or b"")
    except ValueError:
        return None, "not JSON"
    if not isinstance(record, dict) or record.get("format") != RECORD_FORMAT:
        return None, "not a record's format"
    name, token, pids = record.get("name"), record.get("token"), record.get("pids", {})
    checks = {
        "name": isinstance(name, str) and f"{name}.json" == file_name,
        "owner": isinstance(name, str)
        and _owner(name) == (record.get("owner_pid"), record.get("owner_start")),
        "token": isinstance(token, str) and isinstance(name, str) and token.startswith(f"{name}-"),
        "cgroup": record.get("cgroup") is None or isinstance(record.get("cgroup"), str),
        "pids": isinstance(pids, dict)
        and all(p.isdigit() and isinstance(s, int) for p, s in pids.items()),
    }
    wrong = [key for key, ok in checks.items() if not ok]
    if wrong:
        return None, f"{', '.join(wrong)} not as hugebench writes them"
    return {**record, "pids": pids}, ""


def _the_runs(pid: int, start: int, name: str, token: str, host: Host) -> bool:
    """``pid`` is still the process recorded (its start time) and provably the run's: in the run's cgroup
    under hugebench's hierarchy, or holding its token."""
    if not alive(pid, start, host):
        return False
    text = kernel.read_optional(Path(host.proc, str(pid), "cgroup")) or ""
    line = next((ln for ln in text.splitlines() if ln.startswith("0::")), "")
    return f"/{cgroups.PARENT}/{name}/" in f"{line[3:]}/" or holds(pid, token, host)


def _remove_record(records: str | os.PathLike, name: str) -> None:
    with contextlib.suppress(OSError, HugebenchError):
        directory = records_dir(records)
        if directory is not None:
            with directory, contextlib.suppress(FileNotFoundError):
                os.unlink(name, dir_fd=directory.fd)


def _owner(name: str) -> tuple[int, int | None] | None:
    """The sweep (pid, start ticks) named in a run's name ``PID-START-RUNID``."""
    parts = name.split("-", 2)
    if len(parts) != 3 or not parts[0].isdigit() or not (parts[1].isdigit() or parts[1] == "None"):
        return None
    return int(parts[0]), int(parts[1]) if parts[1].isdigit() else None
