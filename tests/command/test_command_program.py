"""`workload: command` runs the program the user named: resolved once on the user's PATH (not perf's), the
file recorded in the row, refused at load when there is none; its input, output and the report's account of
what ran (issue 26 section 7)."""

from __future__ import annotations

import os
import shutil
import textwrap
from pathlib import Path

import pytest
from paths import TESTS

from hugebench import load
from hugebench.errors import SpecError
from hugebench.experiment import load_spec
from hugebench.machine.program import resolve
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep


def _experiment(tmp_path, body: str, name: str = "cmd", perf: str = "off") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nworkload: command\nperf: {perf}\n" + textwrap.dedent(body))
    return path


def _sweep(path: Path, tmp_path):
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    return result, load(tmp_path / "res")


@pytest.fixture
def fake_python3(tmp_path, monkeypatch) -> Path:
    """A `python3` earlier on the user's PATH than /usr/bin: a script that says it ran and shows its PATH."""
    bin_dir = tmp_path / "userbin"
    bin_dir.mkdir()
    script = bin_dir / "python3"
    script.write_text('#!/bin/sh\necho "the user\'s python3 ran"\necho "PATH=$PATH"\n')
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    return script


def test_resolve_is_execvp_on_the_given_path(tmp_path, fake_python3):
    assert resolve("python3") == (str(fake_python3), None)
    assert resolve("python3", "/usr/bin")[0] == "/usr/bin/python3"
    assert resolve("./userbin/python3", cwd=str(tmp_path))[0] == str(fake_python3)
    assert resolve("python3", "userbin", cwd=str(tmp_path))[0] == str(
        fake_python3
    )  # relative entry: from cwd
    assert resolve("no-such-program-hb", "/usr/bin") == (
        None,
        "no-such-program-hb is not found on PATH",
    )


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf is not installed")
def test_under_perf_the_users_program_runs_and_the_row_names_it(tmp_path, fake_python3):
    """perf stat prepends /usr/lib/perf-core:/usr/bin to its child's PATH; the file found on the user's PATH
    must run all the same, with the user's PATH, and the row must say which file that was."""
    path = _experiment(tmp_path, "params: {argv: [python3, -c, pass]}\n", perf="auto")
    spec = load_spec(path)
    assert spec.params["argv"][0] == str(fake_python3)  # resolved once, at load
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    assert "the user's python3 ran" in row["stdout_tail"]
    assert row["program_path"] == str(fake_python3)
    assert f"PATH={fake_python3.parent}{os.pathsep}" in row["stdout_tail"]  # not perf's PATH
    assert (
        os.path.realpath("/bin/sh") in row["program_exes"]
    )  # the image that ran: the script's interpreter


def test_a_program_not_on_the_users_path_is_refused_at_load(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")
    path = _experiment(tmp_path, "params: {argv: [no-such-program-hb]}\n")
    with pytest.raises(
        SpecError,
        match=r"params\.argv.*no-such-program-hb is not found on PATH \(PATH=/usr/bin:/bin\)",
    ):
        load_spec(path)


def test_a_templated_program_is_resolved_when_the_run_starts(tmp_path, fake_python3):
    path = _experiment(
        tmp_path,
        """\
        params: {argv: ["{prog}", -c, pass]}
        axes: {prog: [python3, no-such-program-hb]}
        """,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1, "failed": 1}
    ok, failed = df[df["status"] == "ok"].iloc[0], df[df["status"] == "failed"].iloc[0]
    assert ok["program_path"] == str(fake_python3)
    assert "no-such-program-hb is not found on PATH" in failed["error"]


# -- standard streams ------------------------------------------------------------------------------------


def _text_safe(text: str) -> bool:
    return all(
        c in "\n\t" or (" " <= c and c != "\x7f" and not "\x80" <= c <= "\x9f") for c in text
    )


def test_binary_output_keeps_a_bounded_text_safe_tail(tmp_path):
    """xz's 28 MB of binary output once ended as 4000 characters of garbage in stdout_tail."""
    path = _experiment(tmp_path, "params: {argv: [head, -c, '1000000', /dev/urandom]}\n")
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1}, df.get("error")
    tail = df.iloc[0]["stdout_tail"]
    assert 1000 < len(tail) <= 4000 and _text_safe(tail)


