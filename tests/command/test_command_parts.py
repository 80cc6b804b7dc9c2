"""The command workload's parts: {name} substitution, metric parsers, and coverage sampling of a real child."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from types import SimpleNamespace

import pytest

from hugebench.kernel import Host
from hugebench.machine.sampler import CoverageSampler
from hugebench.workloads.command import template
from hugebench.workloads.command.checks import check_params, prepare, primary
from hugebench.workloads.command.metric import Metric, extract, parse_metric


def test_substitution_in_argv_env_and_nested_values():
    values = {"source": "big.cpp", "n": 3, "tmp": "/t"}
    assert template.substitute(
        ["g++", "-c", "{source}", "-o", "{tmp}/x.o", "--n={n}", "{{literal}}"], values
    ) == ["g++", "-c", "big.cpp", "-o", "/t/x.o", "--n=3", "{literal}"]
    assert template.substitute({"argv": ["a", "{n}"], "ready": {"path": "{tmp}/s"}}, values) == {
        "argv": ["a", "3"],
        "ready": {"path": "/t/s"},
    }
    assert template.fields(["{a}", {"k": "{b}-{a}"}]) == {"a", "b"}


@pytest.mark.parametrize(
    "text,message",
    [
        ("{nope}", "'{nope}' names no parameter"),
        ("{a.b}", "not a plain {name} field"),
        ("{a!r}", "not a plain {name} field"),
        ("{a:>3}", "not a plain {name} field"),
        ("{unclosed", "literal braces"),
    ],
)
def test_bad_fields_are_refused(text, message):
    with pytest.raises(ValueError, match=message.replace("{", r"\{").replace("}", r"\}")):
        template.check([text], {"a"})


def test_metric_parsers():
    assert parse_metric("wall") == Metric("wall", "window_s")
    rps = parse_metric(
        {"regex": r"GET: ([0-9.]+) requests per second", "name": "get_rps", "better": "higher"}
    )
    output = "SET: 1.0 requests per second\nGET: 10.5 requests per second\nGET: 12.25 requests per second\n"
    assert extract(rps, output, None) == (
        12.25,
        None,
    )  # the last match: a final summary wins over progress
    tput = parse_metric({"json": "stats.tput", "name": "tput", "better": "higher"})
    assert extract(
        tput, 'noise\n{"stats": {"tput": 3}}\n{"stats": {"tput": 7.5}}\ntrailer\n', None
    ) == (7.5, None)
    assert extract(parse_metric("wall"), "", 1.5) == (1.5, None)


@pytest.mark.parametrize(
    "metric,output,why",
    [
        ({"regex": "X: ([0-9.]+)", "name": "x"}, "nothing here", "never matched"),
        ({"regex": "X: (\\w+)", "name": "x"}, "X: abc", "not a number"),
        ({"json": "k"}, "no json", "no JSON object"),
        ({"json": "k"}, '{"j": 1}', "has no 'k'"),
        ({"json": "k"}, '{"k": "NaN"}', "not a finite number"),
    ],
)
def test_metric_that_cannot_be_read_is_absent_with_its_reason(metric, output, why):
    value, reason = extract(parse_metric(metric), output, None)
    assert value is None and why in reason


@pytest.mark.parametrize(
    "metric,message",
    [
        ({"regex": "no group", "name": "x"}, "needs a group"),
        ({"regex": "(", "name": "x"}, "not a regular expression"),
        ({"regex": "(x)", "json": "k"}, "exactly one"),
        ({"regex": "(x)", "name": "bad name"}, "column name"),
        ({"regex": "(x)", "name": "x", "better": "faster"}, "lower or higher"),
        ("cpu", "must be 'wall'"),
    ],
)
def test_bad_metric_is_refused(metric, message):
    with pytest.raises(ValueError, match=message):
        parse_metric(metric)


def test_command_params_checked_before_anything_runs(tmp_path):
    good = {"argv": ["prog", "{n}"], "n": 3, "env": {"A": "1"}, "metric": "wall"}
    check_params(good)
    assert primary({**good, "metric": {"json": "t", "name": "t", "better": "higher"}}) == (
        "t",
        "t",
        "si",
        "higher",
    )
    for bad, message in [
        ({"argv": "prog"}, "non-empty list"),
        ({"argv": []}, "non-empty list"),
        ({"argv": ["p", "{missing}"]}, "names no parameter"),
        ({"argv": ["p"], "env": {"LD_PRELOAD": "x"}}, "allocator of each cell"),
        ({"argv": ["p"], "env": {"MIMALLOC_X": "1"}}, "allocator of each cell"),
        ({"argv": ["p"], "server": {"argv": ["s"], "ready": {"port": 0}}}, "TCP port"),
        ({"argv": ["p"], "server": {"argv": ["s"], "ready": {"url": "x"}}}, "server.ready"),
        ({"argv": ["p"], "n": [1]}, "string or a number"),
    ]:
        with pytest.raises(ValueError, match=message):
            check_params(bad)
    assert prepare({"cwd": ".", "argv": ["true"]}, tmp_path)["cwd"] == str(tmp_path)
    with pytest.raises(ValueError, match="not a directory"):
        prepare({"cwd": "missing", "argv": ["true"]}, tmp_path)
    with pytest.raises(ValueError, match="argv: .*not found"):
        prepare({"argv": ["no-such-program-here"]}, tmp_path)
    # a program that setup builds may not exist yet
    assert prepare({"argv": ["./built-later"], "setup": ["make"]}, tmp_path)["cwd"] == str(tmp_path)


THP_CHILD = textwrap.dedent("""
    import mmap, sys, time
    size = 64 << 20
    buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    buf.madvise(mmap.MADV_HUGEPAGE)
    for off in range(0, size, 4096):
        buf[off] = 1
    print("ready", flush=True)
    time.sleep(30)
