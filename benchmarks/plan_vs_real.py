"""What `hugebench plan` priced against what a sweep took: each stored run's time model (the price `plan`
gives it before anything ran) beside its measured worker wall time, grouped by the axes you name, and the
whole sweep's wall time from its record.

    python benchmarks/plan_vs_real.py experiments/tlb.yaml results/tlb --by allocator,keys

The model is the workload's (``Workload.time_estimate``, what `plan` uses for cells without history). Prints a
Markdown table: per group the runs, real and model seconds, model / real; then the totals and the sweep wall
(first start to last end of its runs, and the sweep record's own wall time when it recorded its end).
"""

from __future__ import annotations

import argparse
import json
from collections import defaultdict
from pathlib import Path

import pandas as pd

from hugebench.experiment import load_spec
from hugebench.store import load
from hugebench.sweep import plan as plan_mod


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("experiment")
    ap.add_argument("results")
    ap.add_argument("--by", default="allocator", help="comma-separated row columns to group by")
    args = ap.parse_args(argv)
    spec = load_spec(args.experiment)
    rows = load(args.results, hosts=False)
    reps = int(rows["repetition"].max()) + 1 if len(rows) else spec.repetitions
    model = {r.run_id: r.time_estimate for r in plan_mod.plan(spec, reps)}
    by = [c.strip() for c in args.by.split(",") if c.strip()]
    groups = defaultdict(lambda: [0, 0.0, 0.0])
    total = [0, 0.0, 0.0]
    for row in rows.to_dict("records"):
        priced = model.get(row["run_id"])
        if row.get("status") != "ok" or priced is None:
            continue
        key = tuple(row.get(c) for c in by)
        for acc in (groups[key], total):
            acc[0] += 1
            acc[1] += float(row["wall_s"])
            acc[2] += float(priced)
    print("| " + " | ".join(by) + " | runs | real s | model s | model / real |")
    print("|" + "---|" * (len(by) + 4))
    for key in sorted(groups, key=lambda k: tuple(str(v) for v in k)):
        n, real, priced = groups[key]
        print(
            "| "
            + " | ".join(map(str, key))
            + f" | {n} | {real:.0f} | {priced:.0f} | {priced / real:.2f} |"
        )
    n, real, priced = total
    print("| total" + " |" * len(by) + f" {n} | {real:.0f} | {priced:.0f} | {priced / real:.2f} |")
    if "started_at" in rows.columns and len(rows):
        starts = pd.to_datetime(rows["started_at"], utc=True)
        ends = starts + pd.to_timedelta(
            pd.to_numeric(rows["wall_s"], errors="coerce").fillna(0), unit="s"
        )
        span = (ends.max() - starts.min()).total_seconds()
        print(
            f"\nruns: {starts.min():%Y-%m-%d %H:%M} to {ends.max():%H:%M} UTC, {span / 60:.1f} min from the first "
            f"start to the last end; worker wall summed {real / 60:.1f} min; model summed {priced / 60:.1f} min "
            f"(model / span {priced / span:.2f})"
        )
    for record in sorted(Path(args.results, "sweeps").glob("*.json")):
        data = json.loads(record.read_text())
        wall = data.get("sweep_wall_s")
        if wall:
            print(
                f"sweep {data['sweep_id']}: {wall / 60:.1f} min (its record), planned {len(model)} runs"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
