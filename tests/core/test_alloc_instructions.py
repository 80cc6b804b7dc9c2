"""benchmarks/alloc_instructions.py: from callgrind's counts at two operation counts to counts per pair, and
the split into the real pass, the void pass and the net figure."""

from __future__ import annotations

import importlib.util
import sys

import pytest
from paths import ROOT

SCRIPT = ROOT / "benchmarks" / "alloc_instructions.py"


@pytest.fixture(scope="module")
def script():
    path = list(sys.path)  # the script puts benchmarks/ on it to import the benchmark beside it
    spec = importlib.util.spec_from_file_location("alloc_instructions", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    yield module
    sys.path[:] = path
    sys.modules.pop("alloc_vs_original", None)


def run(script, ops: int, loop: int, allocator: int = 0) -> dict:
    """One callgrind run's counts: `loop` instructions in the program's own code, `allocator` in malloc."""
    counts = {**dict.fromkeys(script.GROUPS, 0), "loop": loop, "allocator": allocator}
    return {"ops": ops, "sums": {"instructions": counts}}


def test_counts_per_pair_are_the_difference_of_the_two_runs(script):
    results = {
        ("original", "1m", "glibc", False): run(script, 1_000_000, 5_000, 700),
        ("original", "2m", "glibc", False): run(script, 2_000_000, 305_000, 100_700),
        ("hugebench", "1m", "glibc", False): run(script, 1_000_000, 9_000),
        ("hugebench", "2m", "glibc", False): run(script, 2_000_000, 329_000, 80_000),
    }
    got = script.per_pair(results, ["glibc"], ("1m", "2m"), False)
    # 1M operations are 500k pairs: 300k loop and 100k allocator instructions over them.
    assert got["glibc", "instructions", "original"]["loop"] == pytest.approx(0.6)
    assert got["glibc", "instructions", "original"]["total"] == pytest.approx(0.8)
    assert got["glibc", "instructions", "hugebench"]["total"] == pytest.approx(0.8)


def test_passes_split_into_real_void_and_net(script, capsys):
    def counts(original: float, hugebench: float) -> dict:
        return {
            ("glibc", "instructions", kind): {"total": total}
            for kind, total in (("original", original), ("hugebench", hugebench))
        }

    # Both passes 673 and 675 a pair, the void pass alone 242 and 252: the real passes are 431 and 423,
    # the net figures 189 and 171.
    script.print_passes(counts(673, 675), counts(242, 252), ["glibc"])
    rows = {
        line.split("|")[2].strip(): [float(cell) for cell in line.split("|")[3:6]]
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("| glibc")
    }
    assert rows["real"] == [431, 423, pytest.approx(0.981, abs=1e-3)]
    assert rows["void"] == [242, 252, pytest.approx(1.041, abs=1e-3)]
    assert rows["net (real - void)"] == [189, 171, pytest.approx(0.905, abs=1e-3)]
