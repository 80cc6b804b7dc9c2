"""The notebook on any store (issue 43), in a real Jupyter kernel: on real small sweeps of every workload kind
(a directory of stores, as ``sweep -o results/NAME`` leaves them) and on a store of one command sweep, each
section prints something about that store (the workload's tables and plots, or that the store has none of it),
and every file of the stores is byte-identical afterwards: the notebook's files go elsewhere."""

from __future__ import annotations

import os

import pytest
from notebook_stores import SWEEPS, snapshot, sweep
from paths import ROOT

NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"
pytestmark = pytest.mark.slow  # eight small sweeps (~20 s), then the notebook twice in a kernel
nbclient = pytest.importorskip(
    "nbclient", reason="the notebook extra (nbclient, ipykernel) is not installed"
)


@pytest.fixture(scope="module")
def every_kind(tmp_path_factory):
    results = tmp_path_factory.mktemp("nb") / "results"
    for workload in SWEEPS:
        sweep(results / workload, workload, results.parent / "journal.json")
    return results


def _sections(results, out) -> dict[str, dict]:
    """Run the notebook with HUGEBENCH_RESULTS=results; each '## ' section's outputs: its text (streams,
    markdown, HTML) and its number of PNG images."""
    import nbformat

    notebook = nbformat.read(NOTEBOOK, as_version=4)
    env = {
        **{k: v for k, v in os.environ.items() if not k.startswith("HUGEBENCH_")},
        "HUGEBENCH_RESULTS": str(results),
        "HUGEBENCH_NOTEBOOK_OUT": str(out),
        "MPLBACKEND": "Agg",
    }
    client = nbclient.NotebookClient(
        notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(out)}}
    )
    client.execute(env=env)
    sections: dict[str, dict] = {}
    current = sections.setdefault("top", {"text": "", "images": 0, "code": 0})
    for cell in notebook.cells:
        if cell.cell_type == "markdown" and cell.source.startswith("## "):
            current = sections.setdefault(
                cell.source.splitlines()[0], {"text": "", "images": 0, "code": 0}
            )
        elif cell.cell_type == "code":
            current["code"] += 1
            for output in cell.outputs:
                assert output.output_type != "error", output
                data = output.get("data", {})
                current["text"] += "".join(
                    str(x)
                    for x in (output.get("text"), data.get("text/markdown"), data.get("text/html"))
                    if x
                )
                current["images"] += "image/png" in data
    return sections


def _check_every_section_said_something(sections):
    for title, section in sections.items():
        if section["code"]:
            assert section["text"].strip() or section["images"], f"{title}: nothing printed"
        assert "<Figure size" not in section["text"] and "SAMPLE DATA" not in section["text"]


def test_on_a_sweep_of_every_workload_kind(every_kind, tmp_path):
    before = snapshot(every_kind)
    sections = _sections(every_kind, tmp_path)
    _check_every_section_said_something(sections)
    assert "Your stores: results = " + str(every_kind) in sections["top"]["text"]
    glance = sections["## At a glance"]["text"]
    for workload in SWEEPS:
        assert (
            f"my-{workload} ({workload})" in glance and f"{every_kind / workload}: 4 ok" in glance
        )
        (title,) = [t for t in sections if f"(`{workload}`)" in t]
        shown = sections[title]
        assert f"### my-{workload} ({workload})" in shown["text"], title
        assert "<table" in shown["text"] and shown["images"] >= 1, title
        assert "experiment in" not in shown["text"], title
    detail = sections["## Per-run detail"]["text"]
    assert "<table" in detail and "<th></th>" not in detail  # no pandas index column
    assert "huge pages extend TLB reach here:" in sections["## Probe (`tlbprobe`)"]["text"]
    assert "no runs of the claimed cell" in sections["## Expected vs observed"]["text"]
    assert "set HUGEBENCH_RESULTS_B" in sections["## Two machines side by side"]["text"]
    assert f"files in {tmp_path}" in sections["## Files"]["text"]
    assert (tmp_path / "hashlookup" / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert snapshot(every_kind) == before, "the notebook wrote into a store"


def test_on_one_command_sweep(every_kind, tmp_path):
    store = every_kind / "command"
    before = snapshot(store)
    sections = _sections(store, tmp_path)
    _check_every_section_said_something(sections)
    assert "### my-command (command)" in sections["## Your own program (`command`)"]["text"]
    for workload in set(SWEEPS) - {"command"}:
        (title,) = [t for t in sections if f"(`{workload}`)" in t]
        assert f"(no {workload} experiment in {store}; make one with" in sections[title]["text"]
    assert "no hashlookup experiment" in sections["## Expected vs observed"]["text"]
    assert (tmp_path / "report.html").is_file() and (tmp_path / "plots").is_dir()
    assert snapshot(store) == before, "the notebook wrote into the store"
