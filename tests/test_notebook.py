"""The analysis notebook runs top to bottom on the committed sample stores (no Jupyter needed)."""

import json
import shutil
from pathlib import Path

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "analysis.ipynb"
DATA = Path(__file__).parent / "data"


def test_notebook_code_cells_run(tmp_path, monkeypatch, capsys):
    stores = {}
    for variable, name in (("HUGEBENCH_RESULTS", "sample_results"), ("HUGEBENCH_WORKLOADS", "sample_workloads"),
                           ("HUGEBENCH_RESULTS_B", "sample_results_b")):
        stores[name] = tmp_path / name
        shutil.copytree(DATA / name, stores[name])
        monkeypatch.setenv(variable, str(stores[name]))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(NOTEBOOK), "exec"), namespace)
    printed = capsys.readouterr().out
    assert len(namespace["df"]) > 0 and (stores["sample_results"] / "plots").is_dir()
    assert (stores["sample_results"] / "report.html").read_text().startswith("<!DOCTYPE html>")
    headings = [line for cell in cells if cell["cell_type"] == "markdown" for line in cell["source"]
                if line.startswith("## ")]
    for workload in ("hashlookup", "alloctest", "faultstorm", "command", "fleet", "tlbprobe"):
        assert any(f"(`{workload}`)" in h for h in headings), workload
    for title in ("### tlb-sample (hashlookup)", "### alloc-sample (alloctest)", "### faults-sample (faultstorm)",
                  "### gcc-sample (command)", "### fleet-sample (fleet)", "### tlb-sample: Latency ns, B / A"):
        assert title in printed
    assert namespace["verdict"]["answer"] in ("yes", "no", "inconclusive")
    assert namespace["fault_figures"] and namespace["fleet_figures"] and namespace["compared"].sections[0].figures
