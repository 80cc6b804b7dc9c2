"""hugebench's per-run overhead: wall time a sweep spends per run beyond the measured program (issue 42).

    python benchmarks/run_overhead.py [--runs 20] [--program /bin/true] [--work DIR]

Runs ``hugebench sweep`` of the command workload on PROGRAM (``--runs`` repetitions, one cell) in a fresh
results directory, then prints, per run: the sweep's wall time (the context's ``sweep_wall_s`` / runs), the
worker process's wall time (median ``wall_s``), the program's own measured window (median ``window_s``) and
the overhead = sweep wall per run - window. Run it under ``flock /work/wt/devlock``; a busy machine (see the
sweep's disturbance warning) inflates every figure.
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


def sweep(program: list[str], runs: int, out: Path) -> None:
    spec = out.parent / "overhead.yaml"
    spec.write_text(
        "name: overhead\nworkload: command\n"
        f"repetitions: {runs}\nparams:\n  argv: {json.dumps(program)}\naxes:\n  allocator: [glibc]\n"
    )
    env = {**os.environ, "PYTHONPATH": str(HERE)}
    argv = [sys.executable, "-m", "hugebench.cli", "sweep", str(spec), "-o", str(out)]
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL)


def figures(out: Path) -> dict[str, float]:
    sys.path.insert(0, str(HERE))
    import hugebench
    from hugebench.store import load_contexts

    rows = hugebench.load(out)
    ok = rows[rows["status"] == "ok"]
    context = next(iter(load_contexts(out).values()))
    per_run = context["sweep_wall_s"] / len(rows)
    window = float(ok["window_s"].median())
    return {
        "runs": len(rows),
        "sweep wall per run (s)": per_run,
        "worker wall per run, median (s)": float(ok["wall_s"].median()),
        "program window, median (s)": window,
        "overhead per run (s)": per_run - window,
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--program", default="/bin/true", help="the program and its arguments")
    ap.add_argument(
        "--work", type=Path, default=None, help="where the store goes (default: a temp dir)"
    )
    args = ap.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="hb-overhead-"))
    work.mkdir(parents=True, exist_ok=True)
    out = work / "store"
    sweep(args.program.split(), args.runs, out)
    for name, value in figures(out).items():
        print(f"{name}: {value:.4f}" if isinstance(value, float) else f"{name}: {value}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
