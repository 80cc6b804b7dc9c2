"""The analysis notebook runs top to bottom on the committed sample stores (no Jupyter needed: its code cells
are executed in this process, where the helpers print markdown); test_notebook_any_store.py runs it in a real
Jupyter kernel on real sweeps."""

import json
import shutil

from notebook_stores import snapshot
from paths import ROOT, TESTS

from hugebench.store import columnar

NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"
DATA = TESTS / "data"


def test_notebook_code_cells_run(tmp_path, monkeypatch, capsys):
    stores = {}
    for variable, name in (
        ("HUGEBENCH_RESULTS", "sample_results"),
        ("HUGEBENCH_WORKLOADS", "sample_workloads"),
        ("HUGEBENCH_RESULTS_B", "sample_results_b"),
    ):
        stores[name] = tmp_path / name
        shutil.copytree(DATA / name, stores[name])
        monkeypatch.setenv(variable, str(stores[name]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.setenv("HUGEBENCH_NOTEBOOK_OUT", str(out))
    monkeypatch.setattr(
        columnar, "BUILD_ON_LOAD", True
    )  # the notebook turns it off; put back after
    before = {name: snapshot(path) for name, path in stores.items()}
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(NOTEBOOK), "exec"), namespace)
    printed = capsys.readouterr().out
    assert len(namespace["df"]) > 0 and (out / "sample_results" / "plots").is_dir()
    assert (out / "sample_workloads" / "report.html").read_text().startswith("<!DOCTYPE html>")
    assert {name: snapshot(path) for name, path in stores.items()} == before, "nothing written"
    assert columnar.BUILD_ON_LOAD is False
    headings = [
        line
        for cell in cells
        if cell["cell_type"] == "markdown"
        for line in cell["source"]
        if line.startswith("## ")
    ]
    for workload in (
        "hashlookup",
        "hashsets",
        "alloctest",
        "faultstorm",
        "fleet",
        "codetlb",
        "command",
        "tlbprobe",
    ):
        assert any(f"(`{workload}`)" in h for h in headings), workload
    for title in (
        "### tlb-sample (hashlookup)",
        "### alloc-sample (alloctest)",
        "### faults-sample (faultstorm)",
        "### gcc-sample (command)",
        "### fleet-sample (fleet)",
        "### tlb-sample: Latency ns, B / A",
        "(no hashsets experiment in ",
    ):
        assert title in printed, title
    assert namespace["verdict"]["answer"] in ("yes", "no", "inconclusive")
    assert namespace["compared"].sections[0].figures and namespace["named"] == 6


def test_reading_a_store_for_the_notebook_builds_no_columnar_parts(tmp_path, monkeypatch):
    """A journal with more than PART_MIN_BYTES not yet in parts gets them on an ordinary load; once the
    notebook has chosen its stores, the same load writes nothing."""
    import hugebench
    from hugebench.report import notebook

    for name in ("built", "notebook"):
        shutil.copytree(DATA / "sample_results", tmp_path / name)
        shutil.rmtree(tmp_path / name / "columnar", ignore_errors=True)
        with open(tmp_path / name / "runs.jsonl", "a") as runs:
            runs.write("\n" * columnar.PART_MIN_BYTES)  # blank lines: bytes, no rows
    monkeypatch.setattr(columnar, "BUILD_ON_LOAD", True)
    hugebench.load(tmp_path / "built")
    assert (tmp_path / "built" / "columnar").is_dir()
    notebook.stores({"HUGEBENCH_RESULTS": str(tmp_path / "notebook")})
    before = snapshot(tmp_path / "notebook")
    assert len(hugebench.load(tmp_path / "notebook")) == len(hugebench.load(tmp_path / "built"))
    assert snapshot(tmp_path / "notebook") == before


def test_the_notebook_files_never_go_into_a_store(tmp_path, monkeypatch):
    import pytest

    from hugebench.errors import HugebenchError
    from hugebench.report import notebook

    # notebook.stores() turns it off; put back after
    monkeypatch.setattr(columnar, "BUILD_ON_LOAD", True)

    shutil.copytree(DATA / "sample_results", tmp_path / "results" / "tlb")
    chosen = notebook.stores({"HUGEBENCH_RESULTS": str(tmp_path / "results")})
    assert [r.path for r in notebook.load_all(chosen)] == [tmp_path / "results" / "tlb"]
    inside = tmp_path / "results" / "tlb" / "plots"
    inside.mkdir()
    with pytest.raises(HugebenchError, match="inside the store"):
        notebook.output_dir(chosen, {"HUGEBENCH_NOTEBOOK_OUT": str(inside)})
    with pytest.raises(HugebenchError, match="inside the store"):  # the directory of stores given
        notebook.output_dir(chosen, {"HUGEBENCH_NOTEBOOK_OUT": str(tmp_path / "results")})
    with pytest.raises(HugebenchError, match="is the store"):
        notebook.write_files(notebook.load_all(chosen), tmp_path / "results" / "tlb")
    assert notebook.output_dir(chosen, {}).name.startswith("hugebench-notebook-")
