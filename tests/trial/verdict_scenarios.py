"""Verdicts of ``hugebench try`` built from synthetic rows, one per kind of answer, for the test that the
verdict's JSON stays byte for byte what it was (``test_verdict_json``): a recommendation with a deploy line,
a guard's refusal, an unconfirmed and a confirmed winner, no difference, a THP override, and a try with
--aged (one verdict per memory state) with the session's keys."""

from __future__ import annotations

import types

import pandas as pd

from hugebench.stats import sequential
from hugebench.trial import schedule as schedule_mod
from hugebench.trial import session as session_mod
from hugebench.trial import verdict as verdict_mod


def _rows(values: dict[str, list[float]], metric: str = "window_s") -> pd.DataFrame:
    return pd.DataFrame(
        [
            {"cell_id": c, "status": "ok", metric: v, "repetition": i, "sweep_id": "s"}
            for c, vs in values.items()
            for i, v in enumerate(vs)
        ]
    )


def _confirmed(blocks: int, pairs: int, leader: str, alpha_of: int | None = None):
    state = schedule_mod.Progress(0.0, 60, stopped=schedule_mod.RESERVE_REACHED, blocks=blocks)
    state.confirm_from, state.confirm_pairs = blocks, pairs
    state.leaders, state.confirmed = {"base": (leader, None)}, {"base": "resolved better"}
    if alpha_of:
        state.alphas = {"base": sequential.selection_alpha(alpha_of)}
    return state


def recommends():
    values = {"base": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98] * 3, "b": [0.5, 0.51, 0.49] * 6}
    values.update({f"o{i}": [0.9 + i / 100, 0.95, 1.3, 0.7] for i in range(4)})
    values.update({"m": [0.8, 0.81, 0.79, 0.8], "t": [0.7, 0.71, 0.69, 0.7]})
    rows = _rows(values)
    rows["tree_peak_rss_bytes"] = [100e6 + i for i in range(len(rows))]
    rows["hp_coverage"] = 0.5
    rows["wall_s"] = rows["window_s"] * 1.1
    failed = {"cell_id": "f", "status": "failed", "error": "exit status 3", "sweep_id": "s"}
    rows = pd.concat([rows, pd.DataFrame([failed, {**failed, "repetition": 1}])], ignore_index=True)
    cells = {"base": {"allocator": "glibc", "thp": "madvise"}}
    cells["b"] = {"allocator": "mine", "thp": "always"}
    cells.update({f"o{i}": {"allocator": "glibc", "thp": f"never{i}"} for i in range(4)})
    cells["m"] = {"allocator": "as-is", "thp": "madvise", "mthp": "64kB", "thp.mthp.64kB": "always"}
    cells["t"] = {"allocator": "as-is", "thp": "always"}
    cells["f"] = {"allocator": "tcmalloc", "thp": "madvise"}
    spec = types.SimpleNamespace(
        allocators={"mine": {"base": "jemalloc", "env": {"MALLOC_CONF": "thp:always"}}},
        params={"argv": ["/opt/program", "--input", "x.dat"]},
    )
    state = _confirmed(4, 14, "b")
    state.dropped, state.cut = {"o3": "clearly worse"}, ["o2"]
    return verdict_mod.build(
        verdict_mod.VerdictInputs(
            rows, cells, "base", "window_s", "lower", spec, "madvise", state, wall="wall_s"
        )
    )


def guarded(p99_factor: float = 3.0):
    rows = []
    for cell, rps in (("base", 1000.0), ("a", 1300.0)):
        for i in range(22):
            w = ((i * 7) % 5 - 2) / 200
            p99 = 2.0 * (p99_factor if cell == "a" else 1.0) * (1 + w)
            rows.append({"cell_id": cell, "rps": rps * (1 + w), "p99_ms": p99, "repetition": i})
    frame = pd.DataFrame(rows)
    frame["status"], frame["sweep_id"] = "ok", "s"
    state = _confirmed(12, 10, "a", alpha_of=1)
    cells = {
        "base": {"allocator": "as-is", "thp": "madvise"},
        "a": {"allocator": "jemalloc", "thp": "madvise"},
    }
    spec = types.SimpleNamespace(allocators={}, params={"argv": ["server"]})
    return verdict_mod.build(
        verdict_mod.VerdictInputs(
            frame,
            cells,
            "base",
            "rps",
            "higher",
            spec,
            "madvise",
            state,
            guards=(("p99_ms", "lower"),),
        )
    )


