"""The timed window end to end: real programs (C through the header, Python through hugebench.window)
marking a window that the ControlChannel times, alone and driving a real `perf stat --control`."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from paths import TESTS

from hugebench.workloads.command.control import ControlChannel, header_path, perf_fifos

DATA = TESTS / "data"
OUTSIDE, INSIDE = 0.3, 0.1  # CPU seconds the programs burn around / inside their window
STYLES = ["c", "python-with", "python-decorator", "python-calls"]


@pytest.fixture(scope="module")
def c_program(tmp_path_factory) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the C window program")
    out = tmp_path_factory.mktemp("window") / "window_program"
    subprocess.run(
        [
            "gcc",
            "-O1",
            "-Wall",
            "-Wextra",
            "-Werror",
            "-I",
            os.path.dirname(header_path()),
            "-o",
            str(out),
            str(DATA / "window_program.c"),
        ],
        check=True,
    )
    return out


def _argv(style: str, c_program: Path | None, outside=OUTSIDE, inside=INSIDE) -> list[str]:
    if style == "c":
        return [str(c_program), str(outside), str(inside)]
    return [
        sys.executable,
        str(DATA / "window_program.py"),
        str(outside),
        str(inside),
        style.split("-")[1],
    ]


@pytest.fixture(params=STYLES)
def program(request) -> list[str]:
    c_program = request.getfixturevalue("c_program") if request.param == "c" else None
    return _argv(request.param, c_program)


def _env(extra=None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HUGEBENCH_")}
    env.update(extra or {})
    return env


def _marks(stdout: str) -> dict[str, float]:
    return {word: float(value) for word, value in (line.split() for line in stdout.splitlines())}


def test_the_header_is_clean_c_and_cxx(tmp_path):
    source = tmp_path / "use.c"
    source.write_text(
        '#include "hugebench_window.h"\nint main(void) { hugebench_window_enable(); '
        "hugebench_window_disable(); return 0; }\n"
    )
    flags = ["-fsyntax-only", "-Wall", "-Wextra", "-Werror", "-I", os.path.dirname(header_path())]
    ran = False
    for compiler, lang in (
        ("gcc", ["-std=c99", "-pedantic"]),
        ("g++", ["-x", "c++", "-std=c++11"]),
    ):
        if shutil.which(compiler):
            subprocess.run([compiler, *flags, *lang, str(source)], check=True)
            ran = True
    if not ran:
        pytest.skip("no C or C++ compiler")


def test_without_a_supervisor_the_markers_do_nothing(program, tmp_path):
    result = subprocess.run(program, env=_env(), capture_output=True, text=True, timeout=30)
    assert result.returncode == 0, result.stderr
    assert list(_marks(result.stdout)) == ["enabled", "disabling", "disabled"]
    # A FIFO nobody reads (the supervisor is gone) must not hang the program either.
    os.mkfifo(tmp_path / "ctl")
    os.mkfifo(tmp_path / "ack")
    stale = {"HUGEBENCH_CTL": str(tmp_path / "ctl"), "HUGEBENCH_ACK": str(tmp_path / "ack")}
    assert subprocess.run(program, env=_env(stale), capture_output=True, timeout=30).returncode == 0


def test_the_window_is_timed_and_the_program_waits_for_each_ack(program, tmp_path):
    done: dict[str, float] = {}

    def on_edge(word):
        time.sleep(0.05)  # e.g. sampling smaps: the program must not go on meanwhile
        done[word] = time.monotonic()

    with ControlChannel(tmp_path, on_edge=on_edge) as channel:
        result = subprocess.run(
            program, env=_env(channel.env()), capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 0, result.stderr
    marks = _marks(result.stdout)
    assert [word for word, _ in channel.edges] == ["enable", "disable"]
    [(begin, end)] = channel.windows()
    assert (
        begin < done["enable"] <= marks["enabled"]
    )  # the inside started only once on_edge had run
    assert marks["disabling"] <= end < done["disable"] <= marks["disabled"]
    assert INSIDE <= channel.window_seconds() < INSIDE + 2.0
    assert channel.ignored_words == 0 and channel.errors == []


def _word(channel: ControlChannel, word: bytes, acked: bool = True) -> None:
    with open(channel.ctl_path, "wb", buffering=0) as ctl:
        ctl.write(word)
    if acked:
        with open(channel.ack_path, "rb", buffering=0) as ack:
            assert ack.read(4) == b"ack\n"


def test_garbage_is_ignored_counted_and_not_acked(tmp_path):
    with ControlChannel(tmp_path) as channel:
        _word(channel, b"bogus\n\xff\xfe\n" + b"y" * 5000, acked=False)
        _word(
            channel, b"\nenable\n"
        )  # this newline ends the over-long word: counted once, whatever the reads
        _word(channel, b"\n", acked=False)  # a blank line is garbage too
        _word(channel, b"enable\n")  # a second enable inside a window does not open another
        _word(channel, b"  disable \n")
        _word(channel, b"disable\n")
    assert channel.ignored_words == 4
    assert [word for word, _ in channel.edges] == ["enable", "enable", "disable", "disable"]
    assert len(channel.windows()) == 1


def test_an_open_window_ends_at_stop_and_errors_are_kept(tmp_path):
    def on_edge(word):
        raise ValueError("sampling failed")

    channel = ControlChannel(tmp_path, on_edge=on_edge).start()
    _word(channel, b"enable\n")  # still acked although on_edge raised
    assert channel.window_seconds() > 0  # an open window counts up to now
    time.sleep(0.05)
    channel.stop()
    channel.stop()  # idempotent
    [(begin, end)] = channel.windows()
    assert end - begin >= 0.05 and channel.window_seconds() == end - begin
    assert channel.errors == ["on_edge('enable') raised ValueError('sampling failed')"]


def test_perf_fifos_are_made_once_and_give_perfs_arguments(tmp_path):
    fifos = perf_fifos(tmp_path)
    assert fifos.argv == ["--control", f"fifo:{fifos.ctl},{fifos.ack}", "-D", "-1"]
    assert perf_fifos(tmp_path) == fifos  # the FIFOs are reused
    (tmp_path / "hugebench-ctl").write_text("")
    with pytest.raises(FileExistsError, match="not a FIFO"):
        ControlChannel(tmp_path)


def _task_clock_seconds(csv_text: str) -> float:
    for line in csv_text.splitlines():
        fields = line.split(",")
        if len(fields) > 2 and fields[2].startswith("task-clock"):
            return float(fields[0]) / 1000.0
    raise AssertionError(f"no task-clock line in {csv_text!r}")


@pytest.mark.needs_perf
@pytest.mark.parametrize("style", ["c", "python-with"])
def test_perf_counts_only_the_window(style, tmp_path, request):
    c_program = request.getfixturevalue("c_program") if style == "c" else None
    fifos = perf_fifos(tmp_path)
    out = tmp_path / "perf.csv"
    with ControlChannel(tmp_path, perf_ctl=fifos.ctl, perf_ack=fifos.ack) as channel:
        argv = [
            "perf",
            "stat",
            "-x,",
            "-o",
            str(out),
            "-e",
            "task-clock",
            *fifos.argv,
            "--",
            *_argv(style, c_program),
        ]
        result = subprocess.run(
            argv, env=_env(channel.env()), capture_output=True, text=True, timeout=60
        )
    assert result.returncode == 0, result.stderr
    assert channel.errors == [], channel.errors
    counted = _task_clock_seconds(out.read_text())
    # The program burns OUTSIDE + INSIDE seconds of CPU (plus start-up); perf counted the window only.
    assert 0.9 * INSIDE <= counted < INSIDE + 0.1, out.read_text()
