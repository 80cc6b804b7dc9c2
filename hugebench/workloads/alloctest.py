"""alloctest: ITHare's alloc-test, 80/20-picked slots toggled by malloc/free, blocks written and read back."""

from __future__ import annotations

import math

from hugebench.workloads.base import (
    COMMON_METRICS,
    STARTUP_S,
    Param,
    Workload,
    loop_params,
    register,
)


def _slots(p: dict) -> int:
    """Slots over all threads, as the workload derives them."""
    slots = p.get("slots", 0)
    if slots:
        return slots * p.get("threads", 1) if p.get("slots_per") == "thread" else slots
    return round(2 * p.get("total_bytes", 0) / _mean_size(p))


def _mean_size(p: dict) -> float:
    """Mean block size of the size law (bands: the original's power-of-two bands; inverse: p ~ 1/size)."""
    hi = p.get("max_size", 65536)
    if p.get("size_law", "bands") == "bands":
        m = max(4, int(hi).bit_length() - 1)
        return sum(2.0 ** -(min(k, m - 2) - 1) * (1.5 * 2**k + 0.5) for k in range(2, m))
    lo, hi = p.get("min_size", 8), hi + 1
    return (hi - lo) / math.log(hi / lo) if hi > lo + 1 else lo


def _ops(p: dict) -> int:
    """Picks (warmup + timed) over all threads."""
    picks = p["iterations"] + p["warmup_iterations"]
    return picks * p["threads"] if p.get("iterations_per", "thread") == "thread" else picks


def _time(p: dict) -> float:
    # Seen on a 2-core KVM guest, 1 thread, write-read, glibc: ~1.5 us per pick with inverse sizes to 64 KiB
    # (memset-bound), ~0.35 us with the original's bands over 2^25 slots (cache and TLB misses on the cold
    # slots); fill and teardown ~0.15 us per slot. An in-process void pass repeats the run at ~40% of it.
    # With touch: original (the faithful experiments) a run is lighter: experiments/alloc.yaml (20M ops per
    # thread, 2^25 slots, 192 runs, 2026-11-25, docs/results.md) took 1.5-4.8 s a run, the void allocator the
    # least, glibc the most: ~0.09 us per pick and ~0.035 us per slot fit them (the model sums to 1.07x their
    # wall time; the old terms priced them at 3.8x).
    light = p.get("touch") == "original" and p.get("size_law") != "inverse"
    per_pick = 1.5e-6 if p.get("size_law") == "inverse" else 0.09e-6 if light else 0.35e-6
    per_slot = 0.035e-6 if light else 1.5e-7
    seconds = per_pick * _ops(p) / min(p["threads"], 2) + per_slot * _slots(p)
    if p.get("void_run") == "in-process":
        seconds *= 1.4
    return STARTUP_S + seconds


def _extra(row: dict) -> dict:
    """Memory overhead = peak RSS / peak bytes requested (RSS in real bytes from /proc, any page size).

    ``memory_overhead_net`` first takes away the RSS the worker had before the workload started (the
    interpreter and libraries), which matters at small sizes.
    """
    requested = row.get("peak_requested_bytes") or 0
    peak, before = row.get("peak_rss_bytes"), row.get("rss_before_workload_bytes")
    if not requested or peak is None or row.get("allocator_mode") == "void":
        return {"memory_overhead": None, "memory_overhead_net": None}
    return {
        "memory_overhead": peak / requested,
        "memory_overhead_net": (peak - (before or 0)) / requested,
    }


def _memory(p: dict) -> int:
    # Steady state: each slot is full half the time, blocks average the size law's mean plus the allocator's
    # header and rounding (+16 B), x1.5 for its overhead (jemalloc ~1.3x with large blocks) and drift. Plus
    # the slot table (16 B a slot, from the allocator: void runs have it too), the scattering permutation
    # (4 B a slot), each thread's void block (16 MiB for an in-process void pass) and the interpreter.
    slots = _slots(p)
    blocks = slots / 2 * (_mean_size(p) + 16) * 1.5
    if p.get("allocator_mode") == "void":
        blocks = 0
    table = slots * (16 + (4 if p.get("hot_slots") == "scattered" else 0))
    void_block = max(p.get("max_size", 65536), 16 << 20 if p.get("void_run") == "in-process" else 0)
    return int(blocks + table + p.get("threads", 1) * void_block + (32 << 20))


