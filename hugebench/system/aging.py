"""``memory_state``: the free memory a run starts with, made and verified — a fresh machine or an aged one.

* ``fresh``: the per-CPU free lists given back to the buddy allocator (``DRAIN_KNOB``), clean caches dropped
  when the experiment asks (``condition_memory: {drop_caches: true}``), then memory compacted
  (``/proc/sys/vm/compact_memory``); recorded, and compaction of mlocked pages allowed as found.
* ``fragmented`` (= ``fragmented:100%``) or ``fragmented:P%``: the same start, then the fragmenter
  (``hugebench.system.fragmenter``) pins one 4 KiB page in P% of the free 2 MiB blocks counted after
  compaction, with ``vm.compact_unevictable_allowed=0`` (journaled and restored like every knob), and lives
  until the run has ended. Compaction cannot undo it: the kind a kernel's own unmovable allocations and
  pinned (mlocked, DMA-pinned) memory leave.
* ``fragmented-movable`` / ``fragmented-movable:P%``: the same pattern with the kept pages left movable
  (ordinary anonymous memory, as long-lived processes scatter it): compaction may move them, so what the
  ``defrag`` modes change can show here. ``vm.compaction_proactiveness=0`` (journaled) while it lives, so that
  kcompactd does not compact it away in the background before the run starts; direct compaction by a THP
  fault (defrag ``always``, or ``madvise`` in madvised memory) and kcompactd woken by ``defer`` still can.

While the fragmenter takes blocks (either kind) THP is ``always`` with ``defrag: never`` (so it only takes
blocks that are free, stalls in no compaction, and works whatever THP mode the run has); the run's own THP
values are back before the run starts.

Free 2 MiB blocks are counted in /proc/buddyinfo plus the memory the kernel has not handed to the buddy
allocator yet (``hugebench.kernel.reporting.free_2mib_blocks``): a kernel booted with ``deferred_init=lazy``
(this KVM guest) hands memory over in sections as the buddy allocator runs short, so the buddy count alone
stays at its floor (~1 550 blocks here) until all memory is handed over; counting both, the fragmenter's
takes show and the level means the machine's memory, not the part handed out so far.

Verified, not assumed: the state holds when at most ``limit`` = (100-P)% of the blocks counted after
compaction, plus ``TOLERANCE`` (2% of them, at least 16 blocks, for the machine's own churn), are free just
before the run, and the fragmenter is still alive when the run ends. Otherwise the run fails with the reason.

Safety: the fragmenter holds at most ``HELD_SHARE`` of MemAvailable (it needs 1/512 of the memory it
treats), faults at most ``CHUNK_BYTES`` (or ``CHUNK_SHARE`` of MemAvailable, the smaller) at once, and starts
only when MemAvailable keeps ``machine_checks.MEMORY_HEADROOM`` of room for both plus the run's planned peak
(the workload's memory model). It dies with the sweep (PDEATHSIG), is recorded for ``end_leftovers``
(the next sweep and ``hugebench system restore`` end it) and is the OOM killer's first choice. After the
run: free memory and free 2 MiB blocks are recorded once it is gone.

What does not belong here: the helper's own work (``fragmenter``), knob I/O (``knobs``/``state``).
"""

from __future__ import annotations

import json
import math
import os
import selectors
import subprocess
import sys
import time
from dataclasses import dataclass

from hugebench import kernel
from hugebench.kernel import reporting
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import (
    BY_NAME,
    COMPACT_UNEVICTABLE,
    COMPACTION_PROACTIVENESS,
    PERCPU_HIGH_FRACTION,
    THP_DEFRAG,
    THP_ENABLED,
    VM_DIR,
)
from hugebench.system.containment import RunContainer
from hugebench.system.memory import condition_memory

