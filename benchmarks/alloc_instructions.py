"""Where alloc-test's main-loop time goes, in instructions: hugebench's alloctest beside the original program,
both run under valgrind's callgrind (instruction counts do not drift with the machine as times do here).

    python benchmarks/alloc_instructions.py ORIGINAL_1M ORIGINAL_2M [--allocators glibc,mimalloc] [--jobs 2]

ORIGINAL_1M and ORIGINAL_2M are the original built as docs/results.md says with its iterCount set to 1 000 000
and 2 000 000 (nothing else differs). Each program runs at both counts with the original's other parameters
(read from its output, as benchmarks/alloc_vs_original.py does); the difference between the two counts is
1M operations of the main loop (the real pass's and the void pass's), so fill and teardown cancel. Each
function's own instructions (callgrind_annotate, exclusive) are grouped by what they are:

- allocator: malloc/free and everything the allocator library runs, operator new[]/delete[] included;
- fill/read: memset and the other string functions of libc;
- loop: the program's own code (the original's binary; hugebench's `_core` extension);
- other: the rest (the interpreter, the dynamic loader), which should cancel between the two counts.

Printed: instructions per malloc/free pair (real + void passes) by group and program, and the ratio
hugebench / original. With --void-pass only the void pass is counted: the original's void thread alone
(callgrind collecting inside its void runRandomTest only), hugebench's loop run by its void allocator alone
(allocator_mode void: the same loop code as its in-process void pass). With --passes both are counted and
the real pass (both - void), the void pass and the net (real - void, the figure the net main loop times)
are printed per pair as well.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import alloc_vs_original as avo  # the benchmark beside this one: same parameters, same preload

GROUPS = ("allocator", "fill/read", "loop", "other")
_STRING_FUNCTIONS = re.compile(r"mem(set|cpy|move|cmp)|str[a-z]*_|__memset|__memmove|__memcpy")
_ALLOCATOR_OBJECTS = ("libjemalloc", "libtcmalloc", "libmimalloc", "libstdc++")


def group(name: str, program: str) -> str:
    """The group of one callgrind_annotate line's function ("file:function [object]"; the object is left
    out for the main program and for some of libc's own lines)."""
    obj = name[name.rfind("[") + 1 : -1] if name.endswith("]") else ""
    source = name.split(":", 1)[0]
    if any(part in obj for part in _ALLOCATOR_OBJECTS):
        return "allocator"
    if _STRING_FUNCTIONS.search(name):
        return "fill/read"
    if program in obj or "_core" in obj or (not obj and ("/src/" in source or "csrc/" in source)):
        return "loop"
    if re.search(
        r"malloc|free|_int_|tcache|arena|sysmalloc|unlink_chunk|alloc_perturb|operator (new|delete)",
        name,
    ):
        return "allocator"
    return "other"


