"""codetlb: a generated large-code program, functions over a text footprint called in random order (iTLB).

The program is built and run by :mod:`hugebench.workloads.codetlb.runner` (the runner).
"""

from __future__ import annotations

from hugebench.workloads.base import STARTUP_S, Param, Workload, register


def _time(p: dict) -> float:
    # ~6 s to build 64 MiB once (cached after), ~300 ns per call on 4 KiB pages in a 2-core KVM guest.
    return STARTUP_S + 0.5 + 3e-7 * p["calls"] + 1e-9 * p["footprint_bytes"] * 0.1


def _memory(p: dict) -> int:
    return int(
        p["footprint_bytes"] * 2 + p["calls"] * 4 + (64 << 20)
    )  # text (file + a copy), the order


WORKLOAD = register(
    Workload(
        name="codetlb",
        doc="A generated large-code program: functions over a text footprint called in random order (iTLB).",
        runner="hugebench.workloads.codetlb.runner:run",
        params={
            "footprint_bytes": Param(
                int, 64 << 20, minimum=1 << 20, help="text the functions span (16Mi..256Mi)"
            ),
            "layout": Param(
                str,
                "sparse",
                choices=("sparse", "dense"),
                help="sparse: one tiny function per 4 KiB page (iTLB-bound); dense: packed bodies",
            ),
            "func_bytes": Param(
                int, 256, minimum=16, help="bytes of straight-line code per function (dense)"
            ),
            "link_align": Param(
                str,
                "4k",
                choices=("4k", "2m"),
                help="2m links with -z max-page-size=2M so the text starts 2 MiB-aligned",
            ),
            "calls": Param(int, 5_000_000, minimum=1, help="calls in the timed window"),
            "order": Param(
                str, "uniform", choices=("uniform", "zipf"), help="which function each call picks"
            ),
            "zipf_s": Param(float, 1.0, minimum=0.0, help="Zipf exponent when order is zipf"),
            "seed": Param(int, 1, minimum=0, help="seed of the call order"),
        },
        timed_phase="window",
        memory_estimate=_memory,
        time_estimate=_time,
        metrics=(
            ("ns_per_call", "ns/call", ".1f"),
            ("text.coverage", "Text on huge pages", ".0%"),
            ("text.huge_bytes", "Text huge bytes", "bytes"),
            ("text_bytes", "Text", "bytes"),
            ("perf.itlb_misses", "iTLB walks", "si"),
            ("perf.itlb_misses_4k", "iTLB walks to 4K", "si"),
            ("build_s", "Build s", ".1f"),
        ),
        plots=(("footprint_bytes", "ns_per_call", "text_pages", "ns per call"),),
    )
)
