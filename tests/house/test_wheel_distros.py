"""The binary wheels where their users are: Debian 11 (Python 3.9) and Debian 13 (Python 3.13) roots.

`.ci/build-wheel` builds the oldest and the newest covered Python's wheel; `.ci/distro-root` makes (or
reuses, kept outside the repository) a minimal debootstrap root of each release with its stock python3 and
no compiler. Each wheel is installed by the root's own pip into a venv there, from a --find-links directory
and nothing else (the dependencies' wheels are fetched on this machine for that Python and glibc: the roots
have no index of their own), then `hugebench doctor` and a 4-run sweep of a built-in workload with no kernel
knob axis run inside the root with /proc and /sys bound in, as root and as the user nobody.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import wheel_build

BIN = Path(sys.executable).parent
CASES = wheel_build.DISTRO_CASES
KINDS = ("flat", "node", "robin", "absl", "boost")
NATIVE = ("_core.cpython-{tag}", "libhbprobe.so", "libhbtext.so", "hb-exec", "hb-textfill")
NOBODY = "65534:65534"
SWEEP = """\
name: wheel-distro
workload: hashlookup
description: four runs from the wheel installed in a distribution root; no kernel knob is an axis
repetitions: 2
seed: 1
timeout: 120
params: {threads: 1, lookups: 100000}
axes:
  keys: [10K]
  set_kind: [flat, absl]
"""

# beside: no kernel knob is written (the sweep has no knob axis; doctor --quick measures nothing), so
# they run beside the real lanes, in the fast lane's session (tests/fast_lane.py)
pytestmark = [pytest.mark.slow, pytest.mark.needs_root, pytest.mark.beside]


def _run(argv, *, timeout=900, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kw
    )


@pytest.fixture(scope="module")
def roots() -> dict[str, Path]:
    """Each case's release root, made (about 4 min cold) or reused by .ci/distro-root in the background
    while the suite runs (tests/wheel_build.py)."""
    made = wheel_build.roots()
    if isinstance(made, str):
        pytest.skip(made)
    return made


@pytest.fixture(scope="module")
def wheels(roots) -> dict[str, Path]:
    """{python version: wheel} for the oldest and newest covered Python, from the session's one
    background .ci/build-wheel run."""
    built = wheel_build.wheels([v for _, v in CASES])
    if isinstance(built, str):
        pytest.skip(built)
    return built


def test_each_wheel_carries_every_native_part_and_auditwheel_agrees_with_its_tag(wheels):
    for version, path in wheels.items():
        tags = re.search(r"-(manylinux[\w.]+)\.whl$", path.name).group(1).split(".")
        show = _run([BIN / "auditwheel", "show", path])
        assert show.returncode == 0, show.stderr
        shown = re.search(r'platform tag:\s*"([^"]+)"', show.stdout.replace("\n", " ")).group(1)
        assert shown in tags and all(int(t.split("_")[2]) <= 28 for t in tags if "_2_" in t), (
            path.name,
            show.stdout,
        )
        names = zipfile.ZipFile(path).namelist()
        for part in NATIVE:
            part = part.format(tag=version.replace(".", ""))
            assert any(n.startswith(f"hugebench/{part}") for n in names), (part, path.name)
        assert "hugebench/include/hugebench_window.h" in names
        assert not [n for n in names if n.startswith("hugebench.libs/")], "nothing to graft"
        cores = [n for n in names if "/_core." in n and n.endswith(".so")]
        assert len(cores) == 1, cores  # no other Python's extension came along


def _glibc(root: Path) -> tuple[int, int]:
    libc = _run(["chroot", root, "python3", "-c", "import platform; print(platform.libc_ver()[1])"])
    major, minor = libc.stdout.strip().split(".")[:2]
    return int(major), int(minor)


def _download(requirement: str, version: str, glibc: tuple[int, int], dest: Path) -> None:
    """Wheels of `requirement` and its dependencies for that CPython and glibc, fetched on this machine."""
    platforms = ["manylinux2014_x86_64"] + [
        f"manylinux_2_{m}_x86_64" for m in range(5, glibc[1] + 1)
    ]
    tag = version.replace(".", "")
    argv = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "-q",
        "--only-binary=:all:",
        "-d",
        dest,
        "--python-version",
        version,
        "--implementation",
        "cp",
        "--abi",
        f"cp{tag}",
        "--find-links",
        dest,
    ]
    result = _run([*argv, *(a for p in platforms for a in ("--platform", p)), requirement])
    assert result.returncode == 0, result.stderr[-3000:]


def _root_env() -> dict:
    return {
        "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
        "HOME": "/root",
        "LANG": "C.UTF-8",
        "COLUMNS": "300",
    }


def _pip_install(root: Path, inside: str, wheel: Path, version: str) -> None:
    """The root's own pip installs the wheel from the --find-links directory only. pip download here
    evaluates markers with this machine's Python, so a dependency only an older Python needs (matplotlib's
    importlib-resources on 3.9) is fetched when the root's pip names it."""
    house, glibc = root / inside.lstrip("/") / "wheels", _glibc(root)
    house.mkdir(parents=True)
    shutil.copy(wheel, house)
    _download(f"hugebench @ file://{house / wheel.name}", version, glibc, house)
    venv = _run(
        ["chroot", root, f"python{version}", "-m", "venv", f"{inside}/venv"], env=_root_env()
    )
    assert venv.returncode == 0, venv.stderr
    for _ in range(5):
        pip = _run(
            [
                "chroot",
                root,
                f"{inside}/venv/bin/python",
                "-m",
                "pip",
                "install",
                "-q",
                "--no-index",
                "--find-links",
                f"{inside}/wheels",
                "hugebench",
            ],
            env=_root_env(),
        )
        missing = re.search(r"No matching distribution found for (\S+)", pip.stderr)
        if pip.returncode == 0 or missing is None:
            break
        _download(missing.group(1).rstrip(";"), version, glibc, house)
    assert pip.returncode == 0, pip.stdout[-2000:] + pip.stderr[-3000:]


