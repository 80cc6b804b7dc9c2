"""faultstorm: threads hit a big buffer at random pages; where its page faults land depends on the backing."""

from __future__ import annotations

from hugebench.workloads.base import (
    CHUNK_P10,
    COMMON_METRICS,
    STARTUP_S,
    Param,
    Workload,
    loop_params,
    register,
)


def _time(p: dict) -> float:
    # ~1 s per GiB obtained and released, ~200 ns per random page access (faulting ones dominate).
    return (
        STARTUP_S
        + p["buffer_bytes"] / 2**30
        + 2e-7 * p["threads"] * p["ops_per_thread"] / min(p["threads"], 2)
    )


def _memory(p: dict) -> int:
    # The buffer itself, every thread's page permutation (4 B per page, ops mode only) and the check's
    # one byte per page; hugetlb pages come out of the pool but are memory all the same.
    buffer = p.get("buffer_bytes", 256 << 20)
    pages = buffer // 4096
    permutations = 0 if p.get("requests_per_thread", 0) else p.get("threads", 1) * pages * 4
    return int(buffer + permutations + pages + (16 << 20))


WORKLOAD = register(
    Workload(
        name="faultstorm",
        doc="Threads hit a big buffer at random pages; where its page faults land depends on the backing.",
        params={
            "backing": Param(
                str,
                "mmap-private",
                choices=(
                    "vector",
                    "new",
                    "malloc",
                    "mmap-private",
                    "mmap-private-populate",
                    "mmap-shared",
                    "mmap-shared-populate",
                    "madv-hugepage",
                    "madv-populate",
                    "hugetlb",
                ),
                help="how the buffer is obtained (vector zero-fills it in 'obtain'; new/malloc/"
                "mmap-* without populate leave it unmapped)",
            ),
            "buffer_bytes": Param(
                int, 256 << 20, minimum=4096, help="buffer size, a multiple of 4 KiB"
            ),
            "threads": Param(int, 1, minimum=1, help="steady-phase threads (may exceed the cores)"),
            "ops_per_thread": Param(
                int,
                1_000_000,
                minimum=1,
                help="page accesses per thread at random page offsets (ops mode)",
            ),
            "write_ratio": Param(
                float, 0.5, minimum=0.0, help="share of accesses (or requests) that write"
            ),
            "first_touch": Param(
                bool, False, help="one thread writes a byte per page before the steady phase"
            ),
            "requests_per_thread": Param(
                int, 0, minimum=0, help="> 0: requests mode, each request scans request_bytes"
            ),
            "request_bytes": Param(
                int, 1 << 20, minimum=1, help="slice one request scans (requests mode)"
            ),
            **loop_params(
                seed="seed of the access order", chunks="equal slices of each thread's steady phase"
            ),
        },
        timed_phase="steady",
        ops_column="ops",
        memory_estimate=_memory,
        time_estimate=_time,
        metrics=(
            ("ns_per_op", "ns/op (steady)", ".1f"),
            CHUNK_P10,
            ("phase.steady.minflt", "Steady faults", "si"),
            ("steady_thread_stime_share", "Sys share", ".0%"),
            ("phase.obtain.s", "Obtain s", ".3f"),
            ("cycles_per_op", "Cycles/op", ".0f"),
        )
        + COMMON_METRICS[:2],
        plots=(
            ("threads", "phase.steady.s", "backing", "Steady phase (s)"),
            (
                "threads",
                "steady_thread_stime_share",
                "backing",
                "System-time share of the steady phase",
            ),
        ),
    )
)
