"""The redis pack end to end, at a small size, as root: Debian's redis-server under redis-benchmark with a
snapshot during the load, each preset's knobs and option in effect (disable-thp yes really turns THP off
for redis under THP always; disable-thp no keeps it), every claim judged in the report, every server
stopped and the THP knobs as found."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench import load
from hugebench.advice.session import run_pack
from hugebench.cli import main

THP = Path("/sys/kernel/mm/transparent_hugepage")

pytestmark = [
    pytest.mark.needs_root,
    pytest.mark.needs_thp,
    pytest.mark.skipif(
        any(shutil.which(p) is None for p in ("redis-server", "redis-benchmark", "redis-cli")),
        reason="redis-server/redis-benchmark/redis-cli not installed (apt-get install redis-server)",
    ),
]

SMALL = {"requests": 3000, "snapshot_every": 1, "sample_interval": 0.25}


def test_the_redis_pack_runs_and_judges_its_claims(tmp_path):
    found = {name: (THP / name).read_text() for name in ("enabled", "defrag")}
    pack, result = run_pack(
        "redis",
        600,
        tmp_path / "res",
        quiet=True,
        params=SMALL,
        blocks=1,
        journal=tmp_path / "journal.json",
    )
    assert result.statuses == {"ok": 6}, result.statuses
    rows = load(tmp_path / "res")
    rows = rows[~rows["warmup"].astype(bool)]
    by_preset = {pack.preset_of(r): r for r in rows.to_dict("records") if r["allocator"] == "as-is"}
    assert set(by_preset) == {"shipped", "thp-kept", "warning-fix"}
    # the preset's option took effect in the server itself: disable-thp yes under always is a prctl
    assert by_preset["shipped"]["thp.overridden"] is True
    assert by_preset["thp-kept"]["thp.overridden"] is False
    assert all(r["rps"] > 0 and r["p99_ms"] > 0 for r in by_preset.values())
    # a snapshot ran in every run: the driver fails its run when redis's total_forks stayed 0 (a BGSAVE
    # child lives milliseconds here, too short for the sampler's events.forks to see every time)
    assert all(r["events.forks"] >= 0 for r in by_preset.values())
    out = CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--format", "markdown"])
    assert out.exit_code == 0, out.output
    assert "Vendor advice, judged here: Redis" in out.output
    assert "thp-kept, allocator=as-is vs warning-fix" in out.output
    assert "expected vs observed" not in out.output  # said once, as advice
    # one block: every claim judged, none resolved on one run a side
    assert out.output.count("| not resolved | no interval (fewer than 2") == len(pack.claims)
    from own_processes import run_processes

    assert not run_processes("redis-server")
    assert {name: (THP / name).read_text() for name in found} == found
