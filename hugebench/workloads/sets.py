"""What hashlookup and hashsets share: the hash set kinds and hashes (with the package that provides each
optional one), their cost per key (time models) and the memory a set of each kind holds (memory models),
and the key parameters. Not a workload: it registers nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from hugebench.workloads.base import Param

# hashlookup's set kinds and hashes, with the Debian package that provides each optional one.
SET_KINDS = ("flat", "node", "robin", "absl", "boost")
HASHES = ("own", "xxh3")
SET_PACKAGES = {"robin": "robin-map-dev", "absl": "libabsl-dev", "boost": "libboost1.81-dev"}
HASH_PACKAGES = {"xxh3": "libxxhash-dev"}

# Measured on the 2-core KVM guest at 10M keys (experiments/sets.yaml, ns per key): inserting, and one lookup on
# one thread. Both grow with the table beyond that (caches, TLB, page walks): at 30M keys inserts took ~1.8x and
# lookups ~1.35x as long, hence the exponents of set_scale.
SET_INSERT_NS = {"flat": 600, "node": 1200, "robin": 950, "absl": 650, "boost": 600}
SET_LOOKUP_NS = {"flat": 340, "node": 610, "robin": 380, "absl": 470, "boost": 390}


def set_scale(keys: int, exponent: float) -> float:
    return max(1.0, keys / 1e7) ** exponent


def check_built(p: dict) -> None:
    """Refuse a set kind or hash this build of _core lacks, naming the package that provides it."""
    from hugebench import _core

    info = _core.build_info()
    for name, built, packages in (
        ("set_kind", info.get("set_kinds", ["flat", "node"]), SET_PACKAGES),
        ("hash", info.get("hashes", ["own"]), HASH_PACKAGES),
    ):
        if p[name] not in built:
            raise ValueError(
                f"{name}: {p[name]!r} is not in this build of hugebench._core (it has "
                f"{', '.join(built)}): apt-get install {packages[p[name]]}, then rebuild with "
                f"pip install --no-build-isolation ."
            )


# The key parameters hashlookup and hashsets share: one definition each.
KEY_PARAMS = {
    "key_min": Param(int, 10, minimum=1, help="shortest key, bytes"),
    "key_max": Param(int, 19, minimum=1, help="longest key, bytes"),
}
SEED_PARAM = Param(int, 1, minimum=0, help="seed of key generation and order")
HASH_PARAM = Param(
    str, "own", choices=HASHES, help="own: hugebench's mum-style hash; xxh3: XXH3-64"
)


# -- memory: what a set of each kind holds after inserting n distinct keys one at a time -------------------
# Each table's growth rule (measured capacities at 10M keys: flat 2^24 slots, robin 2^25, absl 2^24-1, Boost
# 2^20 groups of 15, node 12.1M buckets) and its bytes per slot; while a table doubles, its old half-size table
# is alive too. The model matches measured peaks: hashlookup flat at 30M keys 4.6 GiB (model 4.6), hashsets
# with all five kinds at 10M keys 4.47 GiB (model 4.45).
_STRING = 32  # sizeof(std::string) in libstdc++; up to 15 bytes inside it
_GROWTH = {  # kind: (first capacity, max load, bytes per slot)
    "flat": (16, 0.75, _STRING),
    "robin": (16, 0.5, 40),  # a bucket: the probe distance, padded, then the string
    "absl": (16, 0.875, _STRING + 1),  # a control byte per slot
    "boost": (16, 0.875, _STRING + 16 / 15),  # 15 slots and a 16-byte control word per group
}
_NODE_BYTES = 64  # glibc's chunk for a 48-byte node (next pointer, string, cached hash)
BASE_BYTES = 64 << 20  # the worker's interpreter and the extension


def _heap_per_key(key_min: int, key_max: int) -> float:
    """Mean malloc chunk bytes a copy of a key takes beyond its std::string (keys over 15 bytes)."""
    # A length n > 15 takes ceil((n + 9) / 16) * 16 bytes (never below 32 there); summed in closed form, so
    # that a key_max of 10^8 costs no more to estimate than 19.
    low = max(key_min, 16)
    if key_max < low:
        return 0.0
    return 16 * (_ceil16_sum(key_max + 9) - _ceil16_sum(low + 8)) / (key_max - key_min + 1)


def _ceil16_sum(m: int) -> int:
    """sum(ceil(i / 16) for i in 1..m)."""
    q, r = divmod(m, 16)
    return 16 * q * (q + 1) // 2 + r * (q + 1)


def table_bytes(kind: str, keys: int) -> tuple[float, float]:
    """(bytes of the table holding ``keys`` keys, bytes of the table it last grew from), key heap excluded."""
    if kind == "node":
        return (
            keys * _NODE_BYTES + keys * 1.3 * 8,
            0.0,
        )  # a bucket pointer per key at max load 1 (prime counts)
    capacity, load, per_slot = _GROWTH[kind]
    while keys > load * capacity:
        capacity *= 2
    return capacity * per_slot, (capacity // 2 * per_slot if capacity > _GROWTH[kind][0] else 0.0)


def peak_bytes(
    kinds: Sequence[str], keys: int, key_min: int, key_max: int, extra: float = 0.0
) -> int:
    """Peak memory of a process that builds a set of each kind in turn from ``keys`` keys, over one query vector."""
    heap = keys * _heap_per_key(key_min, key_max)
    held = BASE_BYTES + extra + keys * _STRING + heap  # the keys, later the queries
    peak = held
    for kind in kinds:
        table, old = table_bytes(kind, keys)
        peak = max(peak, held + table + old + heap)
        held += table + heap
    return int(peak)
