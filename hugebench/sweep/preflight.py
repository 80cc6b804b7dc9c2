"""The sweep's preflight, decided once before the first run: ``prepare()`` -> a frozen ``SweepSetup``.

Bad input is refused here, before anything is measured or written: allocators resolve, kernel knobs exist
and accept the values, root is there when a knob must change, no stale journal says the machine was left
changed, the results directory holds only compatible rows. Also decided once: the sweep id, perf (probed
once, under the sweep's /sys and /proc roots), the timed-phase counters, which cells cannot fit in memory
(skipped with the reason instead of being OOM-killed) and the context file. Per-run kernel actions (knobs,
memory conditioning) are not here: they live on ``system.SystemState``.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone

from hugebench import __version__, kernel, system
from hugebench.errors import PrivilegeError, SpecError
from hugebench.knob_catalogue import HUGETLB_2MB, THP_ENABLED
from hugebench.machine import allocators as alloc_mod
from hugebench.machine import metadata
from hugebench.machine.allocators import Allocator
from hugebench.measure import perf as perf_mod
from hugebench.measure.encoding import resolve_counters
from hugebench.run.request import WorkerRequest
from hugebench.sweep import machine_checks

MEMORY_HEADROOM = (
    machine_checks.MEMORY_HEADROOM
)  # of MemAvailable, kept free (its one definition is there)


@dataclass(frozen=True)
class PerfWrap:
    """How every worker of the sweep is wrapped in ``perf stat`` (absent when perf is off or missing; no
    ``events`` when perf may count none of them here: then nothing is wrapped, and each label's column
    keeps its reason)."""

    bin: str
    events: tuple[str, ...]
    choices: tuple = ()  # EventChoice per label, to name each column and the reason for a missing one


@dataclass(frozen=True)
class SweepSetup:
    """Everything a sweep decides once, before its first run; the orchestrator only reads it."""

    sweep_id: str
    context: Mapping  # the sweep's context file: spec, machine, allocators, perf, skips
    allocators: Mapping[str, Allocator]  # the resolved allocator of each name the plan uses
    done: frozenset = frozenset()  # run ids already in the store (resume)
    skip: Mapping[str, str] = field(default_factory=dict)  # cell_id -> reason
    prctl_never: frozenset = (
        frozenset()
    )  # cell ids whose THP 'never' is done by prctl, not sysfs (any block)
    counter_specs: tuple = ()  # timed-phase counters, as CounterSpec dicts
    perf: PerfWrap | None = None
    condition_memory: Mapping = field(default_factory=dict)

    def system_for(self, run) -> dict:
        """Kernel knobs to write for a run (THP 'never' done by prctl is left out)."""
        if run.cell_id in self.prctl_never:
            return {k: v for k, v in run.system.items() if k != THP_ENABLED}
        return dict(run.system)

    def request_for(self, run) -> WorkerRequest:
        """The worker's request for one run."""
        alloc = self.allocators[run.allocator]
        path = alloc.resolve()
        perf = self.perf if run.workload_def.runner and self.perf and self.perf.events else None
        return WorkerRequest(
            run=run.to_dict(),
            allocator=alloc.name,
            allocator_path=str(path) if path else None,
            allocator_env=dict(alloc.env),
            allocator_expect=dict(alloc.expect),
            allocator_mode=alloc.mode,
            counters=self.counter_specs,
            thp_prctl_disable=run.cell_id in self.prctl_never,
            perf_bin=perf.bin if perf else None,
            perf_events=perf.events if perf else (),
            text_pages=run.text_pages,
        )


def prepare(spec, runs, store, options) -> SweepSetup:
    """Check everything and decide everything once, or raise a HugebenchError saying what to fix.

    Nothing is written to the kernel. perf is probed once, under the sweep's /sys and /proc roots.
    """
    check_compatible(spec, store)
    setup = prepare_machine(spec, runs, options, new_sweep_id(spec))
    return dataclasses.replace(setup, done=frozenset(store.completed_run_ids()))


