"""The rules of the race ``hugebench try`` runs (:mod:`.schedule` spends the budget by them): each
configuration's paired ratio to as-is with its confidence sequence, the leader, *clearly worse*, *no
difference worth deploying*, and what *resolved* means. Pure functions of the rows written so far.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from hugebench import stats
from hugebench.stats import sequential, stability

MIN_BLOCKS = 3  # runs of every kept configuration before any is dropped


PAIRED_FROM = 1  # the first block paired: block 0, each configuration's first run, is its warm-up


def paired_only(rows):
    """``rows`` (dicts or a DataFrame) without each configuration's warm-up run (blocks before
    :data:`PAIRED_FROM`): a first run meets a cold page cache, cold caches and the kernel's first faults
    (the numpy try of issue 55: as-is's first runs 1.58 and 1.13 s, steady 0.75-0.80 s), and paired with
    other configurations' first runs it skews every ratio and drops configurations on it. It is still run
    and recorded (what a run costs, its folios, its memory); it is never paired or judged for stability."""
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        if "repetition" not in rows.columns:
            return rows
        rep = pd.to_numeric(rows["repetition"], errors="coerce")
        return rows[~(rep < PAIRED_FROM)]
    return [r for r in rows if not _before(r.get("repetition"))]


def _before(rep) -> bool:
    return isinstance(rep, (int, float)) and rep < PAIRED_FROM


def warmups(rows) -> int:
    """How many successful warm-up runs (blocks before :data:`PAIRED_FROM`) ``rows`` hold: the count the
    verdict shows as left out of the pairs."""
    frame = as_frame(rows)
    if "repetition" not in frame.columns:
        return 0
    ok = stats.ok_rows(frame)
    return int((pd_numeric(ok["repetition"]) < PAIRED_FROM).sum())


def pd_numeric(values):
    import pandas as pd

    return pd.to_numeric(values, errors="coerce")


def _resolved(ratio: stats.Ratio | None, *stabilities) -> bool:
    """THE rule deciding whether a ratio to as-is is resolved (when try stops, what the verdict calls
    resolved): its interval excludes 1, on enough pairs (``stats.Ratio.resolved``). Paired evidence: the
    pairs are interleaved in time and the interval (a confidence sequence, :mod:`.sequential`, or the
    verdict's interval built on it) needs no steady runs, only independent pairs, so a cell that the
    stability rule calls unstable (another job, bimodal runs) does not unmake it. Whether it is also
    *firm* (neither cell unstable: a recommendation) or only *likely* (re-run quiet to confirm) is the
    verdict's to say. ``stabilities`` are accepted and not read (the caller's two cells)."""
    return ratio is not None and ratio.resolved is True


def no_difference(
    rows: list, active: list, base: str, metric: str, alpha: float = sequential.ALPHA
) -> bool:
    """Every configuration still running shows *no difference worth deploying* from as-is: its ratio's
    interval lies within ``stability.SMALLEST_EFFECT`` of 1 both ways (``stability.equivalent``)."""
    others = [c for c in active if c != base]
    if not others:
        return False
    rows = as_frame(rows, metric)  # once: the race's columns of every row
    narrow = ratio_columns(rows, metric)
    base_steady = steadiness(rows, base, metric)
    return all(
        stability.equivalent(
            ratio_to(narrow, c, base, metric, alpha), steadiness(rows, c, metric), base_steady
        )
        for c in others
    )


# What the race reads of a row: the ratio's pairing, the stability rule (spread, outliers, disturbed runs)
# and whether the program overrode its THP mode; a decision's frame holds these and the metric only.
RACE_COLUMNS = (
    "cell_id",
    "warmup",
    "status",
    *stats.PAIR_KEYS,
    stability.DISTURBED,
    stability.WHY,
    "thp.overridden",
)


def as_frame(rows, metric: str | None = None):
    """Rows (dicts, or already a DataFrame) as a DataFrame: made once by a caller that asks several
    questions of the same rows. With ``metric``, of :data:`RACE_COLUMNS` and the metric only (a row has
    ~350 columns: a frame of all of them cost ~30 ms a decision, each column's values the same)."""
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        return rows
    if metric is None:
        return pd.DataFrame(list(rows))
    wanted = (*RACE_COLUMNS, metric)
    return pd.DataFrame([{k: row[k] for k in wanted if k in row} for row in rows])


def steadiness(rows, cell: str, metric: str) -> stability.Stability:
    """The stability of one configuration's runs so far, by the one rule (spread, outliers, disturbed runs);
    ``rows``: dicts or a DataFrame."""
    import pandas as pd

    rows = paired_only(rows)  # a warm-up run is neither paired nor judged
    if isinstance(rows, pd.DataFrame):
        frame = rows[rows["cell_id"] == cell] if "cell_id" in rows.columns else rows.iloc[0:0]
        return stability.cell_stability(frame.reset_index(drop=True), metric)
    frame = as_frame([r for r in rows if r.get("cell_id") == cell], metric)
    return stability.cell_stability(frame, metric)


def better_ratio(ratio: float, better: str) -> float:
    """A ratio to as-is as 'smaller is better' (1/x for a higher-is-better metric)."""
    return ratio if better == "lower" else (1.0 / ratio if ratio else float("inf"))


def clearly_worse(values: Iterable[float], reference: Iterable[float], better: str) -> bool:
    """Every value of a configuration is worse than every value of the reference, with at least
    MIN_BLOCKS of each: a configuration that can at best tie gets no more of the budget."""
    a, b = stats.finite(list(values)), stats.finite(list(reference))
    if a.size < MIN_BLOCKS or b.size < MIN_BLOCKS:
        return False
    return bool(a.min() > b.max()) if better == "lower" else bool(a.max() < b.min())


def values_of(rows: Iterable[Mapping], cell_ids, metric: str) -> dict[str, list]:
    out: dict[str, list] = {c: [] for c in cell_ids}
    for row in rows:
        if row.get("cell_id") in out and row.get("status") == "ok" and not row.get("warmup"):
            out[row["cell_id"]].append(row.get(metric))
    return out


def ratio_to(
    rows, cell: str, base: str, metric: str, alpha: float = sequential.ALPHA
) -> stats.Ratio | None:
    """The paired ratio of ``cell`` to ``base`` (rows: dicts or a DataFrame) with its confidence sequence
    at ``alpha``; None when the runs do not pair by block."""
    frame = ratio_columns(as_frame(rows, metric), metric)
    if frame.empty or "cell_id" not in frame.columns:
        return None
    if "warmup" in frame.columns:
        frame = frame[~frame["warmup"].map(lambda v: v is True or v == 1)]
    return paired_cs(
        frame[frame["cell_id"] == cell], frame[frame["cell_id"] == base], metric, alpha
    )


def ratio_columns(frame, metric: str):
    """``frame`` with only the columns :func:`ratio_to` reads (itself when it has no others), so that its
    selections copy a few columns and not ~350 (14 ms a call, 1.1 s of a 15 s try of a 50 ms program)."""
    wanted = [
        c
        for c in dict.fromkeys(("cell_id", "warmup", "status", metric, *stats.PAIR_KEYS))
        if c in frame.columns
    ]
    return frame if len(wanted) == len(frame.columns) else frame[wanted]


def paired_cs(a_rows, b_rows, metric: str, alpha: float = sequential.ALPHA) -> stats.Ratio | None:
    """Two cells' successful runs (DataFrames) paired by block (``stats`` pairing), their warm-ups left
    out (:func:`paired_only`), as :func:`.sequential.paired`; None when they do not pair."""
    a_rows, b_rows = paired_only(a_rows), paired_only(b_rows)
    pairs = stats._paired_values(stats.ok_rows(a_rows), stats.ok_rows(b_rows), metric)
    return sequential.paired(*pairs, alpha) if pairs is not None else None


def the_interval(
    rows, cell: str, base: str, metric: str, first: int, better: str = "lower"
) -> tuple[stats.Ratio, float] | None:
    """THE interval of a verdict (:func:`.sequential.deployment_interval`): ``cell``'s ratio to ``base`` on
    the fresh pairs (blocks from ``first``), its confidence sequence widened by a later check's own noise
    and the drift seen in every pair of the two in time order (warm-ups left out), as a ``stats.Ratio``
    (``n`` the fresh pairs), and the drift factor; None: the fresh runs do not pair. The confirmation stops
    on it (:mod:`.schedule`) and the verdict reports it (:mod:`.verdict`): one interval. When the fresh
    pairs read worse than the selection's, the direction a winner's selection flatters it in, each phase
    is centred on its own (the step is the selection's, not drift); a step the other way is drift."""
    frame = paired_only(ratio_columns(as_frame(rows, metric), metric))
    if frame.empty or "cell_id" not in frame.columns or "repetition" not in frame.columns:
        return None
    sides = [
        frame[frame["cell_id"] == c].sort_values("repetition", kind="stable") for c in (cell, base)
    ]
    fresh = [s[pd_numeric(s["repetition"]) >= first] for s in sides]
    effect = paired_cs(fresh[0], fresh[1], metric)
    ok = [stats.ok_rows(s) for s in sides]
    values = stats._paired_values(ok[0], ok[1], metric)
    blocks = stats._paired_values(ok[0], ok[1], "repetition") if values is not None else None
    if effect is None or values is None or blocks is None:
        return None
    a, b = values
    fine = np.isfinite(a) & np.isfinite(b) & (b != 0)  # as stats.pair_ratios keeps them
    phases = np.asarray(blocks[0], dtype=float)[fine] >= first  # selection, confirmation
    ratios = stats.pair_ratios(a, b)
    flattered = phases.all() or better_ratio(float(np.median(ratios[~phases])), better) <= (
        better_ratio(effect.value, better)
    )
    lo, hi, drift = sequential.deployment_interval(effect, ratios, phases if flattered else None)
    return stats.Ratio(effect.value, lo, hi, True, effect.n, effect.level), drift


def overridden(rows) -> set[str]:
    """The configurations one of whose successful runs had its asked THP mode overridden by the program
    (``thp.overridden``, as :func:`.conditions.overridden` reads it): they never lead, so the confirmation
    is never spent on a configuration the verdict may not recommend. ``rows``: dicts or a DataFrame."""
    import pandas as pd

    if isinstance(rows, pd.DataFrame):
        known = {"thp.overridden", "cell_id"} <= set(
            rows.columns
        )  # a missing value: as a missing key
        rows = rows[rows["cell_id"].notna()].to_dict("records") if known else []
    return {
        row["cell_id"]
        for row in rows
        if row.get("status") == "ok" and row.get("thp.overridden") in (True, 1) and "cell_id" in row
    }


def leader(
    rows: list, active: list, base: str, metric: str, better: str, alpha: float = sequential.ALPHA
) -> tuple[str | None, stats.Ratio | None]:
    """The active configuration with the best median ratio to as-is (and that ratio); a configuration
    whose program overrode its THP mode is never the leader."""
    best, best_ratio = None, None
    skip = overridden(rows)
    rows = ratio_columns(as_frame(rows, metric), metric)  # once for every configuration's ratio
    for cell in active:
        if cell == base or cell in skip:
            continue
        ratio = ratio_to(rows, cell, base, metric, alpha)
        if ratio is None or not np.isfinite(ratio.value):
            continue
        if best_ratio is None or better_ratio(ratio.value, better) < better_ratio(
            best_ratio.value, better
        ):
            best, best_ratio = cell, ratio
    return best, best_ratio
