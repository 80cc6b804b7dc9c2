"""benchmarks/alloc_vs_original.py: reading the original program's output and pairing the two programs' runs."""

from __future__ import annotations

import importlib.util

import pytest
from paths import ROOT

SCRIPT = ROOT / "benchmarks" / "alloc_vs_original.py"

# The shape of the original's output (one thread, the added void line), numbers made up.
OUTPUT = """\
    running thread 0 with 'new-delete allocator' and maxItemSizeExp = 16, maxItems = 33554432, iterCount = 10000000, allocated memory access mode: full,  [rnd_seed = 0] ...
1 threads made 10000000 alloc/dealloc operations in 4000 ms (400 ms per 1 million)
1 threads made 10000000 alloc/dealloc operations in 1500 ms (150 ms per 1 million)
Per-thread stats:
   0:
\t0: 3990ms; 9975000000 (30.00 | 30.00 | 40.00);
\tvoid 0: 1490ms; 3725000000 (40.00 | 40.00 | 20.00);
"""


@pytest.fixture(scope="module")
def script():
    spec = importlib.util.spec_from_file_location("alloc_vs_original", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_original_output_gives_loop_and_whole_run_figures(script):
    r = script.parse_original(OUTPUT)
    assert (r["max_size_exp"], r["slots"], r["ops"]) == (16, 1 << 25, 10_000_000)
    # Main loop: 30% of 3990 ms over 5M pairs; void: 40% of 1490 ms.
    assert r["ns_per_pair"] == pytest.approx(0.30 * 3990e6 / 5e6)
    assert r["void_ns_per_pair"] == pytest.approx(0.40 * 1490e6 / 5e6)
    assert r["ns_per_pair_net"] == pytest.approx(r["ns_per_pair"] - r["void_ns_per_pair"])
    assert (r["ms_per_mop"], r["ms_per_mop_net"]) == (pytest.approx(400), pytest.approx(250))
    params = script.hugebench_params(r, "original")
    assert (params["slots"], params["iterations"], params["max_size"]) == (
        1 << 25,
        10_000_000,
        65536,
    )
    assert params["allocator_mode"] == "malloc"
    assert (
        script.hugebench_params(r, "original", "new")["allocator_mode"] == "new"
    )  # the original's calls
    assert (params["touch"], params["void_run"], params["chunks"], params["threads"]) == (
        "original",
        "in-process",
        1,
        1,
    )


def test_output_without_the_void_line_is_refused(script):
    with pytest.raises(SystemExit, match="added void line"):
        script.parse_original(OUTPUT.replace("\tvoid 0:", "\tx 0:"))


def test_table_pairs_runs_by_pair_and_gives_the_ratio(script):
    rows = [
        {
            "program": program,
            "allocator": "glibc",
            "pair": pair,
            "ns_per_pair_net": value,
            "ms_per_mop": 100.0,
            "ns_per_pair": 200.0,
            "void_ns_per_pair": 100.0,
            "ms_per_mop_net": 50.0,
        }
        for pair in range(6)
        for program, value in (("original", 100.0 + pair), ("hugebench", 110.0 + 1.1 * pair))
    ]
    text = script.table(rows, ["glibc"])
    net = next(line for line in text.splitlines() if "net main loop" in line)
    assert "| 1.100 [1.100, 1.100] | 6 |" in net
