"""Small real sweeps of every built-in workload kind, for the notebook's tests (a few seconds in all)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from hugebench.experiment import parse_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

ALLOCATORS = "axes:\n  allocator: [glibc, jemalloc]\nbaseline: {allocator: glibc}\n"
SWEEPS = {  # workload -> the experiment file's params and axes (two cells, two runs each)
    "hashlookup": "params: {keys: 2000}\n" + ALLOCATORS,
    "hashsets": "params: {keys: 2000, rounds: 2, set_kinds: 'flat,node'}\n" + ALLOCATORS,
    "alloctest": "params: {slots: 4096, iterations: 20000}\n" + ALLOCATORS,
    "faultstorm": "params: {buffer_bytes: 4MiB, ops_per_thread: 20000}\n" + ALLOCATORS,
    "fleet": "params: {objects: 2000, duration_s: 0.3, sample_interval_s: 0.1}\n" + ALLOCATORS,
    "codetlb": "params: {footprint_bytes: 1Mi, calls: 20000, func_bytes: 64}\n"
    "axes: {layout: [sparse, dense]}\nbaseline: {layout: sparse}\n",
    "command": "params: {argv: [/bin/sh, -c, 'sleep 0.1'], sample_interval: 0.05}\n" + ALLOCATORS,
    "tlbprobe": "params: {accesses: 20000, backing: 4k}\n"
    "axes: {working_set_bytes: [256Ki, 1Mi]}\nbaseline: {working_set_bytes: 256Ki}\n",
}


def sweep(out: Path, workload: str, journal: Path) -> None:
    """One small sweep of ``workload`` into the store ``out`` (experiment ``my-<workload>``); every run ok.
    A store holds one experiment: each workload's goes into a directory of its own."""
    text = f"name: my-{workload}\nworkload: {workload}\nperf: off\nrepetitions: 2\n"
    spec = parse_spec(text + textwrap.dedent(SWEEPS[workload]), f"my-{workload}.yaml")
    result = run_sweep(
        spec, plan_mod.plan(spec), SweepOptions(out=out, quiet=True, journal=journal)
    )
    assert set(result.statuses) == {"ok"}, (workload, result.statuses)


def snapshot(store: Path) -> dict[str, bytes]:
    """Every file under ``store`` by relative path, with its bytes (a link as its target)."""
    return {
        str(p.relative_to(store)): (
            str(p.readlink()).encode() if p.is_symlink() else p.read_bytes()
        )
        for p in sorted(store.rglob("*"))
        if p.is_file() or p.is_symlink()
    }
