"""Sweep progress on stderr: a rich bar on a terminal; plain lines when stderr is a file or a pipe (nohup, CI).

A bar redrawn in place means nothing in a log, so off a terminal :class:`LineProgress` writes one line per
finished run, at most one a minute (a failed run, the first and the last always get theirs): done/total, elapsed,
ETA, the cell and its status.
"""

from __future__ import annotations

import sys
import time
from datetime import timedelta

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def _cell(run) -> str:
    return " ".join(f"{k}={v}" for k, v in run.cell.items())


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(max(seconds, 0))))


class LineProgress:
    """Callable(run, row, done) writing a line to ``stream`` per finished run, at most one per ``interval``
    seconds, except for failed runs and the first and last, which always get theirs."""

    def __init__(self, total: int, stream=None, interval: float = 60.0, clock=time.monotonic):
        self.total, self.stream, self.interval, self.clock = total, stream or sys.stderr, interval, clock
        self.failed = 0
        self.start = clock()
        self.last_line: float | None = None

    def __call__(self, run, row, done: int) -> None:
        ok = row["status"] == "ok"
        self.failed += not ok
        now = self.clock()
        due = self.last_line is None or now - self.last_line >= self.interval
        if not (due or not ok or done >= self.total):
            return
        self.last_line = now
        elapsed = now - self.start
        eta = _clock(elapsed / done * (self.total - done)) if 0 < done < self.total else "0:00:00"
        share = f"{done / self.total:.0%}" if self.total else "?"
        failed = f" ({self.failed} not ok so far)" if self.failed else ""
        print(f"hugebench: [{done}/{self.total} {share}] {_clock(elapsed)} elapsed, ETA {eta}: "
              f"{_cell(run)}: {row['status']}{failed}", file=self.stream, flush=True)

    def close(self) -> None:
        pass


class RichProgress:
    """Callable(run, row, done) updating one bar; close() stops it. Off a terminal it writes
    :class:`LineProgress` lines instead (a bar is only drawn at its end there)."""

    def __init__(self, total: int, console: Console | None = None):
        self.failed = 0
        console = console or Console(stderr=True)
        self.lines = None if console.is_terminal else LineProgress(total, console.file)
        if self.lines:
            return
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("{task.fields[last]}"),
            console=console, transient=False,
        )
        self.task = self.progress.add_task("sweep", total=total, last="")
        self.progress.start()

    def __call__(self, run, row, done: int) -> None:
        if self.lines:
            return self.lines(run, row, done)
        if row["status"] != "ok":
            self.failed += 1
        note = f"{row['status']}" + (f" ({self.failed} not ok)" if self.failed else "")
        self.progress.update(self.task, completed=done, last=f"{_cell(run)}: {note}")

    def close(self) -> None:
        if not self.lines:
            self.progress.stop()
