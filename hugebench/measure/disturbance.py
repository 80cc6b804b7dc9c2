"""What the machine was doing while a run ran: steal, load, other processes, pressure, frequency.

What belongs here: a cheap snapshot of the machine's noise sources (``snapshot``, read from an injectable
``/proc`` and ``/sys``) taken before and after each run, the ``noise.*`` row columns computed from the two
(``run_columns``), and the one rule that flags a run as disturbed (``THRESHOLDS``, ``judge``). A disturbed run
keeps ``status`` ok: it is flagged, never dropped; reports and compare name the cells that had such runs.
What does not: statistics over runs (``hugebench.stats.stability``), waiting for a quiet machine (the sweep).

Columns (each absent measurement is null with ``<column>.reason`` beside it):

* ``noise.steal_pct`` -- % of all CPU time the hypervisor took during the run (``/proc/stat`` steal).
* ``noise.other_cpus`` -- CPUs' worth of work done by everything but the run during the run: busy jiffies of
  ``/proc/stat`` minus the run's own user+system time (hb-exec's rusage of the run's tree), over the run's
  wall time. Counts short-lived processes too (a compiler started and ended within the run).
* ``noise.top_others`` -- the processes that used most CPU during the run (``/proc/<pid>/stat`` deltas;
  the sweep's own process excluded; the run's processes have ended before the second snapshot).
* ``noise.load1``, ``noise.procs_running`` -- ``/proc/loadavg`` after the run; runnable tasks (most of the
  two snapshots, the sweep itself not counted).
* ``noise.nivcsw_per_s`` -- the run's involuntary context switches per second (preempted by others).
* ``noise.migrations`` -- times the measured process moved between CPUs: ``se.nr_migrations`` of
  ``/proc/<pid>/sched``, read by hb-exec between the process's exit and its reaping (its main thread's; a
  ``command`` program's own, else the worker's). Null with the reason where the kernel does not show it.
* ``noise.psi_cpu_pct``, ``noise.psi_memory_pct``, ``noise.psi_io_pct`` -- % of the run's wall time some
  task waited for CPU / memory / IO (``/proc/pressure/*`` ``some total`` deltas).
* ``noise.cpu_mhz`` -- mean current frequency over CPUs after the run (``cpufreq/scaling_cur_freq``).
* ``noise.disturbed`` (bool) and ``noise.why`` -- the verdict of :func:`judge`.

Calibration (2-vCPU KVM guest, 2026-11-25, a 1 s busy-loop "run" under the machine lock; numbers in
docs/trusting-numbers.md): quiet: steal 0-0.3 %, other_cpus 0.01-0.03, psi cpu < 2 %, nivcsw/s 4-13; beside
one ``while 1: pass`` hog at normal priority: other_cpus 1.01-1.02 (the hog named at 0.96-1.00 CPU), nivcsw/s
114-128; beside other sessions' C++ builds: other_cpus 1.9, psi cpu 98 %. other_cpus > 0.5 separates them.
"""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Set
from dataclasses import dataclass, field
from pathlib import Path

from hugebench.kernel.host import LOCAL, Host

PREFIX = "noise."
TOP_OTHERS = 3  # processes named in noise.top_others
_CLK_TCK = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


@dataclass(frozen=True)
class Thresholds:
    """Beyond any of these a run is flagged disturbed (documented in the module header and the manual)."""

    steal_pct: float = 10.0  # the hypervisor took more than this % of the CPU time
    other_cpus: float = 0.5  # others kept more than half a CPU busy on average
    psi_cpu_pct: float = (
        50.0  # tasks waited for a CPU half the time (judged only when other_cpus is unknown)
    )
    psi_memory_pct: float = (
        10.0  # tasks stalled on memory (reclaim, compaction) more than 10 % of the time
    )


THRESHOLDS = Thresholds()


