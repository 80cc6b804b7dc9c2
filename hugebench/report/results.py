"""The one loader of the report package: a results directory's rows and sweep contexts, read once.

Tables, the void table and the plots all take a :class:`Results` (or a path, which they load) and walk
its :meth:`Results.experiments`; each :class:`Experiment` carries the sweep context chosen by
:func:`sweep_context`, so a table and a plot of the same rows never disagree about axes or baseline.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from .. import store
from ..workloads import WORKLOADS, Workload


@dataclass(frozen=True, eq=False)
class Experiment:
    """The rows of one experiment (every status, warm-ups included) and the sweep context they are read with."""

    name: str
    rows: pd.DataFrame
    context: Mapping

    @property
    def axes(self) -> list[str]:
        return list(self.context.get("axes") or [])

    @property
    def axis_order(self) -> Mapping:
        """Axis -> values in the order the YAML lists them (never/madvise/always), for rows and panels."""
        return self.context.get("spec", {}).get("axes", {})

    @property
    def baseline(self) -> Mapping | None:
        return self.context.get("baseline")

    @property
    def primary_metric(self) -> str | None:
        return self.context.get("primary_metric")

    @property
    def workload(self) -> Workload | None:
        """The registry entry of the rows' workload; None when the rows name none, several or an unknown one."""
        names = self.rows["workload"].dropna().unique() if "workload" in self.rows.columns else []
        return WORKLOADS.get(names[0]) if len(names) == 1 else None


@dataclass(frozen=True, eq=False)
class Results:
    """A results directory as loaded: all run rows and every sweep context by sweep id."""

    path: Path
    rows: pd.DataFrame
    contexts: Mapping[str, dict]

    def experiments(self) -> list[Experiment]:
        """One Experiment per experiment name, in the order the rows first name them."""
        if "experiment" not in self.rows.columns:
            groups = [("results", self.rows)]
        else:
            groups = self.rows.groupby(self.rows["experiment"].fillna("?"), sort=False)
        return [Experiment(str(name), rows, sweep_context(rows, self.contexts)) for name, rows in groups]


def load_results(results_dir: str | os.PathLike) -> Results:
    """Read the rows and the sweep contexts of a results directory (or of a runs file's directory)."""
    return Results(Path(results_dir), store.load(results_dir, hosts=False), store.load_contexts(results_dir))


def as_results(source: Results | str | os.PathLike) -> Results:
    """``source`` itself if already loaded, else :func:`load_results` of it."""
    return source if isinstance(source, Results) else load_results(source)


def sweep_context(rows: pd.DataFrame, contexts: Mapping[str, dict]) -> dict:
    """The context the rows are reported with: that of the last of their sweeps that has one ({} if none).

    Sweeps are taken in the order their rows were appended, so after a resumed sweep (a new sweep id
    over the same results directory) its context, e.g. a changed baseline, is the one that counts.
    """
    known = [contexts[s] for s in sweep_ids(rows) if s in contexts]
    return known[-1] if known else {}


def sweep_ids(rows: pd.DataFrame) -> list[str]:
    """The rows' sweep ids in order of first appearance."""
    return [str(s) for s in rows["sweep_id"].dropna().unique()] if "sweep_id" in rows.columns else []