def prepare_machine(spec, runs, options, sweep_id: str) -> SweepSetup:
    """The part of ``prepare`` that concerns the machine that will run ``runs`` (a cluster worker does it
    for its own machine): no stale journal, allocators, knobs and privileges, perf, skips, context."""
    system.check_no_stale_journal(system.journal_path(options.journal))
    table = spec.allocator_table
    described = alloc_mod.check_all(sorted({r.allocator for r in runs}), table)
    _check_void(spec, runs, table)
    machine_checks.check(spec, runs, options.host)  # what `plan` refuses too
    prctl = _check_system(runs, options)
    _check_memory_state(spec, runs, options)
    _check_condition_memory(spec)
    cpu = kernel.read_cpu_info(options.host)
    caps = perf_mod.detect(cpu=cpu, host=options.host)
    counter_specs, perf = _perf_plan(spec, options, cpu, caps)
    setup = SweepSetup(
        sweep_id=sweep_id,
        context={},
        allocators={name: table[name] for name in described},
        skip={**machine_checks.memory_skips(runs, options.host), **_text_skips(runs, options)},
        prctl_never=frozenset(prctl),
        counter_specs=tuple(counter_specs),
        perf=perf,
        condition_memory=spec.condition_memory.to_dict() if spec.condition_memory else {},
    )
    machine = metadata.machine_context(
        allocators=described,
        perf_caps=caps,
        host=options.host,
    )
    return dataclasses.replace(setup, context=context(spec, runs, setup, described, machine))


def refusals(spec, runs, options) -> list[str]:
    """What a sweep of ``spec`` by this user would be refused for (privileges, memory_state,
    condition_memory), each message whole; [] when it would start. ``plan`` prints them; nothing written."""
    out = []
    for check in (
        lambda: _check_system(runs, options),
        lambda: _check_memory_state(spec, runs, options),
        lambda: _check_condition_memory(spec),
    ):
        try:
            check()
        except PrivilegeError as exc:
            out.append(str(exc))
    return out


def _check_condition_memory(spec) -> None:
    if spec.condition_memory and os.geteuid() != 0:
        raise PrivilegeError(
            f"{spec.source}: condition_memory writes /proc/sys/vm/compact_memory and drop_caches, "
            f"which needs root: run `sudo {system.sudo_hugebench()} sweep {spec.source}`, or remove "
            f"condition_memory"
        )


def _check_memory_state(spec, runs, options) -> None:
    """memory_state needs root and compaction: refused before any knob is touched, with the reason."""
    if not any(r.memory_state for r in runs):
        return
    why = system.aging.why_not_here(options.host)
    if why:
        raise PrivilegeError(
            f"{spec.source}: axes: memory_state: {why}; run `sudo {system.sudo_hugebench()} sweep "
            f"{spec.source}`, or remove the memory_state axis"
        )


