"""A runs file read as a sweep appends to it: each call returns every row so far but parses only the lines
added since the last call (a schedule asks after every block; reading the whole file each time made a
``try`` of 1 000 runs parse half a million rows).

The rows are :func:`hugebench.store.read_rows`'s, by the same rules (:func:`.files.parse_row`, a run kept
once by :func:`.files.row_identity`): a line without its newline yet is left for the next call; a line that
cannot be a row is skipped with a :class:`.files.StoreWarning` when it is read (once).

What does not belong here: reading a finished store (``read_rows``, ``load``).
"""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from hugebench.store.files import (
    StoreWarning,
    bounded_lines,
    open_store_file,
    parse_row,
    row_identity,
)


class RowFollower:
    """``follower()`` -> the runs file's rows so far, a new list each call ([] before the file exists)."""

    def __init__(self, runs_file: str | os.PathLike):
        self.path = Path(runs_file)
        self.rows: list[dict] = []
        self._offset = 0
        self._seen: set = set()

    def __call__(self) -> list[dict]:
        if not self.path.exists():
            return []
        bad: list[str] = []
        with open_store_file(self.path, "runs file") as handle:
            handle.seek(self._offset)
            for line, too_long in bounded_lines(handle):
                if not too_long and not line.endswith(b"\n"):
                    break  # being written (or torn): read again next time
                self._offset = handle.tell()
                if too_long or line.strip():
                    self._add(line, too_long, bad)
        if bad:
            shown = "; ".join(bad[:3]) + (f"; and {len(bad) - 3} more" if len(bad) > 3 else "")
            warnings.warn(
                f"{self.path}: {len(bad)} unreadable line(s) skipped: {shown}",
                StoreWarning,
                stacklevel=2,
            )
        return list(self.rows)

    def _add(self, line: bytes, too_long: bool, bad: list[str]) -> None:
        row, problem = parse_row(line, too_long)
        if row is None:
            bad.append(str(problem))
            return
        key = row_identity(row)
        if key is not None and key in self._seen:
            return
        self._seen.add(key)
        self.rows.append(row)
