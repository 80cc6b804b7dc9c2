"""The binary wheel (.ci/build-wheel): built, repaired by auditwheel, installed where no compiler is on PATH.

This Python's wheel, from the session's one background build (tests/wheel_build.py; a few minutes cold: zig
builds libc++ first), has its manylinux tag and files checked, then it is
installed into a fresh virtualenv with a PATH that has no compiler or CMake, and the installed package runs
`hugebench doctor`, its preload libraries and tools from where pip put them, and a reduced quick sweep. The
CMake switch the wheel relies on (HUGEBENCH_REQUIRE_ALL_SETS) is checked on a real configure of the project.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import wheel_build
from paths import ROOT

BIN = Path(sys.executable).parent
COMPILERS = (
    "gcc",
    "g++",
    "cc",
    "c++",
    "cpp",
    "cmake",
    "clang",
    "clang++",
    "x86_64-linux-gnu-gcc",
    "x86_64-linux-gnu-g++",
    "x86_64-linux-gnu-gcc-12",
    "x86_64-linux-gnu-g++-12",
    "gcc-12",
    "g++-12",
)
ALL_KINDS = ("flat", "node", "robin", "absl", "boost")
NATIVE = (
    "_core.cpython",
    "libhbprobe.so",
    "libhbtext.so",
    "hb-exec",
    "hb-textfill",
    "include/hugebench_window.h",
)

# beside: the wheel's tests write no kernel knob (the sweep has no knob axis), so they run beside the real
# lanes, in the fast lane's session (tests/fast_lane.py), and their builds with them
pytestmark = [pytest.mark.slow, pytest.mark.beside]


def _run(argv, *, timeout=600, **kw) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(a) for a in argv], capture_output=True, text=True, timeout=timeout, **kw
    )


@pytest.fixture(scope="module")
def wheel() -> tuple[Path, str]:
    """This Python's repaired wheel and the build script's output (auditwheel show, the file list), from
    the session's one background build (tests/wheel_build.py)."""
    built = wheel_build.wheels([wheel_build.THIS])
    if isinstance(built, str):
        pytest.skip(built)
    return built[wheel_build.THIS], wheel_build.build_output()


def test_the_wheel_is_manylinux_and_carries_the_native_parts(wheel):
    path, output = wheel
    tag = re.search(r"[-.](manylinux_\d+_\d+_(?:x86_64|aarch64))[.]", path.name)
    assert tag, path.name
    said = " ".join(output.split())  # auditwheel wraps its sentence where the wheel's name makes it
    assert f'consistent with the following platform tag: "{tag.group(1)}"' in said, output
    show = _run([BIN / "auditwheel", "show", path])
    assert show.returncode == 0 and tag.group(1) in show.stdout, show.stdout + show.stderr
    with zipfile.ZipFile(path) as zf:
        infos = {i.filename: i for i in zf.infolist()}
    for part in NATIVE:
        found = [n for n in infos if n.startswith("hugebench/") and part in n]
        assert found, f"{part} is not in the wheel: {sorted(infos)}"
    for tool in ("hugebench/hb-exec", "hugebench/hb-textfill"):
        assert (infos[tool].external_attr >> 16) & stat.S_IXUSR, f"{tool} lost its execute bit"
    grafted = [n for n in infos if n.startswith("hugebench.libs/")]
    assert not grafted, f"Abseil and libc++ are linked statically, nothing is grafted: {grafted}"


def _no_compiler_path(tmp: Path, venv_bin: Path) -> str:
    """venv/bin, then every program of the system directories except compilers and CMake (symlinks)."""
    tools = tmp / "tools"
    tools.mkdir()
    for directory in (
        "/usr/local/sbin",
        "/usr/local/bin",
        "/usr/sbin",
        "/usr/bin",
        "/sbin",
        "/bin",
    ):
        for entry in sorted(Path(directory).iterdir()) if Path(directory).is_dir() else ():
            name = entry.name
            if name in COMPILERS or re.match(
                r"(.*-)?(gcc|g\+\+|cc|c\+\+|clang|cmake)(-[\d.]+)?$", name
            ):
                continue
            if not (tools / name).exists() and not (tools / name).is_symlink():
                (tools / name).symlink_to(entry)
    path = f"{venv_bin}:{tools}"
    for compiler in COMPILERS:
        assert shutil.which(compiler, path=path) is None, f"{compiler} is still on {path}"
    return path