""")


def test_sampler_sees_huge_pages_of_a_real_child():
    from hugebench import kernel

    if kernel.thp_modes()["enabled"] not in ("always", "madvise"):
        pytest.skip("THP is 'never' here: a child cannot get huge pages")
    child = subprocess.Popen([sys.executable, "-c", THP_CHILD], stdout=subprocess.PIPE, text=True)
    try:
        assert child.stdout.readline().strip() == "ready"
        sampler = CoverageSampler(pid=child.pid)
        for _ in range(3):
            sampler.sample()
            time.sleep(0.05)
        summary = sampler.summary()
    finally:
        child.kill()
        child.wait()
    assert summary["sampler.samples"] == 3 and summary["sampler.read_s"] > 0
    assert (
        summary["sampled.peak.AnonHugePages"] >= 32 << 20
    )  # most of the 64 MiB buffer is on 2 MiB pages
    assert 0.2 < summary["hp_coverage_tw"] <= 1.0
    assert (
        CoverageSampler(pid=child.pid).sample() is None
    )  # gone: nothing to read, nothing invented


def test_sampler_weights_each_sample_by_the_time_until_the_next(tmp_path, monkeypatch):
    """Samples at 0, 1, 4 and 5 s of a tree whose Rss stays 100 MiB: huge pages 0, 100, 100, 0 MiB.
    Held for 1, 3 and 1 s, that is 80% time-weighted (a plain mean of the samples says 50%)."""
    from hugebench.machine import sampler as sampler_mod

    proc = tmp_path / "proc"
    (proc / "42").mkdir(parents=True)
    (proc / "42" / "stat").write_text(
        "42 (prog) S 1 42 42 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 0 0\n"
    )
    clock = iter([0.0, 1.0, 4.0, 5.0])
    monkeypatch.setattr(
        sampler_mod,
        "time",
        SimpleNamespace(monotonic=lambda: next(clock), perf_counter=time.perf_counter),
    )
    sampler = CoverageSampler(host=Host(proc=proc), pid=42)
    for huge_mib in (0, 100, 100, 0):
        (proc / "42" / "smaps_rollup").write_text(
            f"Rss: {100 << 10} kB\nAnonHugePages: {huge_mib << 10} kB\n"
        )
        assert sampler.sample()["AnonHugePages"] == huge_mib << 20
    summary = sampler.summary()
    assert summary["sampler.samples"] == 4
    assert summary["hp_coverage_tw"] == pytest.approx(0.8)
    assert summary["sampled.peak.coverage"] == pytest.approx(1.0)
