"""One exporter per format (hugebench.report.exporters): every report-printing command offers the same
formats, and ``--export-json/--export-csv/--export-markdown FILE`` write what ``--format`` prints."""

from __future__ import annotations

import csv
import io
import json

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench.cli import main, output
from hugebench.report import exporters

DATA = TESTS / "data"
A, B = DATA / "sample_results", DATA / "sample_results_b"
COMMANDS = {
    "report": [str(A)],
    "compare": [str(A), str(B)],
    "history": [str(A), str(B)],
}


def test_every_exporter_module_has_the_interface_and_the_cli_knows_the_file_formats():
    assert output.FILE_FORMATS == exporters.FILE_FORMATS
    for name, module in exporters.EXPORTERS.items():
        assert module.NAME == name and module.SUFFIX.startswith(".") and callable(module.export)
    assert set(exporters.TEXT_FORMATS) == {"rich", "markdown"}


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("fmt", exporters.FORMATS)
def test_report_compare_and_history_offer_every_format(command, fmt):
    outcome = CliRunner().invoke(main, [command, *COMMANDS[command], "--format", fmt])
    assert outcome.exit_code == 0, outcome.output
    text = outcome.output
    if fmt == "json":
        document = json.loads(text)
        assert document["sections"] and all("kind" in s for s in document["sections"])
    elif fmt == "csv":
        rows = list(csv.DictReader(io.StringIO(text)))
        assert rows and "experiment" in rows[0]
    elif fmt == "html":
        assert text.lstrip().lower().startswith("<!doctype html")
    else:
        assert text.strip()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_export_files_hold_what_format_prints(command, tmp_path):
    files = {fmt: tmp_path / f"out{exporters.exporter(fmt).SUFFIX}" for fmt in output.FILE_FORMATS}
    options = [a for fmt, path in files.items() for a in (f"--export-{fmt}", str(path))]
    outcome = CliRunner().invoke(main, [command, *COMMANDS[command], *options])
    assert outcome.exit_code == 0, outcome.output
    for fmt, path in files.items():
        printed = CliRunner().invoke(main, [command, *COMMANDS[command], "--format", fmt]).output
        assert path.read_text().strip() == printed.strip(), fmt


def test_an_export_into_a_missing_directory_is_a_clean_error(tmp_path):
    target = tmp_path / "nope" / "r.json"
    outcome = CliRunner().invoke(main, ["report", str(A), "--export-json", str(target)])
    assert outcome.exit_code != 0 and "does not exist" in outcome.output
    assert "Traceback" not in outcome.output and not target.parent.exists()
