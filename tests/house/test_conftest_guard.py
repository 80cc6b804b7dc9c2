"""The test session's own guard: a killed session's record of the knobs it found is put back by the next
session (tests/conftest.py), on files standing in for the knobs."""

from __future__ import annotations

import json

import conftest


def _record(directory, pid, started, knobs):
    (directory / f"{pid}.json").write_text(
        json.dumps({"pid": pid, "started": started, "knobs": knobs})
    )


def test_a_killed_sessions_knobs_are_put_back_oldest_last(tmp_path, monkeypatch):
    records = tmp_path / "sessions"
    records.mkdir()
    monkeypatch.setattr(conftest, "_FOUND_DIR", records)
    enabled, order = tmp_path / "enabled", tmp_path / "order"
    enabled.write_text("[always] madvise never\n")
    order.write_text("9\n")
    dead = 2**22 + 1  # above pid_max's default: no such process
    # the older session found madvise; a later one (started while the first had set never) found never
    _record(records, dead, 100.0, {str(enabled): "always [madvise] never", str(order): "9"})
    _record(records, dead + 1, 200.0, {str(enabled): "always madvise [never]"})
    written = conftest._restore_killed_sessions()
    assert (
        enabled.read_text() == "madvise\n"
    )  # the oldest record wins: what the machine had before both
    assert order.read_text() == "9\n"  # unchanged: nothing written
    assert written == [f"{enabled}=never", f"{enabled}=madvise"]
    assert list(records.iterdir()) == []


def test_a_live_sessions_record_is_left_alone(tmp_path, monkeypatch):
    import os

    records = tmp_path / "sessions"
    records.mkdir()
    monkeypatch.setattr(conftest, "_FOUND_DIR", records)
    knob = tmp_path / "enabled"
    knob.write_text("always [madvise] never\n")
    _record(records, os.getpid(), 1.0, {str(knob): "[always] madvise never"})
    (records / "garbage.json").write_text("{not json")
    assert conftest._restore_killed_sessions() == []
    assert knob.read_text() == "always [madvise] never\n"
    assert [p.name for p in records.iterdir()] == [f"{os.getpid()}.json"]
