"""codetlb at a small size: the generated program is built (and then reused from its cache) and a real sweep
measures it through the command runner: one row per cell with its call latency, functions and text size."""

from __future__ import annotations

import shutil

import pytest

from hugebench import load
from hugebench.experiment import parse_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
from hugebench.workloads.codetlb import runner as codetlb

pytestmark = pytest.mark.skipif(
    shutil.which("g++") is None, reason="codetlb needs g++ (apt-get install g++)"
)

MIB = 1 << 20


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "hugebench" / "codetlb"


def test_sparse_layout_puts_one_function_on_each_page():
    text = codetlb.assembly(MIB, "sparse", 256)
    assert codetlb.functions_for(MIB, "sparse", 256) == 256 == text.count("\tret")
    assert text.count(".p2align 12") == 256 and "hb_fn_255:" in text and "hb_fn_256:" not in text
    assert codetlb.functions_for(MIB, "dense", 256) == 4096


def test_build_once_then_from_the_cache(cache):
    first = codetlb.build(MIB, "sparse", 256, "4k")
    assert not first.cached and first.build_s > 0 and first.binary.is_file()
    assert first.functions == 256 and MIB <= first.text_bytes < MIB + (64 << 10)
    again = codetlb.build(MIB, "sparse", 256, "4k")
    assert again.cached and again.build_s == 0 and again.binary == first.binary
    assert [p.name for p in cache.iterdir()] == [
        first.binary.parent.name
    ]  # no half-built directory left


def test_a_small_sweep_measures_each_layout(fake_sys, tmp_path):
    spec = parse_spec(
        "name: code\nworkload: codetlb\nperf: off\ncounters: off\ntimeout: 300\n"
        "params: {footprint_bytes: 1Mi, calls: 20000, func_bytes: 64}\n"
        "axes: {layout: [sparse, dense]}\n",
        str(tmp_path / "code.yaml"),
    )
    options = SweepOptions(
        out=tmp_path / "res",
        quiet=True,
        journal=fake_sys.journal_path,
        host=fake_sys.host,
    )
    result = run_sweep(spec, plan_mod.plan(spec), options)
    df = load(tmp_path / "res").set_index("layout")
    assert result.statuses == {"ok": 2}, df.get("error")
    assert df.loc["sparse", "functions"] == 256 and df.loc["dense", "functions"] == MIB // 64
    assert (df["calls"] == 20000).all() and (df["text_bytes"] >= MIB).all()
    assert (df["ns_per_call"] > 0).all() and (df["ns_per_call"] < 10_000).all()
