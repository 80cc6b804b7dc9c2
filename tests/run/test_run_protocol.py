"""The run protocol's single definitions (hugebench.run): the run directory's files, the failure constructor,
the one argv assembly and the one atomic writer."""

from __future__ import annotations

import json
import os

import pytest

from hugebench._util import write_json_atomic
from hugebench.machine.environment import launcher
from hugebench.run.argv import measured_argv
from hugebench.run.rows import failure, reply_fields
from hugebench.run.rundir import RUN_DIR_PREFIX, RunDir, read_reply, write_reply


def test_a_run_directory_names_every_file_once_and_is_removed_after_the_run():
    with RunDir.create() as rundir:
        assert rundir.path.name.startswith(f"{RUN_DIR_PREFIX}{os.getpid()}-")
        names = {
            p.name
            for p in (
                rundir.request,
                rundir.reply,
                rundir.status,
                rundir.perf,
                rundir.stderr,
                rundir.text,
            )
        }
        assert names == {
            "request.json",
            "reply.json",
            "status.json",
            "perf.csv",
            "stderr.txt",
            "text",
        }
        assert (
            rundir.perf_text() is None and read_reply(rundir.reply) is None
        )  # nothing written yet
        write_reply(rundir.reply, {"status": "ok", "row": {"x": 1.5}})
        assert reply_fields(rundir.reply, {"exit_code": 0}) == {"x": 1.5}
    assert not rundir.path.exists()


def test_a_reply_that_is_not_an_object_is_no_reply(tmp_path):
    (tmp_path / "reply.json").write_text("[1, 2]")
    fields = reply_fields(tmp_path / "reply.json", {"exit_code": 0})
    assert fields["status"] == "failed" and "without a reply" in fields["error"]


def test_failure_is_the_only_way_to_mark_a_run_failed_and_knows_the_statuses():
    assert failure("crashed", "worker died of signal SIGSEGV", signal="SIGSEGV") == {
        "status": "crashed",
        "error": "worker died of signal SIGSEGV",
        "signal": "SIGSEGV",
    }
    for wrong in ("ok", "broken"):
        with pytest.raises(ValueError, match="not a failure status"):
            failure(wrong, "x")


def test_the_measured_argv_puts_perf_outside_hb_exec_and_the_allocator_inside(tmp_path):
    rundir = RunDir(tmp_path)
    argv = measured_argv(
        ["prog", "arg"],
        {"LD_PRELOAD": "/lib/alloc.so", "KNOB": "1"},
        rundir,
        perf_bin="/usr/bin/perf",
        perf_events=("cycles",),
        extra_env={"PATH": "/bin"},
    )
    hb_exec = argv.index(launcher())
    assert argv[0] == "/usr/bin/perf" and str(rundir.perf) in argv[:hb_exec]
    assert argv[hb_exec + 1] == str(rundir.status)
    assert argv[hb_exec + 2 :] == [
        "LD_PRELOAD=/lib/alloc.so",
        "KNOB=1",
        "PATH=/bin",
        "--",
        "prog",
        "arg",
    ]
    assert (
        measured_argv(["prog"], {}, rundir)[0] == launcher()
    )  # no perf: hb-exec is the first process


def test_the_atomic_writer_replaces_whole_or_not_at_all(tmp_path):
    target = tmp_path / "sub" / "doc.json"
    write_json_atomic(target, {"a": 1})
    with pytest.raises(ValueError):
        write_json_atomic(target, {"a": float("nan")}, allow_nan=False)
    assert json.loads(target.read_text()) == {"a": 1}
    assert [p.name for p in target.parent.iterdir()] == [
        "doc.json"
    ]  # no temporary file left behind
    assert oct(target.stat().st_mode & 0o777) == "0o644"
