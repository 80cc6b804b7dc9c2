"""Sweep progress on stderr: a rich bar on a terminal; plain lines when stderr is a file or a pipe (nohup, CI).

A bar redrawn in place means nothing in a log, so off a terminal :class:`LineProgress` writes one line per
finished run, at most one a minute (a failed run, the first and the last always get theirs): done/total, elapsed,
ETA, the cell and its status. While one run goes on longer than a minute, a heartbeat line says so once a
minute: ``run 3/10 hashlookup allocator=glibc ...: 2 min elapsed, est. ~5 min`` (the estimate is the run's
price by :mod:`hugebench.sweep.estimate`'s rule: finished runs of its cell, else the workload's time model).
"""

from __future__ import annotations

import statistics
import sys
import threading
import time
from datetime import timedelta

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)

from hugebench._util import printable


def _cell(run) -> str:
    return printable(" ".join(f"{k}={v}" for k, v in run.cell.items()), None)


def _clock(seconds: float) -> str:
    return str(timedelta(seconds=round(max(seconds, 0))))


class LineProgress:
    """Callable(run, row, done) writing a line to ``stream`` per finished run, at most one per ``interval``
    seconds, except for failed runs and the first and last, which always get theirs."""

    def __init__(self, total: int, stream=None, interval: float = 60.0, clock=time.monotonic):
        self.total, self.stream, self.interval, self.clock = (
            total,
            stream or sys.stderr,
            interval,
            clock,
        )
        self.failed = 0
        self.start = clock()
        self.last_line: float | None = None
        self.done = 0
        self.queue: list = []  # the runs handed out and not finished, in the order the local loop runs them
        self.since = (
            self.start
        )  # when the run now in progress started (the last end, or its batch's start)
        self.walls: dict[str | None, list] = {}  # cell id -> wall seconds of its finished runs
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._beat: threading.Thread | None = None

    def pending(self, runs) -> None:
        """The runs about to be executed (a batch); starts the heartbeat for the first of them."""
        with self._lock:
            self.queue.extend(runs)
            if len(self.queue) == len(runs):
                self.since = self.clock()
        if self._beat is None and self.interval > 0:
            self._beat = threading.Thread(
                target=self._heartbeat, name="hugebench-heartbeat", daemon=True
            )
            self._beat.start()

    def _heartbeat(self) -> None:
        while not self._stop.wait(self.interval / 4):
            with self._lock:
                line = self.heartbeat_line()
                if line:
                    self.last_line = self.clock()
            if line:
                print(line, file=self.stream, flush=True)

    def heartbeat_line(self) -> str | None:
        """The line for the run in progress when nothing was written for ``interval`` seconds, else None."""
        now = self.clock()
        if not self.queue or now - max(self.last_line or self.start, self.since) < self.interval:
            return None
        run = self.queue[0]
        workload = getattr(run, "workload", "") or ""
        from hugebench.sweep.estimate import format_duration

        est = self.price(run)
        est_text = f", est. {format_duration(est)}" if est else ""
        return (
            f"hugebench: run {self.done + 1}/{self.total} {workload} {_cell(run)}: "
            f"{format_duration(now - self.since).lstrip('~')} elapsed{est_text}"
        )

    def price(self, run) -> float | None:
        """The run's expected wall time: its cell's finished runs (median), else the workload's model."""
        walls = self.walls.get(getattr(run, "cell_id", None))
        return statistics.median(walls) if walls else getattr(run, "time_estimate", None)

    def _finished(self, run, row) -> None:
        with self._lock:
            self.done += 1
            self.queue = [
                r
                for r in self.queue
                if r is not run and getattr(r, "run_id", 0) != getattr(run, "run_id", 1)
            ]
            self.since = self.clock()
            if isinstance(row.get("wall_s"), (int, float)):
                self.walls.setdefault(getattr(run, "cell_id", None), []).append(row["wall_s"])

    def __call__(self, run, row, done: int) -> None:
        self._finished(run, row)
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
        print(
            f"hugebench: [{done}/{self.total} {share}] {_clock(elapsed)} elapsed, ETA {eta}: "
            f"{_cell(run)}: {row['status']}{failed}",
            file=self.stream,
            flush=True,
        )

    def close(self) -> None:
        self._stop.set()
        if self._beat is not None:
            self._beat.join()


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
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TextColumn("ETA"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[last]}", markup=False),  # a cell value is text, never markup
            console=console,
            transient=False,
        )
        self.task = self.progress.add_task("sweep", total=total, last="")
        self.progress.start()

    def pending(self, runs) -> None:
        if self.lines:
            self.lines.pending(runs)

    def __call__(self, run, row, done: int) -> None:
        if self.lines:
            return self.lines(run, row, done)
        if row["status"] != "ok":
            self.failed += 1
        note = f"{row['status']}" + (f" ({self.failed} not ok)" if self.failed else "")
        self.progress.update(self.task, completed=done, last=f"{_cell(run)}: {note}")

    def close(self) -> None:
        if self.lines:
            self.lines.close()
        else:
            self.progress.stop()