FRESH, FRAGMENTED, MOVABLE = "fresh", "fragmented", "fragmented-movable"
DEFAULT_LEVEL = 100  # % of the free 2 MiB blocks after compaction that ``fragmented`` pins
TOLERANCE_SHARE, TOLERANCE_BLOCKS = 0.02, 16
HELD_SHARE = 0.01  # the fragmenter holds at most this share of MemAvailable
CHUNK_BYTES, CHUNK_SHARE = (
    256 << 20,
    0.05,
)  # faulted at once: at most this, and this share of MemAvailable
HEADROOM = 0.9  # of MemAvailable usable by the fragmenter's peak plus the run's (machine_checks.MEMORY_HEADROOM)
DEADLINE_S = 300.0  # the fragmenter stops where it is after this long
SETTLE_S = 3.0  # after it, the most we wait for its blocks to come back before recording them
KNOB = COMPACT_UNEVICTABLE
PROACTIVE_KNOB = COMPACTION_PROACTIVENESS  # 0 while a movable fragmentation lives (see the module)
# Pages freed onto the per-CPU free lists stay there (up to ~40 MiB per CPU and zone here, indefinitely): a
# pinned page the fragmenter freed keeps its 2 MiB block from merging, and compaction cannot move it, so a
# later "fresh" run would not be fresh. A high percpu_pagelist_high_fraction for a moment makes the kernel
# give them back (measured: 116k pages to 190 within 1 s); the knob is journaled and set back as found.
DRAIN_KNOB, DRAIN_FRACTION, DRAIN_S, PCP_DRAINED_PAGES = (
    PERCPU_HIGH_FRACTION,
    "100000",
    5.0,
    4096,
)
WHILE_FRAGMENTING = {THP_ENABLED: "always", THP_DEFRAG: "never"}
# What aging did during the run, beside the worker's own vmstat.* deltas (THP faults, fallbacks, compaction
# stalls, collapses): how hard compaction and reclaim worked, and khugepaged's progress. Direct compaction's
# time is not counted by the kernel; noise.psi_memory_pct (time stalled on memory) includes it.
DURING_VMSTAT = (
    "compact_migrate_scanned",
    "compact_free_scanned",
    "compact_isolated",
    "compact_daemon_wake",
    "allocstall_normal",
    "allocstall_movable",
    "thp_fault_fallback",
    "compact_stall",
)
PREFIX = "memory."
SPEC_HELP = (
    "fresh, fragmented (= fragmented:100%), fragmented:P% (P from 1 to 100), or fragmented-movable "
    "(= fragmented-movable:100%) / fragmented-movable:P%"
)
HELPER = [sys.executable, "-m", "hugebench.system.fragmenter"]  # the fragmenter's command line


@dataclass(frozen=True)
class MemoryState:
    kind: str  # fresh | fragmented
    level: int = 0  # fragmented: % of the free 2 MiB blocks pinned
    movable: bool = False  # fragmented-movable: the kept pages can be moved by compaction


def parse(value) -> MemoryState:
    """An axis value -> MemoryState; ValueError saying what is allowed."""
    text = value.strip() if isinstance(value, str) else None
    if text == FRESH:
        return MemoryState(FRESH)
    for name, movable in ((MOVABLE, True), (FRAGMENTED, False)):
        if text == name:
            return MemoryState(FRAGMENTED, DEFAULT_LEVEL, movable)
        if text and text.startswith(name + ":") and text.endswith("%"):
            number = text[len(name) + 1 : -1]
            if number.isascii() and number.isdigit() and 1 <= int(number) <= 100:
                return MemoryState(FRAGMENTED, int(number), movable)
    raise ValueError(f"memory_state must be {SPEC_HELP}; got {value!r}")


def canonical(value) -> str:
    """The one spelling of a state (``fragmented`` and ``fragmented:100%`` are the same runs)."""
    state = parse(value)
    if state.kind == FRESH:
        return FRESH
    return f"{MOVABLE if state.movable else FRAGMENTED}:{state.level}%"


# What making a state costs before its run, for plan's estimate (measured on the 24 GiB 2-vCPU guest with
# 14-16 GiB free: compaction 0.1-1.2 s; fragmenting all of it 28-36 s, plus up to SETTLE_S after the run).
FRESH_SECONDS, FRAGMENT_SECONDS_AT_100 = (
    3.0,
    42.0,
)  # each includes a drain of the per-CPU lists (~1 s)


def prepare_seconds(value: str | None) -> float:
    """Seconds a run with memory_state ``value`` spends before (and after) its worker; 0 without one."""
    if not value:
        return 0.0
    state = parse(value)
    extra = (
        FRAGMENT_SECONDS_AT_100 * state.level / 100 + SETTLE_S if state.kind == FRAGMENTED else 0.0
    )
    return FRESH_SECONDS + extra


