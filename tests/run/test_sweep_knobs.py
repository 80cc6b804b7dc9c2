"""Kernel knobs as sweep axes, on a fake sysfs: applied per cell, read back into every row, restored after;
a hugetlb pool the kernel cannot fill fails only the cells that needed it."""

from __future__ import annotations

from hugebench import load
from hugebench.experiment import parse_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

BASE = """\
name: knobs
workload: hashlookup
perf: off
counters: off
timeout: 120
params: {keys: 2000, chunks: 2}
"""


def _sweep(fake, tmp_path, text):
    spec = parse_spec(BASE + text)
    options = SweepOptions(
        out=tmp_path / "res",
        quiet=True,
        journal=fake.journal_path,
        host=fake.host,
    )
    result = run_sweep(spec, plan_mod.plan(spec), options)
    return result, load(tmp_path / "res")


def test_knob_axes_are_applied_recorded_and_restored(fake_sys, tmp_path):
    before = fake_sys.files()
    result, df = _sweep(
        fake_sys,
        tmp_path,
        """\
axes:
  thp.defrag: [never, defer]
  thp.mthp.64kB: [never, always]
system: {thp.khugepaged.max_ptes_none: 0}
""",
    )
    assert result.statuses == {"ok": 4}
    assert (df["knob.thp.defrag"] == df["thp.defrag"]).all()
    assert (df["knob.thp.mthp.64kB"] == df["thp.mthp.64kB"]).all()
    assert (df["knob.thp.khugepaged.max_ptes_none"].astype(str) == "0").all()
    assert fake_sys.files() == before and not fake_sys.journal_path.exists()


def test_hugetlb_shortfall_fails_only_the_cells_that_needed_it(fake_sys, tmp_path):
    fake_sys.pool_capacity["2048kB"] = 3
    result, df = _sweep(fake_sys, tmp_path, "axes:\n  hugetlb.2MB: [0, 5]\n")
    assert result.statuses == {"ok": 1, "failed": 1}
    failed = df[df["status"] == "failed"].iloc[0]
    assert (
        failed["hugetlb.2MB"] == 5
        and "asked the kernel for 5" in failed["error"]
        and "gave 3" in failed["error"]
    )
    assert fake_sys.read("proc/sys/vm/nr_hugepages") == "0"


def test_unknown_knob_is_refused_before_anything_runs(fake_sys, tmp_path):
    import pytest

    from hugebench.errors import HugebenchError

    with pytest.raises(HugebenchError, match="thp.mthp.3kB"):
        _sweep(fake_sys, tmp_path, "axes:\n  thp.mthp.3kB: [never]\n")
    assert not (tmp_path / "res" / "runs.jsonl").exists()


def test_without_root_thp_never_comes_from_prctl_in_the_worker(fake_sys, tmp_path, monkeypatch):
    """A non-root sweep asking THP 'never' leaves sysfs alone and disables THP in the worker itself."""
    monkeypatch.setattr("os.geteuid", lambda: 1000)
    before = fake_sys.files()
    result, df = _sweep(fake_sys, tmp_path, "axes:\n  thp: [never]\n")
    assert result.statuses == {"ok": 1}
    assert df["thp_prctl_disabled"].iloc[0] == True  # noqa: E712 (a numpy bool)
    assert df["knob.thp.enabled"].iloc[0] == "madvise" and fake_sys.files() == before


def test_rows_record_the_free_page_orders_before_each_run(fake_sys, tmp_path):
    _, df = _sweep(fake_sys, tmp_path, "axes:\n  thp: [madvise]\n")
    row = df.iloc[0]
    assert row["buddy.order0"] == 0 + 1 + 221 and row["buddy.order10"] == 3 + 752 + 37
    assert row["buddy.free_2mib_blocks"] > 0
