"""Exports that cannot hurt (issue 53): a CSV holds no live formula, and an export never replaces a file of a
results store nor is refused only after the runs it reports.

- CSV: a text value starting with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return gets a leading ``'``;
  numbers (``-1.5``) stay numbers; ``try``'s CSV and the tables' ``render(fmt="csv")`` are written the same way.
- Destinations: ``--export-json D/runs.jsonl`` (or ``--html``, ``--export-csv`` onto a context or a columnar
  part) is refused and the store keeps every byte; ``/dev/full``, a missing or unwritable directory, the same
  file twice and an empty name are refused before a sweep, ``try`` or ``advice`` runs anything.
"""

from __future__ import annotations

import csv
import io
import os
import shutil
from pathlib import Path

import pandas as pd
import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench.cli import main
from hugebench.report.exporters.csv import csv_rows, csv_text, neutralised

SAMPLE = TESTS / "data" / "sample_results"
FORMULAS = ['=HYPERLINK("http://x")', "+1+cmd|' /C calc'!A0", "-2+3", "@SUM(A1:A9)", "\tx"]


def test_a_text_that_starts_a_formula_is_quoted_and_numbers_stay_numbers():
    table = pd.DataFrame(
        {"allocator": [*FORMULAS, "-1.5", "glibc"], "ratio": [-1.5] * 5 + [2.0, -0.25]}
    )
    rows = list(csv.reader(io.StringIO(csv_text(table))))
    assert rows[0] == ["allocator", "ratio"]
    assert [r[0] for r in rows[1:6]] == ["'" + f for f in FORMULAS]
    assert rows[6] == ["-1.5", "2.0"] and rows[7] == ["glibc", "-0.25"]  # a number is no formula
    assert neutralised("\rx") == "'\rx" and neutralised(-3) == -3 and neutralised(None) is None
    assert list(csv.reader(io.StringIO(csv_rows(["=h", "n"], [["@x", -1]])))) == [
        ["'=h", "n"],
        ["'@x", "-1"],
    ]


@pytest.fixture
def store(tmp_path) -> Path:
    out = tmp_path / "store"
    shutil.copytree(SAMPLE, out)
    return out


def test_the_csv_export_of_a_report_neutralises_a_stores_formula(store, tmp_path):
    runs = store / "runs.jsonl"
    runs.write_text(runs.read_text().replace('"glibc"', '"=1+2"').replace('"jemalloc"', '"@cmd"'))
    for ctx in (store / "sweeps").glob("*.json"):
        ctx.write_text(ctx.read_text().replace('"glibc"', '"=1+2"'))
    target = tmp_path / "out.csv"
    outcome = CliRunner().invoke(main, ["report", str(store), "--export-csv", str(target)])
    assert outcome.exit_code == 0, outcome.output
    for text in (
        target.read_text(),
        CliRunner().invoke(main, ["report", str(store), "--format", "csv"]).output,
    ):
        rows = list(csv.DictReader(io.StringIO(text)))
        names = {r["allocator"] for r in rows if r.get("allocator")}
        assert {"'=1+2", "'@cmd"} <= names and not {"=1+2", "@cmd"} & names
        assert not any(v.startswith(("=", "+", "@")) for r in rows for v in r.values() if v)


def _store_bytes(store: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(store)): p.read_bytes() for p in sorted(store.rglob("*")) if p.is_file()
    }


def _refused(outcome, *words: str) -> str:
    assert outcome.exit_code in (1, 2) and isinstance(outcome.exception, SystemExit), outcome.output
    assert "Traceback" not in outcome.output
    for word in words:
        assert word in outcome.output, outcome.output
    return outcome.output


@pytest.mark.parametrize(
    "option, name",
    [
        ("--export-json", "runs.jsonl"),
        ("--html", "runs.jsonl"),
        ("--export-csv", "sweeps/tlb-sample-0001.json"),
        ("--export-markdown", "columnar/manifest.json"),
        ("--export-json", "sweeps/../runs.jsonl"),
    ],
)
def test_an_export_never_replaces_a_file_of_the_store(store, option, name):
    from hugebench.store import columnar, load

    columnar.frames(store / "runs.jsonl", build=True)  # the columnar form exists too
    assert (store / "columnar" / "manifest.json").exists()
    before = _store_bytes(store)
    outcome = CliRunner().invoke(main, ["report", str(store), option, str(store / name)])
    _refused(
        outcome, f"{option} {store / name}: refused", "never replaces a file of a results store"
    )
    assert _store_bytes(store) == before and len(load(store)) == 55


