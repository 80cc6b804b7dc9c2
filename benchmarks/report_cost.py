"""hugebench's own cost: CPU time and peak memory of `report`, `compare`, `history` and `load()` on big stores.

    python benchmarks/report_cost.py SOURCE [--work DIR] [--tree SRC] [--only c504,r100k] [--skip ...]

SOURCE is a small real store (``hugebench sweep experiments/quick.yaml -o SOURCE``: 42 cells). The stores are
built under ``--work`` (default /tmp/hugebench-cost) by ``benchmarks/big_store.py`` once and reused:

    c504     504 cells x 2 rows (1 008 rows)      c1512   1 512 cells (3 024 rows)
    c1008    1 008 cells (2 016 rows): issue 42's "1 000 cells in under 3 s"
    c5040    5 040 cells (10 080 rows)            r100k   42 cells x 2 381 rows (100 002 rows, 1.3 GB)
    c50k     50 400 cells x 2 rows (100 800 rows) (only with --only c50k: 1.3 GB)
    c50kn    as c50k, rows of ~40 columns (``big_store.py --narrow``: 110 MB)

Each command runs in a fresh process (the hugebench under ``--tree``, default this checkout, on PYTHONPATH);
its CPU time (user + system) and peak RSS come from ``wait4``. Prints a Markdown table headed by the command
line, the date and the commit of ``--tree``.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
from big_store import write_store

HERE = Path(__file__).resolve().parent.parent
# name -> (keys values, repetitions[, narrow rows]): cells = 42 x keys
STORES = {
    "c504": (12, 2),
    "c1008": (24, 2),
    "c1512": (36, 2),
    "c5040": (120, 2),
    "r100k": (1, 2381),
    "c50k": (1200, 2),
    "c50kn": (1200, 2, True),
}
HISTORY_STORES = 5  # c504 copies, a day apart
LOAD = "import sys, hugebench; df = hugebench.load(sys.argv[1]); print(df.shape)"


def commands(store: str, work: Path, out: Path) -> list[tuple[str, list[str]]]:
    """(label, argv after the interpreter) of each command timed on ``store``."""
    hb = ["-m", "hugebench.cli"]
    path = str(work / store)
    found = [
        ("report (markdown)", hb + ["report", path, "--format", "markdown"]),
        ("report --html", hb + ["report", path, "--html", str(out / f"{store}.html")]),
        ("compare A B", hb + ["compare", path, str(work / f"{store}-b"), "--format", "markdown"]),
        ("history A B", hb + ["history", path, str(work / f"{store}-b"), "--format", "markdown"]),
        ("hugebench.load()", ["-c", LOAD, path]),
    ]
    if store == "c504":
        days = [str(work / f"c504-day{d}") for d in range(HISTORY_STORES)]
        found.append((f"history over {HISTORY_STORES} stores", hb + ["history", *days]))
    return found


def build(source: Path, work: Path, names: list[str]) -> None:
    for name in names:
        keys, reps, *narrow = STORES[name]
        extra = [(f"{name}-b", 1, 0)]
        if name == "c504":
            extra += [(f"c504-day{d}", 10 + d, d) for d in range(HISTORY_STORES)]
        for target, seed, days in [(name, 0, 0), *extra]:
            if not (work / target).exists():
                cells, rows = write_store(
                    source, work / target, keys, reps, seed=seed, days=days, narrow=bool(narrow)
                )
                print(f"built {work / target}: {cells} cells, {rows} rows", file=sys.stderr)


def measure(argv: list[str], tree: Path) -> tuple[float, float, float, int]:
    """(cpu seconds, wall seconds, peak RSS in MB, exit status) of one run of the interpreter on argv."""
    # PYTHONSAFEPATH: `-m`/`-c` put the current directory first on sys.path, so run from a checkout they
    # timed that checkout's hugebench whatever --tree said
    env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONSAFEPATH": "1", "COLUMNS": "200"}
    start = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, *argv], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    if proc.returncode:
        print(f"exit {proc.returncode}: {' '.join(argv)}\n{err[-2000:]}", file=sys.stderr)
    return usage.ru_utime + usage.ru_stime, wall, usage.ru_maxrss / 1024, proc.returncode


def commit_of(tree: Path) -> str:
    try:
        return subprocess.run(
            ["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return f"(no git: {tree})"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="a small real store (hugebench sweep quick.yaml)")
    ap.add_argument("--work", type=Path, default=Path("/tmp/hugebench-cost"))
    ap.add_argument("--tree", type=Path, default=HERE, help="hugebench source tree to time")
    ap.add_argument("--only", default="c504,c1512,c5040,r100k", help="stores to time")
    ap.add_argument("--skip", default="", help="command labels to leave out (comma-separated)")
    args = ap.parse_args(argv)
    names = [n for n in args.only.split(",") if n]
    unknown = [n for n in names if n not in STORES]
    if unknown:
        ap.error(f"unknown store(s) {', '.join(unknown)}; choose from {', '.join(STORES)}")
    args.work.mkdir(parents=True, exist_ok=True)
    build(args.source, args.work, names)
    skip = {s.strip() for s in args.skip.split(",") if s.strip()}
    print(f"`python benchmarks/report_cost.py {' '.join(argv or sys.argv[1:])}`  ")
    print(f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, hugebench {commit_of(args.tree)}\n")
    print("| store | command | CPU s | wall s | peak RSS MB |")
    print("|---|---|---:|---:|---:|")
    for name in names:
        for label, cmd in commands(name, args.work, args.work):
            if label in skip:
                continue
            cpu, wall, rss, code = measure(cmd, args.tree)
            failed = "" if code == 0 else f" (exit {code})"
            print(f"| {name} | {label}{failed} | {cpu:.1f} | {wall:.1f} | {rss:.0f} |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
