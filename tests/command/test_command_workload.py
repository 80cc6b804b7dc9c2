"""`workload: command` end to end: real programs under real allocators, a real redis-server under
redis-benchmark, and every way a program can fail — each a clear refusal before anything runs or a row
with its reason and output, with no process left behind."""

from __future__ import annotations

import os
import shutil
import subprocess
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench import load
from hugebench.cli import main
from hugebench.errors import SpecError
from hugebench.experiment import load_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep


def _experiment(tmp_path, body: str, name: str = "cmd") -> Path:
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\nworkload: command\nperf: off\n" + textwrap.dedent(body))
    return path


def _sweep(path: Path, tmp_path, **kw):
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json", **kw),
    )
    return result, load(tmp_path / "res")


def _left_behind(marker: str) -> list[str]:
    out = subprocess.run(
        ["pgrep", "-af", marker], capture_output=True, text=True
    ).stdout.splitlines()
    return [line for line in out if "pgrep" not in line and str(os.getpid()) != line.split()[0]]


def test_a_program_under_two_allocators_with_substituted_params(tmp_path):
    if shutil.which("g++") is None:
        pytest.skip("g++ not installed")
    (tmp_path / "hello.cpp").write_text(
        "#include <string>\nint main() { std::string s(1000, 'x'); return 0; }\n"
    )
    path = _experiment(
        tmp_path,
        """\
        params:
          argv: [g++, "-O{level}", -c, "{source}", -o, "{tmp}/out.o"]
          source: hello.cpp
        axes:
          allocator: [glibc, jemalloc-thp]
          level: [0, 1]
        baseline: {allocator: glibc}
        """,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 4}, df.get("error")
    assert (df["window_s"] > 0).all() and (df["peak_rss_bytes"] > 1 << 20).all()
    # g++ runs cc1plus and as: every process of the tree is proven to use the cell's allocator
    assert (df["allocator_processes"] >= 2).all()
    je = df[df["allocator"] == "jemalloc-thp"]
    assert je["allocator_malloc_from"].str.contains("libjemalloc").all()
    assert (je["allocator.jemalloc.opt.thp"] == "always").all()
    assert df[df["allocator"] == "glibc"]["allocator_malloc_from"].str.contains("libc.so").all()
    assert set(df["param.level"]) == {0, 1} and (df["param.source"] == "hello.cpp").all()
    report = CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--format", "markdown"])
    assert (
        report.exit_code == 0 and "Window s" in report.output and "lower is better" in report.output
    )


