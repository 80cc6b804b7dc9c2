"""Every command a user reads in a terminal fits it: ``report``, ``compare``, ``history``, ``doctor`` and
``plan`` at 80 and 100 columns ($COLUMNS, as a terminal sets it) print no line longer than that (issue 43).
``try`` is checked the same way in tests/trial/test_try_brief.py (it needs a real run): its printed answer at
80 columns, the same verdict's short and full forms at 80 and 100, and long names at both.

Only a table a user asked to be wide is exempt, and none of these commands' defaults is one: a rich table
drops or wraps columns to fit (report.terminal.fit)."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from paths import DATA, ROOT

from hugebench.cli import main

A, B = DATA / "sample_results", DATA / "sample_results_b"
COMMANDS = {
    "report": ["report", str(A)],
    "report-workloads": ["report", str(DATA / "sample_workloads")],
    "compare": ["compare", str(A), str(B)],
    "history": ["history", str(A), str(B)],
    "plan": ["plan", str(ROOT / "experiments" / "quick.yaml")],
    "plan-alloc": ["plan", str(ROOT / "experiments" / "alloc.yaml")],
    "doctor": ["doctor", "--quick"],  # the same table, without the reporting measurement's 10 s
}


def too_long(text: str, width: int) -> list[str]:
    """The lines of ``text`` longer than ``width`` characters (characters, not bytes: a table's box
    drawing is one column each)."""
    return [line for line in text.splitlines() if len(line) > width]


@pytest.mark.parametrize("width", [80, 100])
@pytest.mark.parametrize("name", list(COMMANDS))
def test_each_command_fits_the_terminal(name, width, monkeypatch):
    monkeypatch.setenv("COLUMNS", str(width))
    result = CliRunner().invoke(main, COMMANDS[name], catch_exceptions=False)
    assert result.exit_code in (0, 1), result.output  # doctor exits 1 on a machine with problems
    assert result.output.strip(), f"{name} printed nothing"
    long = too_long(result.output, width)
    assert not long, f"{name} at {width} columns: {len(long)} lines too long:\n" + "\n".join(
        long[:5]
    )


def test_piped_output_keeps_paths_whole(monkeypatch):
    """Piped (no $COLUMNS, not a terminal): doctor wraps at words, never inside a path."""
    monkeypatch.delenv("COLUMNS", raising=False)
    result = CliRunner().invoke(main, ["doctor", "--quick"], catch_exceptions=False)
    for line in result.output.splitlines():
        for word in line.split():
            if word.startswith("/") and len(word) > 2:
                assert not word.endswith(("/", "-")) or word.count("/") > 1, line
