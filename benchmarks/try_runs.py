"""How many runs ``hugebench try`` makes of a 50 ms program in a budget (issue 42).

    python benchmarks/try_runs.py [--budget 60s] [--ms 50] [--work DIR]

Builds a C program that touches 8 MiB and spins until ``--ms`` milliseconds of wall time have passed (cc
from PATH), runs ``hugebench try --budget B --json`` on it with the hugebench this file belongs to (its
tree on PYTHONPATH, from a neutral working directory) and prints the runs made, try's wall time, the runs
per second of it and why try stopped (a try stops before its budget once it has an answer). Run it under
``flock /work/wt/devlock``; for a before/after comparison run the two trees' copies of it in turn.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent

PROGRAM = r"""
#include <stdlib.h>
#include <string.h>
#include <time.h>
int main(void) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    char *p = malloc(8 << 20);
    memset(p, 1, 8 << 20);
    volatile unsigned long x = 0;
    do {
        for (int i = 0; i < 10000; i++) x += p[(i * 4099) & ((8 << 20) - 1)];
        clock_gettime(CLOCK_MONOTONIC, &b);
    } while ((b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6 < MS);
    free(p);
    return 0;
}
"""


def build(work: Path, ms: float) -> Path:
    source, binary = work / "busy.c", work / "busy"
    source.write_text(PROGRAM)
    subprocess.run(["cc", "-O2", f"-DMS={ms}", "-o", str(binary), str(source)], check=True)
    return binary


def run_try(binary: Path, budget: str, out: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    argv = [sys.executable, "-m", "hugebench.cli", "try", "--budget", budget, "--json"]
    argv += ["-o", str(out), "--", str(binary)]
    done = subprocess.run(argv, env=env, cwd=out.parent, check=True, capture_output=True, text=True)
    return json.loads(done.stdout)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--budget", default="60s")
    ap.add_argument("--ms", type=float, default=50.0, help="the program's wall time, ms")
    ap.add_argument("--work", type=Path, default=None, help="where it builds and stores")
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="hb-tryruns-"))
    work.mkdir(parents=True, exist_ok=True)
    verdict = run_try(build(work, args.ms), args.budget, work / "store")
    runs, wall = verdict["runs"], verdict["wall_s"]
    print(f"runs: {runs}\ntry wall (s): {wall}\nruns per second: {runs / wall:.2f}")
    print(f"stopped: {verdict.get('stopped')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
