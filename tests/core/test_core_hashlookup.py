"""The C++ hash-lookup workload through hugebench._core, at small sizes."""

from __future__ import annotations

import json
import string
import subprocess
import sys

import pytest

from hugebench import _core

N = 3000
PHASES = ["generate", "insert", "shuffle", "lookup"]
RESULT_KEYS = {
    "phases",
    "keys",
    "set_size",
    "lookups",
    "found",
    "checksum",
    "ns_per_lookup",
    "chunk_ns_median",
    "chunk_ns_p10",
    "chunk_ns_p90",
    "threads",
    "set_kind",
    "hash",
    "capacity",
    "counters",
}
COUNTER_KEYS = {"value", "raw_value", "time_enabled_ns", "time_running_ns", "error", "user_only"}


def software(label: str, config: int) -> tuple[str, int, int, int]:
    return (label, _core.PERF_TYPE_SOFTWARE, config, 0)


@pytest.mark.parametrize("set_kind", _core.build_info()["set_kinds"])
@pytest.mark.parametrize("order", ["uniform", "zipf"])
@pytest.mark.parametrize("threads", [1, 2])
def test_every_lookup_finds_its_key(set_kind, order, threads):
    r = _core.hashlookup(keys=N, set_kind=set_kind, order=order, threads=threads, chunks=8, seed=3)
    assert set(r) == RESULT_KEYS
    assert r["keys"] == r["lookups"] == r["found"] == N
    assert (r["threads"], r["set_kind"]) == (threads, set_kind)
    lengths = [len(k) for k in _core.generate_keys(N, seed=3)]
    if order == "uniform":  # every key exactly once
        assert r["checksum"] == sum(lengths)
    else:  # skewed: some keys many times, but only stored keys, so within the length bounds
        assert min(lengths) * N <= r["checksum"] <= max(lengths) * N


def test_checksum_counts_cycled_lookups():
    r = _core.hashlookup(keys=1000, lookups=3000, threads=2, chunks=5)
    assert r["found"] == r["lookups"] == 3000
    assert r["checksum"] == 3 * sum(len(k) for k in _core.generate_keys(1000))


@pytest.mark.parametrize("set_kind", _core.build_info()["set_kinds"])
def test_set_stores_exactly_the_distinct_keys(set_kind):
    # 1-2 letter keys: 2756 possible, so 6000 keys are full of duplicates the set must fold.
    keys = _core.generate_keys(6000, seed=5, key_min=1, key_max=2)
    r = _core.hashlookup(keys=6000, set_kind=set_kind, key_min=1, key_max=2, seed=5)
    assert r["set_size"] == len(set(keys)) < 6000
    assert r["found"] == 6000
    assert r["checksum"] == sum(len(k) for k in keys)


def test_generated_keys_are_letters_within_bounds_and_seeded():
    keys = _core.generate_keys(5000, seed=9, key_min=10, key_max=19)
    assert len(keys) == 5000
    assert len(set(keys)) == 5000
    assert {len(k) for k in keys} == set(range(10, 20))  # every length occurs, none outside
    assert set("".join(keys)) == set(string.ascii_letters)
    assert keys == _core.generate_keys(5000, seed=9, key_min=10, key_max=19)
    assert keys != _core.generate_keys(5000, seed=10, key_min=10, key_max=19)


@pytest.mark.parametrize("keys", [12, 10000, 12288, 12289])
def test_flat_capacity_is_a_power_of_two_at_most_three_quarters_full(keys):
    r = _core.hashlookup(keys=keys, set_kind="flat", key_min=12, key_max=19)
    capacity = r["capacity"]
    assert capacity >= 16 and capacity & (capacity - 1) == 0
    assert capacity * 3 / 8 < r["set_size"] <= capacity * 3 / 4


def test_phases_and_chunk_statistics():
    r = _core.hashlookup(keys=N, chunks=16)
    assert list(r["phases"]) == PHASES
    assert all(seconds > 0 for seconds in r["phases"].values())
    assert r["ns_per_lookup"] == pytest.approx(r["phases"]["lookup"] * 1e9 / r["lookups"])
    assert 0 < r["chunk_ns_p10"] <= r["chunk_ns_median"] <= r["chunk_ns_p90"]


