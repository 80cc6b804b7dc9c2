"""A toy workload of Python only, registered from this one module: nothing else in hugebench knows it.

It sums ``items`` integers in the worker (its ``runner``), declares its report columns and a table of its
own as data, and has rough time and memory models for ``hugebench plan``. tests/run/test_toy_workload.py runs it
through plan, sweep and report; a worker process finds it by importing this module (``module=__name__``).
"""

from __future__ import annotations

import time

from hugebench.workloads import Column, Param, TableSection, Workload, register


def run(request, workdir) -> dict:
    """The worker calls this with its request: one timed sum, and the columns of the row."""
    items = request.run["params"]["items"]
    started = time.perf_counter()
    total = sum(range(items))
    seconds = time.perf_counter() - started
    if total != items * (items - 1) // 2:
        raise RuntimeError(f"the sum of {items} integers came out as {total}")
    return {"ns_per_item": seconds * 1e9 / items, "items_summed": items, "sum_s": seconds}


def per_cell(rows, axes, level):
    """The toy's own table: per cell of the axes, the runs and the fastest ns per item."""
    import pandas as pd

    ok = rows[rows["status"] == "ok"] if "status" in rows.columns else rows
    keys = [a for a in axes if a in ok.columns]
    if ok.empty or not keys:
        return pd.DataFrame()
    grouped = ok.groupby(keys, sort=True)["ns_per_item"]
    return pd.DataFrame({"runs": grouped.size(), "best_ns": grouped.min()}).reset_index()


def _time(params: dict) -> float:
    return 0.6 + 5e-8 * params["items"]


def _memory(params: dict) -> int:
    return 64 << 20


WORKLOAD = register(
    Workload(
        name="toy",
        doc="Sums integers in Python: a workload registered from a test module of its own.",
        runner=f"{__name__}:run",
        params={"items": Param(int, 100_000, minimum=1, help="integers summed in the timed loop")},
        timed_phase="sum",
        metrics=(("ns_per_item", "ns/item", ".1f"), ("items_summed", "Items", "si")),
        time_estimate=_time,
        memory_estimate=_memory,
        tables=(
            TableSection(
                "Toy: the fastest run of each cell",
                per_cell,
                (Column("runs", "runs"), Column("best_ns", "best ns/item", ".2f")),
            ),
        ),
    )
)
