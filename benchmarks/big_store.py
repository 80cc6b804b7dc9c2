"""Large results stores for measuring hugebench's own cost, made by replicating a real sweep's rows.

    python benchmarks/big_store.py SOURCE OUT --keys 12 --repetitions 2     # 42 x 12 = 504 cells, 1 008 rows

SOURCE is a small real store (e.g. ``hugebench sweep experiments/quick.yaml -o SOURCE``: 42 cells,
allocator x thp x set_kind, ~354 columns a row). OUT gets a store of the same shape with the ``keys`` axis
widened to ``--keys`` values (1M, 2M, ...) and ``--repetitions`` rows per cell, so cells = 42 x keys and rows =
cells x repetitions. Each row is a real row of SOURCE (one of the same allocator, THP mode and set kind where
SOURCE has one) with its identity rewritten (run_id, cell_id, repetition, order_index, keys, started_at) and
its report metrics scaled by a seeded random factor (0.9-1.1), so cells differ and ratios are not all 1.
Every ``--fail-every``-th row keeps a failure status and reason (``disturbed`` if SOURCE has none), the rest are
``ok``. The sweep context is SOURCE's with ``spec.axes.keys`` listing the new values. Nothing here is a
measurement: these stores exist to time ``report``, ``compare``, ``history`` and ``load()`` on many rows.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
from datetime import datetime, timedelta
from pathlib import Path

CELL_AXES = ("allocator", "thp.enabled", "set_kind")
# what a --narrow row keeps besides the metrics
NARROW = (
    *CELL_AXES,
    *("schema_version", "run_id", "cell_id", "sweep_id", "experiment", "workload", "repetition"),
    *("order_index", "warmup", "status", "error", "started_at", "wall_s", "keys", "thp"),
    *("knob.thp.enabled", "param.set_kind", "peak_rss_bytes", "hp_coverage"),
)


def _read(source: Path) -> tuple[list[dict], dict]:
    rows = [json.loads(line) for line in (source / "runs.jsonl").open() if line.strip()]
    contexts = sorted((source / "sweeps").glob("*.json"))
    if not rows or not contexts:
        raise SystemExit(f"{source}: no rows or no sweep context; make it with `hugebench sweep`")
    return rows, json.loads(contexts[0].read_text())


def _templates(rows: list[dict], context: dict) -> list[dict]:
    """One template row per cell of SOURCE's axes (allocator x thp x set_kind), ok rows preferred."""
    axes = context["spec"]["axes"]
    rows = sorted(rows, key=lambda r: r.get("status") != "ok")
    out = []
    for allocator in axes["allocator"]:
        for thp in axes["thp.enabled"]:
            for kind in axes.get("set_kind", [None]):
                wanted = {"allocator": allocator, "thp.enabled": thp, "set_kind": kind}
                same = [r for r in rows if all(r.get(a) == wanted[a] for a in CELL_AXES)]
                near = [r for r in rows if r.get("allocator") == allocator] or rows
                row = dict((same or near)[0])
                row.update(wanted)
                row["knob.thp.enabled"], row["param.set_kind"] = thp, kind
                out.append(row)
    return out


def _hash(*parts) -> str:
    return hashlib.sha256(repr(parts).encode()).hexdigest()[:16]


def write_store(
    source: Path,
    out: Path,
    keys: int,
    repetitions: int,
    fail_every: int = 50,
    seed: int = 0,
    days: int = 0,
    narrow: bool = False,
) -> tuple[int, int]:
    """Write the store; return (cells, rows). ``narrow``: rows keep only what names a run and its cell and
    the report's metrics (~40 columns, ~1 KB), for stores of millions of rows."""
    rows, context = _read(source)
    templates = _templates(rows, context)
    if narrow:
        keep = set(NARROW) | {m["column"] for m in context.get("metrics") or []}
        templates = [{k: v for k, v in t.items() if k in keep} for t in templates]
    failed = next((r for r in rows if r.get("status") != "ok"), None)
    metrics = [m["column"] for m in context.get("metrics") or []]
    key_values = [(k + 1) * 1_000_000 for k in range(keys)]
    sweep_id = context["sweep_id"]
    start = datetime.fromisoformat(context.get("started_at") or "2026-01-01T00:00:00+00:00")
    start += timedelta(days=days)
    context["started_at"] = start.isoformat()
    rng = random.Random(seed)
    out.mkdir(parents=True, exist_ok=False)
    (out / "sweeps").mkdir()
    context["spec"]["axes"]["keys"] = key_values
    (out / "sweeps" / f"{sweep_id}.json").write_text(json.dumps(context, indent=2))
    n = 0
    with (out / "runs.jsonl").open("w") as runs:
        for rep in range(repetitions):
            for key in key_values:
                for template in templates:
                    row = dict(template)
                    cell = _hash(sweep_id, key, *(template[a] for a in CELL_AXES))
                    row.update(
                        run_id=_hash(cell, rep),
                        cell_id=cell,
                        repetition=rep,
                        order_index=n,
                        keys=key,
                        started_at=(start + timedelta(seconds=n)).isoformat(),
                        status="ok",
                        error=None,
                    )
                    for column in metrics:
                        if isinstance(row.get(column), (int, float)):
                            row[column] = row[column] * rng.uniform(0.9, 1.1)
                    if fail_every and n % fail_every == fail_every - 1:
                        row["status"] = failed["status"] if failed else "disturbed"
                        row["error"] = failed["error"] if failed else "disturbed: synthetic"
                    runs.write(json.dumps(row) + "\n")
                    n += 1
    return len(templates) * keys, n


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("source", type=Path, help="a small real results store")
    ap.add_argument("out", type=Path, help="the store to write (must not exist)")
    ap.add_argument(
        "--keys", type=int, default=12, help="values of the keys axis (cells = 42 x this)"
    )
    ap.add_argument("--repetitions", type=int, default=2, help="rows per cell")
    ap.add_argument("--fail-every", type=int, default=50, help="every Nth row failed (0: none)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--days", type=int, default=0, help="start this many days after SOURCE")
    ap.add_argument("--narrow", action="store_true", help="~40 columns a row (for 1M-row stores)")
    args = ap.parse_args(argv)
    cells, rows = write_store(
        args.source,
        args.out,
        args.keys,
        args.repetitions,
        args.fail_every,
        args.seed,
        args.days,
        args.narrow,
    )
    print(f"{args.out}: {cells} cells, {rows} rows")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