def annotate(out: Path, program: str) -> dict[str, dict[str, int]]:
    """Exclusive counts by event (Ir; with --cache-sim also D1 and LL misses) and group, from one callgrind
    output file."""
    text = subprocess.run(
        [
            "callgrind_annotate",
            "--inclusive=no",
            "--threshold=100",
            "--show-percs=no",
            "--auto=no",
            str(out),
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    events = re.search(r"^Events shown:\s+(.*)$", text, re.M).group(1).split()
    counts = {e: dict.fromkeys(GROUPS, 0) for e in events}
    table = text.split("file:function", 1)[1].split("\n", 2)[2]  # past the header and its rule
    for line in table.splitlines():
        fields = line.split()
        numbers = []
        while fields and re.fullmatch(r"[\d,]+|\.", fields[0]):
            token = fields.pop(0)
            numbers.append(0 if token == "." else int(token.replace(",", "")))
        if len(numbers) != len(events) or not fields:
            break  # the table ends at its first blank line
        name = " ".join(fields)
        for event, n in zip(events, numbers, strict=True):
            counts[event][group(name, program)] += n
    return counts


def summed(counts: dict[str, dict[str, int]]) -> dict[str, dict[str, int]]:
    """Ir, and with the cache simulation the D1 and last-level misses (reads and writes together)."""
    out = {"instructions": counts["Ir"]}
    for label, parts in (("D1 misses", ("D1mr", "D1mw")), ("LL misses", ("DLmr", "DLmw"))):
        if all(p in counts for p in parts):
            out[label] = {g: sum(counts[p][g] for p in parts) for g in GROUPS}
    return out


# The original's void pass: its thread function for the void allocator, callgrind collecting only inside it.
ORIGINAL_VOID_ONLY = (
    "--collect-atstart=no",
    "--toggle-collect=*runRandomTest<VoidAllocatorForTest*",
)


def callgrind(
    argv: list[str],
    env: dict,
    workdir: Path,
    tag: str,
    cache_sim: bool,
    extra: tuple[str, ...] = (),
) -> tuple[str, dict[str, dict[str, int]]]:
    out, said = workdir / f"{tag}.callgrind", workdir / f"{tag}.stdout"
    program = Path(argv[0]).name if "python" not in Path(argv[0]).name else "_core"
    if out.exists() and said.exists():  # --reuse: this run's counts are already there
        return said.read_text(), summed(annotate(out, program))
    sim = ["--cache-sim=yes"] if cache_sim else []
    done = subprocess.run(
        ["valgrind", "--tool=callgrind", *sim, *extra, f"--callgrind-out-file={out}", *argv],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        sys.exit(
            f"{tag}: {argv[0]} failed under callgrind ({done.returncode}): {done.stderr[-2000:]}"
        )
    said.write_text(done.stdout)
    return done.stdout, summed(annotate(out, program))


def job(
    kind: str,
    binary: str,
    allocator: str,
    workdir: Path,
    cache_sim: bool,
    void_pass: bool,
    calls: str = "malloc",
) -> dict:
    env = avo.environment(allocator)
    tag = f"{kind}-{Path(binary).name}-{allocator}" + ("-void" if void_pass else "")
    if kind == "hugebench" and not void_pass and calls != "malloc":
        tag += f"-{calls}"  # its real pass's calls (a void pass makes none)
    if kind == "original":
        extra = ORIGINAL_VOID_ONLY if void_pass else ()
        stdout, sums = callgrind([binary], env, workdir, tag, cache_sim, extra)
        return {"ops": avo.parse_original(stdout)["ops"], "sums": sums}
    # hugebench at the original's parameters (a native run of the original gives them: cheap)
    params = avo.hugebench_params(
        avo.parse_original(subprocess.run([binary], capture_output=True, text=True).stdout),
        "original",
        calls,
    )
    if void_pass:  # its void allocator alone runs the loop of its in-process void pass
        params = {**params, "allocator_mode": "void", "void_run": "separate"}
    argv = [sys.executable, "-I", "-c", avo.HUGEBENCH_CHILD, json.dumps(params)]
    _, sums = callgrind(argv, env, workdir, tag, cache_sim)
    return {"ops": params["iterations"], "sums": sums}


def per_pair(results: dict, names: list[str], runs: tuple[str, str], void: bool) -> dict:
    """{(allocator, event, program): {group: count per pair, "total": ...}}: the 2M run minus the 1M run,
    over the 1M operations' pairs."""
    out = {}
    for name in names:
        for kind in ("original", "hugebench"):
            small, large = (results[(kind, b, name, void)] for b in runs)
            pairs = (large["ops"] - small["ops"]) / 2
            for event in large["sums"]:
                got = {
                    g: (large["sums"][event][g] - small["sums"][event][g]) / pairs for g in GROUPS
                }
                out[name, event, kind] = {**got, "total": sum(got.values())}
    return out


def _ratio(ours: float, theirs: float) -> str:
    return f"{ours / theirs:.3f}" if abs(theirs) >= 1 else "-"


def print_groups(counts: dict, names: list[str]) -> None:
    print("| allocator | count per pair | group | original | hugebench | hugebench/original |")
    print("|---|---|---|---|---|---|")
    for (name, event, kind), got in counts.items():
        if kind != "original":
            continue
        ours = counts[name, event, "hugebench"]
        for g in (*GROUPS, "total"):
            o, h = got[g], ours[g]
            print(f"| {name} | {event} | {g} | {o:.1f} | {h:.1f} | {_ratio(h, o)} |")


def print_passes(both: dict, void: dict, names: list[str]) -> None:
    """Per pass, from the count of both passes and the count of the void pass alone: real = both - void,
    net = real - void (the figure the net main loop times)."""
    print("| allocator | pass | original, instructions/pair | hugebench | hugebench/original |")
    print("|---|---|---|---|---|")
    for name in names:
        split = {}
        for kind in ("original", "hugebench"):
            b, v = (
                both[name, "instructions", kind]["total"],
                void[name, "instructions", kind]["total"],
            )
            split[kind] = {"real": b - v, "void": v, "net (real - void)": b - 2 * v}
        for which in ("real", "void", "net (real - void)"):
            o, h = split["original"][which], split["hugebench"][which]
            print(f"| {name} | {which} | {o:.1f} | {h:.1f} | {_ratio(h, o)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("original_1m")
    parser.add_argument("original_2m")
    parser.add_argument("--allocators", default=",".join(avo.ALLOCATORS))
    parser.add_argument(
        "--jobs", type=int, default=2, help="callgrind runs at once (counts, not times)"
    )
    parser.add_argument(
        "--cache-sim", action="store_true", help="also D1 and last-level cache misses (slower)"
    )
    parser.add_argument(
        "--reuse",
        metavar="DIR",
        help="a directory of an earlier run: its finished counts are not re-run",
    )
    parser.add_argument(
        "--calls",
        choices=("new", "malloc"),
        default="malloc",
        help="hugebench's allocation calls (as benchmarks/alloc_vs_original.py --calls)",
    )
    which = parser.add_mutually_exclusive_group()
    which.add_argument(
        "--void-pass", action="store_true", help="count the void pass alone (see above)"
    )
    which.add_argument(
        "--passes",
        action="store_true",
        help="count both passes and the void pass alone; print the real pass, the void pass and the net",
    )
    args = parser.parse_args()
    names = args.allocators.split(",")
    work = Path(args.reuse) if args.reuse else Path(tempfile.mkdtemp(prefix="alloc-instructions-"))
    runs = (args.original_1m, args.original_2m)
    voids = (False, True) if args.passes else (args.void_pass,)
    plan = [
        (kind, binary, name, void)
        for void in voids
        for name in names
        for kind in ("original", "hugebench")
        for binary in runs
    ]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        done = pool.map(lambda p: job(*p[:3], work, args.cache_sim, p[3], args.calls), plan)
        results = dict(zip(plan, done, strict=True))
    counts = {void: per_pair(results, names, runs, void) for void in voids}
    print_groups(counts[voids[0]], names)
    if args.passes:
        print()
        print_passes(counts[False], counts[True], names)
    print(f"\ncallgrind outputs: {work}")


if __name__ == "__main__":
    main()
