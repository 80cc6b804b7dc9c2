"""The analysis notebook runs top to bottom on the committed sample stores (no Jupyter needed)."""

import json
import shutil

from paths import ROOT, TESTS

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
    cells = json.loads(NOTEBOOK.read_text())["cells"]
    namespace: dict = {}
    for cell in cells:
        if cell["cell_type"] == "code":
            exec(compile("".join(cell["source"]), str(NOTEBOOK), "exec"), namespace)
    printed = capsys.readouterr().out
    assert len(namespace["df"]) > 0 and (stores["sample_results"] / "plots").is_dir()
    assert (stores["sample_results"] / "report.html").read_text().startswith("<!DOCTYPE html>")
    headings = [
        line
        for cell in cells
        if cell["cell_type"] == "markdown"
        for line in cell["source"]
        if line.startswith("## ")
    ]
    for workload in ("hashlookup", "alloctest", "faultstorm", "command", "fleet", "tlbprobe"):
        assert any(f"(`{workload}`)" in h for h in headings), workload
    for title in (
        "### tlb-sample (hashlookup)",
        "### alloc-sample (alloctest)",
        "### faults-sample (faultstorm)",
        "### gcc-sample (command)",
        "### fleet-sample (fleet)",
        "### tlb-sample: Latency ns, B / A",
    ):
        assert title in printed
    assert namespace["verdict"]["answer"] in ("yes", "no", "inconclusive")
    assert (
        namespace["fault_figures"]
        and namespace["fleet_figures"]
        and namespace["compared"].sections[0].figures
    )


# -- executed in a real Jupyter kernel on a user's store (issue 30) ---------------------------------------------


def test_the_notebook_on_a_users_real_store_shows_images_and_no_sample_data(tmp_path):
    import os
    import sys
    import textwrap

    import pytest

    nbclient = pytest.importorskip(
        "nbclient", reason="the notebook extra (nbclient, ipykernel) is not installed"
    )
    import nbformat

    from hugebench import plan as plan_mod
    from hugebench.experiment import parse_spec
    from hugebench.orchestrator import SweepOptions, run_sweep

    spec = parse_spec(
        textwrap.dedent("""\
        name: mine
        workload: hashlookup
        perf: off
        repetitions: 2
        params: {keys: 2000}
        axes:
          allocator: [glibc, jemalloc]
        baseline: {allocator: glibc}
        """),
        "mine.yaml",
    )
    store = tmp_path / "mine"
    run_sweep(
        spec, plan_mod.plan(spec), SweepOptions(out=store, quiet=True, journal=tmp_path / "j.json")
    )
    before = sorted(p.relative_to(DATA) for p in DATA.rglob("*"))
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    env = {**os.environ, "HUGEBENCH_RESULTS": str(store), "MPLBACKEND": "Agg"}
    for variable in ("HUGEBENCH_WORKLOADS", "HUGEBENCH_RESULTS_B"):
        env.pop(variable, None)
    os.environ.update(
        {"HUGEBENCH_RESULTS": str(store)}
    )  # the kernel inherits this process's environment
    try:
        nbclient.NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            resources={"metadata": {"path": str(NOTEBOOK.parent)}},
        ).execute(env=env)
    finally:
        os.environ.pop("HUGEBENCH_RESULTS", None)
    outputs = [o for cell in notebook.cells if cell.cell_type == "code" for o in cell.outputs]
    text = "\n".join(
        str(o.get("text", ""))
        + str(o.get("data", {}).get("text/markdown", ""))
        + ("" if "image/png" in o.get("data", {}) else str(o.get("data", {}).get("text/plain", "")))
        for o in outputs
    )  # an image's text/plain is only its fallback
    assert any("image/png" in o.get("data", {}) for o in outputs), "figures are images"
    assert any("<table" in o.get("data", {}).get("text/html", "") for o in outputs), (
        "tables are HTML"
    )
    assert "<Figure size" not in text
    assert "Your stores: results = " + str(store) in text and "SAMPLE DATA" not in text
    assert "mine (hashlookup)" in text and "tlb-sample (hashlookup)" not in text
    assert (
        "no experiment named 'tlb-sample'" in text
        and "huge pages extend TLB reach here" not in text
    )
    assert sorted(p.relative_to(DATA) for p in DATA.rglob("*")) == before, (
        "nothing written into tests/data"
    )
    assert sys.executable  # the kernel is this interpreter's (ipykernel's python3 spec)
