"""hugebench's alloctest against ITHare's original alloc-test program, run by run, interleaved.

    python benchmarks/alloc_vs_original.py /path/to/original/tester.bin [--pairs 6] [--out runs.jsonl]

The original (github.com/node-dot-cpp/alloc-test) is not part of this project: build it yourself beside
the project (see docs/results.md for the exact commands) and give this script its binary. Its parameters
are compiled in; this script reads them from the binary's own output (maxItemSizeExp, maxItems,
iterCount, one thread) and runs hugebench's alloctest with the same ones, the original's touch (memset
with the size byte, an unchecked sum) and its in-process void pass, one clock read around the loop.

Each allocator is LD_PRELOADed into both programs (hugebench's registry gives the library). A pair is one
run of each program, back to back; the order alternates from pair to pair (ABBA), so drift cancels.
Reported per allocator and program: net main-loop ns per malloc/free pair (real minus void; the
original's main loop from its own per-thread rdtsc shares of its thread time), and the whole-run ms per
million operations (the original's printed figure, unrounded), medians with 95% bootstrap intervals,
and the paired ratios hugebench / original. Each run also records CPU seconds against wall seconds: a
ratio well below 1 means the run waited for the CPU (other work on the machine) and is named noisy; and
its minor page faults (the two programs should fault alike: the interpreter's ~2k apart). --cpu N runs
both programs on CPU N, so that neither migrates mid-run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import time

import numpy as np

from hugebench.machine import allocators
from hugebench.stats import bootstrap_ci, paired_ratio_ci

ALLOCATORS = ("glibc", "jemalloc", "tcmalloc", "mimalloc")
# "running thread 0 with 'x' and maxItemSizeExp = 16, maxItems = 33554432, iterCount = 10000000, ..."
_PARAMS = re.compile(r"maxItemSizeExp = (\d+), maxItems = (\d+), iterCount = (\d+)")
# Per-thread stats "\t0: 97587ms; 253726261975 (45.92 | 31.73 | 22.34);" (thread ms; rdtsc span; setup |
# main loop | exit, % of the span), then the void run's, which the original computes but prints only with
# the one added line described in docs/results.md ("\tvoid 0: ...").
_THREAD = re.compile(r"^\s*(void )?0: (\d+)ms; \d+ \(([\d.]+) \| ([\d.]+) \| ([\d.]+)\);", re.M)
# "1 threads made 10000000 alloc/dealloc operations in 97976 ms (...)": the real run, then the void run
_MADE = re.compile(r"threads made (\d+) alloc/dealloc operations in (\d+) ms")
NOISY_CPU_SHARE = 0.9  # CPU seconds / wall seconds below this: the run waited for the CPU

HUGEBENCH_CHILD = """
import json, sys
from hugebench import _core
r = _core.alloctest(**json.loads(sys.argv[1]))
keys = ("ns_per_pair", "ns_per_pair_net", "ms_per_mop", "ms_per_mop_net", "void_ns_per_op", "iterations",
        "mismatches", "checksum")
