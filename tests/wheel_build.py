"""The slow parts the wheel tests need, started once per session in the background (niced) when the tests
that need them are collected, so they overlap the rest of the suite instead of adding to it.

- One `.ci/build-wheel` run builds every wheel the session's wheel tests use (this Python's for
  tests/house/test_wheel.py, the oldest and newest covered Python's for test_wheel_distros.py): one zig
  libc++ build and one Abseil build serve all of them, and ccache makes each version after the first cost
  only its bindings.
- `.ci/distro-root SUITE` makes (or reuses) each Debian release root test_wheel_distros.py installs into.

A test asks for its part with `wheels()` / `roots()`: it waits for the background command, and gets the
skip reason when its prerequisites are missing. Every command runs in its own process group, killed at the
session's end if it is still running (an interrupted session leaves nothing behind).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from paths import ROOT

COVERED = ("3.9", "3.11", "3.13")  # the Pythons whose headers Debian ships (.ci/build-wheel)
THIS = f"{sys.version_info.major}.{sys.version_info.minor}"
DISTRO_CASES = (("bullseye", "3.9"), ("trixie", "3.13"))  # the oldest and the newest covered Python
WHEEL_TEST = "test_wheel.py"
DISTRO_TEST = "test_wheel_distros.py"


class Background:
    """A command running in its own process group, its output in files under `workdir`."""

    def __init__(self, name: str, argv: list, workdir: Path, cwd: Path = ROOT):
        self.name = name
        self.stdout, self.stderr = workdir / f"{name}.out", workdir / f"{name}.err"
        with open(self.stdout, "w") as out, open(self.stderr, "w") as err:
            self.proc = subprocess.Popen(
                ["nice", "-n", "19", *(str(a) for a in argv)],
                stdout=out,
                stderr=err,
                cwd=cwd,
                env={**os.environ, "PYTHON": sys.executable},
                start_new_session=True,
            )

    def result(self, timeout: float = 1800) -> tuple[int, str, str]:
        """Wait for the command; its exit status, stdout and stderr."""
        try:
            code = self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.stop()
            code = -1
        return code, self.stdout.read_text(), self.stderr.read_text()

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            self.proc.wait()


_started: dict[str, Background] = {}
_workdir: Path | None = None


def wheel_extra_missing() -> str | None:
    """Why .ci/build-wheel cannot run in this environment, or None."""
    if not (Path(sys.executable).parent / "auditwheel").exists():
        return "the wheel extra is not installed (auditwheel): pip install '.[wheel]'"
    for module in ("scikit_build_core", "ziglang", "wheel"):
        if importlib.util.find_spec(module) is None:
            return f"the wheel extra is not installed ({module}): pip install '.[wheel]'"
    return None


def roots_missing() -> str | None:
    """Why the release roots cannot be made or entered here, or None."""
    if os.geteuid() != 0:
        return "chroot and bind mounts need root"
    if shutil.which("debootstrap") is None:
        return "debootstrap is missing: apt-get install debootstrap"
    return None


def start(test_files: set[str]) -> None:
    """Start what the collected wheel tests (by file name) need; nothing when none was collected."""
    global _workdir
    wanted = {THIS} if WHEEL_TEST in test_files else set()
    roots = DISTRO_TEST in test_files and roots_missing() is None
    if roots:
        wanted |= {v for _, v in DISTRO_CASES}
    versions = [v for v in COVERED if v in wanted]
    if not versions or wheel_extra_missing() is not None:
        return
    _workdir = Path(tempfile.mkdtemp(prefix="hugebench-wheel-tests-"))
    _started["wheels"] = Background(
        "build-wheel",
        ["bash", ROOT / ".ci" / "build-wheel", _workdir / "dist", *versions],
        _workdir,
    )
    for suite, _ in DISTRO_CASES if roots else ():
        _started[f"root {suite}"] = Background(
            f"distro-root-{suite}", ["bash", ROOT / ".ci" / "distro-root", suite], _workdir
        )


def stop() -> None:
    """Kill whatever still runs and remove the scratch directory (the wheels in it)."""
    for job in _started.values():
        job.stop()
    _started.clear()
    if _workdir is not None:
        shutil.rmtree(_workdir, ignore_errors=True)


def wheels(versions: list[str]) -> dict[str, Path] | str:
    """{version: wheel} for `versions`, once the session's build ends; else why there is none (a skip
    reason). A failed build fails the test with its output."""
    uncovered = [v for v in versions if v not in COVERED]
    if uncovered:
        return f"no Debian package has Python {uncovered[0]}'s headers (.ci/build-wheel)"
    job = _started.get("wheels")
    if job is None:
        return wheel_extra_missing() or "the wheel build was not started at the session's start"
    code, out, err = job.result()
    assert code == 0, f".ci/build-wheel exited {code}:\n{out[-3000:]}\n{err[-3000:]}"
    built = {}
    for line in out.strip().splitlines():
        path = Path(line.strip())
        for v in versions:
            tag = "cp" + v.replace(".", "")
            if path.suffix == ".whl" and path.name.startswith(f"hugebench-0.1.0-{tag}-{tag}-"):
                built[v] = path
    assert set(built) == set(versions), f"{versions} not all among the wheels built:\n{out[-2000:]}"
    return built


def build_output() -> str:
    """What .ci/build-wheel printed (auditwheel show of each wheel, then their paths)."""
    return _started["wheels"].stdout.read_text()


def roots() -> dict[str, Path] | str:
    """{suite: root directory} once each .ci/distro-root ends; else a skip reason."""
    made = {}
    for suite, _ in DISTRO_CASES:
        job = _started.get(f"root {suite}")
        if job is None:
            return roots_missing() or "the release roots were not started at the session's start"
        code, out, err = job.result()
        assert code == 0, f".ci/distro-root {suite} exited {code}:\n{err[-3000:]}"
        made[suite] = Path(out.strip().splitlines()[-1])
    return made
