"""Multi-size THP in ``try``: the size sets a try adds where the kernel offers them (as root), how they
become knob axes of the experiment file, and how they are named (fake /sys; the real runs are in the manual's
table, docs/mthp.md)."""

from __future__ import annotations

import types

from hugebench.trial import matrix as matrix_mod
from hugebench.trial.matrix import Request


def test_size_sets_need_root_and_the_sizes(fake_sys):
    request = Request(argv=("true",), mthp=True)
    sets, notes = matrix_mod.mthp_sets(request, fake_sys.host, euid=0)
    assert sets == list(matrix_mod.MTHP_SETS) and not notes
    sets, notes = matrix_mod.mthp_sets(request, fake_sys.host, euid=1000)
    assert sets == [] and "not root" in notes[0]
    assert matrix_mod.mthp_sets(Request(argv=("true",)), fake_sys.host, euid=0) == ([], [])


def test_mthp_cells_set_their_sizes_and_turn_the_others_off(fake_sys, monkeypatch):
    monkeypatch.setattr(matrix_mod.os, "geteuid", lambda: 0)
    mx = matrix_mod.build(
        Request(argv=("true",), only=("glibc",), thp=("madvise",), mthp=True), fake_sys.host
    )
    found = {"thp.mthp.16kB": "never", "thp.mthp.64kB": "never", "thp.mthp.2048kB": "inherit"}
    # the fake machine reports free pages: measured back to back and after idle, reporting left as found
    # (matrix.default_regime, issue 55); the baseline is the back-to-back one
    assert mx.baseline == {
        "allocator": "as-is",
        "thp": "madvise",
        **found,
        "regime": "back-to-back",
    }
    assert {c["regime"] for c in mx.cells} == {"back-to-back", "cold:4s"}
    only64 = next(c for c in mx.cells if c.get("mthp") == "64kB only")
    assert only64["thp.mthp.64kB"] == "always" and only64["thp.mthp.2048kB"] == "never"
    both = next(c for c in mx.cells if c.get("mthp") == "64kB+2048kB")
    assert matrix_mod.uses_huge_pages(both) and not matrix_mod.uses_huge_pages(only64)
    one_regime = [c for c in mx.cells if c["regime"] == "back-to-back"]
    assert "mTHP 16kB+64kB" in matrix_mod.describe(one_regime[-2], "madvise")
    data = matrix_mod.experiment(Request(argv=("true",)), mx, "t", 60)
    assert data["axes"]["thp.mthp.64kB"] == ["never", "always"]
    assert "mthp" not in data["baseline"]
    kept = [c for c in mx.cells]
    assert len(kept) == len({tuple(sorted(c.items())) for c in kept})


def test_per_size_shmem_and_the_shrinker_are_journaled_knobs(fake_sys):
    from hugebench import knob_catalogue as catalogue
    from hugebench.kernel.procfs import THP_VMSTAT
    from hugebench.system import discover_knobs

    assert catalogue.declaration("thp.mthp_shmem.8kB").path.endswith("hugepages-8kB/shmem_enabled")
    assert catalogue.family("thp.shrink_underused") == "thp"
    assert catalogue.declaration("thp.khugepaged.max_ptes_none") is not None
    assert "thp_underused_split_page" in THP_VMSTAT
    knobs = discover_knobs(fake_sys.host)
    assert knobs["thp.mthp_shmem.8kB"].read() == "never"
    assert "thp.mthp.8kB" not in knobs  # 8 KiB has a shmem control only


def _ratio(value, lo=None, hi=None):
    from hugebench.trial.verdict_types import Ratio

    return Ratio(value, lo, hi, n=5, paired=True, level=0.95, family=1, resolved=False)


def _config(name, cell, value, lo, hi, memory=1.0):
    return types.SimpleNamespace(
        name=name,
        cell={"allocator": "as-is", "thp": "madvise", **cell},
        runs=5,
        ratio=_ratio(value, lo, hi),
        peak_rss_ratio=_ratio(memory),
        folio_shares={},
    )


def test_smallest_size_set_within_noise_of_the_best():
    from hugebench.trial.sizes import page_sizes

    configs = [
        _config("64kB only", {"mthp": "64kB only", "thp.mthp.64kB": "always"}, 0.40, 0.35, 0.46),
        _config(
            "64kB+2048kB",
            {"mthp": "64kB+2048kB", "thp.mthp.64kB": "always", "thp.mthp.2048kB": "always"},
            0.38,
            0.33,
            0.43,
        ),
        _config("THP always", {"thp": "always"}, 0.80, 0.70, 0.90),
    ]
    sizes = page_sizes(configs, "lower")
    assert sizes["best"] == "64kB+2048kB" and sizes["smallest"] == "64kB only"
    configs[0].ratio = _ratio(0.6, 0.55, 0.65)  # no longer within noise
    assert page_sizes(configs, "lower")["smallest"] == "64kB+2048kB"
    assert page_sizes(configs[2:], "lower") is None  # no mTHP set was tried
