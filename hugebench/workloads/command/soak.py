"""A soak: a server under its load driver for a duration (``server: {soak: 30m}``), the driver run again and
again against the same server until the duration is over, the memory sampled all along (its trend and
figure: ``hugebench.machine.memtrend``).

Each driver run's metrics are read as soon as it ends; the row's value of each metric is the median over the
runs (the judged one fails the run only when no run printed it), beside the judged metric's value per run
and when each run ended (``soak.series``, ``soak.t_s``): a throughput that decays over an hour shows there.

What belongs here: the duration's spelling and the per-run metrics combined. What does not: running the
driver (``hugebench.run.served``).
"""

from __future__ import annotations

import re
import statistics

MAX_SOAK_S = 7 * 24 * 3600
_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_duration(value) -> float:
    """'30m', '1.5h', '45s', or a number of seconds: seconds (0 < s <= a week); ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"{value!r} is not a duration")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([smhd]?)\s*", str(value)[:40])
        if match is None:
            raise ValueError(f"{str(value)[:40]!r} is not a duration like 45s, 30m or 2h")
        seconds = float(match.group(1)) * _UNITS[match.group(2) or "s"]
    if not 0 < seconds <= MAX_SOAK_S:
        raise ValueError(f"a duration must be > 0 and at most a week, got {value!r}")
    return seconds


def combine(runs: list[tuple[float, dict]], soak_s: float) -> tuple[dict, dict]:
    """``runs``: (seconds since the soak began when the run ended, {column: (value, why)}) per driver run.
    Returns ({column: (median, why)} as ``extract_all`` gives for one run, the ``soak.*`` columns)."""
    columns = list(runs[0][1]) if runs else []
    found: dict = {}
    for column in columns:
        values = [r[column][0] for _, r in runs if r[column][0] is not None]
        why = next((r[column][1] for _, r in runs if r[column][1]), None)
        found[column] = (
            (statistics.median(values), None)
            if values
            else (None, f"no run of the soak's {len(runs)} printed it ({why})")
        )
    judged = columns[0] if columns else None
    soak = {
        "soak_s": soak_s,
        "soak.driver_runs": len(runs),
        "soak.elapsed_s": round(runs[-1][0], 3) if runs else None,
        "soak.t_s": [round(t, 3) for t, _ in runs],
        "soak.series": [r[judged][0] for _, r in runs] if judged else [],
        "soak.metric": judged,
    }
    return found, soak
