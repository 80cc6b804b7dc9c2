"""The test lanes (tests/conftest.py, docs/architecture.md "Tests in lanes"): the fast lane leaves out what
starts real parts, and a test of the fast lane that opens a live kernel file is caught."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from paths import ROOT


def _conftest():
    return next(m for m in list(sys.modules.values()) if hasattr(m, "_watch_live_kernel"))


def _collected(*args: str) -> str:
    pytest = Path(sys.executable).parent / "pytest"
    return subprocess.run(
        [str(pytest), "--collect-only", "-q", "-p", "no:cacheprovider", "-o", "addopts=", *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout


def test_the_fast_lane_leaves_out_real_trys_wheels_and_live_kernel_tests():
    heavy = [
        "tests/trial/test_try.py",  # a real try (the table)
        "tests/house/test_install_unowned.py",  # a wheel (its marks)
        "tests/house/test_cli.py::test_doctor_runs",  # the live kernel (the table)
    ]
    out = _collected("-m", "fast", *heavy)
    assert "::" not in out, out
    assert "::" in _collected("-m", "not fast", *heavy)
    assert "test_conftest_guard.py::" in _collected(
        "-m", "fast", "tests/house/test_conftest_guard.py"
    )


def test_a_live_kernel_read_is_seen_and_a_fake_one_is_not(tmp_path):
    conftest = _conftest()
    saved, conftest._live_reads = conftest._live_reads, []
    try:
        (tmp_path / "meminfo").write_text("MemTotal: 1 kB\n")
        (tmp_path / "meminfo").read_text()
        Path("/proc/meminfo").read_text()
        seen = conftest._live_reads
    finally:
        conftest._live_reads = saved
    assert seen == ["/proc/meminfo"]
