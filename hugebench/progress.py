"""A rich progress bar for sweeps: current cell, done/total, ETA, and a running count of failures."""

from __future__ import annotations

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


class RichProgress:
    """Callable(run, row, done) updating one bar; close() stops it."""

    def __init__(self, total: int, console: Console | None = None):
        self.failed = 0
        self.progress = Progress(
            TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("ETA"), TimeRemainingColumn(),
            TextColumn("{task.fields[last]}"),
            console=console or Console(stderr=True), transient=False,
        )
        self.task = self.progress.add_task("sweep", total=total, last="")
        self.progress.start()

    def __call__(self, run, row, done: int) -> None:
        if row["status"] != "ok":
            self.failed += 1
        cell = " ".join(f"{k}={v}" for k, v in run.cell.items())
        note = f"{row['status']}" + (f" ({self.failed} not ok)" if self.failed else "")
        self.progress.update(self.task, completed=done, last=f"{cell}: {note}")

    def close(self) -> None:
        self.progress.stop()
