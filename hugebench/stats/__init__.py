"""Medians, bootstrap confidence intervals and ratios between cells.

Benchmarks on a shared VM are noisy and skewed by bursts from neighbours, so every summary here is a
median with a percentile-bootstrap confidence interval rather than a mean and a standard deviation.
Ratios to a baseline are bootstrapped too; when the two cells were measured in the same repetition blocks
(adjacent in time) the ratio is taken per pair first, which cancels slow drift of the machine.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial

import numpy as np
import pandas as pd

from hugebench.errors import HugebenchError

# Keys that identify a repetition block: rows of two cells sharing them ran close together in time.
PAIR_KEYS = ("source", "sweep_id", "repetition")
SUMMARY_COLUMNS = ["status", "n", "n_failed", "median", "min", "max", "ci_lo", "ci_hi"]
_MAX_RESAMPLED_VALUES = 4_000_000  # bounds the memory of one vectorised resampling block
NAN = float("nan")


def bootstrap_ci(
    values, stat: Callable = np.median, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> tuple[float, float]:
    """Percentile-bootstrap confidence interval of ``stat`` over the finite ``values``.

    ``stat`` must accept ``axis=`` (numpy reductions do). Fewer than two values give ``(nan, nan)``:
    one number says nothing about its spread. Constant data gives a zero-width interval.
    """
    data = finite(values)
    if data.size < 2:
        return NAN, NAN
    drawn = resample_indices(seed, n_boot, (data.size,))
    if drawn is not None:
        return _interval(_stat_of(data[drawn[0]], stat), level)
    rng = np.random.default_rng(seed)
    return _interval(_resampled_stats(data, stat, n_boot, rng), level)


def ratio_ci(
    a_values,
    b_values,
    stat: Callable = np.median,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Confidence interval of ``stat(a) / stat(b)``, resampling ``a`` and ``b`` independently."""
    return _two_sample_ci(a_values, b_values, np.divide, stat, level, n_boot, seed)


