"""The C++ allocator stress workload (alloctest) through hugebench._core, at small sizes."""

from __future__ import annotations

import math

import numpy as np
import pytest

from hugebench import _core, workloads

SMALL = dict(iterations=40_000, warmup_iterations=5_000, total_bytes=16 << 20, chunks=8)
PHASES = ["setup", "warmup", "run", "teardown"]
RESULT_KEYS = {
    "phases", "threads", "allocator_mode", "touch", "slots", "slots_per_thread", "pareto_exponent", "mean_size",
    "iterations", "mallocs", "frees", "pairs", "ns_per_pair", "ns_per_pair_wall", "ns_per_pair_thread",
    "chunk_ns_median", "chunk_ns_p10", "chunk_ns_p90", "peak_requested_bytes", "peak_requested_bytes_bound",
    "live_bytes_end", "live_blocks_end", "bytes_touched", "bytes_written", "bytes_read", "checksum",
    "mismatches", "counters",
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


# --- the two laws -------------------------------------------------------------------------------------


@pytest.mark.parametrize("slots", [1000, 100_000])
def test_hottest_fifth_of_slots_gets_four_fifths_of_picks(slots):
    d = _core.alloctest_distributions(2_000_000, slots, seed=5)
    assert d["slot_counts"].sum() == d["rank_counts"].sum() == 2_000_000
    assert top_share(d["slot_counts"], 0.2) == pytest.approx(0.8, abs=0.015)
    # The law is by rank (rank 0 hottest), so the first fifth of the ranks carries the 80%.
    assert d["rank_counts"][: slots // 5].sum() / 2_000_000 == pytest.approx(0.8, abs=0.01)
    assert d["rank_counts"][0] > d["rank_counts"][slots // 100] > d["rank_counts"][slots // 2]
    assert 0 < d["pareto_exponent"] < 2


def test_hot_slots_are_scattered_not_packed():
    d = _core.alloctest_distributions(1_000_000, 1000, seed=2)
    hottest = np.argsort(d["slot_counts"])[::-1][:200]
    assert set(hottest) != set(range(200))
    assert 380 < hottest.mean() < 620  # a uniform sample of 200 ids out of 1000 has mean ~500 +- 20
    other_seed = _core.alloctest_distributions(1_000_000, 1000, seed=3)
    assert set(np.argsort(other_seed["slot_counts"])[::-1][:20]) != set(hottest[:20])


def test_sizes_follow_one_over_size():
    d = _core.alloctest_distributions(1_000_000, 1000, min_size=8, max_size=65536, seed=4)
    sizes = d["sizes"]
    assert sizes.min() == 8 and 60_000 < sizes.max() <= 65536
    # p(size) ~ 1/size: each of the 13 octaves [8*2^k, 8*2^(k+1)) holds the same probability mass.
    octave_counts = np.bincount(np.floor(np.log2(sizes / 8)).astype(int), minlength=13)[:13]
    assert octave_counts / len(sizes) == pytest.approx(np.full(13, 1 / 13), rel=0.05)
    assert sizes.mean() == pytest.approx(d["mean_size"], rel=0.02)


def test_single_size_law_draws_that_size():
    d = _core.alloctest_distributions(10_000, 50, min_size=100, max_size=100)
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
    assert none["bytes_written"] == none["bytes_read"] == none["bytes_touched"] == none["checksum"] == 0
    assert none["mismatches"] == 0 and none["iterations"] == SMALL["iterations"]


def test_checksum_is_reproducible_and_depends_on_the_seed():
    a = _core.alloctest(threads=2, seed=11, **SMALL)
    b = _core.alloctest(threads=2, seed=11, **SMALL)
    c = _core.alloctest(threads=2, seed=12, **SMALL)
    assert (a["checksum"], a["bytes_written"], a["mallocs"]) == (b["checksum"], b["bytes_written"], b["mallocs"])
    assert a["checksum"] != c["checksum"]


def test_steady_state_holds_about_total_bytes():
    r = _core.alloctest(iterations=50_000, warmup_iterations=0, total_bytes=64 << 20)
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
    r = _core.alloctest(slots=3000, total_bytes=1, threads=2, iterations=10_000, warmup_iterations=0)
    assert (r["slots"], r["slots_per_thread"]) == (3000, 1500)


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

    assert void["allocator_mode"] == "void" and void["mismatches"] is None  # one shared block: not checkable
    # Same random sequence: same picks, same sizes, same bytes written and read.
    for key in ("iterations", "mallocs", "frees", "pairs", "bytes_written", "bytes_read", "bytes_touched",
                "peak_requested_bytes"):
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
    assert task["value"] * 1e-9 == pytest.approx(run_cpu, rel=0.3, abs=0.02)
    # ...and never more than the workers' own loop time: setup is not in it.
    assert task["value"] * 1e-9 <= r["ns_per_pair_thread"] * r["pairs"] * 1e-9 * 1.2 + 0.02


def test_an_exception_in_the_hook_propagates_and_frees_the_blocks():
    def hook(phase, edge):
        if (phase, edge) == ("run", "begin"):
            raise RuntimeError("stop here")

    with pytest.raises(RuntimeError, match="stop here"):
        _core.alloctest(threads=2, hook=hook, **SMALL)
    assert _core.alloctest(threads=2, **SMALL)["mismatches"] == 0


@pytest.mark.parametrize("bad", [
    dict(threads=0), dict(iterations=0), dict(warmup_iterations=-1), dict(chunks=0), dict(min_size=0),
    dict(min_size=100, max_size=99), dict(max_size=(1 << 30) + 1), dict(touch="sometimes"),
    dict(allocator_mode="jemalloc"), dict(slots=-1), dict(slots=5), dict(total_bytes=0),
    dict(slots=30, threads=4),
])
def test_invalid_arguments_raise_value_error(bad):
    with pytest.raises(ValueError):
        _core.alloctest(**{**SMALL, **bad})


@pytest.mark.parametrize("bad", [dict(n_draws=-1), dict(slots=5), dict(min_size=0), dict(max_size=4)])
def test_invalid_distribution_arguments_raise_value_error(bad):
    args = dict(n_draws=10, slots=100, min_size=8, max_size=64, seed=1)
    with pytest.raises(ValueError):
        _core.alloctest_distributions(**{**args, **bad})


# --- the registry entry ----------------------------------------------------------------------------------


def test_registry_defaults_are_accepted_by_core_and_estimate_memory():
    entry = workloads.get("alloctest")
    defaults = {name: p.default for name, p in entry.params.items()}
    small = {**defaults, **SMALL}
    assert set(r := _core.alloctest(**small)) == RESULT_KEYS
    assert entry.timed_phase in r["phases"] and entry.primary_metric in r
    full = entry.memory_estimate(defaults)
    assert defaults["total_bytes"] < full < 2.5 * defaults["total_bytes"]
    assert entry.memory_estimate({**defaults, "allocator_mode": "void"}) < 64 << 20
    assert math.isfinite(entry.memory_estimate({**defaults, "min_size": 64, "max_size": 64}))
