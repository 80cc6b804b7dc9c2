"""A sweep's rows followed as they are written (``ResultStore.follow``): after every piece appended, the
follower's rows are :func:`read_rows`'s of the file so far, though it parses only the new lines."""

from __future__ import annotations

import json
import warnings

import pytest

from hugebench import store
from hugebench.store import ResultStore, StoreWarning, read_rows


def _line(**row) -> bytes:
    return (json.dumps({"schema_version": 1, "status": "ok", **row}) + "\n").encode()


def _read(path) -> list[dict]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreWarning)
        return read_rows(path)


def test_the_rows_so_far_are_read_rows_of_the_file_so_far(tmp_path):
    follower = ResultStore(tmp_path / "res").follow()
    runs = follower.path
    assert follower() == []  # no runs file yet
    half = _line(run_id="c", repetition=2)
    pieces = [
        _line(run_id="a", repetition=0) + _line(run_id="b", repetition=0),
        _line(run_id="a", repetition=0),  # an ok run stored twice: kept once
        half[:20],  # a line being written: not read until it ends
        half[20:] + _line(run_id="d", status="failed", started_at="t1"),
        _line(run_id="d", status="failed", started_at="t2"),  # a failed run retried: history, kept
        b"\n\n",
    ]
    runs.parent.mkdir(parents=True, exist_ok=True)
    for piece in pieces:
        with open(runs, "ab") as handle:
            handle.write(piece)
        assert follower() == _read(runs)
    assert [r["run_id"] for r in follower()] == ["a", "b", "c", "d", "d"]


def test_a_line_that_cannot_be_a_row_is_skipped_with_one_warning(tmp_path):
    runs = tmp_path / "runs.jsonl"
    follower = store.RowFollower(runs)
    too_long = b'{"x": "' + b"y" * store.MAX_LINE_BYTES + b'"}\n'
    runs.write_bytes(_line(run_id="a") + b"not json\n" + too_long + _line(run_id="b"))
    with pytest.warns(StoreWarning, match="2 unreadable line"):
        assert [r["run_id"] for r in follower()] == ["a", "b"]
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)  # read once: not warned again
        assert [r["run_id"] for r in follower()] == ["a", "b"]
    assert follower() == _read(runs)


def test_a_caller_changing_its_list_does_not_change_the_next(tmp_path):
    runs = tmp_path / "runs.jsonl"
    runs.write_bytes(_line(run_id="a"))
    follower = store.RowFollower(runs)
    follower().clear()
    assert [r["run_id"] for r in follower()] == ["a"]
