"""``hugebench stats DIR CELL``: one cell's runs and their distribution as text (pyperf ``stats`` and ``hist``).

CELL is a cell id (or a unique prefix of one) or ``axis=value[,axis=value...]`` matching exactly one cell.
Layout only: the numbers are the rows' own values and plain order statistics of them.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from hugebench.errors import HugebenchError
from hugebench.report.results import Results
from hugebench.stats import ok_rows

BARS = 40  # the widest histogram bar, in characters


def find_cell(results: Results, cell: str) -> tuple[str, pd.DataFrame, str]:
    """(experiment name, the cell's rows, its primary metric) or an error naming what CELL matched."""
    for experiment in results.experiments():
        rows = experiment.rows
        if "=" in cell:
            wanted = dict(part.split("=", 1) for part in cell.split(",") if "=" in part)
            missing = [k for k in wanted if k not in rows.columns]
            if missing:
                continue
            mask = np.logical_and.reduce([rows[k].astype(str) == v for k, v in wanted.items()])
            ids = rows.loc[mask, "cell_id"].unique()
        else:
            ids = [c for c in rows["cell_id"].dropna().unique() if str(c).startswith(cell)]
        if len(ids) > 1:
            raise HugebenchError(
                f"CELL {cell!r} matches {len(ids)} cells of {experiment.name!r}; name more axes "
                f"(e.g. {', '.join(experiment.axes)}) or give a cell id"
            )
        if len(ids) == 1:
            primary = experiment.primary_metric
            if not primary:
                raise HugebenchError(f"experiment {experiment.name!r}: no primary metric recorded")
            return experiment.name, rows[rows["cell_id"] == ids[0]], primary
    raise HugebenchError(
        f"{results.path}: no cell matches {cell!r} (give a cell id or axis=value,...)"
    )


def describe(name: str, rows: pd.DataFrame, metric: str) -> list[str]:
    """The cell's runs: count, failures, order statistics, each run's value, and a histogram."""
    ok = ok_rows(rows)
    values = pd.to_numeric(ok.get(metric), errors="coerce").dropna().to_numpy(float)
    cell_id = rows["cell_id"].iloc[0]
    lines = [f"{name}: cell {cell_id}, metric {metric}"]
    lines.append(f"runs: {len(ok)} ok, {len(rows) - len(ok)} failed or warm-up")
    if not len(values):
        return lines + ["no value of the metric in any successful run"]
    q = np.percentile(values, [0, 25, 50, 75, 100])
    lines += [
        f"median {q[2]:.4g}; mean {values.mean():.4g}; std dev {values.std(ddof=1) if len(values) > 1 else 0:.3g}"
        f" ({(values.std(ddof=1) / values.mean() if len(values) > 1 and values.mean() else 0):.1%})",
        f"min {q[0]:.4g}; Q1 {q[1]:.4g}; Q3 {q[3]:.4g}; max {q[4]:.4g}",
        "runs in order: " + ", ".join(f"{v:.4g}" for v in values),
    ]
    return lines + histogram(values)


def histogram(values: np.ndarray, bins: int | None = None) -> list[str]:
    """A text histogram: one line per bin, its lower edge, a bar and the count."""
    bins = bins or max(1, min(12, int(np.ceil(np.sqrt(len(values))))))
    counts, edges = np.histogram(values, bins=bins)
    top = max(1, counts.max())
    return [
        f"{edges[i]:>10.4g} | {'#' * round(BARS * c / top):<{BARS}} {c}"
        for i, c in enumerate(counts)
    ]