@pytest.fixture(scope="module", params=CASES, ids=[f"{s}-py{v}" for s, v in CASES])
def installed(request, wheels, roots):
    """The wheel installed in a venv of the release's root; /proc and /sys bound in while the module's tests of that case run."""
    suite, version = request.param
    root, inside = roots[suite], f"/tmp/hb-wheel-test-{os.getpid()}"
    shutil.rmtree(root / inside.lstrip("/"), ignore_errors=True)
    mounted = []
    try:
        _pip_install(root, inside, wheels[version], version)
        for fs in ("proc", "sys"):
            assert _run(["mount", "--bind", f"/{fs}", root / fs]).returncode == 0
            mounted.append(root / fs)
        os.chmod(root / inside.lstrip("/"), 0o755)
        yield {"root": root, "inside": inside, "version": version, "suite": suite}
    finally:
        for target in reversed(mounted):
            _run(["umount", target])
        shutil.rmtree(root / inside.lstrip("/"), ignore_errors=True)


def _ok_or_switched(row: dict) -> bool:
    """A successful run, or one kept out of statistics because another test switched a kernel knob."""
    return row["status"] == "ok" or (
        row["status"] == "disturbed" and "kernel settings changed" in (row.get("error") or "")
    )


def _in_root(case: dict, *argv, user: str | None = None, timeout: int = 300):
    spec = ["--userspec", user] if user else []
    env = {**_root_env(), "HOME": "/tmp" if user else "/root"}
    return _run(["chroot", *spec, case["root"], *argv], env=env, timeout=timeout, cwd="/")


def test_doctor_in_the_root_as_root_and_as_a_user(installed):
    hugebench = f"{installed['inside']}/venv/bin/hugebench"
    for user in (None, NOBODY):
        result = _in_root(installed, hugebench, "doctor", "--quick", user=user)
        out = result.stdout + result.stderr
        assert result.returncode == 0, out[-3000:]
        kinds = next(line for line in out.splitlines() if "set kinds" in line)
        assert all(kind in kinds for kind in KINDS) and "xxh3" in kinds, kinds
        core = next(line for line in out.splitlines() if "_core extension" in line)
        assert "│ ok │" in core and "Clang" in core, core
        assert f"python{installed['version']}/site-packages/hugebench/hb-exec" in out.replace(
            "\n", ""
        )
        assert ("running as root" in out) == (user is None), out[:2000]


def test_a_4_run_sweep_in_the_root_as_root_and_as_a_user(installed):
    inside, root = installed["inside"], installed["root"]
    (root / inside.lstrip("/") / "sweep.yaml").write_text(SWEEP)
    for user, name in ((None, "root"), (NOBODY, "user")):
        out = root / inside.lstrip("/") / name
        out.mkdir()
        if user:
            os.chown(out, 65534, 65534)
        result = _in_root(
            installed,
            f"{inside}/venv/bin/hugebench",
            "sweep",
            f"{inside}/sweep.yaml",
            "-o",
            f"{inside}/{name}/results",
            "-q",
            user=user,
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
        rows = [
            json.loads(line) for line in (out / "results" / "runs.jsonl").read_text().splitlines()
        ]
        measured = [r for r in rows if not r.get("warmup")]
        # beside the real lanes, a run during which one of their tests switched THP is kept out of the
        # statistics as disturbed (the sweep saw the change): a measurement, not a failure
        assert len(measured) == 4 and all(_ok_or_switched(r) for r in measured), [
            (r.get("status"), r.get("error")) for r in rows
        ]
        assert {r["set_kind"] for r in measured} == {"flat", "absl"}
        assert all(r["ns_per_lookup"] > 0 for r in measured)