def test_coverage_of_a_program_that_maps_thp_memory(tmp_path):
    from hugebench import kernel

    if kernel.thp_modes()["enabled"] not in ("always", "madvise"):
        pytest.skip("THP is 'never' here")
    shutil.copy(TESTS / "data" / "thp_program.py", tmp_path / "thp.py")
    path = _experiment(
        tmp_path,
        """\
        params: {argv: ["{python}", thp.py, "0.6"], sample_interval: 0.1}
        """,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    assert row["sampler.samples"] >= 3 and row["sampled.peak.AnonHugePages"] >= 32 << 20
    assert (
        row["sampled.peak.coverage"] > 0.3 and row["hp_coverage_tw"] > 0.2
    )  # at its peak, and over its life


def test_a_real_redis_server_under_redis_benchmark(tmp_path):
    if shutil.which("redis-server") is None or shutil.which("redis-benchmark") is None:
        pytest.skip(
            "redis-server/redis-benchmark not installed (apt-get install redis-server redis-tools)"
        )
    path = _experiment(
        tmp_path,
        """\
        timeout: 120
        params:
          server:
            argv: [redis-server, --port, "0", --unixsocket, "{tmp}/redis.sock", --save, "", --daemonize, "no"]
            ready: {path: "{tmp}/redis.sock"}
          argv: [redis-benchmark, -s, "{tmp}/redis.sock", -n, "5000", -q, -t, "set,get"]
          sample_interval: 0.1
          metric: {regex: 'GET: ([0-9.]+) requests per second', name: get_rps, better: higher}
        axes: {allocator: [glibc, jemalloc]}
        """,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 2}, df.get("error")
    assert (df["get_rps"] > 100).all() and (df["peak_rss_bytes"] > 1 << 20).all()
    # redis-server links libjemalloc; glibc cells must really run on glibc's malloc
    by = dict(zip(df["allocator"], df["allocator_malloc_from"]))
    assert "libc.so" in by["glibc"] and "libjemalloc" in by["jemalloc"]
    from own_processes import run_processes

    # the server was stopped with its run: no redis-server of ours (any other user's does not count)
    assert not run_processes("redis-server")


@pytest.mark.parametrize(
    "body,message",
    [
        ("params: {argv: [no-such-program-xyz]}\n", "not found"),
        ("params: {argv: [/bin/true, '{nope}']}\n", "'{nope}' names no parameter"),
        ("params: {argv: 'true --x'}\n", "argv must be list"),
        ("params: {argv: [true]}\n", "quote it"),
        ("params: {argv: [/bin/true], env: {LD_PRELOAD: /x.so}}\n", "allocator of each cell"),
        ("params: {argv: [/bin/true], metric: {regex: 'no group', name: x}}\n", "needs a group"),
        ("params: {argv: [/bin/true]}\naxes: {allocator: [void]}\n", "void"),
    ],
)
def test_bad_command_experiments_are_refused_before_anything_runs(tmp_path, body, message):
    path = _experiment(tmp_path, body)
    result = CliRunner().invoke(main, ["sweep", str(path), "-o", str(tmp_path / "res")])
    assert result.exit_code != 0 and message in result.output, result.output
    assert "Traceback" not in result.output and result.output.startswith("hugebench: error: ")
    assert not (tmp_path / "res").exists()


def test_a_static_program_is_refused_with_the_reason(tmp_path):
    static = next((p for p in ("/sbin/ldconfig", "/usr/sbin/ldconfig") if os.path.exists(p)), None)
    if static is None:
        pytest.skip("no static binary found")
    with pytest.raises(SpecError, match="static"):
        load_spec(_experiment(tmp_path, f"params: {{argv: [{static}, -p]}}\n"))


DAEMON = "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(300)\n"


@pytest.mark.parametrize(
    "program,params,status,reason,output",
    [
        (
            "import sys; print('partial output'); sys.exit(3)",
            "",
            "failed",
            "exited with code 3",
            "partial output",
        ),
        (
            "print('no number here')",
            "metric: {regex: 'rate: ([0-9.]+)', name: rate}",
            "failed",
            "never matched",
            "no number here",
        ),
        (
            "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)",
            "",
            "crashed",
            "signal SIGSEGV",
            None,
        ),
        (
            "import time; print('hanging', flush=True); time.sleep(300)",
            "",
            "timeout",
            "timeout",
            "hanging",
        ),
        (DAEMON, "", "failed", "left 1 process", None),
    ],
)
def test_program_failures_become_rows_with_reason_and_output(
    tmp_path, program, params, status, reason, output
):
    marker = f"hbtest-{os.getpid()}-{abs(hash(program)) % 10**6}"
    (tmp_path / f"{marker}.py").write_text(program)
    extra = f"\n  {params}" if params else ""
    path = _experiment(
        tmp_path, f'timeout: 4\nparams:\n  argv: ["{{python}}", {marker}.py]{extra}\n'
    )
    result, df = _sweep(path, tmp_path)
    row = df.iloc[0]
    assert result.statuses == {status: 1} and reason in row["error"], row["error"]
    if output:
        assert output in (row.get("stdout_tail") or "")
    assert not _left_behind(marker), "a process of the program outlived its run"


def test_a_server_that_never_becomes_ready(tmp_path):
    duration = (
        f"60.{os.getpid()}"  # names this test's server alone (other test sessions may run at once)
    )
    path = _experiment(
        tmp_path,
        f"""\
        timeout: 20
        params:
          server: {{argv: [sleep, "{duration}"], ready: {{path: "{{tmp}}/never.sock"}}, ready_timeout: 1}}
          argv: [/bin/true]
        """,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"timeout": 1} and "not ready" in df.iloc[0]["error"]
    assert not _left_behind(f"sleep {duration}")


def test_markers_time_only_the_marked_window(tmp_path):
    (tmp_path / "marked.py").write_text(
        textwrap.dedent("""
        import time
        from hugebench.window import window
        time.sleep(0.3)
        with window():
            time.sleep(0.1)
        """)
    )
    path = _experiment(tmp_path, 'params: {argv: ["{python}", marked.py], window: markers}\n')
    result, df = _sweep(path, tmp_path)
    row = df.iloc[0]
    assert result.statuses == {"ok": 1}, row.get("error")
    assert row["windows"] == 1 and 0.09 < row["window_s"] < 0.25 < row["process_wall_s"]
    (tmp_path / "unmarked.py").write_text("pass\n")
    path = _experiment(
        tmp_path, 'params: {argv: ["{python}", unmarked.py], window: markers}\n', name="unmarked"
    )
    result, df = _sweep(path, tmp_path / "u")
    assert result.statuses == {"failed": 1} and "marked no window" in df.iloc[0]["error"]


def test_memory_of_the_whole_process_tree_not_only_its_largest_process(tmp_path):
    # two python processes, each holding 80 MiB at the same time: the largest process holds ~90 MiB, the
    # tree ~180 MiB (issue 28: the memory cost of a configuration is its program's whole tree)
    (tmp_path / "hold.py").write_text("import time\nb = bytearray(80 << 20)\ntime.sleep(1.5)\n")
    path = _experiment(
        tmp_path,
        """\
        params:
          argv: [sh, -c, "{python} hold.py & {python} hold.py; wait"]
          sample_interval: 0.2
        axes:
          allocator: [glibc]
        """,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    assert row["tree_processes"] >= 3  # sh and both pythons
    assert row["peak_rss_bytes"] < 130 << 20  # one process's peak
    assert (
        row["tree_peak_rss_bytes"] >= 160 << 20
        and row["tree_peak_rss_bytes"] >= 1.6 * row["peak_rss_bytes"]
    )


def test_tree_peak_rss_sums_each_process_peak_from_its_exit_record_or_its_samples():
    from hugebench.machine.sampler import tree_peak_rss

    exits = {10: {"VmHWM": 100}, 11: {"VmHWM": 50}}
    sampled = {10: 120, 12: 30}  # 12 left no exit record (static, _exit or a signal)
    assert tree_peak_rss(exits, sampled) == {
        "tree_peak_rss_bytes": 120 + 50 + 30,
        "tree_processes": 3,
    }
    empty = tree_peak_rss({}, {})
    assert (
        empty["tree_peak_rss_bytes"] is None and "no process" in empty["tree_peak_rss_bytes.reason"]
    )