def test_hook_brackets_each_phase_in_order():
    calls = []
    _core.hashlookup(keys=500, threads=2, hook=lambda phase, edge: calls.append((phase, edge)))
    assert calls == [(phase, edge) for phase in PHASES for edge in ("begin", "end")]


def test_exception_from_hook_propagates_with_workers_waiting():
    def hook(phase, edge):
        if (phase, edge) == ("lookup", "begin"):
            raise RuntimeError("hook failed")

    with pytest.raises(RuntimeError, match="hook failed"):
        _core.hashlookup(keys=500, threads=2, hook=hook)


def test_software_counters_count_the_lookup_phase():
    counters = [
        software("task_clock", _core.PERF_COUNT_SW_TASK_CLOCK),
        software("page_faults", _core.PERF_COUNT_SW_PAGE_FAULTS),
    ]
    r = _core.hashlookup(keys=20000, threads=2, counters=counters)
    task, faults = r["counters"]["task_clock"], r["counters"]["page_faults"]
    assert set(task) == set(faults) == COUNTER_KEYS
    assert task["error"] is None and faults["error"] is None
    assert task["value"] > 0 and task["time_running_ns"] > 0
    assert faults["value"] >= 0 and faults["raw_value"] >= 0
    # Enabled only around the lookup loop: task clock cannot exceed the two threads' wall time by much.
    assert task["value"] <= 2 * r["phases"]["lookup"] * 1e9 * 1.5 + 1e6


@pytest.mark.parametrize(
    "spec",
    [
        ("cycles", _core.PERF_TYPE_HARDWARE, _core.PERF_COUNT_HW_CPU_CYCLES, 0),
        (
            "dtlb_read_miss",
            _core.PERF_TYPE_HW_CACHE,
            _core.perf_hw_cache_config(
                _core.PERF_COUNT_HW_CACHE_DTLB,
                _core.PERF_COUNT_HW_CACHE_OP_READ,
                _core.PERF_COUNT_HW_CACHE_RESULT_MISS,
            ),
            0,
        ),
        ("bogus_type", 999, 0, 0),
    ],
)
def test_other_counters_give_a_value_or_an_error_never_both(spec):
    entry = _core.hashlookup(keys=N, counters=[spec])["counters"][spec[0]]
    if entry["error"] is None:
        assert entry["value"] is not None and entry["value"] >= 0
    else:
        assert isinstance(entry["error"], str) and entry["error"]
        assert entry["value"] is None and entry["raw_value"] is None
    if spec[0] == "bogus_type":
        assert entry["error"] is not None


@pytest.mark.parametrize(
    "kwargs, message",
    [
        ({"set_kind": "tree"}, "set_kind"),
        ({"order": "random"}, "order"),
        ({"key_min": 12, "key_max": 11}, "key_min"),
        ({"threads": 0}, "threads"),
        ({"keys": 0}, "keys"),
        ({"lookups": -1}, "lookups"),
        ({"chunks": 0}, "chunks"),
        ({"zipf_s": -1.0}, "zipf_s"),
        ({"teardown": "never"}, "teardown"),
        ({"counters": [software("x", 0), software("x", 1)]}, "duplicate"),
    ],
)
def test_invalid_arguments_raise_value_error(kwargs, message):
    args = {"keys": 100, **kwargs}
    with pytest.raises(ValueError, match=message):
        _core.hashlookup(**args)


def test_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        _core.hashlookup(100)


def test_build_info_describes_a_release_build():
    info = _core.build_info()
    assert set(info) == {
        "build_type", "compiler", "cxx_flags", "debug", "set_kinds", "hashes", "cxx_stdlib", "string_bytes"
    }  # fmt: skip
    assert info["cxx_stdlib"].startswith(("libstdc++", "libc++")) and info["string_bytes"] in (
        24,
        32,
    )
    assert {"flat", "node"} <= set(info["set_kinds"]) and "own" in info["hashes"]
    assert info["build_type"] == "Release" and info["debug"] is False


