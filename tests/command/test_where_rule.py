"""The rule ``where`` suggests (machine.regions.suggested_rule), on regions built by hand: what a real
server's memory looks like (redis under redis-benchmark: every jemalloc extent from one call site, a few
small dense ones that fit the TLB, an unnamed paying region) and what a rule must leave out (a sparse or a
cold region)."""

from __future__ import annotations

from hugebench.machine import regions as rg
from hugebench.machine.select_rule import MAX_SITES, parse

MIB = 1 << 20
REACH = rg.Reach(1536, "assumed")


def _region(start: int, size_mib: float, rss_mib: float, hot_mib: float, site=None, kind="anon"):
    size, rss, hot = int(size_mib * MIB), int(rss_mib * MIB), int(hot_mib * MIB)
    samples = [
        rg.Sample(0.0, size, rss, rss, 0, 1, frozenset()),
        rg.Sample(1.0, size, rss, hot, 0, 1, frozenset()),
    ]
    return rg.Region(1, "prog", start, "", kind, samples, site)


def _verdicts(*regions):
    return rg.summarise(regions, REACH)


def test_the_hot_region_alone_by_its_site():
    hot = _region(0x1000_0000, 512, 512, 500, "prog+0x10")
    cold = _region(0x9000_0000, 2048, 32, 0, "prog+0x20")
    assert rg.suggested_rule(_verdicts(hot, cold)) == "site=prog+0x10"


def test_small_dense_regions_from_the_same_site_do_not_block_it():
    """redis: one jemalloc call site for every extent; the small ones fit the TLB but are dense, so huge
    pages cost them nothing; an unnamed paying region holding under a fifth of the hot set is left out."""
    site = "libjemalloc.so.2+0x94b5a"
    extents = [_region(0x1000_0000 + i * 64 * MIB, 36, 35, 31 - i, site) for i in range(5)]
    small = _region(0x7000_0000, 3, 3, 2.5, site)
    unnamed = _region(0x7100_0000, 6.4, 6.4, 5.5)
    verdicts = _verdicts(*extents, small, unnamed)
    assert {v.verdict for v in verdicts if v.region is small} == {"fits"}
    rule = rg.suggested_rule(verdicts)
    assert rule == f"site={site}"
    parse(rule)  # a rule the library takes


def test_a_sparse_region_from_the_same_site_refuses_the_site_and_a_window_that_holds_it():
    site = "prog+0x10"
    hot = _region(0x1000_0000, 512, 512, 500, site)
    sparse = _region(0x5000_0000, 600, 100, 90, site)  # hot but resident a sixth of its size
    assert [v.verdict for v in _verdicts(sparse) if v.region is sparse] == ["sparse"]
    assert rg.suggested_rule(_verdicts(hot, sparse)) == "anon>=512M,anon<600M"
    inside = _region(0x5000_0000, 400, 10, 0, site)  # cold, inside the window of the paying sizes
    other = _region(0x6000_0000, 300, 300, 290, "prog+0x30")
    assert rg.suggested_rule(_verdicts(hot, other, inside)) is None


def test_unnamed_paying_regions_holding_most_of_the_hot_set_get_a_size_window():
    named = _region(0x1000_0000, 64, 64, 60, "prog+0x10")
    unnamed = _region(0x2000_0000, 512, 512, 500)
    cold = _region(0x9000_0000, 2048, 32, 0)
    assert rg.suggested_rule(_verdicts(named, unnamed, cold)) == "anon>=64M,anon<2048M"


def test_more_sites_than_the_library_takes_keep_the_hottest():
    many = [
        _region(0x1000_0000 + i * 128 * MIB, 100, 100, 90 - i, f"prog+0x{i:x}")
        for i in range(MAX_SITES + 1)
    ]
    rule = rg.suggested_rule(_verdicts(*many))
    assert rule == ",".join(f"site=prog+0x{i:x}" for i in range(MAX_SITES))
    parse(rule)


def test_a_site_that_also_made_a_harmed_region_is_left_out_when_the_others_hold_the_hot_set():
    """The JVM: its 1 GiB heap from one call site, small paying reservations from another site that also
    reserved a cold one: huge pages for the heap's site alone."""
    heap = _region(0x1000_0000, 1022, 1021, 1000, "libjvm.so+0xc2adf2")
    small = [
        _region(0x8000_0000 + i * 32 * MIB, 16, 16, 16, "libjvm.so+0xc2a7ce") for i in range(2)
    ]
    reserved = _region(0xA000_0000, 240, 10, 0, "libjvm.so+0xc2a7ce")  # a cold reservation
    assert rg.suggested_rule(_verdicts(heap, *small, reserved)) == "site=libjvm.so+0xc2adf2"


RETITLED = r"""
#include <stdlib.h>
#include <string.h>
int main(int argc, char** argv) {
    /* a server's process title: argv[0]'s memory rewritten (redis-server names its socket there) */
    memset(argv[0], 0, strlen(argv[0]));
    strcpy(argv[0], "/tmp/x/redis.sock");
    volatile char* block = malloc(8 << 20);
    block[0] = 1;
    return block == 0;
}
"""


