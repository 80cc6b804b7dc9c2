"""The command line as a user meets it: bad input is refused before anything runs, with the fix named."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench.cli import main
from hugebench.machine import allocators

SAMPLE = TESTS / "data" / "sample_results"
GOOD = (
    "name: t\nworkload: hashlookup\nperf: off\nparams: {keys: 2000}\naxes:\n  allocator: [glibc]\n"
)


def _run(args, **env):
    return CliRunner().invoke(main, args, env=env)


def _yaml(tmp_path, text) -> str:
    path = tmp_path / "exp.yaml"
    path.write_text(text)
    return str(path)


def test_unknown_key_names_file_line_key(tmp_path):
    result = _run(["sweep", _yaml(tmp_path, GOOD + "repeats: 3\n"), "-o", str(tmp_path / "r")])
    assert result.exit_code == 2
    assert "exp.yaml:7: key 'repeats': unknown key; allowed keys:" in result.output
    assert not (tmp_path / "r").exists()


def test_bad_value_lists_allowed(tmp_path):
    result = _run(
        ["plan", _yaml(tmp_path, GOOD.replace("[glibc]", "[glibc]\n  set_kind: [flat, tree]"))]
    )
    assert (
        result.exit_code == 2
        and "axes.set_kind.1" in result.output
        and "flat, node" in result.output
    )


def test_missing_allocator_library_names_package(tmp_path, monkeypatch):
    monkeypatch.setattr(allocators, "find_library", lambda lib: None)
    result = _run(
        [
            "sweep",
            _yaml(tmp_path, GOOD.replace("[glibc]", "[glibc, tcmalloc]")),
            "-o",
            str(tmp_path / "r"),
            "-q",
        ],
        HUGEBENCH_JOURNAL=str(tmp_path / "j.json"),
    )
    assert result.exit_code == 4 and "apt-get install libtcmalloc-minimal4" in result.output
    assert not (tmp_path / "r" / "runs.jsonl").exists()


def test_missing_user_library_is_refused(tmp_path):
    text = (
        GOOD.replace("[glibc]", "[glibc, mine]")
        + "allocators: {mine: {path: /nonexistent/libmine.so}}\n"
    )
    result = _run(
        ["sweep", _yaml(tmp_path, text), "-o", str(tmp_path / "r"), "-q"],
        HUGEBENCH_JOURNAL=str(tmp_path / "j.json"),
    )
    assert result.exit_code == 4 and "/nonexistent/libmine.so not found" in result.output


def test_thp_change_without_root_is_refused_with_the_command(tmp_path, fake_sys, monkeypatch):
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    text = GOOD.replace("[glibc]", "[glibc]\n  thp: [always]")
    result = _run(
        ["sweep", _yaml(tmp_path, text), "-o", str(tmp_path / "r"), "-q"],
        HUGEBENCH_SYS_ROOT=str(fake_sys.sys_root),
        HUGEBENCH_PROC_ROOT=str(fake_sys.proc_root),
    )
    assert result.exit_code == 3, result.output
    assert "needs root" in result.output and "sudo" in result.output
    assert "[madvise]" in fake_sys.read("sys/kernel/mm/transparent_hugepage/enabled")
    assert not (tmp_path / "r" / "runs.jsonl").exists()


def test_plan_prints_counts_and_runs(tmp_path):
    result = _run(
        [
            "plan",
            _yaml(tmp_path, GOOD.replace("[glibc]", "[glibc, jemalloc]") + "repetitions: 2\n"),
            "--runs",
        ]
    )
    assert result.exit_code == 0
    assert "4 runs = 2 cells x 2 repetitions" in result.output
    assert result.output.count("rep ") == 4


def test_report_reprints_a_stored_sweep():
    result = _run(["report", str(SAMPLE), "--format", "markdown"])
    assert result.exit_code == 0 and "| Allocator | THP |" in result.output


def test_doctor_runs():
    result = _run(["doctor", "--quick"])
    assert "hardware counters" in result.output.lower()
    assert "free page reporting" in result.output


@pytest.mark.slow
def test_small_sweep_prints_the_table(tmp_path):
    result = _run(
        ["sweep", _yaml(tmp_path, GOOD), "-o", str(tmp_path / "r"), "-q", "--format", "markdown"],
        HUGEBENCH_JOURNAL=str(tmp_path / "j.json"),
    )
    assert result.exit_code == 0, result.output
    assert (
        "| Allocator | n | Latency ns |" in result.output
        and "1 runs this time (1 ok)" in result.output
    )


def test_repetitions_flag_beats_the_file(tmp_path):
    result = _run(["plan", _yaml(tmp_path, GOOD + "repetitions: 2\n"), "-r", "5"])
    assert result.exit_code == 0 and "5 runs = 1 cells x 5 repetitions" in result.output


def test_report_with_another_primary_metric():
    result = _run(["report", str(SAMPLE), "--format", "markdown", "--primary", "peak_rss_bytes"])
    assert result.exit_code == 0 and "median ratio of Peak RSS" in result.output
