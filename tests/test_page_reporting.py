"""Free page reporting and lazily handed-out memory (hugebench.kernel.reporting), and
``page_reporting.order`` as a journaled knob: on the fake tree for the logic, on this kernel where it has it."""

from pathlib import Path

import pytest

from hugebench.errors import SystemStateError
from hugebench.kernel import reporting
from hugebench.system import SystemState
from hugebench.system.journal import read_journal, restore_from_journal
from hugebench.system.knobs import REPORTING_KNOB, KnobValueError, discover_knobs

REAL_ORDER = Path("/sys", reporting.ORDER_FILE)


def test_reporting_is_read_with_its_device_and_counters(fake_sys):
    got = reporting.page_reporting(fake_sys.sys_root, fake_sys.proc_root)
    assert got["present"] and got["active"] and got["reason"] is None
    assert got["order"] == 9 and got["off_order"] == 11 and got["devices"] == ("virtio0",)
    assert got["counters"] == {"passes": 60, "reported_kib": 3977904}  # 'Y' is not a counter
    assert reporting.reported_kib(fake_sys.sys_root) == 3977904


def test_reporting_is_inactive_above_the_largest_order_or_without_a_reporting_balloon(fake_sys):
    order = fake_sys.sys_root / reporting.ORDER_FILE
    order.write_text("11\n")
    got = reporting.page_reporting(fake_sys.sys_root, fake_sys.proc_root)
    assert not got["active"] and "above the largest free block (order 10)" in got["reason"]
    order.write_text("9\n")
    features = fake_sys.sys_root / "bus/virtio/devices/virtio0/features"
    features.write_text("0110000000\n")  # a balloon without bit 5 (REPORTING)
    got = reporting.page_reporting(fake_sys.sys_root, fake_sys.proc_root)
    assert not got["active"] and "no virtio balloon with free page reporting" in got["reason"]


def test_a_kernel_without_reporting_says_so(tmp_path):
    got = reporting.page_reporting(tmp_path, tmp_path)
    assert not got["present"] and not got["active"] and "no free page reporting" in got["reason"]
    assert reporting.reported_kib(tmp_path) is None


def test_memory_not_yet_handed_out_counts_as_free_2mib_blocks(fake_sys):
    """deferred_init=lazy: MemFree counts memory the buddy allocator has not got yet (1 GiB here)."""
    buddy = reporting.free_2mib_blocks(fake_sys.proc_root)
    assert reporting.unpopulated_free_bytes(fake_sys.proc_root) == 0  # no MemFree: nothing assumed
    free_kb = 1074996 * 4 + (1 << 20)
    with open(fake_sys.proc_root / "meminfo", "a") as f:
        f.write(f"MemFree: {free_kb} kB\n")
    assert reporting.unpopulated_free_bytes(fake_sys.proc_root) == 1 << 30
    assert reporting.free_2mib_blocks(fake_sys.proc_root) == buddy + 512


def test_the_order_is_a_knob_with_the_kernels_range_journaled_and_restored(fake_sys):
    knobs = discover_knobs(fake_sys.sys_root, fake_sys.proc_root)
    assert knobs[REPORTING_KNOB].allowed() == "0..11"
    with pytest.raises(KnobValueError, match=r"out of range .*0\.\.11"):
        knobs[REPORTING_KNOB].validate(12)
    with SystemState(fake_sys.sys_root, fake_sys.proc_root, fake_sys.journal_path) as state:
        assert state.apply({REPORTING_KNOB: 11}) == {REPORTING_KNOB: "11"}
        record = read_journal(fake_sys.journal_path)
        assert record.saved[REPORTING_KNOB] == "9" and REPORTING_KNOB in record.touched
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "9"


def test_a_sweep_killed_with_the_order_changed_is_undone_by_restore(fake_sys):
    state = SystemState(fake_sys.sys_root, fake_sys.proc_root, fake_sys.journal_path)
    state.__enter__()
    state.apply({REPORTING_KNOB: 11})
    state._active = False  # as if killed: no __exit__
    state._uninstall_handlers()
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "11"
    done = restore_from_journal(fake_sys.journal_path, force=True)
    assert done["restored"] == {REPORTING_KNOB: {"from": "11", "to": "9"}}
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "9"


def test_a_kernel_that_refuses_the_off_value_gives_a_clean_error(fake_sys):
    fake_sys.refuse_writes[f"sys/{reporting.ORDER_FILE}"] = 22
    with SystemState(fake_sys.sys_root, fake_sys.proc_root, fake_sys.journal_path) as state:
        with pytest.raises(SystemStateError, match="refused '11'.*Invalid argument"):
            state.apply({REPORTING_KNOB: 11})
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "9"


@pytest.mark.needs_root
@pytest.mark.skipif(not REAL_ORDER.exists(), reason="this kernel has no free page reporting")
def test_this_kernel_takes_the_off_order_and_gets_the_found_one_back(tmp_path):
    """Here (6.18, KVM with a reporting balloon) 11 is taken and stops reporting; the found order is back."""
    found = REAL_ORDER.read_text().strip()
    off = reporting.page_reporting()["off_order"]
    with SystemState(journal_path=tmp_path / "journal.json") as state:
        state.apply({REPORTING_KNOB: off})
        assert not reporting.page_reporting()["active"]
    assert REAL_ORDER.read_text().strip() == found
