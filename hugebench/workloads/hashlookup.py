"""hashlookup: random short strings in one hash set, then timed point lookups (the TLB experiment)."""

from __future__ import annotations

from hugebench.knob_catalogue import THP_ENABLED
from hugebench.workloads.base import COMMON_METRICS, STARTUP_S, BarPlot, Param, Workload, register
from hugebench.workloads.sets import (
    HASH_PARAM,
    KEY_PARAMS,
    SEED_PARAM,
    SET_INSERT_NS,
    SET_KINDS,
    SET_LOOKUP_NS,
    check_built,
    peak_bytes,
    set_scale,
)

# Measured on the 2-core KVM guest (docs/results.md, "The headline sweep's time model": a sweep of flat sets
# at 10M and 60M keys, glibc and jemalloc-thp, THP never and always), ns per key at 10M keys, each growing as
# (keys / 10M) ** growth beyond: generating the keys, building the set, and what the run costs after the timed
# phase per teardown: "free" (destroying the set and the keys, then the worker's exit; glibc's takes ~2.4 s at
# 10M keys and ~15 s at 60M, jemalloc's ~0.3 s and ~2 s) or "exit" (only the worker's exit, which drops the
# address space: ~0.2 s at 10M, ~0.3 s at 30M, either allocator; "Leaving the set to the worker's exit");
# per key shuffled (only the sample's when lookups < keys); per lookup. Other set kinds: flat's cost scaled by
# their ratio in sets.SET_INSERT_NS / SET_LOOKUP_NS (measured by experiments/sets.yaml).
GENERATE = (47, 0.25)
INSERT = (290, 0.45)
TEARDOWN = {"free": (142, 0.0), "exit": (5, 0.0)}
SHUFFLE = (65, 0.22)
LOOKUP = (168, 0.18)
# Set kinds measured in hashlookup runs themselves, where flat's shape scaled by sets.py's ratios was wrong
# (docs/results.md, "The time model for robin"): tsl::robin_set + XXH3, glibc, THP never, every key looked
# up, 10M/30M/60M keys (2026-11-25): insertion 630, 524, 580 ns per key (no growth with size, where flat's
# grows as keys^0.45), lookups 0.80-0.84x flat's model. The other kinds keep flat's shape and sets.py's ratio.
INSERT_BY_KIND = {"robin": (580, 0.0)}
LOOKUP_BY_KIND = {"robin": (136, 0.18)}


def _ns(cost: tuple[float, float], keys: int, relative: float = 1.0) -> float:
    return cost[0] * relative * set_scale(keys, cost[1])


def _time(p: dict) -> float:
    kind, keys = p["set_kind"], p["keys"]
    lookups = p["lookups"] or keys
    shuffled = keys if p["order"] == "zipf" else min(lookups, keys)
    insert = (
        _ns(INSERT_BY_KIND[kind], keys)
        if kind in INSERT_BY_KIND
        else _ns(INSERT, keys, SET_INSERT_NS[kind] / SET_INSERT_NS["flat"])
    )
    lookup = (
        _ns(LOOKUP_BY_KIND[kind], keys)
        if kind in LOOKUP_BY_KIND
        else _ns(LOOKUP, keys, SET_LOOKUP_NS[kind] / SET_LOOKUP_NS["flat"])
    )
    per_key = _ns(GENERATE, keys) + insert + _ns(TEARDOWN[p.get("teardown", "free")], keys)
    return STARTUP_S + 1e-9 * (
        keys * per_key + shuffled * _ns(SHUFFLE, keys) + lookups * lookup / min(p["threads"], 2)
    )


def _memory(p: dict) -> int:
    # The set's growth rule and bytes per slot, the old table alive while it doubles, both copies of each key
    # (sets.peak_bytes), Zipf indices; +10%.
    zipf = 4 * (p.get("lookups") or p["keys"]) if p.get("order") == "zipf" else 0
    return int(
        1.1
        * peak_bytes([p["set_kind"]], p["keys"], p.get("key_min", 10), p.get("key_max", 19), zipf)
    )


WORKLOAD = register(
    Workload(
        name="hashlookup",
        params={
            "keys": Param(int, 1_000_000, minimum=1, help="number of distinct random keys"),
            "set_kind": Param(
                str,
                "flat",
                choices=SET_KINDS,
                help="flat: open-addressing set written here; node: std::unordered_set; robin: "
                "tsl::robin_set; absl: absl::flat_hash_set; boost: boost::unordered_flat_set "
                "(the last three where the build found them: _core.build_info())",
            ),
            "hash": HASH_PARAM,
            "threads": Param(
                int, 1, minimum=1, help="lookup threads over the shared read-only set"
            ),
            "lookups": Param(
                int,
                0,
                minimum=0,
                help="lookups in the timed phase. 0: one per key (the mean over all keys). Fewer than "
                "keys: a uniform random sample of the keys without replacement, seeded by `seed` "
                "(the first `lookups` of a seeded Fisher-Yates shuffle), each looked up once, whose "
                "mean is an unbiased estimate of the all-keys mean; more: the shuffled keys cycled. "
                "Zipf order draws every lookup from all the keys",
            ),
            **KEY_PARAMS,
            "order": Param(str, "uniform", choices=("uniform", "zipf"), help="lookup key order"),
            "zipf_s": Param(float, 0.99, minimum=0.0, help="Zipf exponent when order is zipf"),
            "chunks": Param(int, 64, minimum=1, help="equal slices the timed phase is split into"),
            "seed": SEED_PARAM,
            "teardown": Param(
                str,
                "free",
                choices=("free", "exit"),
                help="after the timed phase, free: destroy the set and the keys before returning; "
                "exit: leave them to the process's exit, which the kernel reclaims at once "
                "(a sweep's worker is one run and exits right after; an in-process caller "
                "leaks them with each call). Nothing measured changes; the run gets shorter",
            ),
        },
        timed_phase="lookup",
        ops_column="lookups",
        memory_estimate=_memory,
        time_estimate=_time,
        check_params=check_built,
        doc="Random short strings in a hash set; mean point-lookup latency (the TLB experiment).",
        metrics=(
            ("ns_per_lookup", "Latency ns", ".1f"),
            ("chunk_ns_p10", "p10 chunk ns", ".1f"),
            ("cycles_per_op", "Cycles/lookup", ".0f"),
            ("stlb_misses_per_1k_ops", "STLB misses/1k", ".1f"),
        )
        + COMMON_METRICS,
        bars=(
            BarPlot(
                ("allocator", THP_ENABLED),
                "ns_per_lookup",
                "ns per lookup",
                "lookup latency",
                "latency",
            ),
        ),
    )
)
