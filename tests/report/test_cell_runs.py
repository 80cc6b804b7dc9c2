"""``hugebench stats DIR CELL`` (issue 43): one cell's runs, their order statistics and a text histogram;
a CELL matching several cells or none is a clean error; ``-h`` works on every command."""

from __future__ import annotations

import pytest
from click.testing import CliRunner
from paths import DATA

from hugebench.cli import main
from hugebench.store import load


def test_stats_shows_a_cells_runs_and_their_histogram():
    result = CliRunner().invoke(
        main, ["stats", str(DATA / "sample_results"), "allocator=glibc,thp=always"]
    )
    assert result.exit_code == 0, result.output
    rows = load(DATA / "sample_results", hosts=False)
    mine = rows[(rows["allocator"] == "glibc") & (rows["thp"] == "always")]
    ok = mine[(mine["status"] == "ok") & ~mine["warmup"].fillna(False).astype(bool)]
    lines = result.output.splitlines()
    assert lines[0].startswith("tlb-sample: cell ") and "metric ns_per_lookup" in lines[0]
    assert lines[1].startswith(f"runs: {len(ok)} ok")
    median = ok["ns_per_lookup"].median()
    assert f"median {median:.4g}" in result.output
    bars = [line for line in lines if " | " in line]
    assert bars and sum(int(line.split()[-1]) for line in bars) == len(ok)
    cell_id = mine["cell_id"].iloc[0]
    by_id = CliRunner().invoke(main, ["stats", str(DATA / "sample_results"), cell_id[:6]])
    assert by_id.exit_code == 0 and by_id.output == result.output


@pytest.mark.parametrize(
    "cell, said", [("allocator=glibc", "matches 2 cells"), ("allocator=nope", "no cell matches")]
)
def test_stats_of_an_ambiguous_or_unknown_cell_is_a_clean_error(cell, said):
    result = CliRunner().invoke(main, ["stats", str(DATA / "sample_results"), cell])
    assert result.exit_code != 0 and said in result.output and "Traceback" not in result.output


@pytest.mark.parametrize(
    "command",
    ["", "sweep", "try", "plan", "report", "compare", "history", "doctor", "stats", "system"],
)
def test_dash_h_is_help_everywhere(command):
    result = CliRunner().invoke(main, [*command.split(), "-h"])
    assert result.exit_code == 0 and result.output.startswith("Usage: "), result.output
    assert "-h, --help" in result.output