def why_not_here(host: Host = LOCAL, euid: int | None = None) -> str | None:
    """Why memory_state cannot be made on this machine by this user, or None."""
    if (os.geteuid() if euid is None else euid) != 0:
        return (
            f"memory_state compacts memory (/proc/sys/vm/compact_memory), sets {COMPACT_UNEVICTABLE} "
            "and locks pages beyond the memlock limit: that needs root"
        )
    for rel in (f"{VM_DIR}/compact_memory", BY_NAME[COMPACT_UNEVICTABLE].path, "buddyinfo"):
        if not os.path.exists(os.path.join(host.proc, rel)):
            return f"this kernel has no {os.path.join(host.proc, rel)} (no compaction)"
    return None


def knobs_set(value: str) -> dict[str, str]:
    """The kernel knobs making memory_state ``value`` sets for a while, each journaled and set back as found:
    knob -> the value and for how long (what ``hugebench plan`` lists; :meth:`AgedMemory.enter` does it)."""
    state = parse(value)
    knobs = {
        DRAIN_KNOB: f"{DRAIN_FRACTION} for up to {DRAIN_S:g} s (drains the per-CPU free lists)"
    }
    if state.kind != FRAGMENTED:
        return knobs
    knobs.update(
        {name: f"{v} while the fragmenter takes blocks" for name, v in WHILE_FRAGMENTING.items()}
    )
    held = PROACTIVE_KNOB if state.movable else KNOB
    knobs[held] = f"0 through the run ({canonical(value)})"
    return knobs


def limit_for(level: int, initial: int) -> tuple[int, int]:
    """(blocks the fragmenter leaves, the most free blocks with which the state still holds)."""
    leave = initial * (100 - level) // 100
    return leave, leave + max(TOLERANCE_BLOCKS, math.ceil(TOLERANCE_SHARE * initial))