def difference_ci(
    a_values,
    b_values,
    stat: Callable = np.median,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Confidence interval of ``stat(a) - stat(b)`` (e.g. allocator minus void-allocator time per pair)."""
    return _two_sample_ci(a_values, b_values, np.subtract, stat, level, n_boot, seed)


def _two_sample_ci(a_values, b_values, combine, stat, level, n_boot, seed) -> tuple[float, float]:
    a, b = finite(a_values), finite(b_values)
    if a.size < 2 or b.size < 2:
        return NAN, NAN
    drawn = resample_indices(seed, n_boot, (a.size, b.size))
    if drawn is not None:
        a_stats, b_stats = _stat_of(a[drawn[0]], stat), _stat_of(b[drawn[1]], stat)
    else:
        rng = np.random.default_rng(seed)
        a_stats = _resampled_stats(a, stat, n_boot, rng)
        b_stats = _resampled_stats(b, stat, n_boot, rng)
    with np.errstate(divide="ignore", invalid="ignore"):
        return _interval(combine(a_stats, b_stats), level)


def bootstrap_cis(
    samples: Sequence, level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> list[tuple[float, float]]:
    """``[bootstrap_ci(s, np.median, level, n_boot, seed) for s in samples]``, the same numbers, computed
    for all samples of one size at once (every sample of a size draws the same positions with one seed)."""
    data = [finite(s) for s in samples]
    out: list[tuple[float, float]] = [(NAN, NAN)] * len(data)
    by_size: dict[int, list[int]] = {}
    for i, values in enumerate(data):
        if values.size >= 2:
            by_size.setdefault(values.size, []).append(i)
    for size, members in size_chunks(by_size):
        drawn = resample_indices(seed, n_boot, (size,))
        if drawn is None:
            for i in members:
                out[i] = bootstrap_ci(data[i], np.median, level, n_boot, seed)
            continue
        stats = batched_medians(np.stack([data[i] for i in members]), drawn[0])
        out_lo, out_hi = percentile_intervals(stats, level)
        for j, i in enumerate(members):
            out[i] = (float(out_lo[j]), float(out_hi[j]))
    return out


def ratio_cis(
    pairs: Sequence[tuple], level: float = 0.95, n_boot: int = 2000, seed: int = 0
) -> list[tuple[float, float]]:
    """``[ratio_ci(a, b, np.median, level, n_boot, seed) for a, b in pairs]``, the same numbers, computed for
    all pairs of one pair of sizes at once."""
    data = [(finite(a), finite(b)) for a, b in pairs]
    out: list[tuple[float, float]] = [(NAN, NAN)] * len(data)
    by_size: dict[tuple[int, int], list[int]] = {}
    for i, (a, b) in enumerate(data):
        if a.size >= 2 and b.size >= 2:
            by_size.setdefault((a.size, b.size), []).append(i)
    for sizes, members in size_chunks(by_size):
        drawn = resample_indices(seed, n_boot, sizes)
        if drawn is None:
            for i in members:
                a_values, b_values = data[i]
                out[i] = ratio_ci(a_values, b_values, np.median, level, n_boot, seed)
            continue
        a_stats = batched_medians(np.stack([data[i][0] for i in members]), drawn[0])
        b_stats = batched_medians(np.stack([data[i][1] for i in members]), drawn[1])
        with np.errstate(divide="ignore", invalid="ignore"):
            out_lo, out_hi = percentile_intervals(a_stats / b_stats, level)
        for j, i in enumerate(members):
            out[i] = (float(out_lo[j]), float(out_hi[j]))
    return out


_BATCH = 1000  # samples resampled together (their medians: 16 MB at 2 000 resamples)


def size_chunks(groups: dict) -> list[tuple]:
    """(size, members) of each group, in slices of at most :data:`_BATCH` members (bounded memory)."""
    return [
        (size, members[start : start + _BATCH])
        for size, members in groups.items()
        for start in range(0, len(members), _BATCH)
    ]


def batched_medians(values: np.ndarray, drawn: np.ndarray) -> np.ndarray:
    """The median of each resample (rows of ``drawn``) of each row of ``values``: (samples, n_boot)."""
    rows = max(1, _MAX_RESAMPLED_VALUES // drawn.size)
    median = _small_median if drawn.shape[1] in (2, 3) else partial(np.median, axis=2)
    parts = [
        median(values[start : start + rows][:, drawn]) for start in range(0, len(values), rows)
    ]
    return np.concatenate(parts)


def _small_median(samples: np.ndarray) -> np.ndarray:
    """``np.median(samples, axis=-1)`` for 2 or 3 values a row, with the same numbers (the mean of the two,
    the middle one) by elementwise operations: much faster than partitioning millions of tiny rows."""
    if samples.shape[-1] == 2:
        return np.mean(samples, axis=-1)
    first, second, third = samples[..., 0], samples[..., 1], samples[..., 2]
    return np.maximum(np.minimum(first, second), np.minimum(np.maximum(first, second), third))


def row_medians(values: np.ndarray) -> np.ndarray:
    """``np.median(values, axis=1)`` of a (samples, size) array, with the same numbers."""
    return _small_median(values) if values.shape[1] in (2, 3) else np.median(values, axis=1)


def percentile_intervals(stats: np.ndarray, level: float) -> tuple[np.ndarray, np.ndarray]:
    """The percentile interval at ``level`` of each row of ``stats`` (samples, n_boot): (lows, highs)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be between 0 and 1, got {level}")
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [tail, 1.0 - tail], axis=1)
    return lo, hi