WORKLOAD = register(
    Workload(
        name="alloctest",
        params={
            # Defaults: ITHare's alloc-test as its published program runs (2^25 slots in total, 100M
            # operations per thread, power-of-two size bands, six-level 80/20 slots, hot slots first).
            "threads": Param(
                int,
                1,
                minimum=1,
                help="threads, each with its own slots (1 .. 2x the hardware threads; rows record "
                "`oversubscribed` when above)",
            ),
            "iterations": Param(
                int,
                100_000_000,
                minimum=1,
                help="timed operations (slot picks: each one malloc or one free), see iterations_per",
            ),
            "iterations_per": Param(
                str,
                "thread",
                choices=("thread", "total"),
                help="thread: iterations and warmup_iterations per thread (the original); "
                "total: split over the threads",
            ),
            "warmup_iterations": Param(
                int, 0, minimum=0, help="picks after the fill, before timing"
            ),
            "slots": Param(
                int,
                1 << 25,
                minimum=0,
                help="slots, see slots_per (0: 2 * total_bytes / mean size, over all threads)",
            ),
            "slots_per": Param(
                str,
                "total",
                choices=("total", "thread"),
                help="total: split evenly over the threads (the original); thread: each thread's",
            ),
            "total_bytes": Param(
                int,
                0,
                minimum=0,
                help="steady-state live requested bytes over all threads (when slots is 0)",
            ),
            "size_law": Param(
                str,
                "bands",
                choices=("bands", "inverse"),
                help="bands: (2^k, 2^(k+1)] with probability 2^-(k-1), mean ~45.5 B (the original); "
                "inverse: p(size) ~ 1/size on [min_size, max_size]",
            ),
            "slot_law": Param(
                str,
                "pareto6",
                choices=("pareto6", "powerlaw"),
                help="pareto6: six-level 80/20 split (the original); powerlaw: continuous "
                "p(rank) ~ rank^-s fitted to 80/20",
            ),
            "hot_slots": Param(
                str,
                "contiguous",
                choices=("contiguous", "scattered"),
                help="contiguous: the hottest slots are the lowest indices (the original); "
                "scattered: a random permutation spreads them",
            ),
            "min_size": Param(
                int, 5, minimum=1, help="smallest block, bytes (inverse; bands needs 5)"
            ),
            "max_size": Param(
                int, 65536, minimum=1, help="largest block, bytes (bands: a power of two)"
            ),
            "touch": Param(
                str,
                "write-read",
                choices=("none", "write-read", "full", "original"),
                help="none; write-read: memset after malloc, verify before free; full: also "
                "verify right after the memset; original: the original program's (memset with "
                "the size's low byte, an unchecked sum before free; the faithful experiments')",
            ),
            "allocator_mode": Param(
                str,
                "malloc",
                choices=("malloc", "new", "void"),
                help="malloc: malloc/free; new: operator new[]/delete[], the original program's calls "
                "(glibc's libstdc++ wraps malloc/free in them); void: same loop, no real "
                "allocation (the harness cost)",
            ),
            "void_run": Param(
                str,
                "separate",
                choices=("separate", "in-process"),
                help="separate: the sweep's `void` allocator cell, another process, pre-touched "
                "block; in-process: the original's void pass right after the real run, "
                "*_net columns computed here",
            ),
            **loop_params(
                seed="seed of the slot picks, sizes and slot permutation",
                chunks="equal slices of each thread's timed phase, a clock read between two (1: none "
                "inside the loop, as the original)",
            ),
        },
        timed_phase="run",
        ops_column="pairs",
        memory_estimate=_memory,
        time_estimate=_time,
        doc="ITHare's alloc-test: 80/20-picked slots toggled by malloc/free, blocks written and verified.",
        metrics=(
            ("ns_per_pair", "ns/pair", ".1f"),
            ("chunk_ns_p10", "p10 chunk ns", ".1f"),
            ("ns_per_pair_net", "net ns/pair", ".1f"),
            ("ns_per_op", "ns/op", ".1f"),
            ("ms_per_mop", "ms/Mop (whole)", ".1f"),
            ("realised_mean_size", "Mean block B", ".1f"),
            ("hot_share", "Picks to hottest 0.16%", ".1%"),
            ("cycles_per_op", "Cycles/pair", ".0f"),
            ("memory_overhead", "RSS/requested", ".2f"),
            ("stime_s", "Sys s", ".2f"),
        )
        + COMMON_METRICS,
        plots=(
            ("threads", "ns_per_pair", "allocator", "ns per malloc/free pair"),
            ("threads", "memory_overhead", "allocator", "Peak RSS / peak bytes requested"),
        ),
        extra_metrics=_extra,
    )
)
