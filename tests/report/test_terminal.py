"""What a person meets in a terminal (issue 30): tables that fit its width, a summary in words, plain text when
piped, progress lines in a log, one `system` command, and plan's time estimate with what it rests on."""

from __future__ import annotations

import io
import re
import time
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from paths import TESTS
from rich.console import Console

from hugebench.cli import main
from hugebench.experiment import parse_spec
from hugebench.store import ResultStore
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.estimate import History, estimate, format_duration
from hugebench.sweep.progress import LineProgress, RichProgress

SAMPLE = TESTS / "data" / "sample_results"
ANSI = re.compile(r"\x1b\[")


@pytest.mark.parametrize("width", [80, 100, 200])
def test_report_fits_the_terminal_width(width):
    result = CliRunner().invoke(main, ["report", str(SAMPLE)], env={"COLUMNS": str(width)})
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert max(len(line) for line in lines) <= width, max(lines, key=len)
    # The PMU columns say n/a in every row: they go, and a note names them; their footnotes stay.
    assert "Not shown (n/a in every row): Cycles [1], STLB misses [2]." in result.output
    assert "[1] Cycles (pmu.cycles): n/a, not supported." in result.output
    assert not any("STLB miss" in line and "┃" in line for line in lines)
    # The summary in words that the HTML page has, under the table.
    assert "In words: 6 cells, 29 successful runs, 7 failed" in result.output
    assert "Best against the baseline: allocator=mimalloc, thp=always" in result.output
    assert not ANSI.search(result.output), "piped output is plain"