def paired_ratio_ci(
    a_values,
    b_values,
    stat: Callable = np.median,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> tuple[float, float]:
    """Confidence interval of ``stat`` of the per-pair ratios ``a[i] / b[i]`` (aligned sequences)."""
    return bootstrap_ci(pair_ratios(a_values, b_values), stat, level, n_boot, seed)


def pair_ratios(a_values, b_values) -> np.ndarray:
    """``a[i] / b[i]`` for the pairs where both are finite and ``b[i]`` is not zero."""
    a = np.asarray(a_values, dtype=float)
    b = np.asarray(b_values, dtype=float)
    if a.shape != b.shape:
        raise ValueError(f"paired values need equal lengths, got {a.size} and {b.size}")
    keep = np.isfinite(a) & np.isfinite(b) & (b != 0)
    return a[keep] / b[keep]


@dataclass(frozen=True)
class Ratio:
    """A ratio of cell A to cell B with its confidence interval; ``paired`` tells how it was computed."""

    value: float
    lo: float
    hi: float
    paired: bool
    n: int  # pairs when paired, else the smaller of the two sample sizes

    level: float = 0.95

    @property
    def resolved(self) -> bool | None:
        """Whether the data resolve a difference from 1.

        False when the interval contains 1 (no resolved difference). None when there is no interval, or
        when it excludes 1 but rests on fewer values than :func:`min_runs_for` the level: a bootstrap
        interval of a median of 3 values is their range, which misses the true median 25% of the time.
        """
        if np.isnan(self.lo) or np.isnan(self.hi):
            return None
        if self.lo <= 1.0 <= self.hi:
            return False
        return True if self.n >= min_runs_for(self.level) else None


def min_runs_for(level: float = 0.95) -> int:
    """Fewest values whose range covers their median with probability >= ``level`` (6 for 95%).

    The range of n values misses the median when all n fall on one side: probability 2 * 0.5**n.
    No interval built from the values themselves does better, so below this n a "resolved"
    verdict at ``level`` cannot be honest.
    """
    return int(math.ceil(1.0 + math.log2(1.0 / (1.0 - level)) - 1e-12))


def compare(
    a_rows: pd.DataFrame,
    b_rows: pd.DataFrame,
    metric: str,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Ratio:
    """Ratio of the median of ``metric`` in ``a_rows`` to that in ``b_rows`` (status-ok rows only).

    Paired by repetition block (:data:`PAIR_KEYS`) when each block holds one row of each side and at
    least half of the runs pair up; otherwise the two sides are resampled independently.
    """
    a_ok, b_ok = ok_rows(a_rows), ok_rows(b_rows)
    keys = [k for k in PAIR_KEYS if k in a_ok.columns and k in b_ok.columns]
    blocks = (_blocks(a_ok, keys), _blocks(b_ok, keys)) if "repetition" in keys else None
    measured = metric in a_ok.columns and metric in b_ok.columns
    a, b = (_numbers(side, metric) for side in (a_ok, b_ok))
    return compare_arrays(a, b, blocks, measured, level, n_boot, seed)


def compare_arrays(
    a: np.ndarray,
    b: np.ndarray,
    blocks: tuple[list, list] | None,
    measured: bool = True,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> Ratio:
    """:func:`compare` on the two sides' successful runs as arrays: ``a`` and ``b`` their values (NaN where
    missing), ``blocks`` each run's repetition block (None: no repetition recorded), ``measured`` whether
    both sides recorded the metric at all."""
    inputs = ratio_inputs(a, b, blocks, measured)
    if inputs[0]:
        ci = bootstrap_ci(inputs[1], np.median, level, n_boot, seed)
    else:
        a_values, b_values = inputs[1]
        ci = ratio_ci(a_values, b_values, np.median, level, n_boot, seed)
    return ratio_of(inputs, ci, level)


def ratio_inputs(a: np.ndarray, b: np.ndarray, blocks, measured: bool = True) -> tuple:
    """What :func:`compare_arrays` resamples: ``(True, per-pair ratios)`` when the runs pair up by block,
    else ``(False, (a's finite values, b's))``."""
    pairs = _pairs(a, b, blocks) if measured else None
    if pairs is not None:
        return True, pair_ratios(*pairs)
    return False, (finite(a), finite(b))


def ratio_of(inputs: tuple, ci: tuple[float, float], level: float = 0.95) -> Ratio:
    """The :class:`Ratio` of :func:`ratio_inputs` with its interval ``ci``."""
    paired, data = inputs
    if paired:
        value = float(np.median(data)) if data.size else NAN
        return Ratio(value, ci[0], ci[1], True, int(data.size), level)
    a, b = data
    return Ratio(_median_ratio(a, b), ci[0], ci[1], False, int(min(a.size, b.size)), level)


def summarize(
    df: pd.DataFrame,
    group_by: str | Sequence[str],
    metric: str,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """One row per cell of ``group_by``: status, n, n_failed, median, min, max, ci_lo, ci_hi of ``metric``.

    Statistics use the status-ok rows with a finite value (``n`` counts them). ``n_failed`` counts the
    runs that never succeeded (a failure retried successfully on resume is not counted). ``status`` is
    ``ok`` when any run succeeded, else the most common failure status of the cell.
    """
    keys = as_list(group_by)
    require_columns(df, keys)
    records = []
    for key, cell in df.groupby(keys, dropna=False, sort=True):
        records.append({**dict(zip(keys, key)), **describe_cell(cell, metric, level, n_boot, seed)})
    return pd.DataFrame.from_records(records, columns=keys + SUMMARY_COLUMNS)


def describe_cell(
    cell: pd.DataFrame,
    metric: str,
    level: float = 0.95,
    n_boot: int = 2000,
    seed: int = 0,
    ok: pd.DataFrame | None = None,
) -> dict:
    """The summary of one cell's rows; see :func:`summarize` (``ok``: ``ok_rows(cell)`` if known)."""
    ok = ok_rows(cell) if ok is None else ok
    values = finite(_column(ok, metric))
    lo, hi = bootstrap_ci(values, np.median, level, n_boot, seed)
    empty = values.size == 0
    return {
        "status": "ok" if len(ok) else _most_common_status(cell),
        "n": int(values.size),
        "n_failed": int(len(failed_rows(cell))),
        "median": NAN if empty else float(np.median(values)),
        "min": NAN if empty else float(values.min()),
        "max": NAN if empty else float(values.max()),
        "ci_lo": lo,
        "ci_hi": hi,
    }


def measured_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The rows that are not warm-up runs (warm-ups only prime caches and allocators)."""
    measured = measured_mask(df)
    return df if measured.all() else df[measured]  # (no copy when nothing is left out)


def measured_mask(df: pd.DataFrame) -> np.ndarray:
    """True for each row of ``df`` that :func:`measured_rows` keeps."""
    if "warmup" not in df.columns:
        return np.ones(len(df), dtype=bool)
    warmups = df["warmup"].tolist()  # (plain Python over the values: cheaper than pandas on a cell)
    return ~np.fromiter((w is True or w == 1 or w == "true" for w in warmups), bool, len(warmups))


def ok_mask(df: pd.DataFrame) -> np.ndarray:
    """True for each row of ``df`` that :func:`ok_rows` keeps (a row's own fields decide)."""
    if "status" not in df.columns:
        return measured_mask(df)
    return measured_mask(df) & status_ok(df["status"])


def status_ok(status: pd.Series) -> np.ndarray:
    """True where a status is ``ok`` or missing (a row without a status counts as successful)."""
    values = status.tolist()
    return np.fromiter((v == "ok" or _missing(v) for v in values), bool, len(values))


def _missing(value) -> bool:
    return value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value))


def ok_rows(df: pd.DataFrame) -> pd.DataFrame:
    """The measured rows whose run succeeded (without a status column, every row counts as successful)."""
    ok = ok_mask(df)
    return df if ok.all() else df[ok]


def failed_rows(df: pd.DataFrame) -> pd.DataFrame:
    """Measured rows of runs that did not succeed and were not later retried successfully."""
    if "status" not in df.columns:
        return df.iloc[0:0]
    if status_ok(df["status"]).all():
        return df.iloc[0:0]
    df = measured_rows(df)
    failed = df[df["status"].notna() & (df["status"] != "ok")]
    if "run_id" in df.columns:
        failed = failed[~failed["run_id"].isin(ok_rows(df)["run_id"])]
    return failed


def as_list(columns: str | Sequence[str] | None) -> list[str]:
    """A column name or a sequence of them, as a list."""
    if columns is None:
        return []
    return [columns] if isinstance(columns, str) else list(columns)


def require_columns(df: pd.DataFrame, columns: Sequence[str]) -> None:
    """Raise a HugebenchError naming the missing columns and the ones that exist."""
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise HugebenchError(
            f"no column {', '.join(map(repr, missing))} in the results; "
            f"columns are: {', '.join(map(str, df.columns))}"
        )


# -- helpers ---------------------------------------------------------------------------------------


def finite(values) -> np.ndarray:
    """The finite numbers among values (NaN, inf, strings and other junk dropped), as a float array."""
    try:
        data = np.asarray(values, dtype=float).ravel()
    except (TypeError, ValueError):  # strings or other junk among the values count as missing
        data = pd.to_numeric(pd.Series(list(values), dtype=object), errors="coerce").to_numpy(float)
    return data[np.isfinite(data)]


def _column(df: pd.DataFrame, metric: str) -> pd.Series:
    return df[metric] if metric in df.columns else pd.Series(NAN, index=df.index)


_INDICES: dict[tuple, list[np.ndarray]] = {}
_INDEX_VALUES = (
    64  # resampled values a cached set of draws may cover per resample (small cells only)
)
_INDEX_SETS = 64  # cached sets of draws


def resample_indices(seed, n_boot: int, sizes: tuple[int, ...]) -> list[np.ndarray] | None:
    """The bootstrap's draws for samples of ``sizes``: what ``default_rng(seed)`` draws for each in turn,
    ``(n_boot, size)`` positions each, exactly as :func:`_resampled_stats` would draw them in one block.
    Every cell of a report resamples with the same seed, so cells of the same size draw the same positions:
    kept, these are drawn once per size instead of once per cell. None (draw as usual) for samples too
    large to keep or a seed that is not a number."""
    if not isinstance(seed, (int, np.integer)) or isinstance(seed, bool):
        return None
    if sum(sizes) > _INDEX_VALUES or any(n * n_boot > _MAX_RESAMPLED_VALUES for n in sizes):
        return None
    key = (int(seed), int(n_boot), tuple(int(n) for n in sizes))
    drawn = _INDICES.get(key)
    if drawn is None:
        rng = np.random.default_rng(seed)
        drawn = [rng.integers(0, n, size=(n_boot, n)) for n in sizes]
        for positions in drawn:
            positions.setflags(write=False)
        if len(_INDICES) >= _INDEX_SETS:
            _INDICES.clear()
        _INDICES[key] = drawn
    return drawn


def _stat_of(samples: np.ndarray, stat: Callable) -> np.ndarray:
    try:
        return np.asarray(stat(samples, axis=1), dtype=float)
    except TypeError:  # a plain function without axis=
        return np.array([stat(row) for row in samples], dtype=float)


def _resampled_stats(
    data: np.ndarray, stat: Callable, n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    block = max(1, _MAX_RESAMPLED_VALUES // data.size)
    parts = []
    for start in range(0, n_boot, block):
        samples = data[rng.integers(0, data.size, size=(min(block, n_boot - start), data.size))]
        parts.append(_stat_of(samples, stat))
    return np.concatenate(parts)


def _interval(stats: np.ndarray, level: float) -> tuple[float, float]:
    if not 0.0 < level < 1.0:
        raise ValueError(f"confidence level must be between 0 and 1, got {level}")
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(stats, [tail, 1.0 - tail])
    return float(lo), float(hi)


def _median_ratio(a: np.ndarray, b: np.ndarray) -> float:
    if a.size == 0 or b.size == 0:
        return NAN
    denominator = float(np.median(b))
    return float(np.median(a)) / denominator if denominator != 0 else NAN


def _numbers(rows: pd.DataFrame, metric: str) -> np.ndarray:
    # a stray non-number in a store's metric column (hand-edited, corrupt) is missing, like null
    if metric not in rows.columns:
        return np.full(len(rows), NAN)
    return np.asarray(pd.to_numeric(rows[metric], errors="coerce"), dtype=float)


def _paired_values(
    a: pd.DataFrame, b: pd.DataFrame, metric: str
) -> tuple[np.ndarray, np.ndarray] | None:
    """The aligned values of ``metric`` in the runs of ``a`` and ``b`` that share a repetition block."""
    keys = [k for k in PAIR_KEYS if k in a.columns and k in b.columns]
    if "repetition" not in keys or metric not in a.columns or metric not in b.columns:
        return None
    blocks = (_blocks(a, keys), _blocks(b, keys))
    return _pairs(_numbers(a, metric), _numbers(b, metric), blocks)


def _pairs(a: np.ndarray, b: np.ndarray, blocks) -> tuple[np.ndarray, np.ndarray] | None:
    """The values of the runs of ``a`` and ``b`` that share a repetition block, aligned; None when the
    two sides cannot be paired (no blocks, several runs a block, fewer than half the runs paired)."""
    if blocks is None or a.size == 0 or b.size == 0:
        return None
    a_blocks, b_blocks = blocks
    where = {block: i for i, block in enumerate(b_blocks)}
    if len(where) < len(b_blocks) or len(set(a_blocks)) < len(a_blocks):
        return None  # several rows per block: the cell pools several configurations
    pairs = [(i, where[block]) for i, block in enumerate(a_blocks) if block in where]
    if len(pairs) < 2 or len(pairs) < min(a.size, b.size) / 2:
        return None
    a_at, b_at = (np.array(side, dtype=int) for side in zip(*pairs))
    return a[a_at], b[b_at]


def _blocks(rows: pd.DataFrame, keys: list[str]) -> list[tuple]:
    """Each row's repetition block as a hashable key, in row order (a missing value is one key, as pandas
    matches missing with missing: None and NaN alike)."""
    columns = [[None if pd.isna(v) else v for v in rows[k].tolist()] for k in keys]
    return list(zip(*columns))


def _most_common_status(cell: pd.DataFrame) -> str:
    cell = measured_rows(cell)
    statuses = cell["status"].dropna() if "status" in cell.columns else pd.Series(dtype=object)
    return str(statuses.mode().iloc[0]) if not statuses.empty else "no runs"