@dataclass
class Snapshot:
    """One look at the machine: monotonic time, /proc/stat cpu jiffies, loadavg, processes' CPU ticks, PSI."""

    at: float
    cpu: dict = field(default_factory=dict)  # user, nice, system, idle, iowait, irq, softirq, steal
    loadavg: tuple | None = None  # (load1, running)
    procs: dict = field(default_factory=dict)  # pid -> (comm, ticks, start ticks)
    psi: dict = field(default_factory=dict)  # cpu/memory/io -> some total (us)
    cpu_mhz: float | None = None


_CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def snapshot(host: Host = LOCAL) -> Snapshot:
    """Read the machine's noise sources now; what cannot be read is left empty (never raises)."""
    snap = Snapshot(time.monotonic())
    snap.cpu = _read_cpu(Path(host.proc, "stat"))
    snap.loadavg = _read_loadavg(Path(host.proc, "loadavg"))
    snap.procs = _read_procs(host.proc)
    snap.psi = {
        kind: total
        for kind in ("cpu", "memory", "io")
        if (total := _read_psi(Path(host.proc, "pressure", kind))) is not None
    }
    snap.cpu_mhz = _read_mhz(Path(host.sys, "devices/system/cpu"))
    return snap


def run_columns(
    before: Snapshot,
    row: dict,
    host: Host = LOCAL,
    thresholds: Thresholds = THRESHOLDS,
) -> dict:
    """The ``noise.*`` columns of a run that started after ``before`` and whose row (hb-exec's ``worker.*``
    rusage, ``wall_s``) is ``row``; the second snapshot is taken now. A run supervised from the sweep's
    process (``launcher`` sweep: no worker) counts as its own the program's CPU time and the
    supervisor's (``supervisor.*``)."""
    after = snapshot(host)
    wall = after.at - before.at
    cols = machine_columns(before, after, wall, _own_cpu_s(row), exclude={os.getpid()})
    nivcsw = row.get("worker.nivcsw", row.get(PREFIX + "nivcsw"))
    _put(
        cols,
        "nivcsw_per_s",
        None if nivcsw is None or not row.get("wall_s") else nivcsw / row["wall_s"],
        "the run's rusage was not recorded (it did not end through hb-exec)",
    )
    migrated = row.get(
        PREFIX + "migrations", row.get("worker.nr_migrations")
    )  # a program's own, else the worker's
    _put(
        cols,
        "migrations",
        migrated if isinstance(migrated, (int, float)) and migrated >= 0 else None,
        "no se.nr_migrations in /proc/<pid>/sched (a kernel without CONFIG_SCHED_DEBUG), or the run did not "
        "end through hb-exec",
    )
    disturbed, why = judge(cols, thresholds)
    cols[PREFIX + "disturbed"], cols[PREFIX + "why"] = disturbed, why
    return cols


def _own_cpu_s(row: dict) -> float:
    """The run's own CPU seconds: its worker's tree (hb-exec's rusage), else the time the sweep's process
    spent supervising it and that of every process it started (perf, hb-exec, the program's tree)."""
    names: tuple[str, ...] = ("worker.utime_s", "worker.stime_s")
    if not any(name in row for name in names):
        names = (
            "supervisor.utime_s",
            "supervisor.stime_s",
            "supervisor.children_utime_s",
            "supervisor.children_stime_s",
        )
    return sum(row.get(name) or 0.0 for name in names)


