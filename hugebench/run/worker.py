"""Child entry point: run ONE RunSpec through ``_core`` in this fresh process and write one JSON reply.

    python -m hugebench.run.worker --request REQUEST.json --reply REPLY.json

The request and the reply are files of the run directory (``rundir``); the request's type is
``request.WorkerRequest``. The parent built this process's environment (LD_PRELOAD and the allocator's
knobs), so the allocator and the THP mode are in force from the first instruction. The worker proves what it
runs under (the mapped malloc library, the THP-disable prctl), snapshots /proc around each phase through the workload's hook, and
replies with a flat dict of metrics. The reply goes to a file, not stdout, so nothing a library prints can
corrupt it.
"""

from __future__ import annotations

import argparse
import importlib
import math
import os
import sys
import time
import traceback
from pathlib import Path

from hugebench import kernel, workloads
from hugebench.machine import allocators
from hugebench.measure import phases
from hugebench.measure.counters import derive, pmu_columns
from hugebench.measure.encoding import CounterSpec
from hugebench.run.request import WorkerRequest
from hugebench.run.rundir import failure_reply, write_reply


def _flatten_core_result(result: dict, resolved: list, prefix: str = "") -> dict:
    """_core's nested dict -> flat row columns (phase.<name>.s, pmu.<label>...).

    A nested dict flattens into ``<key>.<subkey>`` columns (hashsets: ``set.<kind>.ns_per_lookup``), its
    counters into ``pmu.<key>.<subkey>.<label>``; the top level's counters are the caller's to turn into
    pmu.* columns.
    """
    row = {}
    for key, value in result.items():
        if key == "phases" and not prefix:
            for phase, seconds in value.items():
                row[f"phase.{phase}.s"] = seconds
        elif key == "counters":
            if prefix:  # the top level's become pmu.* columns with their reasons via measure.counters.pmu_columns
                row.update(pmu_columns(resolved, value, prefix=f"pmu.{prefix.rstrip('.')}"))
        elif isinstance(value, dict):
            row.update(_flatten_core_result(value, resolved, f"{prefix}{key}."))
        elif isinstance(value, (int, float, str, bool)) or value is None:
            row[prefix + key] = value
        elif isinstance(value, (list, tuple)) and len(value) <= 64:
            row[prefix + key] = list(value)
    return row


def _apply_process_thp(request: WorkerRequest) -> dict:
    """THP 'never' without root: PR_SET_THP_DISABLE for this process, verified."""
    if not request.thp_prctl_disable:
        return {}
    from hugebench.system import disable_thp_for_this_process

    if not disable_thp_for_this_process():
        raise RuntimeError(
            "PR_SET_THP_DISABLE did not take effect; THP 'never' cannot be had without root here"
        )
    return {"thp_prctl_disabled": True}


def _verify_allocator(request: WorkerRequest) -> dict:
    if request.allocator_mode == "as-is":  # nothing preloaded: record whatever serves malloc
        provider = allocators.malloc_provider()
        return {
            "allocator_mapped": "; ".join(
                sorted(
                    p
                    for p in allocators.mapped_libraries(kernel.read_maps())
                    if allocators.KNOWN_MALLOC_LIBS.search(os.path.basename(p))
                )
            )
            or "glibc",
            "allocator_malloc_from": provider,
            "allocator_served": allocators.served_name(provider, sys.executable),
        }
    mapped = allocators.verify_mapped(request.allocator, request.allocator_path, kernel.read_maps())
    malloc_from = allocators.verify_malloc(
        request.allocator, request.allocator_path, allocators.malloc_provider()
    )
    missing = [k for k, v in request.allocator_env.items() if os.environ.get(k) != v]
    if missing:
        raise RuntimeError(
            f"allocator knob(s) {', '.join(missing)} not in the worker's environment"
        )
    probed = allocators.probe_knobs()
    allocators.check_expected(request.allocator, request.allocator_expect, probed)
    return {
        "allocator_mapped": mapped,
        "allocator_malloc_from": malloc_from,
        "allocator_served": allocators.served_name(malloc_from, sys.executable),
        **{f"allocator.{k}": v for k, v in probed.items()},
    }


