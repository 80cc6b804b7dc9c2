"""hugebench's own cost: no report step grows faster than its store (issue 42).

Each step (``report`` as markdown and as HTML, ``compare``, ``history``) runs on a store of N cells and on one
of 4N in the same test; the larger must take under 5x the time of the smaller (linear: at most 4x, less with
the constant costs: report 3.1x here; a build_table that looks every cell's baseline up by a linear search,
put back for the check, took 7.5x; at 150 and 600 cells it hid under the constant costs at 3.5x). Times are CPU seconds of this process, so another process on the machine does not count; a
ratio over the bound is measured again up to twice, each size's best run kept, before the test fails (one
CI run was once 2.6x on noise alone).
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.store import ResultStore

CELLS = 600  # the small store; the large one has GROWTH times as many
GROWTH = 4
BOUND = 5.0  # linear growth is at most GROWTH; a quadratic step at these sizes is far above this
TRIES = 3


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
    started = time.process_time()
    outcome = CliRunner().invoke(main, argv)
    assert outcome.exit_code == 0, outcome.output
    return time.process_time() - started


STEPS = {
    "report": lambda s, o: ["report", s[0], "--format", "markdown"],
    "report --html": lambda s, o: ["report", s[0], "--html", str(o / "r.html")],
    "compare": lambda s, o: ["compare", s[0], s[1], "--format", "markdown"],
    "history": lambda s, o: ["history", s[0], s[1], "--format", "markdown"],
}


@pytest.fixture(scope="module")
def stores(tmp_path_factory):
    made = {}
    for size in (CELLS, GROWTH * CELLS):
        where = tmp_path_factory.mktemp(f"c{size}")
        keys = size // 3
        made[size] = [str(_store(where / "a", keys)), str(_store(where / "b", keys, 1.0))]
    return made


@pytest.mark.parametrize("step", list(STEPS))
def test_no_report_step_is_quadratic(step, stores, tmp_path):
    small = large = float("inf")
    for _ in range(TRIES):
        small = min(small, _cpu(STEPS[step](stores[CELLS], tmp_path)))
        large = min(large, _cpu(STEPS[step](stores[GROWTH * CELLS], tmp_path)))
        if large < BOUND * small:
            break
    assert large < BOUND * small, (
        f"{step}: {GROWTH * CELLS} cells took {large:.2f} s of CPU, {CELLS} cells {small:.2f} s "
        f"({large / small:.1f}x for {GROWTH}x the cells; best of {TRIES})"
    )
