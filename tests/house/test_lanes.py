"""The test lanes (tests/conftest.py, docs/architecture.md "Tests in lanes"): the fast lane leaves out what
starts real parts, and a test of the fast lane that opens a live kernel file is caught."""

from __future__ import annotations

import os
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


SPLIT_CONFTEST = """
import sys
sys.path.insert(0, {tests!r})
import fast_lane


def pytest_configure(config):
    config.addinivalue_line("markers", "fast: the fast lane")
    config.pluginmanager.register(fast_lane.FastLaneBeside(), "fast-lane-under-test")


def pytest_collection_modifyitems(items):
    for item in items:
        if "real" not in item.name:
            item.add_marker("fast")
"""

SPLIT_TESTS = """
import os


def _mark(tag):
    with open(os.path.join(os.path.dirname(__file__), tag), "w") as f:
        f.write(str(os.getpid()))


def test_fast_ok():
    _mark("fast")


def test_fast_fails():
    assert 1 == 2, "deliberately"


def test_real_ok():
    _mark("real")
"""


LANE_VARIABLES = ("HUGEBENCH_FAST_LANE_CHILD", "HUGEBENCH_TESTS_SERIAL")


def _split_session(tmp_path: Path, **env: str) -> subprocess.CompletedProcess:
    pytest = Path(sys.executable).parent / "pytest"
    return subprocess.run(
        [str(pytest), "-p", "no:cacheprovider", "-o", "addopts=", str(tmp_path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        # as a session of its own would run, even from inside the fast lane's second session
        env={**{k: v for k, v in os.environ.items() if k not in LANE_VARIABLES}, **env},
    )


def test_a_session_of_both_lanes_runs_the_fast_one_beside_and_fails_with_it(tmp_path):
    """tests/fast_lane.py: the fast tests run in a second pytest while this one runs the real ones; the
    child's failure is printed and fails the session; HUGEBENCH_TESTS_SERIAL=1 runs them in one."""
    (tmp_path / "conftest.py").write_text(SPLIT_CONFTEST.format(tests=str(ROOT / "tests")))
    (tmp_path / "test_split.py").write_text(SPLIT_TESTS)
    done = _split_session(tmp_path)
    assert done.returncode == 1, done.stdout
    assert "the fast lane (2 tests) runs beside this session" in done.stdout
    assert "the fast lane, beside (2 tests" in done.stdout
    assert "FAILED test_split.py::test_fast_fails - AssertionError: deliberately" in done.stdout
    assert "1 passed" in done.stdout  # this session: the real test alone
    fast, real = (int((tmp_path / tag).read_text()) for tag in ("fast", "real"))
    assert fast != real  # two sessions

    serial = _split_session(tmp_path, HUGEBENCH_TESTS_SERIAL="1")
    assert serial.returncode == 1 and "1 failed, 2 passed" in serial.stdout, serial.stdout
    assert "beside" not in serial.stdout
