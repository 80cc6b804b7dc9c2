"""The small sweep the real-cluster tests (ssh, slurm) send through their cluster: one cell, two runs."""

from __future__ import annotations


def lab_spec(name: str) -> str:
    """An experiment file's text: hashlookup at 2000 keys, glibc, no perf; ``name`` names the experiment."""
    return (f"name: {name}\nworkload: hashlookup\nrepetitions: 2\ntimeout: 60\nperf: off\ncounters: off\n"
            "params: {keys: 2000, lookups: 20000}\naxes:\n  allocator: [glibc]\n")
