"""Everything checked before the first run, so that bad input is refused before anything is measured.

Allocators resolve, kernel knobs exist and accept the values, root is there when a knob must change, no
stale journal says the machine was left changed, the results directory holds only compatible rows, and
cells that cannot fit in memory are marked to be skipped (with the reason) instead of being OOM-killed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass, field
from datetime import datetime, timezone

from . import __version__
from . import allocators as alloc_mod
from . import metadata
from .errors import PrivilegeError, SpecError
from .measure import perf as perf_mod
from .measure.encoding import resolve_counters
from . import system

# Keep this much of MemAvailable free for the page cache, the parent and the kernel.
MEMORY_HEADROOM = 0.9


@dataclass
class Checked:
    """The outcome of preflight: what the orchestrator needs to run each RunSpec."""

    sweep_id: str
    context: dict
    done: set = field(default_factory=set)
    skip: dict = field(default_factory=dict)  # cell_id -> reason
    allocators: dict = field(default_factory=dict)  # name -> {name, path, env, mode, version}
    prctl_never: set = field(default_factory=set)  # run ids that get THP 'never' by prctl, not sysfs
    counter_specs: list = field(default_factory=list)
    perf_bin: str | None = None
    perf_events: list = field(default_factory=list)
    perf_choices: list = field(default_factory=list)
    condition_memory: dict = field(default_factory=dict)

    def system_for(self, run) -> dict:
        """Kernel knobs to write for a run (THP 'never' done by prctl is left out)."""
        if run.run_id in self.prctl_never:
            return {k: v for k, v in run.system.items() if k != "thp.enabled"}
        return dict(run.system)


def preflight(spec, runs, store, options) -> Checked:
    """Check everything, or raise a HugebenchError saying what to fix. Nothing is written to the kernel."""
    system.check_no_stale_journal(system.journal_path(options.journal))
    _check_compatible(spec, store)
    table = alloc_mod.registry(spec.allocators)
    allocs = alloc_mod.check_all(sorted({r.allocator for r in runs}), table)
    for name, info in allocs.items():
        info["mode"] = table[name].mode
    _check_void(spec, runs, allocs)
    prctl = _check_system(runs, options)
    if spec.condition_memory and os.geteuid() != 0:
        raise PrivilegeError(f"{spec.source}: condition_memory writes /proc/sys/vm/compact_memory and drop_caches, "
                             f"which needs root: run `sudo hugebench sweep {spec.source}`, or remove condition_memory")
    perf_info = _perf_setup(spec, options)
    ctx_machine = metadata.machine_context(allocators=allocs)
    sweep_id = _sweep_id(spec)
    checked = Checked(
        sweep_id=sweep_id,
        context={},
        done=store.completed_run_ids(),
        skip=_memory_skips(runs, options.proc_root),
        allocators=allocs,
        prctl_never=prctl,
        condition_memory=spec.condition_memory,
        **perf_info,
    )
    checked.context = _context(spec, runs, checked, ctx_machine)
    return checked


def _sweep_id(spec) -> str:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{spec.name}-{stamp}-{os.getpid()}"


def _check_compatible(spec, store) -> None:
    mine = spec.fingerprint()
    for sweep_id, ctx in store.contexts().items():
        theirs = (ctx.get("spec_fingerprint"), ctx.get("experiment"))
        if theirs != (mine, spec.name):
            raise SpecError(
                f"results directory {store.path} already holds runs of experiment {theirs[1]!r} (sweep {sweep_id}) "
                f"made with different fixed settings (workload, params, allocator definitions, system knobs or "
                f"measurement options); mixing them would make rows incomparable. Use another directory with "
                f"-o DIR, or restore the previous YAML to resume that sweep.")


def _check_void(spec, runs, allocs) -> None:
    from . import workloads

    workload = workloads.get(spec.workload)
    for run in runs:
        if allocs[run.allocator]["mode"] == "void" and "allocator_mode" not in workload.params:
            raise SpecError(f"{spec.source}: allocator 'void' only applies to workloads with an allocator_mode "
                            f"parameter (alloctest); {spec.workload} always uses malloc")


def _check_system(runs, options) -> set:
    """Knob names/values and privileges; returns the run ids whose THP 'never' is done by prctl."""
    settings = [r.system for r in runs]
    by_prctl = system.preflight(settings, options.sys_root, options.proc_root, allow_prctl_never=True,
                                rerun=f"hugebench sweep {options.spec_source}")
    if not by_prctl:
        return set()
    return {r.run_id for r in runs if r.system.get("thp.enabled") == "never"}


def _perf_setup(spec, options) -> dict:
    mode = options.perf if options.perf is not None else spec.perf
    caps = perf_mod.detect()
    cpu = metadata.cpu_info()
    counter_mode = spec.counters
    counter_choices = perf_mod.choose_events(cpu, caps, None if counter_mode in ("auto", "off") else counter_mode)
    counter_specs = [] if counter_mode == "off" else [
        dataclasses.asdict(c) for c in resolve_counters(counter_choices, perf_bin=caps.path or "perf")]
    if mode == "off" or not caps.available:
        return {"counter_specs": counter_specs}
    choices = perf_mod.choose_events(cpu, caps, None if mode == "auto" else mode)
    events = [c.event for c in choices if c.event]
    return {"counter_specs": counter_specs, "perf_bin": caps.path, "perf_events": events, "perf_choices": choices}


def _memory_skips(runs, proc_root) -> dict:
    available = _mem_available(proc_root)
    skips = {}
    if available is None:
        return skips
    for run in runs:
        need = run.memory_estimate
        if need and need > available * MEMORY_HEADROOM:
            skips[run.cell_id] = (f"needs about {need / 2**30:.1f} GiB but only {available / 2**30:.1f} GiB is "
                                  f"available (MemAvailable); run it on a larger machine or shrink the cell")
    return skips


def _mem_available(proc_root) -> int | None:
    try:
        with open(os.path.join(proc_root, "meminfo")) as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        return None
    return None


def _context(spec, runs, checked: Checked, machine: dict) -> dict:
    from . import workloads

    workload = workloads.get(spec.workload)
    return {
        "sweep_id": checked.sweep_id,
        "experiment": spec.name,
        "workload": spec.workload,
        "spec": spec.to_dict(),
        "spec_fingerprint": spec.fingerprint(),
        "axes": list(spec.axes),
        "baseline": spec.baseline,
        "primary_metric": workload.primary_metric,
        "metrics": [dict(zip(("column", "label", "fmt"), m)) for m in workload.metrics],
        "plots": [list(p) for p in workload.plots],
        "hugebench_version": __version__,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "planned_runs": len(runs),
        "plan_hash": hashlib.sha1(json.dumps([r.run_id for r in runs]).encode()).hexdigest()[:12],
        "allocators": checked.allocators,
        "perf_events": checked.perf_events,
        "counter_specs": checked.counter_specs,
        "skipped_cells": checked.skip,
        "machine": machine,
    }


def condition_memory(settings: dict, proc_root: str) -> None:
    """Compact memory and/or drop the page cache before a run (root only; checked in preflight)."""
    system.condition_memory(proc_root, compact=settings.get("compact", False),
                            drop_caches=settings.get("drop_caches", False))
