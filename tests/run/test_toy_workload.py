"""A workload registered from one module of its own (tests/toy_workload.py) goes through plan, sweep and
report like a built-in one: nothing in hugebench names it."""

from __future__ import annotations

import os

import toy_workload
from click.testing import CliRunner
from paths import TESTS

from hugebench import load, workloads
from hugebench.cli import main


def test_a_toy_workload_from_its_own_module_plans_sweeps_and_reports(tmp_path, monkeypatch):
    assert workloads.get("toy") is toy_workload.WORKLOAD and "toy" in workloads.WORKLOADS
    # The worker is another process: it finds the toy by importing its module from the path it inherits.
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )
    spec = tmp_path / "toy.yaml"
    spec.write_text("name: toy\nworkload: toy\nrepetitions: 2\naxes:\n  items: [20k, 50k]\n")
    out = tmp_path / "out"

    planned = CliRunner().invoke(main, ["plan", str(spec)])
    assert planned.exit_code == 0, planned.output
    assert "4 runs = 2 cells x 2 repetitions" in planned.output and "~64.0 MiB" in planned.output

    swept = CliRunner().invoke(main, ["sweep", str(spec), "-o", str(out), "-q"])
    assert swept.exit_code == 0, swept.output
    rows = load(out)
    assert list(rows["status"]) == ["ok"] * 4, rows.get("error")
    assert (
        sorted(rows["items_summed"]) == [20_000, 20_000, 50_000, 50_000]
        and (rows["ns_per_item"] > 0).all()
    )

    report = CliRunner().invoke(main, ["report", str(out), "--format", "markdown"])
    assert report.exit_code == 0, report.output
    assert "ns/item" in report.output and "Toy: the fastest run of each cell" in report.output
    assert "| 20k | 2 |" in report.output and "| 50k | 2 |" in report.output


def test_an_unknown_name_is_refused_and_a_name_is_registered_once():
    import pytest

    with pytest.raises(KeyError, match="unknown workload 'no-such'"):
        workloads.get("no-such")
    with pytest.raises(ValueError, match="already registered"):
        workloads.register(
            workloads.Workload(
                name="toy",
                module="elsewhere",
                function="",
                params={},
                timed_phase="",
                primary_metric="",
            )
        )


def test_what_a_declaration_leaves_out_follows_from_the_rest():
    # module: the module that registered it (the worker imports it); primary metric: the first column shown;
    # function: a _core function named like the workload, none for a runner.
    toy = workloads.get("toy")
    assert (toy.module, toy.function, toy.primary_metric) == ("toy_workload", "", "ns_per_item")
    faultstorm = workloads.get("faultstorm")
    assert (
        faultstorm.module == "hugebench.workloads.faultstorm"
        and faultstorm.function == "faultstorm"
    )
    assert faultstorm.primary_metric == faultstorm.metrics[0][0] == "ns_per_op"
    hashsets = workloads.get("hashsets")  # given explicitly, it stays
    assert hashsets.primary_metric == "set.flat.ns_per_lookup" and not hashsets.metrics
    # The C++ timed loops' two parameters, one definition (their help texts their own).
    for name in ("alloctest", "faultstorm", "fleet", "tlbprobe"):
        params = workloads.get(name).params
        assert list(params)[-2:] == ["chunks", "seed"] and params["seed"].default == 1
    assert workloads.get("fleet").params["chunks"].default == 20


def test_the_spec_resolves_workload_and_allocators_once_and_the_runs_carry_them(monkeypatch):
    from hugebench.experiment import parse_spec
    from hugebench.machine import allocators
    from hugebench.sweep import plan

    spec = parse_spec(
        "name: v\nworkload: toy\nallocators: {mine: {base: glibc}}\naxes:\n  allocator: [glibc, mine]\n"
    )
    assert spec.workload_def is toy_workload.WORKLOAD and set(spec.allocator_table) >= {
        "glibc",
        "mine",
    }
    assert "workload_def" not in spec.to_dict() and "allocator_table" not in spec.to_dict()

    def looked_up(*args, **kwargs):
        raise AssertionError("looked up again by name")

    monkeypatch.setattr(workloads, "get", looked_up)
    monkeypatch.setattr(allocators, "registry", looked_up)
    runs = plan.plan(spec)
    assert all(r.workload_def is spec.workload_def for r in runs)
    request = runs[0].to_dict()
    assert request["workload_module"] == "toy_workload" and "workload_def" not in request
