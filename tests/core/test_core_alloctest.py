"""The C++ allocator stress workload (alloctest) through hugebench._core, at small sizes."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from paths import DATA

from hugebench import _core, workloads

# The old laws (this project's defaults before issue 14), at 16 MiB live, 40k picks over all threads.
INVERSE = dict(size_law="inverse", slot_law="powerlaw", hot_slots="scattered", min_size=8)
SMALL = dict(
    INVERSE,
    iterations=40_000,
    iterations_per="total",
    warmup_iterations=5_000,
    slots=0,
    total_bytes=16 << 20,
    chunks=8,
)
# The original's laws and counting (slots in total, operations per thread) at a small size.
ORIGINAL_SMALL = dict(slots=200_000, iterations=100_000, chunks=8)
PHASES = ["setup", "warmup", "run", "teardown"]
RESULT_KEYS = {
    "phases",
    "threads",
    "cores",
    "oversubscribed",
    "allocator_mode",
    "touch",
    "size_law",
    "slot_law",
    "hot_slots",
    "void_run",
    "slots",
    "slots_per_thread",
    "pareto_exponent",
    "mean_size",
    "realised_mean_size",
    "hot_share",
    "iterations",
    "mallocs",
    "frees",
    "pairs",
    "ns_per_pair",
    "ns_per_pair_wall",
    "ns_per_pair_thread",
    "ns_per_op",
    "whole_s",
    "whole_ops",
    "ms_per_mop",
    "void_whole_s",
    "void_ms_per_mop",
    "void_ns_per_op",
    "ns_per_op_net",
    "ns_per_pair_net",
    "ms_per_mop_net",
    "chunk_ns_median",
    "chunk_ns_p10",
    "chunk_ns_p90",
    "peak_requested_bytes",
    "peak_requested_bytes_bound",
    "live_bytes_end",
    "live_blocks_end",
    "bytes_touched",
    "bytes_written",
    "bytes_read",
    "checksum",
    "mismatches",
    "counters",
}


def top_share(counts: np.ndarray, fraction: float) -> float:
    ordered = np.sort(counts)[::-1]
    return ordered[: int(round(fraction * len(counts)))].sum() / counts.sum()


def vm_rss_bytes() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS in /proc/self/status")


# --- the original's laws (the defaults) --------------------------------------------------------------


def test_band_sizes_halve_band_by_band_and_average_45_bytes():
    d = _core.alloctest_distributions(4_000_000, 1000, seed=4)
    sizes = d["sizes"].astype(np.int64)
    assert sizes.min() == 5 and 60_000 < sizes.max() <= 65536
    # Band k = (2^k, 2^(k+1)]: probability 2^-(k-1) for k = 2..14, the last band (32K, 64K] 2^-13.
    band = np.ceil(np.log2(sizes)).astype(int) - 1
    counts = np.bincount(band, minlength=16)[2:16] / len(sizes)
    expected = np.array([2.0 ** -(k - 1) for k in range(2, 15)] + [2.0**-13])
    assert expected.sum() == pytest.approx(1.0)
    tolerance = 4 * np.sqrt(expected / len(sizes)) + 1e-4  # ~4 sigma of a binomial share
    assert np.all(np.abs(counts - expected) < tolerance), (counts, expected)
    # Uniform within a band: the lower and upper halves of (4, 8] and (256, 512] hold the same mass.
    assert np.mean(sizes[band == 2] <= 6) == pytest.approx(0.5, abs=0.01)
    assert np.mean(sizes[band == 8] <= 384) == pytest.approx(0.5, abs=0.02)
    assert d["mean_size"] == pytest.approx(45.5, abs=0.01)
    assert sizes.mean() == pytest.approx(45.5, rel=0.03)


@pytest.mark.parametrize(
    "fraction, share", [(0.000064, 0.262), (0.0016, 0.655), (0.017, 0.90), (0.2, 0.99)]
)
def test_six_level_pareto_shares(fraction, share):
    slots = 1 << 20
    d = _core.alloctest_distributions(4_000_000, slots, seed=5)
    counts = d["slot_counts"]
    assert counts.sum() == 4_000_000
    assert counts[: int(round(fraction * slots))].sum() / counts.sum() == pytest.approx(
        share, abs=0.01
    )


def test_hot_share_reports_the_hottest_0_16_percent():
    slots = 1 << 20
    d = _core.alloctest_distributions(2_000_000, slots, seed=6)
    assert d["hot_slots"] == round(0.0016 * slots)
    assert d["hot_share"] == pytest.approx(d["slot_counts"][: d["hot_slots"]].sum() / 2_000_000)
    assert d["hot_share"] == pytest.approx(0.655, abs=0.01)
    assert d["pareto_exponent"] is None
    old = _core.alloctest_distributions(2_000_000, slots, seed=6, **INVERSE)
    assert old["hot_share"] == pytest.approx(0.37, abs=0.02)  # the old law's hottest 0.16%: ~37%


def test_hot_slots_are_the_lowest_indices_when_contiguous():
    d = _core.alloctest_distributions(1_000_000, 100_000, seed=2)
    assert np.array_equal(d["slot_counts"], d["rank_counts"])  # no permutation
    counts = d["slot_counts"]
    # Seven contiguous groups, hotter first: mean picks per slot never rises with the index.
    edges = np.cumsum([0, 6, 154, 1536, 8192, 24576, 39322])
    means = [counts[a:b].mean() for a, b in zip(edges[:-1], edges[1:])] + [
        counts[edges[-1] :].mean()
    ]
    assert all(a > b for a, b in zip(means, means[1:])), means
    scattered = _core.alloctest_distributions(1_000_000, 100_000, seed=2, hot_slots="scattered")
    assert np.array_equal(
        np.sort(scattered["slot_counts"]), np.sort(counts)
    )  # same law, other places
    assert scattered["slot_counts"][:160].sum() < 0.05 * 1_000_000


def test_every_law_combination_draws():
    for size_law in ("bands", "inverse"):
        for slot_law in ("pareto6", "powerlaw"):
            for hot in ("contiguous", "scattered"):
                d = _core.alloctest_distributions(
                    10_000, 1000, min_size=5, size_law=size_law, slot_law=slot_law, hot_slots=hot
                )
                assert d["slot_counts"].sum() == 10_000 and d["sizes"].min() >= 5


# --- the old laws (size_law inverse, slot_law powerlaw, hot_slots scattered) -------------------------


@pytest.mark.parametrize("slots", [1000, 100_000])
def test_hottest_fifth_of_slots_gets_four_fifths_of_picks(slots):
    d = _core.alloctest_distributions(2_000_000, slots, seed=5, **INVERSE)
    assert d["slot_counts"].sum() == d["rank_counts"].sum() == 2_000_000
    assert top_share(d["slot_counts"], 0.2) == pytest.approx(0.8, abs=0.015)
    # The law is by rank (rank 0 hottest), so the first fifth of the ranks carries the 80%.
    assert d["rank_counts"][: slots // 5].sum() / 2_000_000 == pytest.approx(0.8, abs=0.01)
    assert d["rank_counts"][0] > d["rank_counts"][slots // 100] > d["rank_counts"][slots // 2]
    assert 0 < d["pareto_exponent"] < 2


def test_hot_slots_are_scattered_not_packed():
    d = _core.alloctest_distributions(1_000_000, 1000, seed=2, **INVERSE)
    hottest = np.argsort(d["slot_counts"])[::-1][:200]
    assert set(hottest) != set(range(200))
    assert 380 < hottest.mean() < 620  # a uniform sample of 200 ids out of 1000 has mean ~500 +- 20
    other_seed = _core.alloctest_distributions(1_000_000, 1000, seed=3, **INVERSE)
    assert set(np.argsort(other_seed["slot_counts"])[::-1][:20]) != set(hottest[:20])


def test_sizes_follow_one_over_size():
    d = _core.alloctest_distributions(1_000_000, 1000, max_size=65536, seed=4, **INVERSE)
    sizes = d["sizes"]
    assert sizes.min() == 8 and 60_000 < sizes.max() <= 65536
    # p(size) ~ 1/size: each of the 13 octaves [8*2^k, 8*2^(k+1)) holds the same probability mass.
    octave_counts = np.bincount(np.floor(np.log2(sizes / 8)).astype(int), minlength=13)[:13]
    assert octave_counts / len(sizes) == pytest.approx(np.full(13, 1 / 13), rel=0.05)
    assert sizes.mean() == pytest.approx(d["mean_size"], rel=0.02)


def test_single_size_law_draws_that_size():
    d = _core.alloctest_distributions(10_000, 50, **{**INVERSE, "min_size": 100}, max_size=100)
    assert set(np.unique(d["sizes"])) == {100}


# --- the workload --------------------------------------------------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
def test_every_byte_written_is_read_back(threads):
    r = _core.alloctest(threads=threads, seed=7, **SMALL)
    assert set(r) == RESULT_KEYS
    assert list(r["phases"]) == PHASES and all(s > 0 for s in r["phases"].values())
    assert (r["threads"], r["allocator_mode"], r["touch"]) == (threads, "malloc", "write-read")
    assert r["mismatches"] == 0
    assert r["bytes_read"] == r["bytes_written"] > 0  # teardown reads back what the run left live
    assert r["mallocs"] + r["frees"] == r["iterations"] == SMALL["iterations"]
    assert r["pairs"] == SMALL["iterations"] / 2
    assert r["slots"] == r["slots_per_thread"] * threads
    # Timed-phase bytes: each malloc writes its block, each free reads one; sizes average mean_size.
    expected = r["iterations"] * r["mean_size"]
    assert r["bytes_touched"] == pytest.approx(expected, rel=0.15)
    assert r["checksum"] != 0


def test_full_touch_reads_everything_twice_and_none_touches_nothing():
    full = _core.alloctest(touch="full", seed=7, **SMALL)
    assert full["mismatches"] == 0
    assert full["bytes_read"] == 2 * full["bytes_written"] > 0
    none = _core.alloctest(touch="none", seed=7, **SMALL)
    assert (
        none["bytes_written"]
        == none["bytes_read"]
        == none["bytes_touched"]
        == none["checksum"]
        == 0
    )
    assert none["mismatches"] == 0 and none["iterations"] == SMALL["iterations"]


def test_original_touch_writes_the_size_byte_and_sums_it_unchecked():
    # One block size (300 B: 37 words and 4 tail bytes), so the sum of every read-back is known: the
    # original fills with the size's low byte (300 & 0xFF = 44) and adds the words and the tail bytes.
    size = 300
    r = _core.alloctest(touch="original", seed=7, **{**SMALL, "min_size": size, "max_size": size})
    assert r["touch"] == "original" and r["mismatches"] is None  # summed, never compared
    assert r["mallocs"] + r["frees"] == r["iterations"] == SMALL["iterations"]
    assert r["bytes_read"] == r["bytes_written"] > 0 and r["bytes_written"] % size == 0
    byte = size & 0xFF
    per_block = (size // 8) * byte * 0x0101010101010101 + (size % 8) * byte
    assert r["checksum"] == (r["bytes_read"] // size) * per_block % (1 << 64)
    assert (
        r["bytes_touched"] == r["iterations"] * size
    )  # every malloc writes a block, every free reads one


def test_original_touch_with_its_void_pass_at_the_original_laws():
    r = _core.alloctest(touch="original", void_run="in-process", **{**ORIGINAL_SMALL, "chunks": 1})
    assert r["iterations"] == ORIGINAL_SMALL["iterations"] and r["mismatches"] is None
    assert r["ns_per_pair_net"] == pytest.approx(r["ns_per_pair"] - 2 * r["void_ns_per_op"])
    assert r["realised_mean_size"] == pytest.approx(45.5, rel=0.3)


@pytest.fixture(scope="module")
def logging_malloc(tmp_path_factory) -> Path:
    """tests/data/logging_malloc.c built: big mallocs in order, operator new[]/delete[] counted."""
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build the logging allocator")
    lib = tmp_path_factory.mktemp("alloc") / "liblogging_malloc.so"
    gcc = ["gcc", "-shared", "-fPIC", "-O2", "-o", str(lib), str(DATA / "logging_malloc.c")]
    subprocess.run(gcc, check=True)
    return lib


def logged_alloctest(lib: Path, cwd: Path, **params) -> tuple[dict, list[str]]:
    """alloctest in a process with the logging allocator preloaded: (its counts of mallocs and frees in the
    timed run, the allocator's lines)."""
    code = (
        "import json; from hugebench import _core; "
        f"r = _core.alloctest(**{params!r}); print(json.dumps([r['mallocs'], r['frees']]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "LD_PRELOAD": str(lib)},
        cwd=cwd,  # not the repository's hugebench/ sources
        capture_output=True,
        text=True,
        check=True,
    )
    mallocs, frees = json.loads(done.stdout)
    return {"mallocs": mallocs, "frees": frees}, done.stderr.splitlines()


def test_the_in_process_void_pass_takes_its_block_before_its_slot_table(logging_malloc, tmp_path):
    """As the original's void allocator does in init(): the order can decide where an allocator puts the
    two (with TCMalloc, whether the void pass's table lands on the real pass's freed one: 128k page faults
    at the original's size)."""
    slots = 1 << 17
    params = {**ORIGINAL_SMALL, "slots": slots, "touch": "original", "void_run": "in-process"}
    _, lines = logged_alloctest(logging_malloc, tmp_path, **params)
    table, void_block = slots * 16, 16 << 20  # 16-byte slots; the original's 16 MiB void buffer
    sizes = [int(line.split()[1]) for line in lines if line.startswith("malloc ")]
    assert [s for s in sizes if s in (table, void_block)] == [table, void_block, table]


@pytest.mark.parametrize("mode", ["malloc", "new"])
def test_allocator_mode_new_takes_every_block_with_operator_new_array(
    logging_malloc, tmp_path, mode
):
    """The original's calls (new uint8_t[] / delete[]) with allocator_mode new, for every block of the fill,
    the timed run and the teardown, and none in the void pass; malloc/free otherwise."""
    params = {
        **ORIGINAL_SMALL,
        "touch": "original",
        "void_run": "in-process",
        "allocator_mode": mode,
    }
    run, lines = logged_alloctest(logging_malloc, tmp_path, **params)
    news, deletes = (int(n) for n in lines[-1].split()[1::2])  # "new[] N delete[] M"
    if mode == "malloc":
        assert news == deletes == 0
    else:  # the fill's blocks (about half the slots) and the run's: every one deleted by the end
        fill = news - run["mallocs"]
        assert (
            news == deletes
            and abs(fill - ORIGINAL_SMALL["slots"] / 2) < 0.02 * ORIGINAL_SMALL["slots"]
        )


def test_one_chunk_is_the_whole_timed_loop():
    r = _core.alloctest(touch="original", **{**ORIGINAL_SMALL, "chunks": 1})
    # One clock read before the loop and one after it: the one chunk is the run phase's loop exactly.
    assert r["chunk_ns_median"] == r["chunk_ns_p10"] == r["chunk_ns_p90"]
    assert r["chunk_ns_median"] == pytest.approx(r["ns_per_pair_thread"], rel=1e-9)


def test_checksum_is_reproducible_and_depends_on_the_seed():
    a = _core.alloctest(threads=2, seed=11, **SMALL)
    b = _core.alloctest(threads=2, seed=11, **SMALL)
    c = _core.alloctest(threads=2, seed=12, **SMALL)
    assert (a["checksum"], a["bytes_written"], a["mallocs"]) == (
        b["checksum"],
        b["bytes_written"],
        b["mallocs"],
    )
    assert a["checksum"] != c["checksum"]


def test_steady_state_holds_about_total_bytes():
    r = _core.alloctest(
        **INVERSE, iterations=50_000, warmup_iterations=0, slots=0, total_bytes=64 << 20
    )
    assert r["slots"] == pytest.approx(2 * (64 << 20) / r["mean_size"], abs=2)
    assert 0.9 * (64 << 20) < r["peak_requested_bytes"] < 1.2 * (64 << 20)
    assert r["live_bytes_end"] <= r["peak_requested_bytes"] == r["peak_requested_bytes_bound"]
    assert r["live_blocks_end"] == pytest.approx(r["slots"] / 2, rel=0.1)


def test_two_threads_split_the_budget():
    one = _core.alloctest(threads=1, **SMALL)
    two = _core.alloctest(threads=2, **SMALL)
    assert two["slots_per_thread"] == one["slots_per_thread"] // 2
    assert two["peak_requested_bytes"] == pytest.approx(one["peak_requested_bytes"], rel=0.15)
    assert two["live_bytes_end"] <= two["peak_requested_bytes"] <= two["peak_requested_bytes_bound"]


def test_explicit_slots_override_total_bytes():
    r = _core.alloctest(
        slots=3000, total_bytes=1, threads=2, iterations=10_000, warmup_iterations=0
    )
    assert (r["slots"], r["slots_per_thread"]) == (3000, 1500)
    r = _core.alloctest(slots=3000, slots_per="thread", threads=2, iterations=10_000)
    assert (r["slots"], r["slots_per_thread"]) == (6000, 3000)


# --- the original's defaults: counts, units, realised laws ---------------------------------------------


@pytest.mark.parametrize("threads", [1, 2])
def test_operations_are_per_thread_and_slots_in_total_by_default(threads):
    r = _core.alloctest(threads=threads, warmup_iterations=1000, **ORIGINAL_SMALL)
    assert r["iterations"] == r["mallocs"] + r["frees"] == threads * ORIGINAL_SMALL["iterations"]
    assert r["whole_ops"] == threads * (ORIGINAL_SMALL["iterations"] + 1000)
    assert (
        r["slots"] == ORIGINAL_SMALL["slots"]
        and r["slots_per_thread"] == ORIGINAL_SMALL["slots"] // threads
    )
    total = _core.alloctest(
        threads=threads, iterations_per="total", **{**ORIGINAL_SMALL, "iterations": 30_001}
    )
    assert total["iterations"] == total["whole_ops"] == 30_001
    assert r["mismatches"] == 0 and r["bytes_read"] == r["bytes_written"] > 0


def test_rows_record_the_realised_laws():
    r = _core.alloctest(**{**ORIGINAL_SMALL, "slots": 1 << 20, "iterations": 1_000_000})
    assert (r["size_law"], r["slot_law"], r["hot_slots"]) == ("bands", "pareto6", "contiguous")
    assert r["mean_size"] == pytest.approx(45.5)
    assert r["realised_mean_size"] == pytest.approx(
        45.5, rel=0.1
    )  # heavy tail: 64 KiB blocks are 1 in 16k
    assert r["hot_share"] == pytest.approx(0.655, abs=0.01)
    old = _core.alloctest(**SMALL)
    assert (
        old["realised_mean_size"] == pytest.approx(old["mean_size"], rel=0.15)
        and old["mean_size"] > 5000
    )
    assert old["hot_share"] < 0.5


def test_both_units_are_reported_and_agree():
    r = _core.alloctest(threads=2, **ORIGINAL_SMALL)
    assert r["ns_per_op"] == pytest.approx(r["ns_per_pair"] / 2)
    phases = sum(r["phases"].values())
    assert phases <= r["whole_s"] < phases + 0.5  # plus thread start and join only
    assert r["ms_per_mop"] == pytest.approx(r["whole_s"] * 1e3 / (r["whole_ops"] / 1e6))
    # The whole run includes the fill and teardown, so per operation it costs more than the loop alone.
    assert r["ms_per_mop"] * 1e-3 * 1e9 / 1e6 > r["ns_per_pair_wall"] / 2
    assert (
        r["void_run"] == "separate" and r["ms_per_mop_net"] is None and r["ns_per_op_net"] is None
    )


def test_in_process_void_run_reports_net_figures():
    r = _core.alloctest(void_run="in-process", **ORIGINAL_SMALL)
    assert (
        r["void_run"] == "in-process" and r["allocator_mode"] == "malloc" and r["mismatches"] == 0
    )
    assert r["void_whole_s"] > 0 and r["void_ns_per_op"] > 0
    assert r["ns_per_op_net"] == pytest.approx(r["ns_per_op"] - r["void_ns_per_op"])
    assert r["ns_per_pair_net"] == pytest.approx(2 * r["ns_per_op_net"])
    assert r["ms_per_mop_net"] == pytest.approx(r["ms_per_mop"] - r["void_ms_per_mop"])
    with pytest.raises(ValueError, match="in-process"):
        _core.alloctest(void_run="in-process", allocator_mode="void", **ORIGINAL_SMALL)


def test_threads_up_to_twice_the_cores_and_oversubscription_recorded():
    cores = os.cpu_count()  # the extension counts hardware threads the same way
    r = _core.alloctest(threads=cores + 1, **{**ORIGINAL_SMALL, "iterations": 2000})
    assert (r["cores"], r["oversubscribed"]) == (cores, True)
    assert (
        _core.alloctest(threads=1, **{**ORIGINAL_SMALL, "iterations": 2000})["oversubscribed"]
        is False
    )
    with pytest.raises(ValueError, match="twice"):
        _core.alloctest(threads=2 * cores + 1, **ORIGINAL_SMALL)


def test_timing_numbers_are_consistent():
    r = _core.alloctest(threads=2, **SMALL)
    assert r["chunk_ns_p10"] <= r["chunk_ns_median"] <= r["chunk_ns_p90"]
    assert r["ns_per_pair"] == r["ns_per_pair_thread"] > 0
    assert r["ns_per_pair_wall"] == pytest.approx(r["phases"]["run"] * 1e9 / r["pairs"])


# --- the void allocator ---------------------------------------------------------------------------------


def test_void_mode_runs_the_same_loop_without_memory():
    params = dict(SMALL, total_bytes=96 << 20, seed=9)
    rss = {}

    def hook(phase, edge):
        rss[(phase, edge)] = vm_rss_bytes()

    real = _core.alloctest(hook=hook, **params)
    real_rss = rss[("run", "end")]
    void = _core.alloctest(allocator_mode="void", hook=hook, **params)
    void_growth = rss[("run", "end")] - rss[("setup", "begin")]

    assert (
        void["allocator_mode"] == "void" and void["mismatches"] is None
    )  # one shared block: not checkable
    # Same random sequence: same picks, same sizes, same bytes written and read.
    for key in (
        "iterations",
        "mallocs",
        "frees",
        "pairs",
        "bytes_written",
        "bytes_read",
        "bytes_touched",
        "peak_requested_bytes",
    ):
        assert void[key] == real[key], key
    assert void["pairs"] == SMALL["iterations"] / 2
    assert real_rss > real["live_bytes_end"] > 64 << 20  # the blocks really were in memory...
    assert void_growth < 16 << 20  # ...and the void allocator needs none of it


# --- hooks, counters, errors ----------------------------------------------------------------------------


def test_hook_sees_every_phase_in_order_and_counters_cover_the_run():
    import resource

    calls, cpu = [], {}

    def hook(phase, edge):
        calls.append((phase, edge))
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu[(phase, edge)] = usage.ru_utime + usage.ru_stime

    counters = [("task_clock", _core.PERF_TYPE_SOFTWARE, _core.PERF_COUNT_SW_TASK_CLOCK, 0)]
    r = _core.alloctest(threads=2, hook=hook, counters=counters, **SMALL)
    assert calls == [(p, e) for p in PHASES for e in ("begin", "end")]
    task = r["counters"]["task_clock"]
    if task["error"]:
        pytest.skip(f"software counters unavailable here: {task['error']}")
    # task-clock counts both workers (inherit) during the run only: the CPU time the process spent in that
    # phase (on-CPU time both ways, so a loaded machine that deschedules the workers changes neither).
    run_cpu = cpu[("run", "end")] - cpu[("run", "begin")]
    assert task["value"] * 1e-9 >= 0.6 * run_cpu - 0.02  # both workers counted, not one
    assert task["value"] * 1e-9 <= 1.3 * run_cpu + 0.02
    # ...and never more than the workers' own loop time: setup is not in it.
    assert task["value"] * 1e-9 <= r["ns_per_pair_thread"] * r["pairs"] * 1e-9 * 1.2 + 0.02


def test_an_exception_in_the_hook_propagates_and_frees_the_blocks():
    def hook(phase, edge):
        if (phase, edge) == ("run", "begin"):
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        _core.alloctest(threads=2, hook=hook, **SMALL)
    assert _core.alloctest(threads=2, **SMALL)["mismatches"] == 0


@pytest.mark.parametrize(
    "bad",
    [
        dict(threads=0),
        dict(iterations=0),
        dict(warmup_iterations=-1),
        dict(chunks=0),
        dict(min_size=0),
        dict(min_size=100, max_size=99),
        dict(max_size=(1 << 30) + 1),
        dict(touch="sometimes"),
        dict(allocator_mode="jemalloc"),
        dict(slots=-1),
        dict(slots=5),
        dict(total_bytes=0),
        dict(slots=15, threads=2),
        dict(threads=1000),
        dict(size_law="uniform"),
        dict(slot_law="zipf"),
        dict(hot_slots="packed"),
        dict(iterations_per="process"),
        dict(slots_per="socket"),
        dict(void_run="later"),
        dict(size_law="bands", min_size=8),
        dict(size_law="bands", min_size=5, max_size=60000),
        dict(size_law="bands", min_size=5, max_size=8),
    ],
)
def test_invalid_arguments_raise_value_error(bad):
    with pytest.raises(ValueError):
        _core.alloctest(**{**SMALL, **bad})


@pytest.mark.parametrize(
    "bad",
    [
        dict(n_draws=-1),
        dict(slots=5),
        dict(min_size=0),
        dict(max_size=4),
        dict(size_law="bands"),
        dict(slot_law="x"),
    ],
)
def test_invalid_distribution_arguments_raise_value_error(bad):
    args = dict(n_draws=10, slots=100, min_size=8, max_size=64, seed=1, size_law="inverse")
    with pytest.raises(ValueError):
        _core.alloctest_distributions(**{**args, **bad})


# --- the registry entry ----------------------------------------------------------------------------------


def test_registry_defaults_are_accepted_by_core_and_estimate_memory():
    entry = workloads.get("alloctest")
    defaults = {name: p.default for name, p in entry.params.items()}
    assert (defaults["slots"], defaults["iterations"]) == (1 << 25, 100_000_000)
    assert (defaults["slots_per"], defaults["iterations_per"], defaults["warmup_iterations"]) == (
        "total",
        "thread",
        0,
    )
    assert (defaults["size_law"], defaults["slot_law"], defaults["hot_slots"]) == (
        "bands",
        "pareto6",
        "contiguous",
    )
    small = {**defaults, **ORIGINAL_SMALL}
    assert set(r := _core.alloctest(**small)) == RESULT_KEYS
    assert entry.timed_phase in r["phases"] and entry.primary_metric in r
    for metric, _, _ in entry.metrics[:6]:
        assert metric in r, metric
    # The original's footprint: ~16.8M live blocks of ~45.5 B (~0.76 GB) + a 16 B-per-slot table (~0.54 GB).
    full = entry.memory_estimate(defaults)
    assert 1.3e9 < full < 2.5e9
    void = entry.memory_estimate({**defaults, "allocator_mode": "void"})
    assert (1 << 25) * 16 < void < (1 << 25) * 16 + (64 << 20)  # the slot table stays
    old = {**defaults, **INVERSE, "slots": 0, "total_bytes": 1_300_000_000}
    assert 1.3e9 < entry.memory_estimate(old) < 2.5 * 1.3e9
    assert math.isfinite(entry.memory_estimate({**old, "min_size": 64, "max_size": 64}))
    assert entry.time_estimate(defaults) > entry.time_estimate(
        {**defaults, "iterations": 1_000_000}
    )