def test_report_keeps_its_natural_width_when_piped_without_columns(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    result = CliRunner().invoke(main, ["report", str(SAMPLE)])
    assert max(len(line) for line in result.output.splitlines()) > 120  # a file gets whole lines


def test_colour_only_on_a_terminal():
    from hugebench.report import report

    coloured = report(SAMPLE, "rich", width=120, color=True)
    assert (
        "\x1b[1;31mfailed" in coloured and "\x1b[32myes" in coloured
    )  # failures red, resolved green
    assert not ANSI.search(report(SAMPLE, "rich", width=120))


def test_markdown_report_says_it_in_words_too():
    result = CliRunner().invoke(main, ["report", str(SAMPLE), "--format", "markdown"])
    assert "In words: 6 cells, 29 successful runs, 7 failed" in result.output


def _run(cell="allocator=glibc"):
    return SimpleNamespace(cell=dict(kv.split("=") for kv in cell.split()))


def test_progress_off_a_terminal_is_one_line_per_run_at_most_one_a_minute():
    now = [0.0]
    out = io.StringIO()
    progress = LineProgress(5, out, interval=60, clock=lambda: now[0])
    for done, (t, status) in enumerate(
        [(10, "ok"), (20, "ok"), (30, "failed"), (95, "ok"), (100, "ok")], 1
    ):
        now[0] = t
        progress(_run(), {"status": status}, done)
    lines = out.getvalue().splitlines()
    # the first; the second is 10 s later (skipped); the failure; 65 s after the last line; the last run
    assert [line.split("]")[0] for line in lines] == [
        "hugebench: [1/5 20%",
        "hugebench: [3/5 60%",
        "hugebench: [4/5 80%",
        "hugebench: [5/5 100%",
    ]
    assert "0:00:10 elapsed, ETA 0:00:40: allocator=glibc: ok" in lines[0]
    assert lines[1].endswith("failed (1 not ok so far)")


def test_a_long_run_gets_a_heartbeat_line_once_a_minute_with_its_estimate():
    now = [0.0]
    out = io.StringIO()
    progress = LineProgress(10, out, interval=60, clock=lambda: now[0])
    runs = [
        SimpleNamespace(
            cell={"allocator": "glibc"},
            cell_id="c1",
            run_id=f"r{i}",
            workload="hashlookup",
            time_estimate=300.0,
        )
        for i in range(3)
    ]
    progress.interval = 0  # no thread in this test: the clock is driven by hand
    progress.pending(runs)
    progress.interval = 60
    now[0] = 30
    assert progress.heartbeat_line() is None  # under a minute: nothing to say
    now[0] = 125
    assert (
        progress.heartbeat_line()
        == "hugebench: run 1/10 hashlookup allocator=glibc: 2.1 min elapsed, est. ~5.0 min"
    )
    now[0] = 130
    progress(runs[0], {"status": "ok", "wall_s": 130.0}, 1)
    now[0] = 200
    line = progress.heartbeat_line()
    assert (
        line.startswith("hugebench: run 2/10 hashlookup") and "est. ~2.2 min" in line
    )  # its cell's run: 130 s


def test_the_heartbeat_is_written_while_a_run_goes_on_and_stops_at_close():
    out = io.StringIO()
    progress = LineProgress(2, out, interval=0.2)
    run = SimpleNamespace(
        cell={"allocator": "glibc"}, cell_id="c", run_id="r", workload="command", time_estimate=None
    )
    progress.pending([run])
    time.sleep(0.7)
    progress(run, {"status": "ok", "wall_s": 0.7}, 1)
    progress.close()
    beats = [
        line
        for line in out.getvalue().splitlines()
        if line.startswith("hugebench: run 1/2 command")
    ]
    assert 1 <= len(beats) <= 4 and "elapsed" in beats[0] and "est." not in beats[0]
    assert not progress._beat.is_alive()


def test_the_sweep_progress_writes_lines_when_stderr_is_not_a_terminal():
    out = io.StringIO()
    progress = RichProgress(2, Console(file=out, force_terminal=False))
    progress(_run(), {"status": "ok"}, 1)
    progress(_run(), {"status": "ok"}, 2)
    progress.close()
    assert out.getvalue().count("hugebench: [") == 2 and "━" not in out.getvalue()


def test_thp_is_a_hidden_alias_of_system():
    help_text = CliRunner().invoke(main, ["--help"]).output
    assert re.search(r"^\s+system\s", help_text, re.M) and not re.search(
        r"^\s+thp\s", help_text, re.M
    )
    assert "sudo .venv/bin/hugebench" in help_text  # how to run as root from a virtualenv
    assert CliRunner().invoke(main, ["thp", "--help"]).exit_code == 0


# -- plan: one source for durations, history first ------------------------------------------------------


SPEC = (
    "name: t\nworkload: hashlookup\nperf: off\nrepetitions: 2\nparams: {keys: 2000}\n"
    "axes:\n  allocator: [glibc, jemalloc]\n"
)


@pytest.mark.parametrize(
    "seconds, text",
    [
        (None, "unknown"),
        (0.2, "~1 s"),
        (40, "~40 s"),
        (210, "~3.5 min"),
        (25 * 60, "~25 min"),
        (2.4 * 3600, "~2.4 h"),
    ],
)
def test_durations_are_written_one_way(seconds, text):
    assert format_duration(seconds) == text


def test_plan_prices_the_runs_left_from_the_stored_history(tmp_path):
    spec_file = tmp_path / "t.yaml"
    spec_file.write_text(SPEC)
    runs = plan_mod.plan(parse_spec(SPEC))
    out = tmp_path / "res"
    store = ResultStore(out)
    first = [r for r in runs if r.repetition == 0]
    for r in first:  # one repetition of each cell ran, at 30 s a run
        store.append({"run_id": r.run_id, "cell_id": r.cell_id, "status": "ok", "wall_s": 30.0})
    result = CliRunner().invoke(main, ["plan", str(spec_file), "-o", str(out)])
    assert result.exit_code == 0, result.output
    assert (
        f"time: {len(first)} of {len(runs)} runs already done; ~1.0 min for the {len(runs) - len(first)} runs "
        "left (all from the measured wall time of stored runs of the same cells)" in result.output
    )
    fresh = CliRunner().invoke(main, ["plan", str(spec_file), "-o", str(tmp_path / "none")]).output
    assert f"for the {len(runs)} runs left (all from the workload's time model)" in fresh


def test_an_estimate_without_model_or_history_says_so():
    runs = [SimpleNamespace(run_id=str(i), cell_id="c", time_estimate=None) for i in range(3)]
    e = estimate(runs)
    assert (
        e.seconds is None
        and "unknown for 3 runs: 3 have no stored runs" in e.text()
        and "no time model" in e.text()
    )
    priced = estimate(runs, History({"c": 2.0}, frozenset({"0"}), overhead=1.5))
    assert priced.seconds == pytest.approx(6.0) and "x1.50 orchestration overhead" in priced.text()