@pytest.fixture(scope="module")
def installed(wheel, tmp_path_factory) -> dict:
    """A fresh venv with the wheel installed by pip with no compiler on PATH; the environment to run it."""
    tmp = tmp_path_factory.mktemp("venv")
    base_python = getattr(sys, "_base_executable", None) or sys.executable
    assert _run([base_python, "-m", "venv", tmp / "venv"]).returncode == 0
    venv_bin = tmp / "venv" / "bin"
    env = {
        k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV", "CC", "CXX")
    }
    env["PATH"] = _no_compiler_path(tmp, venv_bin)
    env["COLUMNS"] = "400"  # doctor's table, unwrapped
    pip = _run(
        [venv_bin / "python", "-m", "pip", "install", "-q", "--only-binary=:all:", wheel[0]],
        env=env,
        cwd=tmp,
    )
    assert pip.returncode == 0, pip.stdout[-3000:] + pip.stderr[-3000:]
    where = _run(
        [
            venv_bin / "python",
            "-c",
            "import hugebench, os; print(os.path.dirname(hugebench.__file__))",
        ],
        env=env,
        cwd=tmp,
    )
    package = Path(where.stdout.strip())
    assert package.is_relative_to(tmp / "venv"), f"imported {package}, not the installed wheel"
    return {"env": env, "bin": venv_bin, "package": package, "tmp": tmp}


def test_doctor_from_the_wheel_lists_every_set_kind(installed):
    result = _run(
        [installed["bin"] / "hugebench", "doctor", "--quick"],
        env=installed["env"],
        cwd=installed["tmp"],
    )
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    line = next(l for l in out.splitlines() if "set kinds" in l)
    for kind in ALL_KINDS:
        assert kind in line, line
    assert "xxh3" in line, line
    assert str(installed["package"] / "hb-exec") in out.replace("\n", ""), out


def test_the_preload_libraries_and_tools_work_from_the_installed_place(installed, tmp_path):
    package, env = installed["package"], installed["env"]
    probe_dir, text_dir = tmp_path / "probe", tmp_path / "text"
    probe_dir.mkdir(), text_dir.mkdir()
    preload = {
        **env,
        "LD_PRELOAD": f"{package / 'libhbprobe.so'} {package / 'libhbtext.so'}",
        "HB_PROBE_DIR": str(probe_dir),
        "HB_TEXT_PAGES": "off",
        "HB_TEXT_REPORT_DIR": str(text_dir),
    }
    result = _run(["/bin/sh", "-c", "echo preloaded"], env=preload)
    assert result.returncode == 0 and result.stdout == "preloaded\n", result.stderr
    assert "cannot be preloaded" not in result.stderr and "error" not in result.stderr.lower(), (
        result.stderr
    )
    probes = [json.loads(p.read_text()) for p in probe_dir.glob("probe-*.json")]
    assert probes and all(p.get("malloc") for p in probes), probes
    assert list(text_dir.iterdir()), "libhbtext.so wrote no report"
    textfill = _run(
        [package / "hb-textfill"], env=env
    )  # no argument: its usage, so it loaded and ran
    assert textfill.returncode == 2 and "usage: hb-textfill" in textfill.stderr, textfill.stderr
    for elf in ("hb-exec", "hb-textfill", "libhbprobe.so", "libhbtext.so", "_core"):
        target = next(package.glob(f"{elf}*"))
        ldd = _run(["ldd", target], env=env)
        assert "not found" not in ldd.stdout, f"{target}: {ldd.stdout}"


QUICK = """\
name: wheel-quick
workload: hashlookup
description: the quick sweep, reduced, from the installed wheel (no kernel knob an axis)
repetitions: 1
seed: 1
timeout: 120
params: {{threads: 1, lookups: 200000}}
baseline: {{allocator: glibc}}
axes:
  allocator: [glibc, jemalloc]
  keys: [100K]
  set_kind: [{kinds}]
"""


