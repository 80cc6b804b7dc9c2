"""hugebench's own cost: no report step grows faster than its store (issue 42).

Each step (``report`` as markdown and as HTML, ``compare``, ``history``) runs on a store of N cells and on one
of 2N in the same test; the larger must take under 2.5x the time of the smaller (linear: 2x, plus noise).
Times are CPU seconds of this process, the best of two runs, so another process on the machine does not count.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.store import ResultStore

CELLS = 120  # the small store; the large one has twice as many


def _store(path: Path, keys: int, shift: float = 0.0) -> Path:
    """A store of 3 allocators x ``keys`` key counts, 2 rows a cell, one row in 25 failed."""
    store = ResultStore(path)
    store.write_context(
        "s",
        {
            "experiment": "e",
            "workload": "fleet",
            "axes": ["allocator", "keys"],
            "baseline": {"allocator": "glibc"},
            "primary_metric": "requests_per_s",
            "primary_better": "higher",
            "started_at": f"2026-01-0{1 + int(shift)}T00:00:00+00:00",
        },
    )
    n = 0
    for rep in range(2):
        for key in range(keys):
            for index, allocator in enumerate(("glibc", "jemalloc", "mimalloc")):
                failed = n % 25 == 24
                store.append(
                    {
                        "run_id": f"{allocator}-{key}-{rep}",
                        "cell_id": f"{allocator}-{key}",
                        "sweep_id": "s",
                        "experiment": "e",
                        "workload": "fleet",
                        "status": "failed" if failed else "ok",
                        "error": "exit status 1" if failed else None,
                        "repetition": rep,
                        "allocator": allocator,
                        "keys": (key + 1) * 1000,
                        "requests_per_s": None if failed else 100.0 + index + rep + key + shift,
                        "wall_s": 0.1,
                    }
                )
                n += 1
    return path


def _cpu(argv: list[str]) -> float:
    best = float("inf")
    for _ in range(2):
        started = time.process_time()
        outcome = CliRunner().invoke(main, argv)
        best = min(best, time.process_time() - started)
        assert outcome.exit_code == 0, outcome.output
    return best


STEPS = {
    "report": lambda s, o: ["report", s[0], "--format", "markdown"],
    "report --html": lambda s, o: ["report", s[0], "--html", str(o / "r.html")],
    "compare": lambda s, o: ["compare", s[0], s[1], "--format", "markdown"],
    "history": lambda s, o: ["history", s[0], s[1], "--format", "markdown"],
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    made = {}
    for size in (CELLS, 2 * CELLS):
        where = tmp_path_factory.mktemp(f"c{size}")
        keys = size // 3
        made[size] = [str(_store(where / "a", keys)), str(_store(where / "b", keys, 1.0))]
    return made


@pytest.mark.parametrize("step", list(STEPS))
def test_no_report_step_is_quadratic(step, stores, tmp_path):
    small = _cpu(STEPS[step](stores[CELLS], tmp_path))
    large = _cpu(STEPS[step](stores[2 * CELLS], tmp_path))
    assert large < 2.5 * small, (
        f"{step}: {2 * CELLS} cells took {large:.2f} s of CPU, {CELLS} cells {small:.2f} s "
        f"({large / small:.1f}x for 2x the cells)"
    )