def test_text_safe_and_read_end(tmp_path):
    from hugebench.machine.launch import read_end, tail, text_safe

    assert text_safe(b"ok\x1b[31m\x00\tred\n\xff\xfe") == "ok[31m\tred\n\ufffd\ufffd"
    big = tmp_path / "big"
    big.write_bytes(b"x" * 100_000 + b"end\n")
    assert read_end(big, 4) == b"end\n" and tail(big, 10) == "xxxxxxend\n"
    assert read_end(tmp_path, 10) == b"" and tail(tmp_path / "missing") is None


def test_stdin_from_a_file_and_stdout_to_a_file(tmp_path):
    (tmp_path / "input.txt").write_text("x" * 12345)
    path = _experiment(
        tmp_path,
        """\
        params:
          argv: [sh, -c, "wc -c; echo to-stderr >&2"]
          stdin: input.txt
          stdout: counted.txt
          metric: {regex: '^([0-9]+)$', name: chars}
        """,
    )
    spec = load_spec(path)
    assert spec.params["stdin"] == str(
        tmp_path / "input.txt"
    )  # relative to cwd, made absolute at load
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1}, df.get("error")
    assert df.iloc[0]["chars"] == 12345  # the metric reads the stdout file's end
    assert (tmp_path / "counted.txt").read_text().strip() == "12345"
    assert "to-stderr" in df.iloc[0]["stdout_tail"]


def test_stdout_discard_and_the_default_stdin(tmp_path):
    path = _experiment(
        tmp_path,
        """\
        params:
          argv: [sh, -c, "cat; echo to-stdout; echo to-stderr >&2"]
          stdout: discard
        """,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1}, df.get(
        "error"
    )  # cat ends at once: stdin is /dev/null by default
    tail = df.iloc[0]["stdout_tail"]
    assert "to-stderr" in tail and "to-stdout" not in tail


@pytest.mark.parametrize(
    "params,message",
    [
        (
            "{argv: [cat], stdin: missing.txt}",
            r"params\.stdin'?: .*missing\.txt is not a readable file",
        ),
        (
            "{argv: [cat], stdout: nodir/out.txt}",
            r"params\.stdout'?: .*the directory of .*nodir/out\.txt does not exist",
        ),
        (
            "{argv: [cat], stdout: discard, metric: {json: x}}",
            "stdout: discard, but metric.json reads",
        ),
        ("{argv: [cat], stdin: 3}", r"stdin must be str"),
    ],
)
def test_bad_streams_are_refused_at_load(tmp_path, params, message):
    with pytest.raises(SpecError, match=message):
        load_spec(_experiment(tmp_path, f"params: {params}\n"))


# -- huge-page coverage: which one, one formula -----------------------------------------------------------


def test_time_weighted_coverage_is_one_formula_for_fleet_and_the_sampler():
    """Issue 27: fleet averaged per-sample ratios, the command sampler divided time-weighted sums. One
    function now; on a stream where the two definitions differ, both give the ratio of the sums."""
    from hugebench.machine.sampler import CoverageSampler
    from hugebench.measure.phases import time_weighted_coverage
    from hugebench.workloads.fleet import fleet_metrics

    times, rss, huge = [0.0, 1.0, 2.0, 3.0], [100, 1000, 1000, 50], [100, 0, 500, 0]
    expected = (100 * 1 + 0 * 1 + 500 * 1) / (
        100 * 1 + 1000 * 1 + 1000 * 1
    )  # the last sample weighs nothing
    assert time_weighted_coverage(times, rss, huge) == pytest.approx(expected)
    assert expected != pytest.approx((1.0 + 0.0 + 0.5) / 3)  # the mean of ratios would say 50%
    from hugebench.machine.sampler import FIELDS

    fake = CoverageSampler(
        pid=1,
        samples=[
            (t, {**dict.fromkeys(FIELDS, 0), "Rss": r, "AnonHugePages": h})
            for t, r, h in zip(times, rss, huge)
        ],
    )
    assert fake.summary()["hp_coverage_tw"] == pytest.approx(expected)
    row = {"series_t_s": times, "series_rss_bytes": rss, "series_anon_huge_bytes": huge}
    assert fleet_metrics(row)["hp_coverage_tw"] == pytest.approx(expected)
    assert (
        time_weighted_coverage([0.0], [0], [0]) is None
        and time_weighted_coverage([], [], []) is None
    )


