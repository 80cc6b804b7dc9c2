"""`hugebench system|thp show/set/restore` through click's CliRunner on the fake tree."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from hugebench.cli.system import system, thp
from hugebench.errors import SpecError, SystemStateError
from hugebench.system import KnobValueError

THP = "sys/kernel/mm/transparent_hugepage"


@pytest.fixture
def run(fake_sys, monkeypatch):
    monkeypatch.setenv("HUGEBENCH_SYS_ROOT", str(fake_sys.sys_root))
    monkeypatch.setenv("HUGEBENCH_PROC_ROOT", str(fake_sys.proc_root))

    def invoke(*args, group=system):
        return CliRunner().invoke(group, list(args))

    return invoke


def test_show_table_and_json(run):
    result = run("show")
    assert result.exit_code == 0, result.output
    assert "thp.enabled" in result.output and "madvise" in result.output
    assert "thp.mthp.<size>" in result.output and "inherit: 2048kB" in result.output
    assert "2048kB" in result.output and "fault_alloc=32" in result.output
    data = json.loads(run("show", "--json").output)
    assert data["knobs"]["thp.defrag"]["choices"] == [
        "always",
        "defer",
        "defer+madvise",
        "madvise",
        "never",
    ]
    assert data["hugetlb"]["1048576kB"] == {"nr": 0, "free": 0, "surplus": 0, "resv": 0}
    assert data["thp_vmstat"]["thp_fault_fallback"] == 3


def test_set_then_restore(run, fake_sys):
    before = fake_sys.files()
    result = run("set", "thp=always", "hugetlb.2MB=2")
    assert result.exit_code == 0, result.output
    assert "thp.enabled = always" in result.output and "hugetlb.2MB = 2" in result.output
    assert fake_sys.read(f"{THP}/enabled") == "[always] madvise never"
    # set again: the journal keeps the values from before the *first* set
    assert run("set", "thp=never", "thp.defrag=never").exit_code == 0
    with pytest.raises(SystemStateError, match="system set"):
        from hugebench.system import check_no_stale_journal

        check_no_stale_journal(fake_sys.journal_path)
    result = run("restore", group=thp)
    assert result.exit_code == 0, result.output
    assert "restored thp.enabled: never -> madvise" in result.output
    assert fake_sys.files() == before


def test_set_refuses_bad_input(run, fake_sys):
    result = run("set", "thp=sometimes")
    assert isinstance(result.exception, KnobValueError)
    assert "always, madvise, never" in str(result.exception)
    assert isinstance(run("set", "thp").exception, SpecError)
    assert fake_sys.writes == [] and not fake_sys.journal_path.exists()


def test_restore_with_nothing_to_do(run):
    result = run("restore")
    assert result.exit_code == 0 and "nothing to restore" in result.output


@pytest.mark.parametrize("option", ["--sys-root", "--proc-root"])
def test_a_root_that_is_no_directory_is_refused(tmp_path, option):
    """issue 53: `system --sys-root /nonexistent show` printed an empty machine with rc 0."""
    from hugebench.cli import main

    result = CliRunner().invoke(main, ["system", option, str(tmp_path / "nonexistent"), "show"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert f"{option} {tmp_path / 'nonexistent'}: not a directory" in result.output