def machine_columns(
    before: Snapshot,
    after: Snapshot,
    wall_s: float,
    own_cpu_s: float,
    exclude: Set[int] = frozenset(),
) -> dict:
    """The columns that describe the machine between two snapshots (see the module header)."""
    cols: dict = {}
    d = (
        {k: after.cpu.get(k, 0) - before.cpu.get(k, 0) for k in _CPU_FIELDS}
        if before.cpu and after.cpu
        else {}
    )
    total = sum(d.values())
    no_stat = "no /proc/stat (or no time passed)"
    _put(cols, "steal_pct", 100.0 * d["steal"] / total if total > 0 else None, no_stat)
    busy_s = sum(d.get(k, 0) for k in ("user", "nice", "system", "irq", "softirq")) / _CLK_TCK
    _put(
        cols,
        "other_cpus",
        max(0.0, busy_s - own_cpu_s) / wall_s if total > 0 and wall_s > 0 else None,
        no_stat,
    )
    _put(
        cols,
        "top_others",
        _top_others(before, after, exclude, wall_s) if after.procs else None,
        "no /proc/<pid>/stat",
    )
    loads = [s.loadavg for s in (before, after) if s.loadavg]
    _put(cols, "load1", after.loadavg[0] if after.loadavg else None, "no /proc/loadavg")
    _put(cols, "procs_running", max(r for _, r in loads) - 1 if loads else None, "no /proc/loadavg")
    for kind in ("cpu", "memory", "io"):
        stalled = (
            after.psi.get(kind, 0) - before.psi.get(kind, 0)
            if kind in before.psi and kind in after.psi
            else None
        )
        _put(
            cols,
            f"psi_{kind}_pct",
            None if stalled is None or wall_s <= 0 else min(100.0, stalled / 1e4 / wall_s),
            f"no /proc/pressure/{kind} (kernel without PSI)",
        )
    _put(cols, "cpu_mhz", after.cpu_mhz, "no cpufreq in /sys (a VM guest, or no frequency driver)")
    return cols


def judge(cols: dict, thresholds: Thresholds = THRESHOLDS) -> tuple[bool, str | None]:
    """Whether a run's ``noise.*`` columns say it was disturbed, and why (None when it was not)."""
    get = lambda name: cols.get(PREFIX + name)  # noqa: E731
    reasons = []
    if (steal := get("steal_pct")) is not None and steal > thresholds.steal_pct:
        reasons.append(f"steal {steal:.0f}% > {thresholds.steal_pct:g}%")
    if (other := get("other_cpus")) is not None and other > thresholds.other_cpus:
        who = f" ({get('top_others')})" if get("top_others") else ""
        reasons.append(f"other work kept {other:.2f} CPUs busy > {thresholds.other_cpus:g}{who}")
    elif (psi := get("psi_cpu_pct")) is not None and psi > thresholds.psi_cpu_pct and other is None:
        reasons.append(
            f"tasks waited for a CPU {psi:.0f}% of the time > {thresholds.psi_cpu_pct:g}%"
        )
    if (mem := get("psi_memory_pct")) is not None and mem > thresholds.psi_memory_pct:
        reasons.append(f"memory stalls {mem:.0f}% of the time > {thresholds.psi_memory_pct:g}%")
    return bool(reasons), "; ".join(reasons) or None


def _put(cols: dict, name: str, value, reason: str) -> None:
    cols[PREFIX + name] = value
    if value is None:
        cols[PREFIX + name + ".reason"] = reason


def _top_others(before: Snapshot, after: Snapshot, exclude: Set[int], wall_s: float) -> str:
    used = []
    for pid, (comm, ticks, start) in after.procs.items():
        if pid in exclude:
            continue
        prev = before.procs.get(
            pid
        )  # the same process: the same start time (a kworker renames itself)
        delta = (
            ticks - prev[1] if prev and prev[2] == start else ticks
        )  # a new process: all of its time
        if delta > 0:
            used.append((delta / _CLK_TCK, comm, pid))
    used.sort(reverse=True)
    return ", ".join(
        f"{comm}[{pid}] {s / wall_s:.2f} CPU" if wall_s > 0 else f"{comm}[{pid}] {s:.2f} s"
        for s, comm, pid in used[:TOP_OTHERS]
        if s / max(wall_s, 1e-9) >= 0.01
    )


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except (OSError, UnicodeDecodeError):
        return None


def _read_cpu(path: Path) -> dict:
    text = _read(path)
    line = next((ln for ln in (text or "").splitlines() if ln.startswith("cpu ")), None)
    if line is None:
        return {}
    values = [int(v) for v in line.split()[1:] if v.isdigit()]
    return dict(zip(_CPU_FIELDS, values))


def _read_loadavg(path: Path) -> tuple | None:
    parts = (_read(path) or "").split()
    try:
        return float(parts[0]), int(parts[3].split("/")[0])
    except (IndexError, ValueError):
        return None