class AgedMemory:
    """One run's memory state: ``enter()`` before it (columns, and ``failed`` when it did not hold),
    ``close()`` after it (the fragmenter ended, what the machine has afterwards)."""

    def __init__(
        self,
        value: str,
        state,
        *,
        host: Host = LOCAL,
        records: str | os.PathLike,
        reserve_bytes: int | None = None,
        drop_caches: bool = False,
        helper: list[str] | None = None,
        run_id: str = "",
    ):
        self.want, self.value = parse(value), value
        self.state, self.host = state, host
        self.records, self.reserve, self.drop_caches = records, reserve_bytes or 0, drop_caches
        self.helper, self.run_id = helper, run_id
        self.columns: dict = {
            f"{PREFIX}level_pct": self.want.level if self.want.kind == FRAGMENTED else 0
        }
        self.failed: str | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.container: RunContainer | None = None
        self._counters: dict = {}

    # -- before the run --------------------------------------------------------------------------

    def enter(self) -> AgedMemory:
        fragmented, movable = self.want.kind == FRAGMENTED, self.want.movable
        wanted = {
            KNOB: "0" if fragmented and not movable else None,
            PROACTIVE_KNOB: "0" if movable else None,
        }
        self.state.apply(
            {
                k: v if v is not None else self.state.found(k)
                for k, v in wanted.items()
                if k in self.state.knobs
            }
        )
        self.columns[f"{PREFIX}movable"] = movable if fragmented else None
        self.columns[f"{PREFIX}pcp_drain_s"] = self._drain_percpu_lists()
        done = condition_memory(self.host, compact=True, drop_caches=self.drop_caches)
        initial = reporting.free_2mib_blocks(self.host)
        self.columns.update(
            {
                f"{PREFIX}compact_s": round(done["seconds"], 3),
                f"{PREFIX}dropped_caches": done["dropped_caches"],
                f"{PREFIX}initial_free_2mib_blocks": initial,
            }
        )
        if self.want.kind == FRAGMENTED:
            self._fragment(initial)
        self.columns.update(self._supply_columns())
        self._counters = self._read_counters()
        return self

    def _drain_percpu_lists(self) -> float | None:
        """Give the pages on per-CPU free lists back to the buddy allocator (see DRAIN_KNOB); seconds taken."""
        if DRAIN_KNOB not in self.state.knobs:
            return None
        found, started = self.state.found(DRAIN_KNOB), time.monotonic()
        self.state.apply({DRAIN_KNOB: DRAIN_FRACTION})
        try:
            while (
                kernel.pcp_pages(self.host) or 0
            ) > PCP_DRAINED_PAGES and time.monotonic() - started < DRAIN_S:
                time.sleep(0.2)
        finally:
            self.state.apply({DRAIN_KNOB: found})
        return round(time.monotonic() - started, 2)

    def _read_counters(self) -> dict:
        vm = kernel.read_vmstat(self.host)
        counters = {name: vm[name] for name in DURING_VMSTAT if name in vm}
        counters.update(
            {f"khugepaged.{k}": v for k, v in kernel.read_khugepaged_counters(self.host).items()}
        )
        return counters

    def _fragment(self, initial: int) -> None:
        leave, limit = limit_for(self.want.level, initial)
        self.columns[f"{PREFIX}free_2mib_limit"] = limit
        available = kernel.mem_available(self.host) or 0
        chunk_blocks = max(1, int(min(CHUNK_BYTES, CHUNK_SHARE * available)) // (2 << 20))
        # the blocks others free meanwhile are taken too; what bounds it is what it may hold
        max_blocks = int(HELD_SHARE * available) // os.sysconf("SC_PAGE_SIZE")
        peak = chunk_blocks * (2 << 20) + max_blocks * os.sysconf("SC_PAGE_SIZE")
        if peak + self.reserve > HEADROOM * available:
            self.failed = (
                f"not enough memory to fragment safely: the fragmenter's peak ({peak / 2**20:.0f} MiB) "
                f"and the run's planned peak ({self.reserve / 2**20:.0f} MiB) need more than "
                f"{HEADROOM:.0%} of MemAvailable ({available / 2**20:.0f} MiB)"
            )
            return
        found = {k: self.state.knobs[k].read() for k in WHILE_FRAGMENTING if k in self.state.knobs}
        self.state.apply({k: v for k, v in WHILE_FRAGMENTING.items() if k in found})
        try:
            report = self._start(leave, max_blocks, chunk_blocks)
        finally:
            self.state.apply(found)
        self.columns.update({f"{PREFIX}fragmenter.{k}": v for k, v in report.items()})
        free = reporting.free_2mib_blocks(self.host)
        if "error" in report:
            self.failed = f"the fragmenter failed: {report['error']}"
        elif free > limit:
            self.failed = (
                f"memory_state {self.value} did not hold: {free} free 2 MiB blocks before the run, more "
                f"than the limit of {limit} ({100 - self.want.level}% of the {initial} free after "
                f"compaction, plus the tolerance); the fragmenter stopped: {report.get('stopped')}"
            )

    def _start(self, leave: int, max_blocks: int, chunk_blocks: int) -> dict:
        """Start the fragmenter, recorded for ``end_leftovers``; its report (or why there is none)."""
        argv = self.helper or HELPER
        argv = [
            *argv,
            "--leave",
            str(leave),
            "--max-blocks",
            str(max_blocks),
            "--chunk-blocks",
            str(chunk_blocks),
            "--deadline",
            str(DEADLINE_S),
            "--proc-root",
            str(self.host.proc),
            *(["--movable"] if self.want.movable else []),
        ]
        container = self.container = RunContainer(
            f"fragmenter-{self.run_id}", self.records, host=LOCAL, use_cgroup=False
        )
        env = {**os.environ, **container.env()}
        proc = self.proc = subprocess.Popen(
            argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, start_new_session=True
        )
        container.add(proc.pid)
        line = _read_line(proc, DEADLINE_S + 30)
        if line is None:
            assert proc.stderr is not None  # started with stderr=PIPE
            err = (
                proc.stderr.read().decode(errors="replace")[-300:]
                if proc.poll() is not None
                else ""
            )
            return {
                "error": f"no report within {DEADLINE_S + 30:g} s{(': ' + err.strip()) if err else ''}"
            }
        try:
            return json.loads(line)
        except ValueError:
            return {"error": f"unreadable report {line[:200]!r}"}

    def _supply_columns(self) -> dict:
        """What the run starts with: free 2 MiB blocks per zone, and debugfs' unusable index at order 9."""
        zones = kernel.free_huge_blocks(self.host)
        pending = reporting.unpopulated_free_bytes(self.host) // (2 << 20)
        columns: dict[str, int | float | str] = {
            f"{PREFIX}free_2mib_blocks": sum(zones.values()) + pending,
            f"{PREFIX}unpopulated_2mib_blocks": pending,
        }
        columns.update({f"{PREFIX}zone.{zone}.free_2mib_blocks": n for zone, n in zones.items()})
        index = kernel.read_unusable_index(self.host)
        if index is None:
            columns[f"{PREFIX}unusable_index.reason"] = (
                "debugfs (/sys/kernel/debug/extfrag) is not mounted here"
            )
        else:
            columns.update(
                {
                    f"{PREFIX}unusable_index.{zone.split('/')[-1]}": values[9]
                    for zone, values in index.items()
                    if len(values) > 9
                }
            )
        return columns

    # -- after the run ---------------------------------------------------------------------------

    def _settled(self) -> int:
        """Free 2 MiB blocks after the fragmenter (given a moment to come back when there was one)."""
        read = lambda: reporting.free_2mib_blocks(self.host)  # noqa: E731
        if f"{PREFIX}fragmenter.blocks_pinned" not in self.columns:
            return read()
        wanted = (
            self.columns[f"{PREFIX}initial_free_2mib_blocks"]
            - self.columns[f"{PREFIX}free_2mib_limit"]
        )
        count, waited = _settled_count(read, wanted)
        self.columns[f"{PREFIX}after.settle_s"] = waited
        return count

    def close(self) -> dict:
        """End the fragmenter; the columns after it, and ``failed`` when it did not last the run."""
        if self._counters:
            now = self._read_counters()
            self.columns.update(
                {f"{PREFIX}during.{k}": now[k] - v for k, v in self._counters.items() if k in now}
            )
        if self.proc is not None:
            if self.proc.poll() is not None and not self.failed:
                self.failed = (
                    f"the fragmenter ended during the run (exit {self.proc.returncode}), so "
                    f"memory_state {self.value} did not hold to the end"
                )
            self.proc.kill()
            self.proc.wait()
            for stream in (self.proc.stdout, self.proc.stderr):
                if stream is not None:  # always: both are pipes
                    stream.close()
            assert self.container is not None  # set by _start before self.proc
            self.columns[f"{PREFIX}fragmenter_left"] = self.container.close()[
                "containment.killed_at_end"
            ]
            self.proc = None
            self.columns[f"{PREFIX}after.pcp_drain_s"] = self._drain_percpu_lists()
        meminfo = kernel.read_meminfo(self.host)
        self.columns.update(
            {
                f"{PREFIX}after.free_2mib_blocks": self._settled(),
                f"{PREFIX}after.mem_free_bytes": meminfo.get("MemFree"),
                f"{PREFIX}after.mem_available_bytes": meminfo.get("MemAvailable"),
            }
        )
        return self.columns


def _settled_count(read, wanted: int, timeout: float = SETTLE_S) -> tuple[int, float]:
    """Free 2 MiB blocks once they reach ``wanted`` or ``timeout`` passes: pages freed at exit sit on per-CPU
    lists a moment before the buddy allocator merges them back. (count, seconds waited)"""
    started = time.monotonic()
    while (count := read()) < wanted and time.monotonic() - started < timeout:
        time.sleep(0.1)
    return count, round(time.monotonic() - started, 2)


def _read_line(proc: subprocess.Popen[bytes], timeout: float) -> str | None:
    """The first line ``proc`` writes, or None when it ends or ``timeout`` passes first."""
    deadline = time.monotonic() + timeout
    stdout = proc.stdout
    assert stdout is not None  # the caller started it with stdout=PIPE
    with selectors.DefaultSelector() as sel:
        sel.register(stdout, selectors.EVENT_READ)
        while (left := deadline - time.monotonic()) > 0:
            if sel.select(left):
                line = stdout.readline().decode(errors="replace")
                return line.strip() or None
    return None