def unconfirmed_ties():
    values = {
        "base": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98] * 3,
        "a": [0.50, 0.50, 0.51, 0.49, 0.95, 0.96] + [0.5] * 12,
        "b": [0.50, 0.51, 0.49, 0.50, 0.52, 0.48] * 3,
    }
    rows = _rows(values)
    rows = rows[
        (rows["cell_id"] != "b") | (rows["repetition"] < 6)
    ]  # the leader gets no fresh pair
    state = _confirmed(6, 12, "b")
    state.confirmed = {"base": "budget ended"}
    cells = {
        "base": {"allocator": "glibc", "thp": "madvise"},
        "a": {"allocator": "glibc-hugetlb", "thp": "madvise"},
        "b": {"allocator": "glibc", "thp": "always"},
    }
    spec = types.SimpleNamespace(allocators={})
    return verdict_mod.build(
        verdict_mod.VerdictInputs(
            rows, cells, "base", "window_s", "lower", spec, "madvise", state, wall="window_s"
        )
    )


def no_difference():
    same = {
        "base": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98] * 2,
        "a": [1.00, 1.00, 1.01, 0.99, 1.01, 0.99] * 2,
    }
    rows = _rows(same)
    rows["tree_peak_rss_bytes"] = [100e6] * 12 + [150e6] * 12
    rows["noise.disturbed"] = [False] * 23 + [True]
    rows["noise.why"] = [None] * 23 + ["other work kept 1.02 CPUs busy > 0.5"]
    state = schedule_mod.Progress(0.0, 60, stopped=schedule_mod.NO_DIFFERENCE, blocks=6)
    cells = {
        "base": {"allocator": "glibc", "thp": "madvise"},
        "a": {"allocator": "jemalloc-thp", "thp": "madvise"},
    }
    return verdict_mod.build(
        verdict_mod.VerdictInputs(rows, cells, "base", "window_s", "lower", None, "madvise", state)
    )


def thp_overridden():
    rows = [
        {
            "cell_id": cid,
            "status": "ok",
            "window_s": 1.0 + i / 100,
            "repetition": i,
            "sweep_id": "s",
        }
        for cid in ("base", "a")
        for i in range(8)
    ]
    for row in rows:
        if row["cell_id"] == "a":
            row["thp.overridden"] = True
            row["thp.overridden.why"] = (
                "THP 'always' was asked, but the program ran with THP disabled"
            )
    rows.append({"cell_id": "a", "status": "failed", "error": "exit status 1", "sweep_id": "s"})
    for row in rows[:3]:
        row["allocator_served"], row["allocator_malloc_from"] = "glibc", "/lib/libc.so.6"
    state = types.SimpleNamespace(
        dropped={},
        cut=[],
        blocks=8,
        run_s=1.0,
        stopped_for=lambda base: None,
        alphas={},
        leaders={"base": ("a", None)},
        confirm_from=None,
    )
    cells = {
        "base": {"allocator": "as-is", "thp": "madvise"},
        "a": {"allocator": "as-is", "thp": "always"},
    }
    spec = types.SimpleNamespace(allocators={}, params={"argv": ["redis-server"]})
    return verdict_mod.build(
        verdict_mod.VerdictInputs(
            pd.DataFrame(rows), cells, "base", "window_s", "lower", spec, "madvise", state
        )
    )


def aged():
    """One verdict per memory state, as ``session`` composes them, with the session's own keys."""
    values = {"bf": [1.0, 1.01, 0.99], "af": [0.9, 0.91, 0.89], "bg": [1.3, 1.31, 1.29]}
    values["ag"] = [1.3, 1.3, 1.31]
    rows = _rows(values)
    state = schedule_mod.Progress(
        0.0, 60, stopped="budget ended", blocks=3, cut=["cf", "cg"], answered={}
    )
    each = {}
    for memory, ids in (("fresh", ("bf", "af", "cf")), ("fragmented:100%", ("bg", "ag", "cg"))):
        cells = {
            cid: {
                "allocator": "glibc",
                "memory_state": memory,
                "thp": "always" if cid[0] != "b" else "madvise",
            }
            for cid in ids
        }
        mine = verdict_mod.build(
            verdict_mod.VerdictInputs(
                rows, cells, ids[0], "window_s", "lower", None, "madvise", state
            )
        )
        each[memory] = session_mod.with_state_counts(mine, list(cells), rows)
    verdict = session_mod.by_condition(each, "memory_state")
    verdict = session_mod.with_state_plans(verdict, {m: [f"plan cut: {m}"] for m in each})
    return session_mod.with_session(
        verdict,
        program=["prog", "arg"],
        results="/tmp/r",
        experiment_file="/tmp/r/try.yaml",
        runs=12,
        wall_s=30.5,
        budget_s=60.0,
        plan=["12 runs in 30 s"],
    )


SCENARIOS = {
    "recommends": recommends,
    "guarded": guarded,
    "guard_passes": lambda: guarded(1.0),
    "unconfirmed_ties": unconfirmed_ties,
    "no_difference": no_difference,
    "thp_overridden": thp_overridden,
    "aged": aged,
}
