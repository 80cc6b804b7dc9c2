"""Does try give the same kind of answer every time? ``hugebench try --json`` on one panel program N times in a
row (issue 40: the heap program, five `try --budget 3m` runs, as root and as a user), each verdict printed.

    python benchmarks/try_repeat.py [--program heap] [--times 5] [--budget 3m] [--as root|user|both]
        [--user nobody] [--load quiet|busy] [--out results/try-repeat]

The program and its inputs come from the judge's panel (benchmarks/judge_panel.py) and try runs as the
judge runs it (benchmarks/judge.py: as root, or as the user through setpriv). The goal the issue sets: a
huge-page recommendation, or "keep as-is" with the measured reason it cannot tell, and never a resolved
verdict that the best configuration is worse, in every run. ``--load busy`` runs every try beside the judge's
background load (one CPU of work at normal priority, ``judge_run.background_load``); issue 55 asks the heap
program, busy, for a recommendation or "likely X, re-run quiet", never "keep as-is: no difference". Writes OUT/<stamp>/repeat.md (with the command,
date and commit) and repeat.json.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge as judge_mod
import judge_lib as lib
import judge_panel as panel
from judge_run import Who, background_load


def one(prog, who: Who, base: Path, i: int, args) -> dict:
    """One try on the program; its verdict as the judge reads it, or the error."""
    tag = f"{'root' if who.root else 'user'}-{i}"
    work = base / f"work-{tag}"
    dirs = {"try": base / "try" / tag, "log": base / "logs" / f"try-{tag}.log"}
    for p in (work, dirs["try"]):
        p.mkdir(parents=True)
    prog.make(work, False)
    for p in (work, dirs["try"]):
        who.own(p)
    row: dict = {"as": who.label, "try": i}
    try:
        started = time.monotonic()
        data = judge_mod.try_verdict(prog, who, work, dirs, args)
        verdict = lib.parse_verdict(data)
    except (RuntimeError, lib.DeployNotUnderstood, ValueError) as exc:
        return {**row, "error": str(exc)}
    wrong = verdict.resolved and not verdict.recommend and "resolved worse" in verdict.text
    return {
        **row,
        "verdict": verdict.text,
        "best": verdict.best,
        "ratio": verdict.ratio,
        "ci": [verdict.ci_lo, verdict.ci_hi],
        "pairs": verdict.pairs,
        "caveats": data.get("caveats", []),
        "wall_s": round(time.monotonic() - started, 1),
        "resolved_worse": wrong,
    }


def lines(rows: list) -> list[str]:
    out = ["| as | try | verdict | best | ratio [95% CI] | pairs |", "|---|---|---|---|---|---|"]
    for r in rows:
        if "error" in r:
            out.append(f"| {r['as']} | {r['try']} | FAILED: {r['error'][:120]} | | | |")
            continue
        lo, hi = r["ci"]
        ci = f"{r['ratio']:.3f} [{lo:.3f}, {hi:.3f}]" if r["ratio"] and lo and hi else "—"
        out.append(
            f"| {r['as']} | {r['try']} | {r['verdict']} | {r['best']} | {ci} | {r['pairs']} |"
        )
    for who in dict.fromkeys(r["as"] for r in rows):
        mine = [r for r in rows if r["as"] == who]
        worse = sum(bool(r.get("resolved_worse")) for r in mine)
        huge = sum("use " in str(r.get("verdict")) for r in mine)
        failed = sum("error" in r for r in mine)
        out.append(
            f"\n- {who}: {len(mine)} trys; recommended a change {huge}, resolved worse {worse}, "
            f"failed {failed}"
        )
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--program", default="heap")
    ap.add_argument("--times", type=int, default=5)
    ap.add_argument("--budget", default="3m")
    ap.add_argument("--as", dest="who", choices=["root", "user", "both"], default="both")
    ap.add_argument("--user", default="nobody")
    ap.add_argument("--load", choices=["quiet", "busy"], default="quiet")
    ap.add_argument("--out", type=Path, default=Path("results/try-repeat"))
    ap.add_argument("--hugebench", default=str(Path(sys.executable).parent / "hugebench"))
    argv = sys.argv[1:] if argv is None else argv
    args = ap.parse_args(argv)
    args.quick, args.rounds, args.runs = False, 0, 0  # (the judge's header reads them)
    (prog,) = panel.select(args.program)
    base = args.out.resolve() / time.strftime("%Y%m%d-%H%M%S")
    base.mkdir(parents=True)
    (base / "logs").mkdir()
    names = {"root": ["root"], "user": [args.user], "both": ["root", args.user]}[args.who]
    rows = []
    for name in names:
        who = Who(name, base)
        for i in range(1, args.times + 1):
            with background_load(args.load == "busy"):
                rows.append(one(prog, who, base, i, args))
            print(json.dumps(rows[-1], default=str)[:400], flush=True)
    head = judge_mod.header(args, [sys.argv[0], *argv])[:6] + [f"- load: {args.load}"]
    head[0] = f"# try --budget {args.budget} on {args.program}, {args.times} times in a row"
    text = "\n".join(head + [""] + lines(rows)) + "\n"
    print(text)
    judge_mod.write_atomic(base / "repeat.md", text)
    judge_mod.write_atomic(base / "repeat.json", json.dumps(rows, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
