"""A run's timeout bounds everything the run does (issue 53): a ``stdin:`` named pipe nobody writes and a metric
regex that backtracks catastrophically end as timeout rows with their reason, within the run's timeout,
in the sweep's own process (run.inprocess) where no worker's kill would end them."""

from __future__ import annotations

import os
import signal
import textwrap
import threading
import time
from pathlib import Path

import pytest
from time_limit import time_limit

from hugebench import load
from hugebench.experiment import load_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
from hugebench.workloads.command.patterns import PatternTimedOut, last_groups

BACKTRACKS = r"^(x+x+)+y([0-9])"


def _sweep(tmp_path: Path, body: str):
    path = tmp_path / "bounds.yaml"
    path.write_text("name: bounds\nworkload: command\nperf: off\n" + textwrap.dedent(body))
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    return result, load(tmp_path / "res").iloc[0]


def test_a_stdin_named_pipe_nobody_writes_is_a_timeout_row(tmp_path):
    os.mkfifo(tmp_path / "in.fifo")
    with time_limit(60, "a sweep whose stdin: is a FIFO without a writer"):
        result, row = _sweep(
            tmp_path,
            f"timeout: 2\nparams:\n  argv: [cat]\n  stdin: {tmp_path}/in.fifo\n",
        )
    assert result.statuses == {"timeout": 1}, row["error"]
    assert "named pipe" in row["error"] and "nothing was measured" in row["error"]


def test_a_stdin_named_pipe_with_a_writer_is_read(tmp_path):
    fifo = tmp_path / "in.fifo"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "w") as out:  # blocks until the run opens it
            out.write("value=42\n")

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    with time_limit(60, "a sweep whose stdin: is a FIFO with a writer"):
        result, row = _sweep(
            tmp_path,
            f"""\
            timeout: 20
            params:
              argv: [cat]
              stdin: {fifo}
              metric: {{regex: 'value=([0-9]+)', name: value}}
            """,
        )
    writer.join(5)
    assert result.statuses == {"ok": 1}, row.get("error")
    assert row["value"] == 42


def test_a_backtracking_metric_regex_is_a_timeout_row_within_the_run(tmp_path):
    started = time.monotonic()
    with time_limit(60, "a sweep whose metric regex backtracks catastrophically"):
        result, row = _sweep(
            tmp_path,
            f"""\
            timeout: 3
            params:
              argv: [python3, -c, "print('x' * 98)"]
              metric: {{regex: '{BACKTRACKS}', name: n}}
            """,
        )
    assert result.statuses == {"timeout": 1}, row["error"]
    assert "backtracks" in row["error"] and "x" * 20 in (row.get("stdout_tail") or "")
    assert time.monotonic() - started < 50  # 2**98 steps would take ages: it was cut, not finished


def test_a_pattern_is_cut_at_its_time_in_the_main_thread_and_in_another():
    assert last_groups(r"v=([0-9]+)", "v=1\nv=22\n", 5) == ("22",)
    assert last_groups(r"zz([0-9])", "nothing", 5) is None
    with pytest.raises(PatternTimedOut, match="backtracks"):
        last_groups(BACKTRACKS, "x" * 98, 0.5)
    seen: list = []

    def other() -> None:  # a Dask task's thread: no signal handler there, a process of its own
        seen.append(last_groups(r"v=([0-9]+)", "v=7\n", 5))
        try:
            last_groups(BACKTRACKS, "x" * 98, 0.5)
        except PatternTimedOut as exc:
            seen.append(str(exc))

    thread = threading.Thread(target=other)
    thread.start()
    thread.join(30)
    assert seen[0] == ("7",) and "backtracks" in seen[1]


def test_a_callers_alarm_is_kept_and_comes_first_when_it_is_sooner():
    fired: list = []
    previous = signal.signal(signal.SIGALRM, lambda *_: fired.append(1))
    try:
        signal.setitimer(signal.ITIMER_REAL, 30)
        assert last_groups(r"a(b)", "ab", 5) == ("b",)
        left, _ = signal.getitimer(signal.ITIMER_REAL)
        assert 20 < left <= 30  # put back with what was left of it
        assert signal.getsignal(signal.SIGALRM) is not None and not fired
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
