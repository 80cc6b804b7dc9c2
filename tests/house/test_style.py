"""The house's habits as gates (issue 39): ruff's lint and format (100 columns) over the package, the tests
and the benchmarks, and mypy over the whole package (issue 54) — the configuration in pyproject.toml. A
failure prints what the tool found."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

TREES = ["hugebench", "tests", "benchmarks"]


def _tool(name: str) -> str:
    found = shutil.which(name, path=str(Path(sys.executable).parent)) or shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: pip install '.[test]' installs it")
    return found


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    done = _run([_tool("ruff"), "check", *TREES])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_ruff_format_leaves_every_file_as_it_is():
    done = _run([_tool("ruff"), "format", "--check", *TREES])
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_mypy_is_clean_on_the_whole_package():
    done = _run([_tool("mypy")])
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
