"""The one loader of the report package: a results directory's rows and sweep contexts, read once.

Tables, the void table and the plots all take a :class:`Results` (or a path, which they load) and walk
its :meth:`Results.experiments`; each :class:`Experiment` carries the sweep context chosen by
:func:`sweep_context`, so a table and a plot of the same rows never disagree about axes or baseline.
"""

from __future__ import annotations

import hashlib
import json
import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from hugebench import store
from hugebench.workloads import WORKLOADS, Workload


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
    notes: tuple[
        str, ...
    ] = ()  # what reading the store skipped or merged (its StoreWarnings), for the page

    def experiments(self) -> list[Experiment]:
        """One Experiment per experiment name, in the order the rows first name them.

        Rows made with different fixed settings (their sweeps' contexts differ in ``spec_fingerprint``) are
        never pooled: each set of settings becomes its own Experiment, named after its first sweep, with a
        StoreWarning.
        """
        if "experiment" not in self.rows.columns:
            groups = [("results", self.rows)]
        else:
            groups = self.rows.groupby(self.rows["experiment"].fillna("?"), sort=False)
        out = []
        for name, rows in groups:
            for label, part in _by_settings(str(name), rows, self.contexts, self.path):
                context = sweep_context(part, self.contexts)
                out.append(Experiment(label, part, context))
        return out


def _by_settings(
    name: str, rows: pd.DataFrame, contexts: Mapping[str, dict], path
) -> list[tuple[str, pd.DataFrame]]:
    """The rows of one experiment split by the fixed settings their sweeps were made with (one part if all agree)."""
    settings = {s: settings_key(contexts.get(s)) for s in sweep_ids(rows)}
    kinds = list(dict.fromkeys(k for k in settings.values() if k is not None))
    if len(kinds) < 2:
        return [(name, rows)]
    parts, firsts = [], []
    for (
        kind
    ) in kinds:  # a sweep without a readable context goes with the first settings (as before)
        sweeps = [s for s, k in settings.items() if k == kind or (k is None and kind == kinds[0])]
        firsts.append(sweeps[0])
        mine = rows["sweep_id"].astype(str).isin(sweeps) | (
            rows["sweep_id"].isna() & (kind == kinds[0])
        )
        parts.append((f"{name} (settings of sweep {sweeps[0]})", rows[mine]))
    warnings.warn(
        f"{path}: experiment {name!r} holds runs made with {len(kinds)} different fixed settings "
        f"(workload, parameters, allocators or knobs differ between the sweeps {', '.join(firsts)}); "
        "they are reported apart, never pooled",
        store.StoreWarning,
        stacklevel=3,
    )
    return parts


def settings_key(context: Mapping | None) -> str | None:
    """What must be equal for runs of two sweeps to be pooled: the spec fingerprint the sweep recorded, else a
    hash of its spec's fixed part (workload, params, allocators, system, perf, counters); None if unknown."""
    if not context:
        return None
    if context.get("spec_fingerprint"):
        return str(context["spec_fingerprint"])
    spec = context.get("spec")
    if not isinstance(spec, Mapping):
        return None
    fixed = {
        k: spec.get(k) for k in ("workload", "params", "allocators", "system", "perf", "counters")
    }
    fixed["axis_names"] = sorted(spec.get("axes") or {})
    return hashlib.sha1(json.dumps(fixed, sort_keys=True, default=str).encode()).hexdigest()[:12]


def load_results(results_dir: str | os.PathLike) -> Results:
    """Read the rows and the sweep contexts of a results directory (or of a runs file's directory).

    Rows whose cell columns (axes, allocator, THP mode) hold a list or an object are left out, counted in a
    StoreWarning: they cannot name a cell."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", store.StoreWarning)
        contexts = store.load_contexts(results_dir)
        rows = store.load(results_dir, hosts=False)
        rows = store.drop_unusable_cells(rows, store.cell_columns(contexts), results_dir)
    for (
        warning
    ) in caught:  # said again to the caller (the CLI prints them), and kept for the HTML page
        warnings.warn_explicit(warning.message, warning.category, warning.filename, warning.lineno)
    notes = tuple(
        dict.fromkeys(str(w.message) for w in caught if issubclass(w.category, store.StoreWarning))
    )
    return Results(Path(results_dir), rows, contexts, notes)


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
    return (
        [str(s) for s in rows["sweep_id"].dropna().unique()] if "sweep_id" in rows.columns else []
    )