out = {k: r[k] for k in keys}
out["phase_s"] = {k: v for k, v in r["phases"].items() if k != "warmup"}
print(json.dumps(out))
"""


def run_child(argv: list[str], env: dict) -> tuple[str, float, float, int]:
    """Run argv to completion; (stdout, wall seconds, CPU seconds, minor page faults of the child)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run(
        argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{argv[0]} failed ({done.returncode}): {done.stderr.strip()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return done.stdout, wall, cpu, after.ru_minflt - before.ru_minflt


def parse_original(text: str) -> dict:
    """The original's output -> its parameters, main-loop ns per pair (real, void, net), whole-run ms/Mop."""
    params, made = _PARAMS.search(text), _MADE.findall(text)
    shares = {
        bool(void): (float(ms), float(setup), float(loop))
        for void, ms, setup, loop, _ in _THREAD.findall(text)
    }
    loops = {void: ms * loop / 100 for void, (ms, _, loop) in shares.items()}
    if not params or len(made) != 2 or set(loops) != {False, True}:
        sys.exit(
            "the original's output lacks its parameters, two runs or the per-thread stats of both: is it "
            "the one-thread build with the added void line of docs/results.md?\n" + text[-2000:]
        )
    exp, slots, ops = (int(v) for v in params.groups())
    real_ms, void_ms = (float(ms) for _, ms in made)
    pairs = ops / 2
    real, void = loops[False] * 1e6 / pairs, loops[True] * 1e6 / pairs
    return {
        "max_size_exp": exp,
        "slots": slots,
        "ops": ops,
        "ns_per_pair": real,
        "void_ns_per_pair": void,
        "ns_per_pair_net": real - void,
        "ms_per_mop": real_ms * 1e6 / ops,
        "void_ms_per_mop": void_ms * 1e6 / ops,
        "ms_per_mop_net": (real_ms - void_ms) * 1e6 / ops,
        "phase_s": {
            name: shares[False][0] * pct / 100 / 1e3
            for name, pct in (
                ("setup", shares[False][1]),
                ("run", shares[False][2]),
                ("teardown", 100 - shares[False][1] - shares[False][2]),
            )
        },
    }


def hugebench_params(original: dict, touch: str, calls: str = "malloc") -> dict:
    """alloctest's parameters for the original's run: its slots, ops and sizes, one thread, its void pass;
    malloc/free, or with calls "new" the original's operator new[]/delete[] (see docs/results.md for why
    malloc is the default)."""
    return {
        "threads": 1,
        "slots": original["slots"],
        "slots_per": "total",
        "iterations": original["ops"],
        "iterations_per": "thread",
        "warmup_iterations": 0,
        "max_size": 1 << original["max_size_exp"],
        "min_size": 5,
        "size_law": "bands",
        "slot_law": "pareto6",
        "hot_slots": "contiguous",
        "touch": touch,
        "void_run": "in-process",
        "chunks": 1,
        "seed": 1,
        "allocator_mode": calls,
    }


def run_original(binary: str, env: dict) -> dict:
    out, wall, cpu, faults = run_child([binary], env)
    return {**parse_original(out), "wall_s": wall, "cpu_s": cpu, "minor_faults": faults}


def run_hugebench(params: dict, env: dict) -> dict:
    out, wall, cpu, faults = run_child(
        [sys.executable, "-I", "-c", HUGEBENCH_CHILD, json.dumps(params)], env
    )
    r = json.loads(out.strip().splitlines()[-1])
    r["void_ns_per_pair"] = 2 * r.pop("void_ns_per_op")
    return {**r, "wall_s": wall, "cpu_s": cpu, "minor_faults": faults}


def environment(allocator: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env.update(allocators.BUILTIN[allocator].environment())
    return env


def measure(
    binary: str, names: list[str], pairs: int, first_pair: int, touch: str, calls: str, out
) -> list[dict]:
    """Interleaved pairs: per pair and allocator, both programs back to back, order alternating."""
    rows, params = [], None
    for pair in range(first_pair, first_pair + pairs):
        for name in names:
            env = environment(name)
            order = (
                ("original", "hugebench")
                if (pair + names.index(name)) % 2 == 0
                else ("hugebench", "original")
            )
            for program in order:
                if (
                    program == "hugebench" and params is None
                ):  # its parameters come from the original's output
                    params = hugebench_params(run_original(binary, env), touch, calls)
                load = os.getloadavg()[0]
                row = (
                    run_original(binary, env)
                    if program == "original"
                    else run_hugebench(params, env)
                )
                row.update(
                    program=program,
                    allocator=name,
                    pair=pair,
                    calls=calls,
                    loadavg_1m=load,
                    cpu_share=row["cpu_s"] / row["wall_s"],
                    time=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                )
                rows.append(row)
                print(json.dumps(row), file=out, flush=True)
                print(
                    f"pair {pair} {name:9s} {program:9s} net {row['ns_per_pair_net']:7.1f} ns/pair  "
                    f"whole {row['ms_per_mop']:7.1f} ms/Mop  cpu/wall {row['cpu_share']:.2f}  "
                    f"faults {row['minor_faults']}",
                    file=sys.stderr,
                )
    return rows


# (column, heading) of the side-by-side table: the two figures compared (net loop, whole run), then their parts.
FIGURES = (
    ("ns_per_pair_net", "net main loop, ns/pair"),
    ("ms_per_mop", "whole run, ms/Mop"),
    ("ns_per_pair", "main loop, ns/pair"),
    ("void_ns_per_pair", "void main loop, ns/pair"),
    ("ms_per_mop_net", "whole run net, ms/Mop"),
    ("minor_faults", "minor page faults, whole process"),
)


def _median_ci(values: list[float]) -> str:
    lo, hi = bootstrap_ci(values)
    return f"{np.median(values):.1f} [{lo:.1f}, {hi:.1f}]"


def _paired(rows: list[dict], name: str, column: str) -> tuple[list[float], list[float]]:
    """hugebench's and the original's values of one allocator, aligned by pair."""
    by = {
        (r["program"], r["pair"]): r[column] for r in rows if r["allocator"] == name and column in r
    }
    pairs = sorted({p for _, p in by if ("original", p) in by and ("hugebench", p) in by})
    return [by["hugebench", p] for p in pairs], [by["original", p] for p in pairs]


def table(rows: list[dict], names: list[str]) -> str:
    """Markdown: per allocator and figure, original and hugebench (median [95% CI]) and the paired ratio."""
    lines = [
        "| allocator | figure | original | hugebench | ratio hugebench/original [95% CI] | pairs |",
        "|---|---|---|---|---|---|",
    ]
    for name in names:
        for column, heading in FIGURES:
            ours, theirs = _paired(rows, name, column)
            if not ours:
                continue
            ratios = np.array(ours) / np.array(theirs)
            lo, hi = paired_ratio_ci(ours, theirs)
            lines.append(
                f"| {name} | {heading} | {_median_ci(theirs)} | {_median_ci(ours)} | "
                f"{np.median(ratios):.3f} [{lo:.3f}, {hi:.3f}] | {len(ours)} |"
            )
    return "\n".join(lines)


def noise(rows: list[dict]) -> str:
    shares = np.array([r["cpu_share"] for r in rows])
    loads = np.array([r["loadavg_1m"] for r in rows])
    noisy = int((shares < NOISY_CPU_SHARE).sum())
    return (
        f"{len(rows)} runs; CPU/wall median {np.median(shares):.2f} (min {shares.min():.2f}); "
        f"{noisy} run(s) below {NOISY_CPU_SHARE} (waited for the CPU); 1-min load average at start "
        f"median {np.median(loads):.2f} (max {loads.max():.2f})"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "original", help="the original alloc-test binary (built as docs/results.md says)"
    )
    parser.add_argument(
        "--pairs", type=int, default=6, help="interleaved pairs per allocator (default 6)"
    )
    parser.add_argument(
        "--allocators", default=",".join(ALLOCATORS), help="comma-separated registry names"
    )
    parser.add_argument(
        "--touch", default="original", help="hugebench's touch mode (default: original)"
    )
    parser.add_argument(
        "--calls",
        choices=("new", "malloc"),
        default="malloc",
        help="hugebench's allocation calls: malloc (malloc/free, default) or new (operator new[]/delete[], "
        "the original's)",
    )
    parser.add_argument(
        "--out",
        default="alloc_vs_original.jsonl",
        help="one JSON line per run, appended: pairs already there count, numbering continues",
    )
    parser.add_argument(
        "--table-only", action="store_true", help="only print the table of the --out file"
    )
    parser.add_argument(
        "--cpu",
        type=int,
        default=None,
        help="run both programs on this one CPU (default: wherever the scheduler puts them)",
    )
    args = parser.parse_args(argv)
    names = [n for n in args.allocators.split(",") if n]
    unknown = [n for n in names if n not in allocators.BUILTIN]
    if unknown:
        parser.error(f"unknown allocator(s) {unknown}; known: {sorted(allocators.BUILTIN)}")
    rows = []
    if os.path.exists(
        args.out
    ):  # an earlier invocation's pairs: this one continues their numbering
        with open(args.out) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    if args.cpu is not None:  # inherited by both programs: neither migrates between CPUs mid-run
        os.sched_setaffinity(0, {args.cpu})
    if not args.table_only:
        first = 1 + max((r["pair"] for r in rows), default=-1)
        with open(args.out, "a") as f:
            rows += measure(
                os.path.abspath(args.original), names, args.pairs, first, args.touch, args.calls, f
            )
    print(table(rows, names))
    print()
    print(noise(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