@pytest.mark.needs_root
def test_a_reduced_quick_sweep_runs_from_the_wheel(installed, tmp_path):
    spec = tmp_path / "quick.yaml"
    spec.write_text(QUICK.format(kinds=", ".join(ALL_KINDS)))
    out = tmp_path / "results"
    result = _run(
        [installed["bin"] / "hugebench", "sweep", spec, "-o", out, "-q"],
        env=installed["env"],
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    # beside the real lanes, a run during which one of their tests switched THP is kept out of the
    # statistics as disturbed (the sweep saw the change): a measurement, not a failure
    assert all(
        r["status"] == "ok"
        or (r["status"] == "disturbed" and "kernel settings changed" in (r.get("error") or ""))
        for r in rows
    ), [(r.get("status"), r.get("error")) for r in rows]
    measured = [r for r in rows if not r["warmup"]]
    assert len(measured) == 2 * len(ALL_KINDS), measured
    assert {(r["allocator"], r["set_kind"]) for r in measured} == {
        (a, k) for a in ("glibc", "jemalloc") for k in ALL_KINDS
    }
    # it ran beside the real lanes (it changed no knob: their THP modes are theirs)
    assert {r["knobs_applied"] for r in rows} == {"{}"}, {r["knobs_applied"] for r in rows}


def _configure(tmp_path: Path, *defines: str) -> subprocess.CompletedProcess:
    """CMake's configure step of this project, as scikit-build-core runs it (no build)."""
    pybind11 = pytest.importorskip(
        "pybind11", reason="the wheel extra is not installed: pip install '.[wheel]'"
    )
    cmake = shutil.which("cmake")
    if cmake is None:
        pytest.skip("cmake is not on PATH")
    return _run(
        [
            cmake,
            "-S",
            ROOT,
            "-B",
            tmp_path / "build",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            f"-DPython_EXECUTABLE={sys.executable}",
            "-DSKBUILD_PROJECT_NAME=hugebench",
            "-DSKBUILD_PROJECT_VERSION=0.1.0",
            *defines,
        ],
        timeout=300,
    )


def _flat(text: str) -> str:
    return " ".join(text.split())  # CMake wraps its messages


def test_a_missing_set_kind_fails_a_build_that_requires_all_and_is_named_otherwise(tmp_path):
    lacking = "-DCMAKE_DISABLE_FIND_PACKAGE_absl=ON"  # as on a machine without libabsl-dev
    required = _configure(tmp_path / "required", lacking, "-DHUGEBENCH_REQUIRE_ALL_SETS=ON")
    assert required.returncode != 0
    assert "HUGEBENCH_REQUIRE_ALL_SETS is ON but this build lacks: set kind absl" in _flat(
        required.stderr
    )
    plain = _configure(tmp_path / "plain", lacking)
    assert plain.returncode == 0, plain.stderr[-3000:]
    assert "this build lacks set kind absl (absl's CMake config not found: libabsl-dev)" in _flat(
        plain.stderr
    )
    assert "set kinds flat,node,robin,boost;" in plain.stdout


def test_the_sdist_carries_what_a_source_build_needs(tmp_path):
    """`pip install` from the sdist builds the core itself: CMakeLists.txt, csrc and the package are in it."""
    pytest.importorskip(
        "scikit_build_core", reason="the wheel extra is not installed: pip install '.[wheel]'"
    )
    result = _run(
        [
            sys.executable,
            "-c",
            "import sys; from scikit_build_core.build import build_sdist; "
            "print(build_sdist(sys.argv[1]))",
            tmp_path,
        ],
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    import tarfile

    with tarfile.open(tmp_path / result.stdout.strip().splitlines()[-1]) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in (
        "CMakeLists.txt",
        "pyproject.toml",
        "csrc/tools/hb_exec.cpp",
        "csrc/preload/hb_probe.cpp",
        "csrc/include/hugebench_window.h",
        "hugebench/cli/__init__.py",
    ):
        assert needed in names, f"{needed} is not in the sdist"