# -- lookups over a sample of the keys (issue 31) ------------------------------------------------------------


def test_sample_lookups_are_distinct_keys_of_the_set_and_seeded():
    keys = _core.generate_keys(3000, seed=4)
    sample = _core.hashlookup_queries(3000, 500, seed=4)
    assert len(sample) == 500 == len(set(sample))  # each sampled key looked up once
    assert set(sample) <= set(keys)
    assert sample == _core.hashlookup_queries(3000, 500, seed=4)
    assert sample != _core.hashlookup_queries(3000, 500, seed=5)
    assert _core.hashlookup_queries(3000, 0, seed=4) == _core.hashlookup_queries(3000, 3000, seed=4)
    assert sorted(_core.hashlookup_queries(3000, 0, seed=4)) == sorted(keys)  # 0: every key once
    for threads in (1, 2):  # the run looks up exactly that sample, however many threads share it
        r = _core.hashlookup(keys=3000, lookups=500, seed=4, threads=threads, chunks=7)
        assert r["lookups"] == r["found"] == 500 and r["set_size"] == 3000
        assert r["checksum"] == sum(len(k) for k in sample)


def test_sample_is_uniform_over_the_keys():
    # Over 400 seeds, each of 50 key positions should be drawn 400 * 10 / 50 = 80 times; a chi-square of 49
    # degrees of freedom (mean 49, sd 9.9) beyond 110 would be six sd out. Positions, since keys change per seed.
    counts = [0] * 50
    for seed in range(400):
        position = {key: i for i, key in enumerate(_core.generate_keys(50, seed=seed))}
        for key in _core.hashlookup_queries(50, 10, seed=seed):
            counts[position[key]] += 1
    assert sum(counts) == 4000
    assert sum((c - 80) ** 2 / 80 for c in counts) < 110, counts


def test_generated_keys_do_not_depend_on_the_thread_count():
    n = 2 * 65536 + 123  # two full blocks of keys and a partial one
    keys = _core.generate_keys(n, seed=7, key_min=8, key_max=40, threads=1)
    for threads in (2, 3, 8, 0):
        assert _core.generate_keys(n, seed=7, key_min=8, key_max=40, threads=threads) == keys
    assert len(set(keys)) == n  # no block repeats another's stream
    assert keys[:65536] != _core.generate_keys(65536, seed=8, key_min=8, key_max=40)


# -- teardown: exit leaves the set and the keys to the process's exit (issue 31) ------------------------------

_EXIT_RUN = """
import json, sys
from hugebench import _core
r = _core.hashlookup(**json.loads(sys.argv[1]), teardown="exit")
json.dump({k: v for k, v in r.items() if k != "counters"}, sys.stdout)
"""


@pytest.mark.parametrize("set_kind", ["flat", "node"])
def test_teardown_exit_gives_the_results_of_free(set_kind, tmp_path):
    # In a child process, which exits right after like a sweep's worker, so this process keeps no leak
    # (cwd: away from a source checkout, whose hugebench/ has no built _core).
    args = {
        "keys": 20000,
        "lookups": 5000,
        "set_kind": set_kind,
        "threads": 2,
        "chunks": 4,
        "seed": 7,
    }
    child = subprocess.run(
        [sys.executable, "-c", _EXIT_RUN, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
    )
    assert child.returncode == 0, child.stderr
    left = json.loads(child.stdout)
    freed = _core.hashlookup(**args, teardown="free")
    assert list(left["phases"]) == PHASES == list(freed["phases"])
    same = (
        "keys",
        "set_size",
        "lookups",
        "found",
        "checksum",
        "threads",
        "set_kind",
        "hash",
        "capacity",
    )
    assert {k: left[k] for k in same} == {k: freed[k] for k in same}
    assert left["found"] == 5000 and left["ns_per_lookup"] > 0
