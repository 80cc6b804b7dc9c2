"""hugebench probe: the cycle, the page checks, refused curves, the TLB-reach verdict, pools put back."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from hugebench import _core
from hugebench import experiment as spec_mod
from hugebench.workloads.tlbprobe import curves as curves_mod
from hugebench.workloads.tlbprobe import page_check
from hugebench.workloads.tlbprobe import plan as plan_mod
from hugebench.workloads.tlbprobe.figure import probe_figure
from hugebench.workloads.tlbprobe.text import describe

MIB = 1 << 20


@pytest.mark.parametrize("nodes", [2, 3, 7, 64, 1000, 65537])
@pytest.mark.parametrize("seed", [0, 1, 12345])
def test_the_permutation_is_one_cycle_through_every_node(nodes, seed):
    nxt = _core.tlbprobe_cycle(nodes, seed)
    assert sorted(nxt) == list(range(nodes))  # a permutation
    node, steps = 0, 0
    while True:
        node, steps = nxt[node], steps + 1
        if node == 0:
            break
        assert steps < nodes
    assert steps == nodes  # back at the start only after visiting every node: one cycle


def test_seeds_give_different_cycles():
    assert _core.tlbprobe_cycle(1000, 1) != _core.tlbprobe_cycle(1000, 2)


@pytest.mark.parametrize("pattern", ["chase", "mlp", "reach"])
def test_a_small_run_reports_its_shape(pattern):
    r = _core.tlbprobe(
        backing="4k", pattern=pattern, working_set_bytes=1 * MIB, accesses=20_000, chunks=8
    )
    assert r["ns_per_access"] > 0 and r["accesses"] > 0
    assert list(r["phases"]) == ["populate", "build", "chase"]
    assert r["nodes"] == (256 if pattern == "reach" else 16384)
    assert r["chains"] == (16 if pattern == "mlp" else 1)
    assert "MADV_NOHUGEPAGE" in r["map_flags"]


def test_bad_arguments_are_value_errors():
    with pytest.raises(ValueError, match="backing"):
        _core.tlbprobe(backing="8k")
    with pytest.raises(ValueError, match="working_set_bytes"):
        _core.tlbprobe(working_set_bytes=4096 * 100 + 1)


def _row(backing, huge, mapped=64 * MIB, before=0):
    key = (
        "phase.chase.smaps.Private_Hugetlb"
        if backing.startswith("hugetlb")
        else "phase.chase.smaps.AnonHugePages"
    )
    return {
        "backing": backing,
        "mapped_bytes": mapped,
        key: huge,
        "anon_huge_before_workload_bytes": before,
    }


def test_page_check_refuses_a_thp_buffer_without_huge_pages():
    assert page_check(_row("thp", 64 * MIB))["page_check"] == "ok"
    refused = page_check(_row("thp", 4 * MIB))
    assert refused["page_check"].startswith("THP coverage 6%")
    # What the interpreter had on huge pages before the workload is not the buffer's.
    assert page_check(_row("thp", 64 * MIB, before=60 * MIB))["page_check"] != "ok"


def test_page_check_of_4k_and_hugetlb():
    assert page_check(_row("4k", 0))["page_check"] == "ok"
    assert "4k buffer got" in page_check(_row("4k", 32 * MIB))["page_check"]
    assert page_check(_row("hugetlb-2m", 64 * MIB))["page_check"] == "ok"
    assert page_check(_row("hugetlb-1g", 0, mapped=1 << 30))["page_check"] != "ok"
    assert math.isnan(page_check({"backing": "thp"})["buffer_hp_coverage"])


def test_a_private_hugetlb_page_the_kernel_files_as_shared_counts():
    """A reused 1 GiB folio can show under Shared_Hugetlb of a MAP_PRIVATE mapping (seen on this kernel)."""
    row = {
        "backing": "hugetlb-1g",
        "mapped_bytes": 1 << 30,
        "phase.chase.smaps.Private_Hugetlb": 0,
        "phase.chase.smaps.Shared_Hugetlb": 1 << 30,
    }
    assert page_check(row) == {"buffer_hp_coverage": 1.0, "page_check": "ok"}


def _rows(points: dict, pattern="chase", reps=3, check=None):
    """points: backing -> {size: ns}; rows as the store loads them."""
    rows = []
    for backing, by_size in points.items():
        for size, ns in by_size.items():
            for rep in range(reps):
                rows.append(
                    {
                        "status": "ok",
                        "warmup": False,
                        "pattern": pattern,
                        "backing": backing,
                        "working_set_bytes": size,
                        "ns_per_access": ns * (1 + 0.01 * rep),
                        "page_check": (check or {}).get(backing, "ok"),
                    }
                )
    return pd.DataFrame(rows)


def test_a_thp_curve_that_did_not_get_huge_pages_is_refused_not_plotted():
    rows = _rows(
        {"4k": {4 * MIB: 100, 64 * MIB: 300}, "thp": {4 * MIB: 90, 64 * MIB: 200}},
        check={"thp": "THP coverage 0% of the buffer (< 90%): not a THP measurement"},
    )
    all_curves = curves_mod.curves(rows)
    thp = curves_mod.find(all_curves, "chase", "thp")
    assert thp.points == [] and len(thp.refused) == 2
    assert "THP coverage 0%" in thp.refused[0]["reason"]
    assert curves_mod.best_saving(all_curves) is None  # nothing verified to compare with
    fig = probe_figure(all_curves, curves_mod.reach_verdict(all_curves).to_dict())
    labels = [line.get_label() for ax in fig.axes for line in ax.lines]
    assert not any("thp" in label for label in labels)


def _reach(r4k: tuple, huge: dict):
    sizes = [4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB]
    points = {"4k": dict(zip(sizes, r4k))}
    points.update({b: dict(zip(sizes, v)) for b, v in huge.items()})
    return curves_mod.curves(_rows(points, pattern="reach"))


def test_reach_verdict_yes_when_a_huge_page_curve_stays_flat():
    v = curves_mod.reach_verdict(_reach((10, 12, 40, 60), {"hugetlb-2m": (10, 10, 10.5, 10.8)}))
    assert v.answer == "yes" and "hugetlb-2m" in v.reason


def test_reach_verdict_no_when_huge_pages_rise_too():
    # This KVM guest: the host backs it with small pages, so guest huge pages rise as well (less).
    v = curves_mod.reach_verdict(
        _reach((10, 12, 300, 430), {"thp": (10, 11, 200, 320), "hugetlb-1g": (10, 11, 180, 300)})
    )
    assert v.answer == "no" and v.rise_4k == pytest.approx(43, rel=0.05)


def test_reach_verdict_inconclusive_without_a_4k_rise_or_huge_curves():
    assert (
        curves_mod.reach_verdict(_reach((10, 10, 11, 11), {"thp": (10, 10, 10, 10)})).answer
        == "inconclusive"
    )
    assert curves_mod.reach_verdict(_reach((10, 20, 40, 80), {})).answer == "inconclusive"


def test_best_saving_and_text():
    all_curves = curves_mod.curves(
        _rows({"4k": {4 * MIB: 100, 1 << 30: 400}, "thp": {4 * MIB: 100, 1 << 30: 300}})
    )
    best = curves_mod.best_saving(all_curves)
    assert best["backing"] == "thp" and best["saving"] == pytest.approx(0.25, abs=0.01)
    summary = {
        "curves": [
            {"pattern": c.pattern, "backing": c.backing, "points": c.points, "refused": c.refused}
            for c in all_curves
        ],
        "verdict": curves_mod.reach_verdict(all_curves).to_dict(),
        "best_saving": best,
    }
    text = describe(summary)
    assert (
        "| chase | 1 GiB |" in text
        and "save at most 25%" in text
        and "TLB reach here: inconclusive" in text
    )


def test_working_sets_stop_at_a_safe_share_of_free_memory():
    assert plan_mod.working_sets(1 << 30, None) == [4 * MIB, 16 * MIB, 64 * MIB, 256 * MIB, 1 << 30]
    assert plan_mod.working_sets(8 << 30, 4 << 30) == [
        4 * MIB,
        16 * MIB,
        64 * MIB,
        256 * MIB,
        1 << 30,
    ]
    assert plan_mod.pool_pages(1 << 30) == {"hugetlb.2MB": 512, "hugetlb.1GB": 1}


def test_the_probe_spec_is_an_ordinary_experiment():
    text = plan_mod.probe_spec_text(
        [4 * MIB, 1 << 30], ["4k", "thp", "hugetlb-2m"], {"hugetlb.2MB": 512}, 3
    )
    spec = spec_mod.parse_spec(text, source="<probe>")
    assert spec.workload == "tlbprobe" and spec.system == {"hugetlb.2MB": 512}
    cells = spec_mod.cells(spec)
    assert {"backing": "4k", "pattern": "reach", "working_set_bytes": 1 << 30} not in cells
    assert len(cells) == 3 * 3 * 2 - 3  # reach only where its lines stay cache-resident


def test_pool_trial_puts_every_pool_back(fake_sys):
    two_mb = fake_sys.root / "proc/sys/vm/nr_hugepages"
    one_gb = fake_sys.root / "sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages"
    before = two_mb.read_text(), one_gb.read_text()
    fake_sys.pool_capacity["1048576kB"] = 0  # no contiguous gigabyte to be had
    answers = plan_mod.grantable_pools(
        {"hugetlb.2MB": 8, "hugetlb.1GB": 1},
        host=fake_sys.host,
        journal=fake_sys.journal_path,
    )
    assert answers["hugetlb.2MB"] == ""
    assert "asked the kernel for 1 huge pages" in answers["hugetlb.1GB"]
    assert (two_mb.read_text(), one_gb.read_text()) == before
    assert not fake_sys.journal_path.exists()


def test_doctor_and_latency_bars_use_the_cached_probe(tmp_path, monkeypatch):
    from hugebench import doctor
    from hugebench.report.figures import bar_plot
    from hugebench.workloads.tlbprobe import cache
    from hugebench.workloads.tlbprobe.figure import underlay_bars

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert "not measured" in doctor.check_probe().detail
    all_curves = curves_mod.curves(
        _rows({"4k": {4 * MIB: 100, 1 << 30: 400}, "thp": {4 * MIB: 90, 1 << 30: 300}})
    )
    summary = {
        "curves": [
            {"pattern": c.pattern, "backing": c.backing, "points": c.points, "refused": c.refused}
            for c in all_curves
        ],
        "verdict": curves_mod.reach_verdict(all_curves).to_dict(),
        "best_saving": curves_mod.best_saving(all_curves),
    }
    cache.write_summary(cache.cache_dir(), summary)
    assert "save at most 25%" in doctor.check_probe().detail
    cells = pd.DataFrame(
        {
            "status": "ok",
            "warmup": False,
            "allocator": ["glibc", "glibc", "tcmalloc"],
            "ns_per_lookup": [120.0, 125.0, 100.0],
            "peak_rss_bytes": [64 * MIB] * 3,
        }
    )
    fig = bar_plot(cells, ["allocator"], "ns_per_lookup")
    assert underlay_bars(fig.axes[0], cells, cache.read_summary())
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith("probe 4k") for t in texts) and any(
        t.startswith("probe thp") for t in texts
    )
