"""Waiting for a quiet machine (`sweep --quiet-machine`), the busy-machine warning, and doctor's noise checks."""

import warnings

import pytest
from paths import ROOT

from hugebench.doctor.noise import _background, _defrag, _governor
from hugebench.kernel import Host
from hugebench.measure import disturbance
from hugebench.measure.disturbance import NoisyMachineWarning, QuietGate, Snapshot

TICK = disturbance._CLK_TCK


def _snapshots(monkeypatch, busy: bool):
    """snapshot() answers a machine where others keep 1.5 CPUs (busy) or nothing (quiet) busy per second."""
    state = {"t": 0.0}

    def fake(host=None):
        state["t"] += 1.0
        t = state["t"]
        busy_ticks = int(1.5 * TICK * t) if busy else 0
        return Snapshot(
            at=t,
            cpu={"user": busy_ticks, "idle": int(2 * TICK * t) - busy_ticks, "steal": 0},
            procs={77: ("cc1plus", busy_ticks, 5)},
        )

    monkeypatch.setattr(disturbance, "snapshot", fake)
    monkeypatch.setattr(disturbance.time, "sleep", lambda s: None)


def test_busy_machine_is_named_and_warned(monkeypatch):
    _snapshots(monkeypatch, busy=True)
    why = disturbance.busy_reason()
    assert why.startswith("other work kept 1.50 CPUs busy > 0.5 (cc1plus[77] 1.50 CPU)")
    with pytest.warns(
        NoisyMachineWarning, match="busy as the sweep starts .*--quiet-machine SECONDS"
    ):
        disturbance.warn_if_busy()
    _snapshots(monkeypatch, busy=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert disturbance.warn_if_busy() is None


class _Run:
    def __init__(self, repetition):
        self.repetition = repetition


def test_gate_waits_once_per_block_up_to_its_limit(monkeypatch):
    _snapshots(monkeypatch, busy=True)
    clock = iter(range(0, 1000, 4))
    monkeypatch.setattr(disturbance.time, "monotonic", lambda: float(next(clock)))
    gate = QuietGate(10.0)
    first = gate(_Run(0))
    assert first["noise.waited_s"] >= 10 and first["noise.still_busy"].startswith("other work kept")
    assert gate(_Run(0)) == {}  # the same block: no second wait
    assert "noise.waited_s" in gate(_Run(1))
    assert QuietGate(None)(_Run(0)) == {}


def test_gate_on_a_quiet_machine_does_not_wait_long(monkeypatch):
    _snapshots(monkeypatch, busy=False)
    waited, why = disturbance.wait_quiet(60.0)
    assert why is None and waited < 60


def test_doctor_noise_findings(tmp_path):
    sysfs = Host(sys=tmp_path)
    thp = tmp_path / "kernel/mm/transparent_hugepage"
    thp.mkdir(parents=True)
    (thp / "defrag").write_text("[always] defer defer+madvise madvise never\n")
    name, ok, detail, fix = _defrag(sysfs)
    assert not ok and "direct compaction" in detail and fix.startswith("echo madvise >")
    (thp / "defrag").write_text("always defer defer+madvise [madvise] never\n")
    assert _defrag(sysfs)[1]
    assert _governor(sysfs)[1] and "no cpufreq" in _governor(sysfs)[2]
    gov = tmp_path / "devices/system/cpu/cpu0/cpufreq"
    gov.mkdir(parents=True)
    (gov / "scaling_governor").write_text("powersave\n")
    assert _governor(sysfs)[1:3] == (False, "powersave") and "performance" in _governor(sysfs)[3]
    before = Snapshot(0.0, procs={9: ("khugepaged", 10, 1), 10: ("kdamond.0", 0, 2)})
    after = Snapshot(1.0, procs={9: ("khugepaged", 10 + TICK // 2, 1), 10: ("kdamond.0", 0, 2)})
    name, ok, detail, fix = _background(before, after, 1.0)
    assert not ok and detail == "busy: khugepaged[9] 0.50 CPU" and "scan_sleep_millisecs" in fix


def test_quiet_machine_with_a_cluster_is_refused_before_anything_runs(tmp_path):
    """The wait is for this machine; a cluster sweep's runs are elsewhere, so the option is refused, not ignored."""

    from click.testing import CliRunner

    from hugebench.cli import main

    quick = ROOT / "experiments" / "quick.yaml"
    result = CliRunner().invoke(
        main,
        [
            "sweep",
            str(quick),
            "-o",
            str(tmp_path / "res"),
            "--quiet-machine",
            "5",
            "--cluster",
            "tls://127.0.0.1:9",
            "--certs",
            "certs",
        ],
    )
    assert (
        result.exit_code == 2 and "--quiet-machine" in result.output and "cluster" in result.output
    )
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert not (tmp_path / "res").exists()
