"""The typed parts of an ``ExperimentSpec``: sections of a fixed shape, each a small frozen value that validation
builds and whose ``to_dict()`` is the plain data the context file stores (and the fingerprint hashes), key for
key as the section was stored while it was a dict.

The ``cluster:`` block is one too, beside its parser: :class:`.cluster.ClusterBlock` (the values as written,
which the command line's flags override before :func:`.cluster.resolve` types them as a ``ClusterConfig``).
What is not a part stays a mapping on purpose: ``params``, ``axes``, ``system``, ``baseline`` and ``exclude``
are keyed by the user's names and knob names (a part would need a field per name nobody knows in advance);
``allocators`` maps a user name to the entry as written (its typed form is the spec's ``allocator_table``,
and the entry itself, hashed as written, is part of every run's id).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Adaptive:
    """``repetitions: {auto: {min, max, target, metric}}``: blocks are added up to ``max`` while some cell's CI
    is wider than ``target`` (hugebench.stats.adaptive); the spec's ``repetitions`` is ``min``."""

    min: int
    max: int
    target: float
    metric: str

    def to_dict(self) -> dict[str, Any]:
        return {"min": self.min, "max": self.max, "target": self.target, "metric": self.metric}


@dataclass(frozen=True)
class MemoryConditioning:
    """``condition_memory:`` before each run; a flag the file left out is None (and out of ``to_dict()``,
    whose keys come in this order whatever the file's: the fingerprint sorts them anyway)."""

    compact: bool | None = None
    drop_caches: bool | None = None

    def to_dict(self) -> dict[str, bool]:
        return {
            key: flag
            for key, flag in (("compact", self.compact), ("drop_caches", self.drop_caches))
            if flag is not None
        }


@dataclass(frozen=True)
class Expected:
    """``expected:``: published numbers; each claim (and each ``not_judged`` entry) is the checked mapping of
    :mod:`.claims`, whose optional keys depend on the kind of claim."""

    source: str
    metric: str
    claims: tuple[Mapping[str, Any], ...]
    not_judged: tuple[Mapping[str, Any], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "metric": self.metric,
            "claims": self.claims,
            "not_judged": self.not_judged,
        }
