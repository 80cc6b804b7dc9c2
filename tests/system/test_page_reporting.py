"""Free page reporting and lazily handed-out memory (hugebench.kernel.reporting), and
``page_reporting.order`` as a journaled knob: on the fake tree for the logic, on this kernel where it has it."""

from pathlib import Path

import pytest

from hugebench.errors import SystemStateError
from hugebench.kernel import Host, reporting
from hugebench.system import SystemState
from hugebench.system.journal import read_journal, restore_from_journal
from hugebench.system.knobs import REPORTING_KNOB, KnobValueError, discover_knobs

REAL_ORDER = Path("/sys", reporting.ORDER_FILE)


def test_reporting_is_read_with_its_device_and_counters(fake_sys):
    got = reporting.page_reporting(fake_sys.host)
    assert got["present"] and got["active"] and got["reason"] is None
    assert got["order"] == 9 and got["off_order"] == 11 and got["devices"] == ("virtio0",)
    assert got["counters"] == {"passes": 60, "reported_kib": 3977904}  # 'Y' is not a counter
    assert reporting.reported_kib(fake_sys.host) == 3977904


def test_reporting_is_inactive_above_the_largest_order_or_without_a_reporting_balloon(fake_sys):
    order = fake_sys.sys_root / reporting.ORDER_FILE
    order.write_text("11\n")
    got = reporting.page_reporting(fake_sys.host)
    assert not got["active"] and "above the largest free block (order 10)" in got["reason"]
    order.write_text("9\n")
    features = fake_sys.sys_root / "bus/virtio/devices/virtio0/features"
    features.write_text("0110000000\n")  # a balloon without bit 5 (REPORTING)
    got = reporting.page_reporting(fake_sys.host)
    assert not got["active"] and "no virtio balloon with free page reporting" in got["reason"]


def test_a_kernel_without_reporting_says_so(tmp_path):
    got = reporting.page_reporting(Host(tmp_path, tmp_path))
    assert not got["present"] and not got["active"] and "no free page reporting" in got["reason"]
    assert reporting.reported_kib(Host(sys=tmp_path)) is None


def test_memory_not_yet_handed_out_counts_as_free_2mib_blocks(fake_sys):
    """deferred_init=lazy: MemFree counts memory the buddy allocator has not got yet (1 GiB here)."""
    buddy = reporting.free_2mib_blocks(fake_sys.host)
    assert reporting.unpopulated_free_bytes(fake_sys.host) == 0  # no MemFree: nothing assumed
    free_kb = 1074996 * 4 + (1 << 20)
    with open(fake_sys.proc_root / "meminfo", "a") as f:
        f.write(f"MemFree: {free_kb} kB\n")
    assert reporting.unpopulated_free_bytes(fake_sys.host) == 1 << 30
    assert reporting.free_2mib_blocks(fake_sys.host) == buddy + 512


def test_the_order_is_a_knob_with_the_kernels_range_journaled_and_restored(fake_sys):
    knobs = discover_knobs(fake_sys.host)
    assert knobs[REPORTING_KNOB].allowed() == "0..11, or off (11)"
    with pytest.raises(KnobValueError, match=r"out of range .*0\.\.11, or off"):
        knobs[REPORTING_KNOB].validate(12)
    with SystemState(fake_sys.host, fake_sys.journal_path) as state:
        assert state.apply({REPORTING_KNOB: 11}) == {REPORTING_KNOB: "11"}
        record = read_journal(fake_sys.journal_path)
        assert record.saved[REPORTING_KNOB] == "9" and REPORTING_KNOB in record.touched
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "9"


def test_a_sweep_killed_with_the_order_changed_is_undone_by_restore(fake_sys):
    state = SystemState(fake_sys.host, fake_sys.journal_path)
    state.__enter__()
    state.apply({REPORTING_KNOB: 11})
    state._active = False  # as if killed: no __exit__
    state._uninstall_handlers()
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "11"
    done = restore_from_journal(fake_sys.journal_path, fake_sys.host, force=True)
    assert done["restored"] == {REPORTING_KNOB: {"from": "11", "to": "9"}}
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "9"


def test_a_kernel_that_refuses_the_off_value_gives_a_clean_error(fake_sys):
    fake_sys.refuse_writes[f"sys/{reporting.ORDER_FILE}"] = 22
    with SystemState(fake_sys.host, fake_sys.journal_path) as state:
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


REGIME_SPEC = """\
name: regime-tiny
workload: hashlookup
repetitions: 1
timeout: 60
perf: off
params: {keys: 3000, chunks: 4}
SYSTEM
axes:
  regime: [REGIMES]
"""


