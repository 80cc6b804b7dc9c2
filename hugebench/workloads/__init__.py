"""The workloads: one module each (``hashlookup``, ``hashsets``, ``faultstorm``, ``alloctest``, ``fleet``,
``codetlb``, ``command``, ``tlbprobe``), holding its parameters, checks, time and memory models, derived
columns and the report sections it declares as data; ``base`` holds the types and the registry.

Every module of this package is imported here, and each registers its workload (``base.register``): a new
workload is one new module. A workload of your own registers itself the same way from any module
(``register(Workload(...))`` at the top level of that module); :data:`WORKLOADS` is the registry, by name.
"""

from __future__ import annotations

import importlib
import pkgutil

from hugebench.workloads.base import (
    COMMON_METRICS,
    MAX_INT,
    REGISTRY,
    STARTUP_S,
    BarPlot,
    Column,
    Param,
    RatioCI,
    RatioTable,
    TableSection,
    Workload,
    XYPlot,
    get,
    parse_count,
    register,
)
from hugebench.workloads.sets import HASH_PACKAGES, HASHES, SET_KINDS, SET_PACKAGES

# The built-in workloads, in a fixed order (the order of listings and messages).
BUILT_IN = (
    "hashlookup",
    "hashsets",
    "faultstorm",
    "alloctest",
    "fleet",
    "codetlb",
    "command",
    "tlbprobe",
)
for _name in BUILT_IN + tuple(sorted(m.name for m in pkgutil.iter_modules(__path__))):
    importlib.import_module(f"{__name__}.{_name}")

WORKLOADS: dict[str, Workload] = (
    REGISTRY  # name -> Workload (the same dict: a later register() shows here too)
)

__all__ = [
    "BUILT_IN",
    "COMMON_METRICS",
    "HASHES",
    "HASH_PACKAGES",
    "MAX_INT",
    "SET_KINDS",
    "SET_PACKAGES",
    "STARTUP_S",
    "WORKLOADS",
    "BarPlot",
    "Column",
    "Param",
    "RatioCI",
    "RatioTable",
    "TableSection",
    "Workload",
    "XYPlot",
    "get",
    "parse_count",
    "register",
]