def test_a_program_timed_to_its_end_is_judged_by_its_time_weighted_coverage():
    """`sort` frees its memory before it exits: 0% at exit, 99% over its run. The row's hp_coverage (what the
    THP warning and the report's column use) is the time-weighted one, labelled; at exit is kept beside it."""
    import pandas as pd

    from hugebench.report.results import Experiment
    from hugebench.report.sections import coverage_flags
    from hugebench.run.measured import _coverage_columns
    from hugebench.workloads.command.checks import coverage_metrics

    row = _coverage_columns(at_end=0.0, time_weighted=0.99, run_to_end=True, interval=1.0)
    assert row == {
        "hp_coverage": 0.99,
        "hp_coverage_basis": "time-weighted",
        "hp_coverage_exit": 0.0,
    }
    assert (
        _coverage_columns(0.4, 0.9, run_to_end=False, interval=1.0)["hp_coverage"] == 0.4
    )  # window end
    assert "hp_coverage.reason" in _coverage_columns(0.0, None, run_to_end=True, interval=1.0)
    labels = dict((c, label) for c, label, _ in coverage_metrics({"window": "process"}))
    assert labels == {
        "hp_coverage": "HP cov. (time-wtd)",
        "sampled.peak.coverage": "HP cov. (peak)",
        "hp_coverage_exit": "HP cov. (at exit)",
    }
    assert (
        dict((c, lb) for c, lb, _ in coverage_metrics({"window": "markers"}))["hp_coverage"]
        == "HP cov. (window end)"
    )

    def rows(tw: float) -> pd.DataFrame:
        one = {
            "status": "ok",
            "allocator": "glibc",
            "thp": "always",
            **_coverage_columns(at_end=0.0, time_weighted=tw, run_to_end=True, interval=1.0),
        }
        return pd.DataFrame([one, {**one, "allocator": "jemalloc"}])

    assert (
        coverage_flags(Experiment("sort", rows(0.99), {}), ["allocator", "thp"]) == []
    )  # not 0% at exit
    flags = coverage_flags(Experiment("sort", rows(0.5), {}), ["allocator", "thp"])
    assert (
        len(flags) == 1
        and "huge-page coverage (time-weighted) under THP always below 90%" in flags[0].text
    )