def _regime_sweep(tmp_path, fake, regimes="warm, cold:0.2s", system=""):
    from hugebench.experiment import parse_spec
    from hugebench.sweep import plan as plan_mod
    from hugebench.sweep.orchestrator import SweepOptions, run_sweep

    text = REGIME_SPEC.replace("REGIMES", regimes).replace("SYSTEM", system)
    spec = parse_spec(text, "regime-tiny.yaml")
    options = SweepOptions(
        out=tmp_path / "res",
        quiet=True,
        journal=tmp_path / "journal.json",
        host=fake.host,
    )
    return run_sweep(spec, plan_mod.plan(spec), options)


def test_each_run_is_measured_in_its_regime_and_the_order_is_back_after(fake_sys, tmp_path):
    """warm: reporting held off for the run, no idle; cold:0.2s: reporting as found and the idle gap. Every
    row says which, with the order and whether reporting was active; 9 is back after the sweep."""
    from hugebench import load

    result = _regime_sweep(tmp_path, fake_sys)
    assert result.statuses == {"ok": 2}
    rows = load(tmp_path / "res").set_index("regime")
    assert rows.loc["warm", "system.page_reporting_order"] == 11
    assert not rows.loc["warm", "system.page_reporting_active"]
    assert rows.loc["warm", "system.idle_before_s"] == 0
    assert rows.loc["cold:0.2s", "system.page_reporting_order"] == 9
    assert rows.loc["cold:0.2s", "system.page_reporting_active"]
    assert rows.loc["cold:0.2s", "system.idle_before_s"] == 0.2
    assert (rows["system.reported_kib_delta"] == 0).all()  # the fake counter stands still
    assert (f"sys/{reporting.ORDER_FILE}", "11") in fake_sys.writes
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "9"


def test_off_for_the_whole_sweep_in_system(fake_sys, tmp_path):
    from hugebench import load

    result = _regime_sweep(tmp_path, fake_sys, "warm", "system: {page_reporting.order: 'off'}")
    assert result.statuses == {"ok": 1}
    assert load(tmp_path / "res").iloc[0]["knob.page_reporting.order"] == "11"
    assert fake_sys.read(f"sys/{reporting.ORDER_FILE}") == "9"


@pytest.mark.parametrize(
    "value, message",
    [
        ("tepid", "regime must be back-to-back, warm"),
        ("cold:-1s", "regime must be"),
        ("cold:5000s", "up to 3600"),
    ],
)
def test_a_bad_regime_names_the_file_line_and_key(value, message):
    from hugebench.errors import SpecError
    from hugebench.experiment import parse_spec

    with pytest.raises(SpecError, match=message) as info:
        parse_spec(REGIME_SPEC.replace("REGIMES", value).replace("SYSTEM", ""), "r.yaml")
    assert "r.yaml:9" in str(info.value) and "regime" in str(info.value)


def test_try_regime_both_puts_every_configuration_in_each_regime(monkeypatch, fake_sys):
    """On a kernel whose THP mode is madvise (a fake one: the machine's own mode is whatever it was left at)."""
    from hugebench.trial import matrix

    monkeypatch.setattr(matrix.os, "geteuid", lambda: 0)
    request = matrix.Request(
        argv=("true",), regime="both", idle_s=2, thp=("madvise",), only=("glibc",)
    )
    cells = matrix.build(request, fake_sys.host).cells
    assert [c["regime"] for c in cells] == ["back-to-back", "cold:2s"]
    assert cells[0] == {"allocator": "as-is", "thp": "madvise", "regime": "back-to-back"}
    data = matrix.experiment(request, matrix.build(request, fake_sys.host), "t", 10)
    assert data["axes"]["regime"] == ["back-to-back", "cold:2s"]


def test_try_refuses_idle_without_a_cold_regime_and_regime_with_aged():
    from click.testing import CliRunner

    from hugebench.cli import main

    got = CliRunner().invoke(main, ["try", "--idle", "3", "--regime", "back-to-back", "--", "true"])
    assert got.exit_code != 0 and "--idle is the cold regime's idle gap" in got.output
    got = CliRunner().invoke(main, ["try", "--regime", "cold", "--aged", "--", "true"])
    assert got.exit_code != 0 and "--regime and --aged: choose one" in got.output


def test_plan_lists_the_knob_a_warm_regime_sets(tmp_path):
    """``hugebench plan`` names page_reporting.order among the knobs the sweep sets (a warm regime holds
    reporting off for its runs), as it names a memory state's; a cold-only sweep sets nothing."""
    from click.testing import CliRunner

    from hugebench.cli import main

    for regimes, expected in (("warm, cold:0.2s", True), ("cold:0.2s", False)):
        path = tmp_path / f"regime-{expected}.yaml"
        path.write_text(REGIME_SPEC.replace("REGIMES", regimes).replace("SYSTEM", ""))
        result = CliRunner().invoke(main, ["plan", str(path)])
        assert result.exit_code == 0, result.output
        listed = "regime sets, journaled and set back as found:" in result.output
        assert listed is expected and ("page_reporting.order = off" in result.output) is expected