def _read_procs(proc: Path) -> dict:
    procs: dict = {}
    try:
        entries = [e for e in os.listdir(proc) if e.isdigit()]
    except OSError:
        return procs
    for entry in entries:
        text = _read(proc / entry / "stat")
        if not text or ")" not in text:
            continue  # ended between the listing and the read
        comm = text[text.index("(") + 1 : text.rindex(")")]
        rest = text[text.rindex(")") + 2 :].split()
        try:
            procs[int(entry)] = (comm, int(rest[11]) + int(rest[12]), int(rest[19]))
        except (IndexError, ValueError):
            continue
    return procs


def _read_psi(path: Path) -> int | None:
    for line in (_read(path) or "").splitlines():
        if line.startswith("some "):
            fields = dict(kv.split("=", 1) for kv in line.split()[1:] if "=" in kv)
            return int(fields["total"]) if fields.get("total", "").isdigit() else None
    return None


def _read_mhz(cpus: Path) -> float | None:
    values = []
    for path in cpus.glob("cpu[0-9]*/cpufreq/scaling_cur_freq"):
        text = (_read(path) or "").strip()
        if text.isdigit():
            values.append(int(text) / 1000.0)
    return sum(values) / len(values) if values else None


# -- before a sweep and before each block: is the machine quiet now? --------------------------------

LOOK_S = 0.2  # how long one look at the machine lasts


class NoisyMachineWarning(UserWarning):
    """The machine is busy as a sweep starts: its runs will likely be flagged disturbed."""


def busy_reason(
    host: Host = LOCAL,
    look_s: float | None = None,
    thresholds: Thresholds = THRESHOLDS,
) -> str | None:
    """Why the machine is busy right now (the :func:`judge` rule over a ``look_s`` look, default
    :data:`LOOK_S`), or None."""
    before = snapshot(host)
    time.sleep(LOOK_S if look_s is None else look_s)
    after = snapshot(host)
    return judge(
        machine_columns(before, after, after.at - before.at, 0.0, exclude={os.getpid()}), thresholds
    )[1]


def wait_quiet(
    limit_s: float, host: Host = LOCAL, look_s: float | None = None
) -> tuple[float, str | None]:
    """Wait until :func:`busy_reason` says nothing, at most ``limit_s`` seconds; (seconds waited, why the
    machine was still busy at the limit or None)."""
    start = time.monotonic()
    while True:
        why = busy_reason(host, look_s)
        waited = time.monotonic() - start
        if why is None or waited >= limit_s:
            return waited, why


class QuietGate:
    """``--quiet-machine``: before the first run of each repetition block, wait (up to ``limit_s``) for a quiet
    machine; the columns it returns for that run record the wait (``noise.waited_s``) and, when the limit was
    reached, why the machine was still busy (``noise.still_busy``). Without a limit it does nothing."""

    def __init__(self, limit_s: float | None, host: Host = LOCAL):
        self.limit_s, self.host = limit_s, host
        self._block = object()

    def __call__(self, run) -> dict:
        if self.limit_s is None or run.repetition == self._block:
            return {}
        self._block = run.repetition
        waited, why = wait_quiet(self.limit_s, self.host)
        return {PREFIX + "waited_s": round(waited, 3), PREFIX + "still_busy": why}


def warn_if_busy(host: Host = LOCAL, quiet_limit: float | None = None) -> str | None:
    """Before a sweep: warn (:class:`NoisyMachineWarning`) when the machine is busy now; return why."""
    why = busy_reason(host)
    if why:
        fix = (
            f"--quiet-machine waits up to {quiet_limit:g} s before each block"
            if quiet_limit is not None
            else "its runs will be flagged noise.disturbed; --quiet-machine SECONDS waits for a quiet machine"
        )
        warnings.warn(
            f"the machine is busy as the sweep starts ({why}): {fix}",
            NoisyMachineWarning,
            stacklevel=3,
        )
    return why