def new_sweep_id(spec) -> str:
    """A new sweep's id: the experiment's name, the UTC time and this process's pid."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return f"{spec.name}-{stamp}-{os.getpid()}"


def check_compatible(spec, store) -> None:
    """Refuse (SpecError) a results directory whose rows were made with other fixed settings, or have no context."""
    mine = spec.fingerprint()
    contexts = store.contexts(strict=True)
    unexplained = sorted({row.get("sweep_id") for row in store.rows()} - set(contexts), key=str)
    if unexplained:
        raise SpecError(
            f"results directory {store.path} holds runs of sweep(s) {', '.join(map(str, unexplained))} "
            f"whose context file is missing from {store.sweeps_path}, so nothing proves they were "
            f"made with this experiment's settings; use another directory with -o DIR"
        )
    for sweep_id, ctx in contexts.items():
        theirs = (ctx.get("spec_fingerprint"), ctx.get("experiment"))
        if theirs != (mine, spec.name):
            raise SpecError(
                f"results directory {store.path} already holds runs of experiment {theirs[1]!r} (sweep {sweep_id}) "
                f"made with different fixed settings (workload, params, allocator definitions, system knobs or "
                f"measurement options); mixing them would make rows incomparable. Use another directory with "
                f"-o DIR, or restore the previous YAML to resume that sweep."
            )


def _check_void(spec, runs, table) -> None:
    """Refused when the file is loaded (spec.void_problem); a spec built in code meets the same rule here."""
    from hugebench.experiment import void_problem

    workload = spec.workload_def
    for name in sorted({run.allocator for run in runs}):
        why = void_problem(workload, table[name])
        if why:
            raise SpecError(f"{spec.source}: {why}")


def _check_system(runs, options) -> set:
    """Knob names/values and privileges; returns the cell ids whose THP 'never' is done by prctl."""
    settings = [r.system for r in runs]
    by_prctl = system.check_privileges(
        settings,
        options.host,
        allow_prctl_never=True,
        rerun=f"{system.sudo_hugebench()} sweep {options.spec_source}",
    )
    if not by_prctl:
        return set()
    return {r.cell_id for r in runs if r.system.get(THP_ENABLED) == "never"}


def _perf_plan(spec, options, cpu, caps) -> tuple[list[dict], PerfWrap | None]:
    """Timed-phase counter specs and the perf stat wrapper, from one perf probe."""
    counter_mode = spec.counters
    counter_choices = perf_mod.choose_events(
        cpu, caps, None if counter_mode in ("auto", "off") else counter_mode
    )
    counter_specs = (
        []
        if counter_mode == "off"
        else [
            dataclasses.asdict(c)
            for c in resolve_counters(
                counter_choices, perf_bin=caps.path or "perf", host=options.host
            )
        ]
    )
    mode = options.perf if options.perf is not None else spec.perf
    if mode == "off" or not caps.available:
        return counter_specs, None
    choices = perf_mod.choose_events(cpu, caps, None if mode == "auto" else mode)
    events = tuple(c.event for c in choices if c.event)
    return counter_specs, PerfWrap(caps.path, events, tuple(choices))


def _text_skips(runs, options) -> dict:
    """Cells whose text_pages mode cannot work: the sweep is refused when the kernel (or, for a built-in
    workload, the interpreter that runs it) cannot do it at all; a cell whose own THP mode rules it out
    is skipped with the reason. Per run, the text library's reports prove what happened."""
    modes = sorted({r.text_pages for r in runs if r.text_pages})
    if not modes:
        return {}
    from hugebench.machine import textpages as text

    pool_set = any(int(r.system.get(HUGETLB_2MB, 0) or 0) > 0 for r in runs)
    thp_set = any(THP_ENABLED in r.system for r in runs)
    built_in = not runs[0].workload_def.runner
    for mode in modes:
        binary = os.path.realpath(options.python) if built_in else None
        why = text.check_mode(
            mode,
            options.host,
            binary,
            sweep_sets_thp=thp_set,
            sweep_sizes_pool=pool_set,
        )
        if why:
            hint = (
                f" (size the pool in the experiment: system: {{{HUGETLB_2MB}: N}})"
                if mode == "hugetlb"
                else ""
            )
            raise SpecError(
                f"{options.spec_source}: text_pages {mode!r} cannot work here: {why}{hint}"
            )
    now = kernel.thp_modes(options.host)["enabled"]
    return {
        r.cell_id: "text_pages thp needs THP 'madvise' or 'always'; this cell has THP 'never'"
        for r in runs
        if r.text_pages == "thp" and r.system.get(THP_ENABLED, now) == "never"
    }


def context(spec, runs, setup: SweepSetup, allocators: dict, machine: dict) -> dict:
    """The sweep's context file (``sweeps/<id>.json``): spec, metrics, plan, allocators, perf, machine."""
    workload = spec.workload_def
    primary, metrics, better = workload.report_metrics(spec.params)
    return {
        "sweep_id": setup.sweep_id,
        "experiment": spec.name,
        "workload": spec.workload,
        "spec": spec.to_dict(),
        "spec_fingerprint": spec.fingerprint(),
        "axes": list(spec.axes),
        "baseline": spec.baseline,
        "primary_metric": primary,
        "primary_better": better,
        "metrics": [dict(zip(("column", "label", "fmt"), m)) for m in metrics],
        "plots": [list(p) for p in workload.plots],
        "hugebench_version": __version__,
        "started_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "planned_runs": len(runs),
        "plan_hash": hashlib.sha1(json.dumps([r.run_id for r in runs]).encode()).hexdigest()[:12],
        "allocators": allocators,
        "perf_events": list(setup.perf.events) if setup.perf else [],
        "counter_specs": list(setup.counter_specs),
        "skipped_cells": dict(setup.skip),
        "machine": machine,
    }
