"""Every cell's statistics from one pass over a frame: the per-cell work of ``report``, ``compare`` and
``history`` on numpy arrays instead of DataFrame slices (issue 42: a report is linear in its rows).

What belongs here: :class:`CellFrame` groups a frame's rows into cells once, converts each column a
statistic reads to an array once, and answers per cell what ``stats.describe_cell``, ``stats.compare``,
``stability.cell_stability`` and ``tables.failure_counts`` answer for a cell's rows, with the same numbers
(the same functions of ``stats`` and ``stability`` do the arithmetic, on the cell's arrays). What does not:
choosing cells, baselines or metrics (``tables``, ``compare``, ``history``), and any text.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from hugebench.stats import (
    NAN,
    PAIR_KEYS,
    Ratio,
    bootstrap_cis,
    finite,
    measured_mask,
    ok_mask,
    ratio_cis,
    ratio_inputs,
    ratio_of,
    row_medians,
    size_chunks,
    status_ok,
)
from hugebench.stats.stability import DISTURBED, WHY, Stability, assess_many


def _missing(value) -> bool:
    """Missing as ``Series.notna`` sees it (None, NaN, pd.NA, NaT)."""
    if value is None or value is pd.NA or value is pd.NaT:
        return True
    return isinstance(value, float) and value != value


MAX_REASON = (
    160  # characters of a failure reason shown in a report (the whole text stays in runs.jsonl)
)


def failure_reason(row: Mapping) -> str:
    """Why a run failed, in one line: its status and the first line of its error."""
    status = str(row.get("status") or "failed")
    error = row.get("error")
    text = (
        str(error).strip().splitlines()[0]
        if isinstance(error, str) and error.strip()
        else "no reason recorded"
    )
    text = text if len(text) <= MAX_REASON else text[: MAX_REASON - 3] + "..."
    return text if text.startswith(status) else f"{status}: {text}"


class CellFrame:
    """The cells of ``frame`` by ``keys`` (``groupby(keys, dropna=False, sort=sort)``), numbered in the
    groupby's order; each cell's rows are positions into the frame, in the frame's order."""

    def __init__(self, frame: pd.DataFrame, keys: Sequence[str], sort: bool = True):
        self.frame, self.keys = frame, list(keys)
        grouped = frame.groupby(self.keys, dropna=False, sort=sort)
        codes = self.codes = grouped.ngroup().to_numpy()
        self.keys_of = [k if isinstance(k, tuple) else (k,) for k in grouped.size().index]
        order = np.argsort(codes, kind="stable")
        bounds = np.cumsum(np.bincount(codes, minlength=len(self.keys_of)))[:-1]
        self.rows = np.split(order, bounds) if len(order) else []
        self.ok = ok_mask(frame)
        self.measured = measured_mask(frame)
        self.status = frame["status"].tolist() if "status" in frame.columns else None
        self._numbers: dict[str, np.ndarray] = {}
        self._ci: dict[tuple, list] = {}
        self._values: dict[str, np.ndarray] = {}
        self._flags: dict[str, np.ndarray] = {}
        self._blocks = self._block_keys()
        self._failing = self._failing_mask()

    def __len__(self) -> int:
        return len(self.keys_of)

    # -- per-row arrays, made once ---------------------------------------------------------------

    def numbers(self, column: str) -> np.ndarray:
        """``column`` as floats (a non-number is NaN); all NaN if the frame lacks it."""
        if column not in self._numbers:
            if column in self.frame.columns:
                values = pd.to_numeric(self.frame[column], errors="coerce")
                self._numbers[column] = np.asarray(values, dtype=float)
            else:
                self._numbers[column] = np.full(len(self.frame), NAN)
        return self._numbers[column]

    def values(self, column: str) -> np.ndarray:
        """``column``'s values as they are (an object array, made once)."""
        if column not in self._values:
            self._values[column] = np.asarray(self.frame[column].tolist(), dtype=object)
        return self._values[column]

    def _block_keys(self) -> list | None:
        keys = [k for k in PAIR_KEYS if k in self.frame.columns]
        if "repetition" not in keys:
            return None
        columns = [[None if pd.isna(v) else v for v in self.frame[k].tolist()] for k in keys]
        return list(zip(*columns))

    def _failing_mask(self) -> np.ndarray:
        if self.status is None or status_ok(self.frame["status"]).all():
            return np.zeros(len(self.frame), dtype=bool)
        named = np.fromiter(
            (not _missing(s) and s != "ok" for s in self.status), bool, len(self.status)
        )
        return self.measured & named

    def failing_cells(self) -> list[int]:
        """The cells with a failed measured run (retried or not), in order."""
        return sorted(set(self.codes[self._failing].tolist()))

    # -- per cell --------------------------------------------------------------------------------

    def ok_rows(self, code: int) -> np.ndarray:
        rows = self.rows[code]
        return rows[self.ok[rows]]

    def ok_values(self, code: int, column: str) -> np.ndarray:
        """The cell's successful measured runs' values of ``column`` (NaN kept, in row order)."""
        return self.numbers(column)[self.ok_rows(code)]

    def failed_rows(self, code: int) -> np.ndarray:
        """``stats.failed_rows`` of the cell: failed measured runs not retried successfully in it."""
        rows = self.rows[code]
        failed = rows[self._failing[rows]]
        if failed.size and "run_id" in self.frame.columns:
            run_ids = self.values("run_id")
            retried = set(run_ids[self.ok_rows(code)].tolist())
            if retried:
                failed = failed[[r not in retried for r in run_ids[failed].tolist()]]
        return failed

    def describe(self, code: int, metric: str, level=0.95, n_boot=2000, seed=0) -> dict:
        """``stats.describe_cell`` of the cell."""
        return self.describe_many([code], metric, level, n_boot, seed)[0]

    def describe_many(self, codes, metric: str, level=0.95, n_boot=2000, seed=0) -> list[dict]:
        """``[self.describe(code, metric, ...) for code in codes]``: the medians, minima and maxima of the
        cells of one size computed together, the intervals of all cells once per frame."""
        numbers = self.numbers(metric)
        samples = [finite(numbers[self.ok_rows(code)]) for code in codes]
        cis = self._cis(metric, level, n_boot, seed)
        out = []
        for code, values, (median, low, high) in zip(codes, samples, _centres(samples)):
            out.append(
                {
                    "status": "ok" if len(self.ok_rows(code)) else self._most_common_status(code),
                    "n": int(values.size),
                    "n_failed": int(len(self.failed_rows(code))),
                    "median": median,
                    "min": low,
                    "max": high,
                    "ci_lo": cis[code][0],
                    "ci_hi": cis[code][1],
                }
            )
        return out

    def _cis(self, metric: str, level, n_boot, seed) -> list[tuple[float, float]]:
        """Every cell's bootstrap CI of the median of ``metric``, computed together on first use."""
        key = (metric, level, n_boot, seed)
        if key not in self._ci:
            numbers = self.numbers(metric)
            samples = [numbers[self.ok_rows(code)] for code in range(len(self))]
            self._ci[key] = bootstrap_cis(samples, level, n_boot, seed)
        return self._ci[key]

    def _most_common_status(self, code: int) -> str:
        rows = self.rows[code]
        rows = rows[self.measured[rows]]
        if self.status is None:
            return "no runs"
        found = Counter(self.status[r] for r in rows.tolist() if not _missing(self.status[r]))
        if not found:
            return "no runs"
        top = max(found.values())
        return str(sorted(s for s, n in found.items() if n == top)[0])  # as Series.mode: smallest

    def failure_counts(self, code: int) -> list[tuple[str, int]]:
        """``tables.failure_counts`` of the cell."""
        failed = self.failed_rows(code)
        if not failed.size or self.status is None:  # no status column: no failed row
            return []
        errors = (
            self.values("error")[failed] if "error" in self.frame.columns else [None] * failed.size
        )
        counts: dict[str, int] = {}
        for row, error in zip(failed.tolist(), errors):
            reason = failure_reason({"status": self.status[row], "error": error})
            counts[reason] = counts.get(reason, 0) + 1
        return sorted(counts.items(), key=lambda item: -item[1])

    def failures_text(self, code: int) -> str:
        counts = self.failure_counts(code)
        return "; ".join(f"{reason} (x{n})" if n > 1 else reason for reason, n in counts)

    def stability(self, code: int, metric: str) -> Stability:
        """``stability.cell_stability`` of the cell."""
        return self.stability_many([code], metric)[0]

    def stability_many(self, codes, metric: str) -> list[Stability]:
        """``[self.stability(code, metric) for code in codes]``, the cells of one size assessed together."""
        numbers, samples, disturbed, causes = self.numbers(metric), [], [], []
        flags = self._disturbed()
        for code in codes:
            ok = self.ok_rows(code)
            samples.append(numbers[ok])
            hit = ok[flags[ok]] if flags is not None else ok[:0]
            disturbed.append(int(hit.size))
            causes.append(self.values(WHY)[hit].tolist() if WHY in self.frame.columns else [])
        return assess_many(samples, disturbed, causes)

    def _disturbed(self) -> np.ndarray | None:
        """Which rows were measured on a disturbed machine (``noise.disturbed``); None without the column."""
        if DISTURBED not in self.frame.columns:
            return None
        if DISTURBED not in self._flags:
            flags = self.values(DISTURBED)
            hit = (v is True or v == 1 or v == "true" for v in flags)
            self._flags[DISTURBED] = np.fromiter(hit, bool, flags.size)
        return self._flags[DISTURBED]

    def compare(self, code: int, base: int, metric: str, level=0.95, n_boot=2000, seed=0) -> Ratio:
        """``stats.compare`` of cell ``code`` to cell ``base``."""
        return self.compare_many([(code, base)], metric, level, n_boot, seed)[0]

    def compare_many(self, pairs, metric: str, level=0.95, n_boot=2000, seed=0) -> list[Ratio]:
        """``stats.compare`` of each ``(cell, baseline cell)`` of ``pairs``, the intervals computed together."""
        measured = metric in self.frame.columns
        numbers = self.numbers(metric)
        sides = []
        for code, base in pairs:
            a, b = self.ok_rows(code), self.ok_rows(base)
            blocks = None
            if self._blocks is not None:
                blocks = (
                    [self._blocks[r] for r in a.tolist()],
                    [self._blocks[r] for r in b.tolist()],
                )
            sides.append(ratio_inputs(numbers[a], numbers[b], blocks, measured))
        paired = [i for i, side in enumerate(sides) if side[0]]
        apart = [i for i, side in enumerate(sides) if not side[0]]
        cis = dict(zip(paired, bootstrap_cis([sides[i][1] for i in paired], level, n_boot, seed)))
        cis.update(zip(apart, ratio_cis([sides[i][1] for i in apart], level, n_boot, seed)))
        return [ratio_of(side, cis[i], level) for i, side in enumerate(sides)]

    def thp_overridden(self, code: int) -> int:
        """``tables.thp_overridden`` of the cell's successful runs."""
        if "thp.overridden" not in self.frame.columns:
            return 0
        flags = self.values("thp.overridden")[self.ok_rows(code)]
        return int(sum(1 for v in flags if v is True or v == 1))


