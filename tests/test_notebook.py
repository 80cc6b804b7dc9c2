"""The analysis notebook runs top to bottom on the committed sample results (no Jupyter needed)."""

import json
import shutil
from pathlib import Path

NOTEBOOK = Path(__file__).parents[1] / "notebooks" / "analysis.ipynb"
SAMPLE = Path(__file__).parent / "data" / "sample_results"


def test_notebook_code_cells_run(tmp_path, monkeypatch):
    results = tmp_path / "results"
    shutil.copytree(SAMPLE, results)
    monkeypatch.setenv("HUGEBENCH_RESULTS", str(results))
    monkeypatch.setenv("MPLBACKEND", "Agg")
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(NOTEBOOK), "exec"), namespace)
    assert len(namespace["df"]) > 0 and (results / "plots").is_dir()