@pytest.mark.parametrize("command", ["compare", "history"])
def test_compare_and_history_refuse_a_store_file_too(store, command):
    before = _store_bytes(store)
    target = store / "runs.jsonl"
    outcome = CliRunner().invoke(main, [command, str(SAMPLE), str(store), "--html", str(target)])
    _refused(outcome, "refused", "journal")
    outcome = CliRunner().invoke(
        main, [command, str(SAMPLE), str(store), "--export-json", str(target)]
    )
    _refused(outcome, "refused", "journal")
    assert _store_bytes(store) == before


def test_bad_destinations_are_clear_errors(store, tmp_path):
    cases = [
        (
            ["--export-json", "/dev/full"],
            "--export-json /dev/full: cannot write it: it is a character device",
        ),
        (["--export-json", str(tmp_path / "no" / "x.json")], "the directory"),
        (["--export-json", ""], "'--export-json': an empty file name"),
        (["--export-csv", " "], "'--export-csv': an empty file name"),
        (
            ["--export-json", str(tmp_path / "f"), "--export-csv", str(tmp_path / "." / "f")],
            f"the same file as --export-json {tmp_path / 'f'}",
        ),
        (["--html", str(tmp_path / "p"), "--export-json", str(tmp_path / "p")], "the same file"),
        (["--export-json", "/proc/x.json"], "--export-json /proc/x.json: cannot write it"),
    ]
    for options, message in cases:
        outcome = CliRunner().invoke(main, ["report", str(store), *options])
        text = _refused(outcome, message)
        assert "No such file or directory: '.'" not in text
    assert not (tmp_path / "f").exists() and not (tmp_path / "p").exists()


def test_an_unwritable_directory_is_refused_up_front(unprivileged):
    """As a user without root (nobody under a root test run): a directory it may not write."""
    mine = unprivileged.owned_dir(unprivileged.home / "store")
    shutil.copytree(SAMPLE, mine, dirs_exist_ok=True)
    for path in [mine, *mine.rglob("*")]:
        if unprivileged.dropping:
            os.chown(path, unprivileged.uid, unprivileged.gid)
    locked = unprivileged.home.parent / f"locked-{unprivileged.home.name}"
    locked.mkdir(mode=0o555, exist_ok=True)
    try:
        ran = unprivileged.hugebench("report", mine, "--export-json", locked / "x.json")
    finally:
        locked.rmdir()
    assert ran.returncode == 1 and "Traceback" not in ran.stderr, ran.stderr
    assert f"--export-json {locked / 'x.json'}: cannot write it: Permission denied" in ran.stderr


@pytest.fixture
def no_runs(monkeypatch):
    """Fail the test if a sweep, a try or an advice pack starts running."""

    def ran(*args, **kwargs):
        raise AssertionError("it ran before refusing its export destination")

    monkeypatch.setattr("hugebench.sweep.orchestrator.run_sweep", ran)
    monkeypatch.setattr("hugebench.trial.run_try", ran)
    monkeypatch.setattr("hugebench.advice.session.run_pack", ran)


COMMANDS = {
    "sweep": ["sweep", str(TESTS.parent / "experiments" / "quick.yaml")],
    "try": ["try", "--budget", "30s"],
    "advice": ["advice", "redis", "--budget", "60s"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_sweep_try_and_advice_refuse_an_export_before_running(no_runs, command, tmp_path):
    out = tmp_path / "out"
    tail = ["--", "/bin/true"] if command == "try" else []
    for options, message in (
        (["--export-json", "/dev/full"], "cannot write it: it is a character device"),
        (
            ["--export-json", str(tmp_path / "f"), "--export-csv", str(tmp_path / "f")],
            "the same file",
        ),
        (["--export-json", str(out / "runs.jsonl")], "never replaces a file of a results store"),
    ):
        outcome = CliRunner().invoke(main, [*COMMANDS[command], "-o", str(out), *options, *tail])
        _refused(outcome, message)
    assert not out.exists()