def _centres(samples: list[np.ndarray]) -> list[tuple[float, float, float]]:
    """(median, min, max) of each sample (NaN for an empty one), the samples of one size stacked."""
    out = [(NAN, NAN, NAN)] * len(samples)
    by_size: dict[int, list[int]] = {}
    for i, values in enumerate(samples):
        if values.size:
            by_size.setdefault(values.size, []).append(i)
    for _, members in size_chunks(by_size):
        stack = np.stack([samples[i] for i in members])
        found = zip(
            row_medians(stack).tolist(), stack.min(axis=1).tolist(), stack.max(axis=1).tolist()
        )
        for i, centre in zip(members, found):
            out[i] = centre
    return out


class Cell(NamedTuple):
    """One cell of a :class:`CellFrame`, for code that holds cells of several frames (compare, history)."""

    of: CellFrame
    code: int

    def describe(self, metric: str, level=0.95, n_boot=2000, seed=0) -> dict:
        return self.of.describe(self.code, metric, level, n_boot, seed)

    def values(self, metric: str) -> np.ndarray:
        """The successful measured runs' numbers of ``metric`` (NaN dropped, in row order)."""
        values = self.of.ok_values(self.code, metric)
        return values[~np.isnan(values)]

    def stability(self, metric: str) -> Stability:
        return self.of.stability(self.code, metric)

    def failures_text(self) -> str:
        return self.of.failures_text(self.code)


def described(cells: Sequence[Cell], metric: str, level=0.95) -> list[tuple[dict, Stability]]:
    """``[(cell.describe(metric, level), cell.stability(metric)) for cell in cells]``, the same numbers, the
    cells of each frame described together (:meth:`CellFrame.describe_many`, :meth:`CellFrame.stability_many`)."""
    out: list = [None] * len(cells)
    by_frame: dict[int, list[int]] = {}
    for i, cell in enumerate(cells):
        by_frame.setdefault(id(cell.of), []).append(i)
    for members in by_frame.values():
        frame, codes = cells[members[0]].of, [cells[i].code for i in members]
        found = zip(frame.describe_many(codes, metric, level), frame.stability_many(codes, metric))
        for i, pair in zip(members, found):
            out[i] = pair
    return out


def cells_by_key(frame: pd.DataFrame, keys: Sequence[str], key_of) -> dict[tuple, Cell]:
    """Each cell of ``frame`` by ``keys`` (in order of first appearance) under ``key_of(key)``; of two cells
    under one key, the later."""
    cells = CellFrame(frame, keys, sort=False)
    return {key_of(key): Cell(cells, code) for code, key in enumerate(cells.keys_of)}