def run(request: WorkerRequest) -> dict:
    """Execute the request; return the flat metric row (raises on any failure)."""
    row = _apply_process_thp(request)
    spec = request.run
    workload = workloads.get(spec["workload"], spec.get("workload_module", ""))
    if (
        workload.runner
    ):  # a program is the measured process; it proves its own allocator (probe library)
        module, _, function = workload.runner.partition(":")
        row.update(getattr(importlib.import_module(module), function)(request, Path.cwd()))
        return row
    row.update(_verify_allocator(request))
    from hugebench import _core

    if _core.build_info().get("debug"):
        raise RuntimeError(
            "hugebench._core is a Debug build; numbers from it would be misleading. "
            "Reinstall with the default (Release) build"
        )
    recorder = phases.PhaseRecorder(timed_phase=workload.timed_phase)
    resolved = [CounterSpec(**c) for c in request.counters]
    counters = [c.as_tuple() for c in resolved if c.reason is None]
    vm_before = kernel.read_vmstat()
    row["rss_before_workload_bytes"] = kernel.read_status().get("VmRSS")
    row["anon_huge_before_workload_bytes"] = kernel.read_smaps_rollup().get("AnonHugePages")
    t0 = time.perf_counter()
    result = getattr(_core, workload.function)(**spec["params"], counters=counters, hook=recorder)
    row["workload_wall_s"] = time.perf_counter() - t0
    row.update(_flatten_core_result(result, resolved))
    row.update(pmu_columns(resolved, result.get("counters")))
    row.update(recorder.metrics())
    row.update(_process_totals(vm_before))
    row.update(_derived(row, workload))
    if workload.extra_metrics:
        row.update(workload.extra_metrics(row))
    return row


def _derived(row: dict, workload) -> dict:
    """Per-operation metrics from the timed phase's own counters (NaN where a counter is missing)."""
    ops = row.get(workload.ops_column) or math.nan
    elapsed_ns = (row.get(f"phase.{workload.timed_phase}.s") or math.nan) * 1e9
    derived = derive(
        row, ops, row.get("peak_rss_bytes") or math.nan, elapsed_ns=elapsed_ns, source="pmu"
    )
    derived.pop("ns_per_op", None)  # each workload reports its own primary latency
    inputs = {
        "cycles_per_op": "cycles",
        "stlb_misses_per_1k_ops": "stlb_misses",
        "walk_cycles_share": "walk_cycles",
        "faults_per_gib": "page_faults",
    }
    reasons = {
        f"{name}.reason": row.get(f"pmu.{counter}.reason") or "input missing"
        for name, counter in inputs.items()
        if name in derived and math.isnan(derived[name])
    }
    return {**derived, **reasons}


def _process_totals(vm_before: dict) -> dict:
    status = kernel.read_status()
    usage = phases.rusage_snapshot()
    totals = {
        "peak_rss_bytes": status.get("VmHWM"),
        "minflt": usage["minflt"],
        "majflt": usage["majflt"],
        "utime_s": usage["utime_s"],
        "stime_s": usage["stime_s"],
    }
    delta = kernel.counter_delta(vm_before, kernel.read_vmstat(), kernel.THP_VMSTAT)
    totals.update({f"vmstat.{k}": v for k, v in delta.items()})
    return totals


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hugebench.run.worker")
    parser.add_argument("--request", required=True)
    parser.add_argument("--reply", required=True)
    args = parser.parse_args(argv)
    request = WorkerRequest.read(args.request)
    reply: dict[str, object]
    try:
        reply = {"status": "ok", "row": run(request)}
        code = 0
    except Exception as exc:  # the reply carries the failure; the parent turns it into a failed row
        output = getattr(exc, "output", None)
        if output is None:  # a program's own failure is its output, not our traceback
            traceback.print_exc(file=sys.stderr)
        reply = failure_reply(exc)
        code = 1
    write_reply(args.reply, reply)
    return code


if __name__ == "__main__":
    sys.exit(main())