def test_a_real_program_that_frees_before_exit(tmp_path):
    from hugebench import kernel

    if kernel.thp_modes()["enabled"] not in ("always", "madvise"):
        pytest.skip("THP is 'never' here: the program cannot get huge pages")
    shutil.copy(TESTS / "data" / "thp_program.py", tmp_path / "frees.py")
    path = _experiment(
        tmp_path, 'params: {argv: ["{python}", frees.py, "0.8", unmap], sample_interval: 0.1}\n'
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    assert (
        row["hp_coverage_basis"] == "time-weighted" and row["hp_coverage"] == row["hp_coverage_tw"]
    )
    assert (
        row["hp_coverage"] > 0.3 and row["hp_coverage_exit"] < 0.1
    )  # high over its run, ~0 at exit


def test_the_report_names_the_command_that_was_measured(tmp_path):
    from click.testing import CliRunner

    from hugebench.cli import main

    path = _experiment(
        tmp_path,
        """\
        params:
          argv: [sh, -c, "echo {greeting} {who}"]
          greeting: hello
          stdout: discard
        axes: {who: [world, moon]}
        """,
    )
    result, _ = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 2}
    sh = shutil.which("sh")
    text = (
        CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--format", "markdown"]).output
    )
    assert (
        f"command: {sh} -c 'echo {{greeting}} {{who}}'; ran {sh}" in text
    )  # every format names it
    page = tmp_path / "report.html"
    assert (
        CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--html", str(page)]).exit_code
        == 0
    )
    html = page.read_text()
    section = html[html.index("<h3>Command measured") :]
    assert (
        f"{sh} -c &#39;echo {{greeting}} {{who}}&#39;" in section
    )  # argv as resolved at load, fields as written
    for fact in ("greeting=hello", "who: world, moon", "discard", "process images"):
        assert fact in section


# -- a program that links its own allocator ---------------------------------------------------------------

LIBC, JE = "/usr/lib/x86_64-linux-gnu/libc.so.6", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"


def test_a_linked_allocator_is_named_and_its_knobs_are_not_the_cells():
    from hugebench.machine.mallocprobe import verify

    probe = {
        "pid": 1,
        "exe": "/usr/bin/redis-server",
        "malloc": LIBC,
        "free": LIBC,
        "knobs": {"jemalloc.opt.thp": "default"},
        "api": {"mallctl": JE, "nallocx": JE},
    }
    row = verify("glibc", None, [probe], {})
    assert (
        "allocator.jemalloc.opt.thp" not in row
    )  # jemalloc's knob, answered by the linked library
    assert row["allocator_linked"] == JE
    assert "proved: malloc and free resolve to glibc's libc.so.6" in row["allocator_note"]
    assert "stays mapped and its mallctl/nallocx still answer" in row["allocator_note"]
    served = {**probe, "malloc": JE, "free": JE}
    row = verify("jemalloc", JE, [served], {})
    assert row["allocator.jemalloc.opt.thp"] == "default" and "allocator_linked" not in row


@pytest.mark.skipif(shutil.which("redis-server") is None, reason="redis-server not installed")
def test_redis_server_links_jemalloc_and_the_glibc_row_says_so(tmp_path):
    from click.testing import CliRunner

    from hugebench.cli import main

    path = _experiment(
        tmp_path,
        """\
        params: {argv: [redis-server, --version]}
        axes: {allocator: [glibc, jemalloc]}
        """,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 2}, df.get("error")
    by = df.set_index("allocator")
    assert "libc.so" in by.loc["glibc", "allocator_malloc_from"]
    assert "libjemalloc" in by.loc["glibc", "allocator_linked"]
    assert "stays mapped" in by.loc["glibc", "allocator_note"]
    assert by.loc["glibc"].get("allocator.jemalloc.opt.thp") is None or pd_isna(
        by.loc["glibc"].get("allocator.jemalloc.opt.thp")
    )
    assert pd_isna(
        by.loc["jemalloc", "allocator_linked"]
    )  # its own jemalloc serves malloc: nothing beside it
    text = (
        CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--format", "markdown"]).output
    )
    assert "glibc: the preload proved that malloc and free resolve to this allocator" in text
    assert "libjemalloc" in text and "stays mapped" in text


def pd_isna(value) -> bool:
    import pandas as pd

    return bool(pd.isna(value))


def test_the_sampler_records_the_executable_of_every_process_it_reads():
    import subprocess
    import sys

    from hugebench.machine.sampler import CoverageSampler

    child = subprocess.Popen(["sleep", "5"])
    try:
        sampler = CoverageSampler(pid=os.getpid())
        assert sampler.sample() is not None
    finally:
        child.kill()
        child.wait()
    assert (
        os.path.realpath(sys.executable) in sampler.exes
        and os.path.realpath(shutil.which("sleep")) in sampler.exes
    )
