"""A real sweep that switches THP: huge pages appear exactly where the mode says, and THP is restored."""

from __future__ import annotations

from pathlib import Path

import pytest

from hugebench import load
from hugebench.experiment import parse_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")

SPEC = """\
name: thp-e2e
workload: hashlookup
perf: off
timeout: 300
params: {keys: 1M, set_kind: flat, chunks: 8}
axes:
  allocator: [glibc, jemalloc-thp]
  thp: [never, always]
baseline: {allocator: glibc, thp: never}
"""


@pytest.mark.needs_root
@pytest.mark.needs_thp
@pytest.mark.slow
def test_thp_modes_take_effect_and_are_restored(tmp_path):
    from hugebench.machine.allocators import find_library

    if find_library("libjemalloc.so.2") is None:
        pytest.skip("libjemalloc2 not installed")
    before = ENABLED.read_text()
    spec = parse_spec(SPEC)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "journal.json"),
    )
    assert ENABLED.read_text() == before
    assert not (tmp_path / "journal.json").exists()
    assert result.statuses == {"ok": 4}
    df = load(tmp_path / "res").set_index(["allocator", "thp.enabled"])
    for alloc in ("glibc", "jemalloc-thp"):
        assert df.loc[(alloc, "always"), "knob.thp.enabled"] == "always"
        assert df.loc[(alloc, "always"), "smaps.AnonHugePages"] > 0
        assert df.loc[(alloc, "never"), "knob.thp.enabled"] == "never"
        assert df.loc[(alloc, "never"), "smaps.AnonHugePages"] == 0
    assert (df["found"] == 1_000_000).all()
