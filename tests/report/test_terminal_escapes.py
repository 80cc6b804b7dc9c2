"""Nothing a store holds reaches the terminal raw (issue 53): allocator names, cell values, failure reasons,
``expected.source``, a program's name in an error: ``ESC]0;title BEL`` and ``ESC[2J`` print escaped
(``\\x1b``), through ``report`` (rich, coloured or not, markdown, csv, json, html), ``compare``, ``history``,
the warnings and errors, ``exec``'s message and a sweep's progress lines. Rich markup in a value is text."""

from __future__ import annotations

import io
import json
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench._util import printable
from hugebench.cli import main
from hugebench.report.exporters import FORMATS
from hugebench.sweep.progress import LineProgress

SAMPLE = TESTS / "data" / "sample_results"
EVIL = "gl\x1b]0;owned\x07ibc\x1b[2J"  # sets the terminal's title, then clears the screen
MARKUP = (
    "[/bold][link=http://evil.example]je[/link]"  # rich markup: a crash or a hidden link if parsed
)
REASON = "boom\x1b[2J\x9b31m\u202e"


@pytest.fixture
def evil_store(tmp_path) -> Path:
    """The sample store with its allocators, a failure's reason and its source renamed into escapes."""
    out = tmp_path / "evil"
    shutil.copytree(SAMPLE, out)
    for path in [out / "runs.jsonl", *(out / "sweeps").glob("*.json")]:
        text = path.read_text().replace('"glibc"', json.dumps(EVIL))
        text = text.replace('"jemalloc"', json.dumps(MARKUP))
        path.write_text(text.replace('"allocator check: ', json.dumps(REASON)[:-1] + " "))
    context = out / "sweeps" / "tlb-sample-0001.json"
    document = json.loads(context.read_text())
    document["spec"]["expected"] = {
        "source": "paper\x1b]0;t\x07",
        "metric": "ns_per_lookup",
        "claims": [
            {"cell": {"allocator": EVIL, "thp": "always"}, "vs": {"thp": "never"}, "ratio": 0.7}
        ],
    }
    context.write_text(json.dumps(document))
    return out


def _clean(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text and "\x9b" not in text and "\u202e" not in text


@pytest.mark.parametrize("fmt", FORMATS)
def test_report_prints_every_format_escaped(evil_store, fmt):
    outcome = CliRunner().invoke(main, ["report", str(evil_store), "--format", fmt])
    assert outcome.exit_code == 0, outcome.output
    _clean(outcome.output)
    if fmt in ("rich", "markdown", "csv"):
        assert "x1b]0;owned" in outcome.output and "x1b[2J" in outcome.output  # shown, escaped
    if fmt in ("rich", "markdown"):
        assert "x1b]0;t" in outcome.output  # expected.source, in the claims' section
        assert "[link=http://evil.example]" in outcome.output.replace("\\", "")  # markup is text


@pytest.mark.parametrize("command", ["compare", "history"])
@pytest.mark.parametrize("fmt", ["rich", "markdown"])
def test_compare_and_history_print_escaped(evil_store, command, fmt):
    outcome = CliRunner().invoke(main, [command, str(SAMPLE), str(evil_store), "--format", fmt])
    assert outcome.exit_code == 0, outcome.output
    _clean(outcome.output)


def test_a_coloured_report_has_only_rich_own_sequences(evil_store, monkeypatch):
    monkeypatch.setattr("hugebench.report.terminal", lambda stream=None: (400, True))
    outcome = CliRunner().invoke(main, ["report", str(evil_store)], color=True)
    assert outcome.exit_code == 0, outcome.output
    assert "\x1b[1m" in outcome.output  # rich's own bold: the colour path was taken
    for raw in ("\x1b]", "\x1b[2J", "\x07", "\x9b", "\x1b]8;"):  # no title, clear screen or link
        assert raw not in outcome.output
    assert "x1b]0;owned" in outcome.output


def test_warnings_and_errors_quoting_a_path_are_escaped(evil_store, tmp_path):
    named = tmp_path / "store\x1b]0;t\x07"
    shutil.copytree(evil_store, named)
    with open(named / "runs.jsonl", "a") as handle:
        handle.write("not json\n")
    outcome = CliRunner().invoke(main, ["report", str(named), "--format", "markdown"])
    assert "hugebench: warning:" in outcome.output and "unreadable line" in outcome.output
    _clean(outcome.output)
    outcome = CliRunner().invoke(main, ["report", str(named), "--primary", "no\x1b[2Jsuch"])
    assert "hugebench: error:" in outcome.output, outcome.output
    _clean(outcome.output)


def test_exec_names_an_unrunnable_program_escaped():
    script = Path(sys.executable).parent / "hugebench"
    argv = [str(script)] if script.exists() else [sys.executable, "-m", "hugebench.cli"]
    ran = subprocess.run(
        [*argv, "exec", "--thp", "system", "--", "/nonexistent/\x1b]0;t\x07prog\x1b[2J"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert ran.returncode == 1 and "cannot run /nonexistent/\\x1b]0;t\\x07prog" in ran.stderr
    _clean(ran.stderr + ran.stdout)


def test_a_sweeps_progress_lines_escape_the_cell():
    stream = io.StringIO()
    progress = LineProgress(1, stream, interval=0)
    run = SimpleNamespace(cell={"allocator": EVIL}, run_id="r", cell_id="c", workload="w")
    progress(run, {"status": "failed", "wall_s": 1.0}, 1)
    progress.close()
    assert "x1b]0;owned" in stream.getvalue()
    _clean(stream.getvalue())


def test_printable_keeps_lines_and_tabs_only_when_asked():
    assert printable("a\nb\tc\x1b", None, lines=True) == "a\nb\tc\\x1b"
    assert printable("a\nb", None) == "a\\x0ab"
    assert printable("x" * 10, 4) == "xxxx..."
    assert printable("\U0001f600 \u00e9") == "\U0001f600 \u00e9"  # printable text is left alone
