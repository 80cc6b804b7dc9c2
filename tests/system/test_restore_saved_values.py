"""A restore brings back the values the machine had, not the kernel's defaults (issue 26, section 8): the fake
tree starts away from every default (conftest.NON_DEFAULT), and each way of restoring must read those back.
Also: tests keep their crash journal private."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner
from conftest import NON_DEFAULT
from test_system_journal import crash_a_sweep

from hugebench.cli.system import system
from hugebench.experiment import parse_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
from hugebench.system import SystemState, default_journal_path, restore_from_journal
from hugebench.system.knobs import discover_knobs

THP = "sys/kernel/mm/transparent_hugepage"
# What the tests below apply: each value differs from NON_DEFAULT (and most from the kernel default too).
CHANGES = {
    "thp.enabled": "always",
    "thp.defrag": "never",
    "thp.khugepaged.pages_to_scan": "4096",
    "thp.khugepaged.max_ptes_none": "17",
    "thp.mthp.64kB": "never",
    "hugetlb.2MB": "3",
}


def _values(fake) -> dict[str, str]:
    knobs = discover_knobs(fake.host)
    return {name: knobs[name].read() for name in NON_DEFAULT}


def test_the_changed_tree_really_starts_away_from_the_defaults(fake_sys_changed):
    assert _values(fake_sys_changed) == NON_DEFAULT
    assert fake_sys_changed.read(f"{THP}/enabled") == "always madvise [never]"
    assert fake_sys_changed.read("sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages") == "2"


@pytest.mark.parametrize("leave", ["normally", "by an exception"])
def test_a_sweep_state_restores_the_saved_values(fake_sys_changed, leave):
    before = fake_sys_changed.files()
    with pytest.raises(RuntimeError) if leave != "normally" else _nothing():
        with SystemState(fake_sys_changed.host, fake_sys_changed.journal_path) as s:
            s.apply(CHANGES)
            assert _values(fake_sys_changed) == CHANGES
            if leave != "normally":
                raise RuntimeError("the sweep failed")
    assert _values(fake_sys_changed) == NON_DEFAULT
    assert fake_sys_changed.files() == before


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


def test_restore_after_a_killed_sweep_brings_back_the_saved_values(fake_sys_changed):
    before = fake_sys_changed.files()
    crash_a_sweep(fake_sys_changed)
    assert fake_sys_changed.read(f"{THP}/enabled") == "[always] madvise never"
    report = restore_from_journal(fake_sys_changed.journal_path, fake_sys_changed.host)
    assert report["restored"]["thp.enabled"] == {"from": "always", "to": "never"}
    assert report["restored"]["thp.defrag"] == {"from": "never", "to": "always"}
    assert report["restored"]["hugetlb.2MB"] == {"from": "3", "to": "2"}
    assert _values(fake_sys_changed) == NON_DEFAULT and fake_sys_changed.files() == before


def test_thp_set_then_restore_on_the_command_line(fake_sys_changed, monkeypatch):
    monkeypatch.setenv("HUGEBENCH_SYS_ROOT", str(fake_sys_changed.sys_root))
    monkeypatch.setenv("HUGEBENCH_PROC_ROOT", str(fake_sys_changed.proc_root))
    before = fake_sys_changed.files()
    runner = CliRunner()
    changed = runner.invoke(
        system,
        ["set", "thp.enabled=madvise", "thp.defrag=madvise", "thp.khugepaged.pages_to_scan=4096"],
    )
    assert changed.exit_code == 0, changed.output
    assert fake_sys_changed.read(f"{THP}/khugepaged/pages_to_scan") == "4096"
    restored = runner.invoke(system, ["restore"])
    assert restored.exit_code == 0, restored.output
    assert "restored thp.enabled: madvise -> never" in restored.output
    assert "restored thp.khugepaged.pages_to_scan: 4096 -> 1234" in restored.output
    assert fake_sys_changed.files() == before


def test_a_real_sweep_over_knob_axes_leaves_the_saved_values(fake_sys_changed, tmp_path):
    before = fake_sys_changed.files()
    spec = parse_spec(
        "name: k\nworkload: hashlookup\nperf: off\ncounters: off\ntimeout: 120\n"
        "params: {keys: 2000, chunks: 2}\n"
        "axes: {thp: [madvise, always], thp.khugepaged.pages_to_scan: [4096]}\n"
        "system: {thp.defrag: madvise}\n"
    )
    options = SweepOptions(
        out=tmp_path / "res",
        quiet=True,
        journal=fake_sys_changed.journal_path,
        host=fake_sys_changed.host,
    )
    result = run_sweep(spec, plan_mod.plan(spec), options)
    assert result.statuses == {"ok": 2}
    assert _values(fake_sys_changed) == NON_DEFAULT and fake_sys_changed.files() == before


def test_tests_keep_their_journal_private(tmp_path):
    """conftest's autouse fixture: the machine's journal (/var/lib/hugebench, ~/.cache) is never the one used."""
    assert default_journal_path() == tmp_path / "journal.json"
    assert Path(os.environ["HUGEBENCH_JOURNAL"]).parent == tmp_path
