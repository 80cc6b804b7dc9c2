"""SystemState: writes only what differs, journals before the first write, restores the saved values
on every way out (normal, exception, Ctrl-C, SIGTERM, SIGHUP), and reports restore failures."""

from __future__ import annotations

import errno
import json
import os
import signal

import pytest

from hugebench.errors import SystemStateError
from hugebench.system import HugetlbShortfall, KnobValueError, SystemState, Terminated

THP = "sys/kernel/mm/transparent_hugepage"


def state_for(fake, **kwargs) -> SystemState:
    return SystemState(fake.host, fake.journal_path, **kwargs)


def test_apply_writes_only_differences_and_restores(fake_sys):
    before = fake_sys.files()
    with state_for(fake_sys) as state:
        got = state.apply(
            {"thp": "always", "thp.defrag": "madvise", "thp.khugepaged.max_ptes_none": 0}
        )
        assert got == {
            "thp.enabled": "always",
            "thp.defrag": "madvise",
            "thp.khugepaged.max_ptes_none": "0",
        }
        assert [rel for rel, _ in fake_sys.writes] == [
            f"{THP}/enabled",
            f"{THP}/khugepaged/max_ptes_none",
        ]
        assert state.snapshot()["thp.enabled"] == "always"
        assert len(state.snapshot()) == len(state.knobs)
    assert fake_sys.files() == before
    assert not fake_sys.journal_path.exists()


def test_journal_is_on_disk_before_the_first_write(fake_sys):
    seen = []
    real_write = fake_sys.write_text

    def spying_write(path, text):
        seen.append(json.loads(fake_sys.journal_path.read_text()))
        real_write(path, text)

    fake_sys.write_text = spying_write
    with state_for(fake_sys) as state:
        state.apply({"thp.enabled": "never"})
    journal = seen[0]
    assert journal["saved"]["thp.enabled"] == "madvise"
    assert journal["saved"]["hugetlb.2MB"] == "0"  # every knob, not just the ones asked
    assert journal["touched"] == ["thp.enabled"] and journal["pid"] == os.getpid()


def test_nothing_to_write_means_no_journal(fake_sys):
    with state_for(fake_sys) as state:
        state.apply({"thp.enabled": "madvise"})
    assert fake_sys.writes == [] and not fake_sys.journal_path.exists()


def test_validation_happens_before_any_write(fake_sys):
    with state_for(fake_sys) as state:
        with pytest.raises(KnobValueError):
            state.apply({"thp.enabled": "always", "thp.defrag": "often"})
    assert fake_sys.writes == []


@pytest.mark.parametrize("error", [RuntimeError("boom"), KeyboardInterrupt()])
def test_restore_on_exception(fake_sys, error):
    before = fake_sys.files()
    with pytest.raises(type(error)):
        with state_for(fake_sys) as state:
            state.apply({"thp.enabled": "always", "hugetlb.2MB": 4, "hugetlb.1GB": 1})
            assert fake_sys.read("proc/sys/vm/nr_hugepages") == "4"
            raise error
    assert fake_sys.files() == before


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP])
def test_restore_on_terminating_signal(fake_sys, signum):
    before = fake_sys.files()
    previous = signal.getsignal(signum)
    with pytest.raises(Terminated) as info:
        with state_for(fake_sys) as state:
            state.apply({"thp.defrag": "never", "thp.mthp.64kB": "always"})
            os.kill(os.getpid(), signum)
            for _ in range(1000):  # the handler runs at the next bytecode boundary
                pass
            pytest.fail("signal did not interrupt the sweep")
    assert info.value.signum == signum and info.value.exit_code == 128 + signum
    assert fake_sys.files() == before
    assert signal.getsignal(signum) is previous


def test_shortfall_applies_the_rest_then_raises(fake_sys):
    fake_sys.pool_capacity["2048kB"] = 1
    with state_for(fake_sys) as state:
        with pytest.raises(HugetlbShortfall) as info:
            state.apply({"hugetlb.2MB": 8, "thp.enabled": "always"})
        assert info.value.readback == {"hugetlb.2MB": "1", "thp.enabled": "always"}
    assert fake_sys.read("proc/sys/vm/nr_hugepages") == "0"


def test_pools_restored_shrinking_first(fake_sys):
    (fake_sys.root / "proc/sys/vm/nr_hugepages").write_text(
        "2\n"
    )  # the machine started with a 2MB pool
    with state_for(fake_sys) as state:
        state.apply({"hugetlb.2MB": 0})
        state.apply({"hugetlb.1GB": 2})
        fake_sys.writes.clear()
    assert [rel.split("/")[-2:] for rel, _ in fake_sys.writes] == [
        ["hugepages-1048576kB", "nr_hugepages"],  # frees 2 GiB first ...
        ["vm", "nr_hugepages"],  # ... then regrows the 2MB pool to its saved size
    ]
    assert fake_sys.read("proc/sys/vm/nr_hugepages") == "2"


def test_restore_failure_keeps_journal_and_does_not_hide_the_original(fake_sys, caplog):
    with pytest.raises(RuntimeError, match="original") as info:
        with state_for(fake_sys) as state:
            state.apply({"thp.enabled": "always"})
            fake_sys.refuse_writes[f"{THP}/enabled"] = errno.EBUSY
            raise RuntimeError("original")
    assert any("could not restore" in note for note in info.value.__notes__)
    assert "could not restore" in caplog.text
    assert fake_sys.journal_path.exists()


def test_restore_failure_without_an_exception_raises(fake_sys):
    with pytest.raises(SystemStateError, match="journal kept"):
        with state_for(fake_sys) as state:
            state.apply({"thp.enabled": "always"})
            fake_sys.ignore_writes.add(f"{THP}/enabled")


def test_stale_journal_blocks_enter(fake_sys):
    with state_for(fake_sys) as state:
        state.apply({"thp.enabled": "never"})
        with pytest.raises(SystemStateError, match="another sweep"):
            with state_for(fake_sys):
                pass
