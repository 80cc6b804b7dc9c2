"""try judges one metric and guards the others: a best that wins on throughput but is resolved worse on p99
by more than the smallest effect is not recommended, and the verdict says why."""

from __future__ import annotations

import pandas as pd
import pytest
from paths import DATA

from hugebench.stats import sequential
from hugebench.trial import schedule as schedule_mod
from hugebench.trial import verdict as verdict_mod
from hugebench.trial.matrix import Request, guard_param, metrics_param
from hugebench.trial.render import text

WIGGLE = [0.000, 0.004, -0.003, 0.002, -0.001, 0.003, -0.002, 0.001, -0.004, 0.002]


def _rows(p99_factor: float) -> pd.DataFrame:
    rows = []
    for i in range(22):
        w = WIGGLE[i % 10]
        rows.append(
            {"cell_id": "base", "rps": 1000 * (1 + w), "p99_ms": 2.0 * (1 - w), "repetition": i}
        )
        rows.append(
            {
                "cell_id": "a",
                "rps": 1200 * (1 - w / 2),
                "p99_ms": 2.0 * p99_factor * (1 + w),
                "repetition": i,
            }
        )
    frame = pd.DataFrame(rows)
    frame["status"], frame["sweep_id"] = "ok", "s"
    return frame


def _verdict(p99_factor: float, guards=(("p99_ms", "lower"),)) -> dict:
    state = schedule_mod.Progress(
        0.0, 60, stopped="the leader's ratio to as-is is resolved", blocks=12
    )
    state.confirm_from, state.confirm_pairs = 12, 10
    state.leaders = {"base": ("a", None)}
    state.alphas = {"base": sequential.selection_alpha(1)}
    state.confirmed = {"base": "resolved better"}
    cells = {
        "base": {"allocator": "as-is", "thp": "madvise"},
        "a": {"allocator": "jemalloc", "thp": "madvise"},
    }
    spec = type("Spec", (), {"allocators": {}, "params": {"argv": ["server"]}})()
    rows = _rows(p99_factor)
    return verdict_mod.build(
        verdict_mod.VerdictInputs(
            rows, cells, "base", "rps", "higher", spec, "madvise", state, guards=guards
        )
    )


def test_a_guard_refuses_a_winner_whose_p99_is_resolved_worse():
    verdict = _verdict(3.0)
    assert verdict.resolved and verdict.best.kind == "better"  # it wins on rps
    assert verdict.recommend == "as-is" and verdict.deploy is None
    (guard,) = verdict.best.guards
    assert guard["refuses"] and guard["ratio"]["value"] == pytest.approx(3.0, rel=0.02)
    assert "guard:" in verdict.guarded and "p99_ms 3.0" in verdict.guarded
    assert verdict.caveats[0] == verdict.guarded
    out = text(verdict, [])
    assert "VERDICT: keep as-is" in out and "guarded metric refuses it" in out
    assert "guard p99_ms:" in out and "REFUSES" in out


@pytest.mark.parametrize("factor", [1.0, 1.03])
def test_a_guard_within_the_smallest_effect_holds(factor):
    verdict = _verdict(factor)
    assert verdict.recommend == "best" and verdict.guarded is None
    assert not verdict.best.guards[0]["refuses"]
    assert "holds" in text(verdict, [])


def test_an_unmeasured_guard_does_not_refuse_and_says_so():
    verdict = _verdict(3.0, guards=(("p999_ms", "lower"),))
    assert verdict.recommend == "best"
    assert "was not measured" in verdict.best.guards[0]["why"]


def test_try_options_make_the_metric_list():
    assert guard_param("json:p99_ms", 1) == {"json": "p99_ms", "name": "p99_ms", "better": "lower"}
    assert guard_param("higher:hits=regex:hits ([0-9]+)", 2) == {
        "regex": "hits ([0-9]+)",
        "name": "hits",
        "better": "higher",
    }
    assert guard_param("regex:p99=([0-9.]+)", 3)["name"] == "guard3"
    request = Request(argv=("redis-benchmark",), driver="redis-benchmark:GET")
    assert metrics_param(request) == {"driver": "redis-benchmark", "test": "GET"}
    request = Request(argv=("x",), metric="json:rps", higher_is_better=True, guards=("json:p99",))
    first, second = metrics_param(request)
    assert first["better"] == "higher" and second["name"] == "p99"
    from hugebench.errors import SpecError

    with pytest.raises(SpecError, match="--guard"):
        guard_param("jsn:x", 1)
    with pytest.raises(SpecError, match="--driver gives the judged metric"):
        metrics_param(Request(argv=("x",), driver="wrk", metric="json:a"))


# -- a real server started by the test -----------------------------------------------------------------

SERVERS = DATA / "servers"


def _jemalloc() -> bool:
    from hugebench.machine import allocators

    return allocators.find_library("libjemalloc.so.2") is not None


@pytest.mark.skipif(not _jemalloc(), reason="libjemalloc2 not installed")
def test_try_refuses_a_server_whose_p99_gets_worse(tmp_path):
    """latency_server.py preloaded with jemalloc answers faster (about 1.4x the requests per second) but
    every 25th request takes 20 ms: try finds jemalloc best on rps, and the p99 guard refuses it."""
    import json
    import sys

    from click.testing import CliRunner

    from hugebench import kernel
    from hugebench.cli import main

    found = kernel.thp_modes().get("enabled") or "madvise"
    py = sys.executable
    args = [
        "try", "--json", "-o", str(tmp_path / "out"), "--regime", "back-to-back", "--budget", "60s",
        "--allocators", "jemalloc", "--thp", found,
        "--server", f"{py} {SERVERS / 'latency_server.py'} {{tmp}}/s.sock",
        "--ready", "path:{tmp}/s.sock",
        "--metric", "json:rps", "--higher-is-better", "--guard", "json:p99_ms",
        "--", py, str(SERVERS / "latency_client.py"), "{tmp}/s.sock", "150",
    ]  # fmt: skip
    result = CliRunner().invoke(main, args, catch_exceptions=False)
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout.strip().splitlines()[-1])
    best = verdict["best"]
    assert best["cell"]["allocator"] == "jemalloc" and best["ratio"]["value"] > 1.1, best["ratio"]
    (guard,) = best["guards"]
    assert guard["metric"] == "p99_ms" and guard["ratio"]["value"] > 2, guard
    assert guard["refuses"], guard
    assert verdict["recommend"] == "as-is" and verdict["deploy"] is None
    assert verdict["guarded"] and "p99_ms" in verdict["guarded"]


def test_try_warmup_runs_come_just_before_their_configuration_and_are_not_timed():
    """Each configuration's warm-up runs (stored with warmup: true, left out of every statistic; the probe's
    only runs) are a batch of their own just before its first timed run: as-is's before its timing run, a
    configuration the cut leaves out never pays for its own (issue 55)."""
    import time
    from types import SimpleNamespace

    warm = [SimpleNamespace(warmup=True, cell_id=c) for c in ("a", "b")]
    timed = [SimpleNamespace(warmup=False, cell_id=c, repetition=0) for c in ("a", "b")]
    sched = schedule_mod.Schedule(["a", "b"], "a", "window_s", "lower", 60, time.monotonic())
    batches = sched(None, warm + timed, lambda: [], lambda spec, block, cells: [timed[0]])
    assert next(batches) == [warm[0]]  # as-is's warm-up only
    assert next(batches) == [timed[0]]  # then as-is's timing run
    assert sched._warm == {"b": [warm[1]]}  # b's waits for b's first timed run
    assert not sched.state.costs  # the warm-ups' cost is not a run's cost
