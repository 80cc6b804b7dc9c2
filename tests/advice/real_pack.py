"""What every real pack test does: run the pack at a small size as root (one block), read its rows, print
its report, and check that nothing it started is left and every knob is back as found."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench import load
from hugebench.advice.pack import load_pack
from hugebench.advice.session import run_pack
from hugebench.cli import main

MM = Path("/sys/kernel/mm")
WATCHED = (
    "transparent_hugepage/enabled",
    "transparent_hugepage/defrag",
    "transparent_hugepage/shmem_enabled",
    "transparent_hugepage/khugepaged/max_ptes_none",
    "transparent_hugepage/shrink_underused",
    "hugepages/hugepages-2048kB/nr_hugepages",
)


def needs(*programs: str):
    """The marks of a real pack test: root, THP, and the pack's programs."""
    return [
        pytest.mark.needs_root,
        pytest.mark.needs_thp,
        pytest.mark.skipif(
            any(shutil.which(p) is None for p in programs),
            reason=f"needs {', '.join(programs)} (see .ci/setup)",
        ),
    ]


def knobs() -> dict:
    return {name: (MM / name).read_text() for name in WATCHED if (MM / name).exists()}


def run_small(name: str, tmp_path: Path, params: dict, leftovers: tuple = ()):
    """(pack, rows without warm-ups, the markdown report) of one block of the pack at ``params``."""
    found = knobs()
    pack, result = run_pack(
        name,
        3600,
        tmp_path / "res",
        quiet=True,
        params=params,
        blocks=1,
        journal=tmp_path / "journal.json",
    )
    rows = load(tmp_path / "res")
    rows = rows[~rows["warmup"].astype(bool)]
    report = CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--format", "markdown"])
    assert report.exit_code == 0, report.output
    assert f"Vendor advice, judged here: {load_pack(name).title}" in report.output
    from own_processes import run_processes

    for program in leftovers:
        assert not run_processes(program), program
    assert knobs() == found
    assert result.statuses == {"ok": len(rows)}, rows.get("error").tolist()
    return pack, rows, report.output


def by_preset(pack, rows) -> dict:
    """Preset name -> its rows (a list of dicts)."""
    out: dict = {}
    for row in rows.to_dict("records"):
        out.setdefault(pack.preset_of(row), []).append(row)
    return out
