"""The experiment as validated data: the frozen ``ExperimentSpec``, its limits, and what a cell is.

The spec carries its workload and its allocator table resolved once (``workload_def``, ``allocator_table``):
what plans and runs it takes them from here instead of looking the names up again. They are values derived
from the file's names, so they stay out of ``to_dict()`` and the fingerprint.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Union, cast

from hugebench import knob_catalogue as catalogue
from hugebench import workloads
from hugebench.experiment.cluster import ClusterBlock
from hugebench.experiment.parts import Adaptive, Expected, MemoryConditioning
from hugebench.machine import allocators as alloc_mod

THP_MODES = ("always", "madvise", "never")
DEFAULT_ALLOCATOR = "glibc"  # when the file has no allocator axis
# The tool's own axes (the allocator, text pages, memory state, regime): declared in hugebench.knob_catalogue.
TEXT_AXIS, MEMORY_AXIS, REGIME_AXIS, TOOL_AXES = (
    catalogue.TEXT_AXIS,
    catalogue.MEMORY_AXIS,
    catalogue.REGIME_AXIS,
    catalogue.TOOL_AXES,
)
KNOB_PREFIXES = catalogue.USER_FAMILIES  # declared once, in hugebench.knob_catalogue
PERF_MODES = ("auto", "off")
# perf: and counters: — a mode of PERF_MODES, the event names, or label -> event
# Python 3.9 (the oldest wheel) has no | at run time
PerfSetting = Union[str, tuple[str, ...], Mapping[str, str]]  # noqa: UP007

# Limits on what an experiment file may ask for: far above any real experiment, low enough that a hostile or
# mistaken file is refused in bounded time and memory before anything is planned.
MAX_REPETITIONS = 10_000
MAX_WARMUP = 1_000
MAX_RUNS = 1_000_000  # planned runs: cells x (repetitions + warm-up)
MAX_TIMEOUT = 7 * 24 * 3600
MAX_SEED = 2**63 - 1
_PART = {"part": True}  # a typed section (.parts): to_dict() stores its to_dict(), {} when absent
_RESOLVED = {"resolved": True}  # derived from the file's names: not part of to_dict()


@dataclass(frozen=True)
class ExperimentSpec:
    """A validated experiment. Axis values are already coerced (e.g. '10M' -> 10000000)."""

    name: str
    workload: str
    source: str
    description: str = ""
    repetitions: int = 1
    warmup: int = 0
    seed: int = 0
    timeout: float = 1800.0
    memory_limit: int | None = None  # bytes; the run's memory cgroup enforces it
    # The user's names (parameters, axes, knobs) -> values: mappings; the sections of a fixed shape are typed
    # parts (.parts), None when the file leaves the section out (to_dict() then stores it as {}, as always).
    params: Mapping[str, Any] = field(default_factory=dict)
    # name -> tuple of values, insertion ordered
    axes: Mapping[str, tuple] = field(default_factory=dict)
    exclude: tuple[Mapping[str, Any], ...] = ()
    baseline: Mapping[str, Any] = field(default_factory=dict)
    # name -> the entry as written (its typed form is allocator_table; the entry is part of every run's id)
    allocators: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    system: Mapping[str, str | int] = field(default_factory=dict)  # canonical knob name -> value
    perf: PerfSetting = "auto"
    counters: PerfSetting = "auto"
    order: str = "interleaved"
    condition_memory: MemoryConditioning | None = field(default=None, metadata=_PART)
    # repetitions: {auto: ...}: blocks keep being added up to adaptive.max while some cell's CI is wider than
    # adaptive.target (hugebench.stats.adaptive); ``repetitions`` is then the blocks always run (adaptive.min).
    adaptive: Adaptive | None = field(default=None, metadata=_PART)
    expected: Expected | None = field(default=None, metadata=_PART)  # published numbers (.claims)
    # where it runs, not what: outside the fingerprint (the flags override it in experiment.cluster.resolve)
    cluster: ClusterBlock | None = field(default=None, metadata=_PART)
    # Resolved once from the names above (a spec built in code gets them here too); not part of to_dict().
    # Never None once built: the None default only tells __post_init__ to resolve the name.
    workload_def: workloads.Workload = field(
        default=cast("workloads.Workload", None), compare=False, repr=False, metadata=_RESOLVED
    )
    allocator_table: Mapping[str, alloc_mod.Allocator] = field(
        default=cast("Mapping[str, alloc_mod.Allocator]", None),
        compare=False,
        repr=False,
        metadata=_RESOLVED,
    )

    def __post_init__(self) -> None:
        if self.workload_def is None:
            object.__setattr__(self, "workload_def", workloads.get(self.workload))
        if self.allocator_table is None:
            object.__setattr__(self, "allocator_table", alloc_mod.registry(self.allocators))

    def to_dict(self) -> dict:
        """The file's content as plain data (what the context file stores), without the resolved values."""
        return {
            f.name: copy.deepcopy(_plain(getattr(self, f.name), f.metadata))
            for f in fields(self)
            if not f.metadata.get("resolved")
        }

    def fingerprint(self) -> str:
        """Hash of what must not change between sweeps written into one results directory.

        Axis values and repetitions may grow (extending a sweep); fixed parameters, measurement
        settings, allocator definitions and fixed kernel knobs may not.
        """
        fixed = {
            k: v
            for k, v in self.to_dict().items()
            if k
            in (
                "workload",
                "params",
                "allocators",
                "system",
                "perf",
                "counters",
                "condition_memory",
            )
        }
        fixed["axis_names"] = list(self.axes)
        return hashlib.sha1(json.dumps(fixed, sort_keys=True, default=str).encode()).hexdigest()[
            :12
        ]


def _plain(value, metadata):
    """A field's value as the context file stores it: a typed part as its dict, a part left out as {}."""
    if metadata.get("part"):
        return {} if value is None else value.to_dict()
    return value


def is_knob(name: str) -> bool:
    """True when an axis/system name is a kernel knob (thp, thp.*, hugetlb, hugetlb.*)."""
    return catalogue.is_knob(name)


def canonical_knob(name: str) -> str:
    """The knob's one name: `thp` is `thp.enabled`, `hugetlb` is `hugetlb.2MB`."""
    return catalogue.canonical(name)


def matches(cell: Mapping, partial: Mapping) -> bool:
    """True when ``cell`` has every value of the partial cell ``partial`` (an exclude entry, the baseline)."""
    return all(k in cell and cell[k] == v for k, v in partial.items())


def cells(spec: ExperimentSpec) -> list[dict]:
    """All cells (axis name -> value) of the cartesian product, minus excluded ones, in YAML order."""
    names = list(spec.axes)
    product = (
        dict(zip(names, values)) for values in itertools.product(*(spec.axes[n] for n in names))
    )
    return [cell for cell in product if not any(matches(cell, ex) for ex in spec.exclude)]
