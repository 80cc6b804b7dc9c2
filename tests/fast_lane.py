"""The fast lane beside the real lanes. A session that selects tests of both (the README's command, CI's
`.ci/run`) runs its fast tests in a second pytest session, started in the background (niced) right after
collection, while this one runs the real lanes one after another under the root sessions' turn. The fast
lane reads no live kernel knob and writes none (tests/conftest.py's audit guard), so the two overlap safely;
a real test marked ``beside`` (it writes and reads no kernel knob: the install as another user) goes with
it. The child runs under this session's turn (it takes none itself, and the session guard is this
session's). The child's result is this session's: its failures are printed at the end and fail the run.

`HUGEBENCH_TESTS_SERIAL=1` keeps everything in one session (one after another).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from wheel_build import DISTRO_TEST, WHEEL_TEST, Background

CHILD = "HUGEBENCH_FAST_LANE_CHILD"  # set in the child session: it never splits again
SERIAL = "HUGEBENCH_TESTS_SERIAL"
WAIT_S = 1800  # how long the end of this session waits for the child


class FastLaneBeside:
    """A pytest plugin (registered by tests/conftest.py's pytest_configure)."""

    def __init__(self) -> None:
        self.job: Background | None = None
        self.workdir: Path | None = None
        self.count = 0
        self.result: tuple[int, str, str] | None = None

    @pytest.hookimpl(trylast=True)  # after the lanes are marked and -m/-k have deselected
    def pytest_collection_modifyitems(
        self, config: pytest.Config, items: list[pytest.Item]
    ) -> None:
        if config.option.collectonly:
            return
        # the tests of the wheels last: their builds, started in the background at the session's start
        # (tests/wheel_build.py), are done by then instead of waited for (132 s in the middle of a run)
        items.sort(key=lambda item: item.path.name in (WHEEL_TEST, DISTRO_TEST))
        if os.environ.get(CHILD) or os.environ.get(SERIAL) == "1":
            return
        fast = [item for item in items if _beside(item)]
        if not fast or len(fast) == len(items):
            return
        self.workdir = Path(tempfile.mkdtemp(prefix="hugebench-fast-lane-"))
        args = self.workdir / "args"
        args.write_text("\n".join(item.nodeid for item in fast) + "\n")
        pytest_exe = Path(sys.executable).parent / "pytest"
        os.environ[CHILD] = "1"  # the child inherits it (this session's tests never read it)
        try:
            self.job = Background(
                "fast-lane",
                [
                    pytest_exe if pytest_exe.exists() else sys.executable,
                    *([] if pytest_exe.exists() else ["-m", "pytest"]),
                    "-q",
                    "-rfE",
                    "-p",
                    "no:cacheprovider",
                    f"--basetemp={self.workdir / 'tmp'}",
                    f"@{args}",
                ],
                self.workdir,
                cwd=config.rootpath,  # the node ids are relative to it
            )
        finally:
            del os.environ[CHILD]
        self.count = len(fast)
        keep = [item for item in items if not _beside(item)]
        items[:] = keep
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(
                f"the fast lane ({len(fast)} tests{_with_beside(fast)}) runs beside this session, in a "
                "second pytest "
                f"(its output: {self.job.stdout}); HUGEBENCH_TESTS_SERIAL=1 runs it here instead"
            )

    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.job is None or self.result is not None:
            return
        if session.shouldstop or session.shouldfail:
            self.job.stop()  # -x or an interrupt: no point waiting
        self.result = self.job.result(timeout=WAIT_S)
        code = self.result[0]
        if code not in (0, 5) and session.exitstatus == 0:  # 5: nothing collected
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter) -> None:
        if self.result is None:
            return
        code, out, err = self.result
        lines = out.rstrip().splitlines()
        if code in (0, 5):
            shown = lines[-1:]  # its summary line
        else:  # its failures, whole: the short summary and what precedes it
            start = next(
                (
                    i
                    for i, line in enumerate(lines)
                    if "= FAILURES =" in line or "= ERRORS =" in line
                ),
                max(0, len(lines) - 200),
            )
            shown = _without_durations(lines[start:]) + err.rstrip().splitlines()[-40:]
        # the child's own time is its summary line's (this session waited for it only at its end)
        terminalreporter.section(f"the fast lane, beside ({self.count} tests)")
        for line in shown:
            terminalreporter.write_line(line)
        if code not in (0, 5):
            terminalreporter.write_line(f"the fast lane's pytest exited {code}", red=True)

    def pytest_unconfigure(self) -> None:
        if self.job is not None:
            self.job.stop()
        if self.workdir is not None:
            shutil.rmtree(self.workdir, ignore_errors=True)


def _beside(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(m) is not None for m in ("fast", "beside"))


def _with_beside(items: list[pytest.Item]) -> str:
    real = sum(1 for item in items if item.get_closest_marker("fast") is None)
    return f", {real} of them real tests marked beside" if real else ""


def in_child() -> bool:
    """Whether this session is the one running beside another (which holds the turn and guards)."""
    return bool(os.environ.get(CHILD))


def _without_durations(lines: list[str]) -> list[str]:
    """The child's output without its "slowest durations" section (this session prints its own)."""
    out, skipping = [], False
    for line in lines:
        if line.startswith("="):
            skipping = "slowest" in line and "durations" in line
        if not skipping:
            out.append(line)
    return out