def test_a_site_in_the_main_program_is_named_by_its_file_not_its_rewritten_argv0(tmp_path):
    import shutil
    import subprocess

    import pytest

    from hugebench.machine.select_rule import library

    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc)")
    source, program = tmp_path / "retitled.c", tmp_path / "retitled-program"
    source.write_text(RETITLED)
    subprocess.run(["cc", "-O1", "-o", str(program), str(source)], check=True)
    logs = tmp_path / "logs"
    logs.mkdir()
    subprocess.run(
        [str(program)], env={"LD_PRELOAD": library(), "HB_SELECT_LOG": str(logs)}, check=True
    )
    sites = [site for _, _, size, site in rg.read_sites(logs) if size >= 8 << 20]
    assert sites and all(s.startswith("retitled-program+0x") for s in sites), sites


def test_arenas_of_an_allocator_with_sparse_ones_among_them_point_to_its_own_setting():
    from hugebench.machine.where_view import _allocator_of

    site = "libjemalloc.so.2+0x94b5a"
    paying = [_region(0x1000_0000 + i * 64 * MIB, 36 + 8 * i, 35, 30, site) for i in range(3)]
    sparse = _region(0x7000_0000, 40, 6.7, 6.7, site)  # inside the paying sizes' window
    verdicts = _verdicts(*paying, sparse)
    assert rg.suggested_rule(verdicts) is None
    assert _allocator_of(verdicts) == "libjemalloc"
    assert _allocator_of(_verdicts(_region(0x1000_0000, 64, 64, 60, "prog+0x10"))) is None


def test_the_watch_samples_when_due_and_stretches_its_interval_to_its_cost_share():
    """The sampler is called every tick of the wait (a second or less) and samples when due: at the
    interval, or later so its own time stays within max_share of one CPU."""
    import os
    import time

    watch = rg.Watch(os.getpid(), interval=30.0)
    watch.tick()
    watch.tick()  # 30 s are not over
    assert watch.ticks == 1 and watch.due > time.perf_counter() + 29
    stretched = rg.Watch(os.getpid(), interval=0.0, max_share=0.001)
    began = time.perf_counter()
    stretched.tick()
    assert stretched.ticks == 1
    assert stretched.due >= began + stretched.cost_s / 0.001 - rg.EARLY_S - 0.01
    stretched.due = 0.0
    stretched.tick()
    assert stretched.ticks == 2


def _view(verdicts):
    from types import SimpleNamespace

    from hugebench.machine.where_view import View

    watched = SimpleNamespace(watch=SimpleNamespace(ticks=2, cost_s=0.01), wall_s=2.0, code=0)
    watched.timed_out = False
    return View(["./prog"], list(verdicts), REACH, watched, 1.0, True)


def test_a_region_the_kernel_merged_from_small_blocks_gets_no_size_rule():
    """The judge panel's heap program: 4096 blocks of 256 KiB, merged by the kernel into one 806 MiB
    mapping. A rule selects blocks as they are made, so 'anon>=806M' selected none of it (its deployed
    'selective' configuration was as-is); ``where`` says why and suggests no rule."""
    merged = _region(0x1000_0000, 806, 806, 700)
    cold = _region(0x9000_0000, 2048, 32, 0, "prog+0x20")
    rg.attach_sites([merged, cold], [(1, 0x9000_0000, 2048 * MIB, "prog+0x20")])
    assert merged.block == 0 and rg.small_blocks(merged) and cold.block == 2048 * MIB
    verdicts = _verdicts(merged, cold)
    assert [v.verdict for v in verdicts if v.region is merged] == ["pays"]
    assert rg.suggested_rule(verdicts) is None
    from hugebench.machine.where_view import text

    said = " ".join(text(_view(verdicts)))
    assert "made of blocks below 2 MiB" in said and "no rule selects" in said, said


def test_a_size_window_is_the_size_of_the_blocks_not_of_the_merged_region():
    """Two 300 MiB blocks merged into one 600 MiB region, from a site that also made a sparse one: the
    window starts at 300 MiB (what the preload sees), and a paying region of small blocks beside it is
    said to be left out."""
    site = "prog+0x10"
    merged = _region(0x1000_0000, 600, 600, 550)
    sparse = _region(0x5000_0000, 700, 100, 90)
    small = _region(0x9000_0000, 64, 64, 60)
    rg.attach_sites(
        [merged, sparse, small],
        [
            (1, 0x1000_0000, 300 * MIB, site),
            (1, 0x1000_0000 + 300 * MIB, 300 * MIB, site),
            (1, 0x5000_0000, 700 * MIB, site),
        ],
    )
    verdicts = _verdicts(merged, sparse, small)
    assert [v.verdict for v in verdicts if v.region is sparse] == ["sparse"]
    rule = rg.suggested_rule(verdicts)
    assert rule == "anon>=300M,anon<700M", rule
    from hugebench.machine.where_view import text

    said = " ".join(text(_view(verdicts)))
    assert "left out: 1 paying region(s)" in said and "1 of blocks below 2 MiB" in said, said
