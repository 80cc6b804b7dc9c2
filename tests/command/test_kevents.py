"""The kernel's events per sampling interval, and the driver's latency in the intervals with and without
them."""

from __future__ import annotations

from paths import DATA

from hugebench.machine import kevents


def _log() -> kevents.EventLog:
    log = kevents.EventLog()
    base = {
        "compact_stall": 10,
        "thp_collapse_alloc": 5,
        "thp_split_page": 0,
        "thp_fault_fallback": 0,
    }
    log.tick(100.0, base, [1])
    log.tick(101.0, base, [1])  # nothing happened
    log.tick(102.0, {**base, "compact_stall": 13}, [1, 2])  # 3 stalls and a fork (pid 2 is new)
    log.tick(103.0, {**base, "compact_stall": 13}, [1, 2])
    log.tick(104.0, {**base, "compact_stall": 13}, [1])
    return log


def test_intervals_with_events_are_stamped_and_counted():
    out = _log().columns(100.0)
    assert out["events.intervals"] == 4 and out["events.intervals_with"] == 1
    assert out["events.compact_stall"] == 3 and out["events.forks"] == 1
    assert out["events.timeline"] == "2.0s compact_stall+3, forks+1"


def test_the_driver_latency_beside_the_events():
    progress = kevents.progress_latency((DATA / "drivers" / "pgbench-progress.txt").read_text())
    assert progress == [(1.0, 6.965), (2.0, 2.975)]
    # the driver started at 100.5: its interval (100.5, 101.5] is next to the event at 102, (101.5, 102.5]
    # holds it; with a 1 s interval both are "with", none "without"
    out = kevents.windows(_log(), 100.5, progress, 1.0)
    assert out["events.windows_with"] == 2 and "events.latency_with_ms" in out
    far = kevents.windows(
        _log(), 90.0, progress, 1.0
    )  # the driver's intervals long before any event
    assert (
        far["events.windows_without"] == 2
        and far["events.latency_without_ms"] == (6.965 + 2.975) / 2
    )
    assert kevents.driver_windows(_log(), 100.0, "no progress lines") == {}
