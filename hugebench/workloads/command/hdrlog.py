"""A percentile of the latency histogram a load driver wrote as an HdrHistogram log (wrk2, YCSB, a driver's
own HdrHistogram recorder), read with the maintained ``hdrhistogram`` package (``hdrh``), never a parser of
our own. All the log's interval histograms are added up; the value is the percentile times ``scale``.
"""

from __future__ import annotations

import os
import stat

MAX_LOG_BYTES = 256 << 20  # a latency log larger than this is refused, not read into memory
HIGHEST = 3_600_000_000_000  # the largest value tracked: an hour in ns (any unit of a driver fits)


def available() -> str | None:
    """None when the hdrhistogram package can be imported, else why an hdr: metric cannot be read."""
    try:
        import hdrh.histogram
        import hdrh.log  # noqa: F401
    except ImportError:
        return "reading HdrHistogram logs needs the hdrhistogram package (pip install hdrhistogram)"
    return None


def percentile(
    path: str, pct: float, scale: float, cwd: str = "."
) -> tuple[float | None, str | None]:
    """(the ``pct`` percentile of the log at ``path`` times ``scale``, None), or (None, why not)."""
    from hdrh.histogram import HdrHistogram
    from hdrh.log import HistogramLogReader

    full = os.path.join(cwd, path)
    try:
        st = os.stat(full)
    except OSError as exc:
        return None, f"the HdrHistogram log {path} was not written ({exc.strerror})"
    if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_LOG_BYTES:
        return (
            None,
            f"the HdrHistogram log {path} is not a regular file under {MAX_LOG_BYTES >> 20} MiB",
        )
    total = HdrHistogram(1, HIGHEST, 3)
    reader = HistogramLogReader(full, HdrHistogram(1, HIGHEST, 3))
    intervals = 0
    try:
        while reader.add_next_interval_histogram(total) is not None:
            intervals += 1
    except (ValueError, TypeError, IndexError) as exc:
        return None, f"the HdrHistogram log {path} could not be decoded: {exc}"
    finally:
        reader.close()
    if not intervals or not total.get_total_count():
        return None, f"the HdrHistogram log {path} holds no recorded value"
    return total.get_value_at_percentile(pct) * scale, None
