"""Registry of the C++ workloads: their parameters (types, defaults, allowed values) and result metrics.

Each workload is a function of ``hugebench._core`` taking keyword arguments (its parameters plus ``hook``)
and returning a dict. ``hook(phase, edge)`` is called from the calling thread with the GIL held, with
edge ``"begin"`` right before a phase's timer starts and ``"end"`` right after it stops, so the worker can
snapshot /proc and rusage per phase without touching the timed region.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Param:
    """One workload parameter: its type, default and (optionally) the values allowed."""

    type: type
    default: Any
    choices: tuple = ()
    minimum: float | None = None
    help: str = ""

    def check(self, name: str, value: Any) -> Any:
        """Return the value coerced to the parameter type, or raise ValueError with the reason."""
        if self.type is int and isinstance(value, bool):
            raise ValueError(f"{name} must be an integer, got {value!r}")
        if self.type is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if self.type is int and isinstance(value, str):
            value = parse_count(value)
        if not isinstance(value, self.type):
            raise ValueError(f"{name} must be {self.type.__name__}, got {value!r}")
        if self.choices and value not in self.choices:
            raise ValueError(f"{name} must be one of {', '.join(map(str, self.choices))}; got {value!r}")
        if self.minimum is not None and value < self.minimum:
            raise ValueError(f"{name} must be >= {self.minimum}, got {value!r}")
        return value


_SUFFIXES = {"k": 10**3, "m": 10**6, "g": 10**9, "ki": 2**10, "mi": 2**20, "gi": 2**30}


def parse_count(text: str) -> int:
    """Parse '10M', '1.5G', '64Ki', '4GiB' or '30000' into an int (decimal k/M/G, binary Ki/Mi/Gi)."""
    s = text.strip().lower().removesuffix("b").replace("_", "")
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if s.endswith(suffix):
            number = float(s[: -len(suffix)])
            value = number * _SUFFIXES[suffix]
            if value != int(value):
                raise ValueError(f"{text!r} is not a whole number")
            return int(value)
    return int(s)


@dataclass(frozen=True)
class Workload:
    """A C++ workload: the ``_core`` function name, its parameters and the phase that is timed."""

    name: str
    function: str
    params: dict[str, Param]
    timed_phase: str
    primary_metric: str
    memory_estimate: Any = None  # callable(params) -> bytes, for the plan's memory preflight
    doc: str = ""
    table: tuple = field(default=())


def _hashlookup_memory(p: dict) -> int:
    # Two copies of each key (the query vector and the set), >15-byte keys heap-allocated, plus slots/nodes.
    per_key = 2 * 32 + 24 + (48 if p["set_kind"] == "node" else 16)
    return int(p["keys"] * per_key * 1.3)


WORKLOADS: dict[str, Workload] = {
    "hashlookup": Workload(
        name="hashlookup",
        function="hashlookup",
        params={
            "keys": Param(int, 1_000_000, minimum=1, help="number of distinct random keys"),
            "set_kind": Param(str, "flat", choices=("flat", "node"),
                              help="flat: open-addressing set written here; node: std::unordered_set"),
            "threads": Param(int, 1, minimum=1, help="lookup threads over the shared read-only set"),
            "lookups": Param(int, 0, minimum=0, help="lookups in the timed phase (0: one per key)"),
            "key_min": Param(int, 10, minimum=1, help="shortest key, bytes"),
            "key_max": Param(int, 19, minimum=1, help="longest key, bytes"),
            "order": Param(str, "uniform", choices=("uniform", "zipf"), help="lookup key order"),
            "zipf_s": Param(float, 0.99, minimum=0.0, help="Zipf exponent when order is zipf"),
            "chunks": Param(int, 64, minimum=1, help="equal slices the timed phase is split into"),
            "seed": Param(int, 1, minimum=0, help="seed of key generation and order"),
        },
        timed_phase="lookup",
        primary_metric="ns_per_lookup",
        memory_estimate=_hashlookup_memory,
        doc="Random short strings in a hash set; mean point-lookup latency (the TLB experiment).",
    ),
    # HB-WORKLOADS (each workload adds its entry above this marker)
}


def get(name: str) -> Workload:
    """Return the workload called ``name`` or raise KeyError listing the known ones."""
    try:
        return WORKLOADS[name]
    except KeyError:
        raise KeyError(f"unknown workload {name!r}; known: {', '.join(sorted(WORKLOADS))}") from None
