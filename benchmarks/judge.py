"""The judge: does ``hugebench try``'s answer hold when deployed outside hugebench? (issue 40, "Done means")

    python benchmarks/judge.py [--programs xz,heap] [--budget 3m] [--rounds 5]
        [--runs 3] [--as root|user|both] [--user nobody] [--load quiet|busy|both]
        [--allow-machine-wide] [--out results/judge] [--quick]

For each program of the panel (benchmarks/judge_panel.py: compressors, sqlite3 on a SQL script on stdin,
redis-server under redis-benchmark, python3, GNU sort, gcc, the issue's heap program), with inputs it
generates: run ``hugebench try --json`` (as root, or as an unprivileged user through ``setpriv``), read the
verdict and its deploy lines (benchmarks/judge_lib.py, one parsing function), deploy the recommendation
exactly as printed (its environment as a shell prefix; THP off per process through a prctl launcher, the
per-process line try prints for it; a machine-wide sysfs write only with --allow-machine-wide, journaled and
put back in a finally), and time as-is against deployed with hyperfine in alternating rounds (A then B, then
B then A, ...; ``--runs`` each per round). The judge's ratio is the median of the per-round ratios of
medians, with a bootstrap CI over the rounds. A keep-as-is verdict prints no deploy lines: its best
configuration is deployed the way try would print it, to check the ratio try reported for it.

``--load busy`` runs every program with a background load the judge starts itself (one CPU of a Python loop
at normal priority, for try and for the rounds alike; ended in a ``finally`` and with the judge's death,
``judge_run.background_load``); ``both`` runs each program quiet, then busy (issue 55).

Prints a table (program, as, load, try's verdict, try's ratio and its one interval, the judge's ratio and
CI, agreement) and the coverage of try's interval in each condition (quiet/busy x root/user; goal: the
judge inside it for at least 90 % of verdicts), and writes it, with the command, date and commit, to
OUT/<stamp>/judge.md; the raw data to judge.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_lib as lib
import judge_panel as panel
import judge_run as jr
from judge_run import Who

from hugebench.cli.try_ import parse_budget


def try_verdict(prog, who: Who, work: Path, dirs: dict, args) -> dict:
    """Run ``hugebench try --json`` on the program; its verdict as a dict (raises RuntimeError with why)."""
    argv = [
        *who.hugebench(args.hugebench),
        "try",
        "--budget",
        args.budget,
        "--json",
        "-o",
        str(dirs["try"]),
        "--cwd",
        str(work),
    ]
    if prog.stdin:
        argv += ["--stdin", prog.stdin]
    for k, v in prog.env.items():
        argv += ["--env", f"{k}={v}"]
    if prog.server:
        argv += ["--server", prog.server, "--ready", prog.ready]
    argv += ["--", *panel.argv_of(prog, work, Path("{tmp}"), args.quick)]
    rc, out, err = jr.run(argv, who, work, parse_budget(args.budget) + 300, dirs["log"])
    if rc != 0:
        tail = [line for line in err.strip().splitlines() if line.strip()][-1:] or ["no output"]
        raise RuntimeError(f"try exited {rc}: {tail[0][:300]}")
    return json.loads(out)


def rounds(sides: dict, who: Who, work: Path, dirs: dict, args, set_side) -> list:
    """Alternating rounds (A B, B A, ...): each side ``args.runs`` runs under hyperfine; per round the
    (as-is times, deployed times, user and system seconds)."""
    out = []
    for r in range(args.rounds):
        got = {}
        for side in ("A", "B") if r % 2 == 0 else ("B", "A"):
            set_side(side)
            cmd, prepare, _ = sides[side]
            try:
                got[side] = jr.hyperfine(
                    cmd, prepare, who, work, dirs["hf"] / f"r{r}-{side}.json", args.runs
                )
            finally:
                jr.stop_server(dirs["tmp"], who)
        out.append(got)
        ratio = lib.round_ratio(got["A"]["times"], got["B"]["times"])
        print(f"  round {r + 1}/{args.rounds}: deployed/as-is {ratio:.3f}", flush=True)
    return out


def judge_one(prog, who: Who, base: Path, thp_off: Path, args, load: str = "quiet") -> dict:
    """One program as one user under one load: its inputs, try, the deploy, the rounds; a failure is a row
    with its reason."""
    tag = f"{prog.name}-{'root' if who.root else 'user'}-{load}"
    row = {"program": prog.name, "kind": prog.kind, "as": who.label, "load": load}
    gone = panel.missing(prog)
    if gone:
        return {**row, "error": f"not installed: {', '.join(gone)}"}
    work = base / f"work-{'root' if who.root else 'user'}-{load}" / prog.name
    tmp = Path(tempfile.mkdtemp(prefix=f"judge-{tag}-"))
    dirs = {
        "try": base / "try" / tag,
        "log": base / "logs" / f"try-{tag}.log",
        "hf": base / "hyperfine" / tag,
        "tmp": tmp,
    }
    try:
        for p in (work, dirs["hf"], dirs["try"]):
            p.mkdir(parents=True)
        prog.make(work, args.quick)
        for p in (work, dirs["hf"], dirs["try"], tmp):
            who.own(p)
        print(f"{prog.name} ({who.label}): hugebench try --budget {args.budget} ...", flush=True)
        data = try_verdict(prog, who, work, dirs, args)
        row["try_json"] = data
        verdict = lib.parse_verdict(data)
        row["verdict"] = {k: v for k, v in verdict.__dict__.items() if k != "deploy"}
        print(f"  try: {verdict.text}; best {verdict.best} {_ci(verdict)}", flush=True)
        if verdict.deploy is None:
            return {**row, "skipped": "try gave no best configuration with a ratio"}
        row["deployed"] = f"{verdict.deploy.describe()} ({verdict.deploy.source})"
        if verdict.deploy.machine_wide and not args.allow_machine_wide:
            return {
                **row,
                "skipped": "deploy is a machine-wide sysfs write; pass --allow-machine-wide",
            }
        jr.check_preload(verdict.deploy, who)
        sides = jr.with_idle(
            jr.commands(prog, verdict.deploy, work, tmp, thp_off, args.quick), verdict.idle_s
        )
        row["commands"] = {
            s: {"timed": c, "prepare": p, "server": v} for s, (c, p, v) in sides.items()
        }
        with jr.machine_wide(verdict.deploy.sysfs, base / f"journal-{tag}.json") as set_side:
            got = rounds(sides, who, work, dirs, args, set_side)
        row["rounds"] = got
        judged = lib.judge([(g["A"]["times"], g["B"]["times"]) for g in got])
        row["judged"] = judged.__dict__
        row["agreement"] = lib.agreement(verdict, judged)
        print(f"  judge: {_ci(judged)}; {row['agreement']}", flush=True)
        return row
    except (RuntimeError, lib.DeployNotUnderstood, OSError, ValueError) as exc:
        print(f"  FAILED: {exc}", flush=True)
        return {**row, "error": str(exc)}
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _ci(x) -> str:
    def f(v):
        return "—" if v is None else f"{v:.3f}"

    return f"{f(x.ratio)} [{f(x.ci_lo)}, {f(x.ci_hi)}]"


def header(args, argv: list[str]) -> list[str]:
    tree = Path(lib.__file__).resolve().parent.parent
    git = subprocess.run(
        ["git", "-C", str(tree), "describe", "--always", "--dirty"], capture_output=True, text=True
    )
    thp = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text().strip()
    return [
        "# The judge: try's verdicts deployed and timed by hyperfine",
        "",
        f"- command: `{shlex.join(argv)}`",
        f"- date: {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}",
        f"- commit: `{git.stdout.strip() or 'unknown'}` ({tree})",
        f"- machine: {os.uname().release}, {os.cpu_count()} CPUs, THP enabled `{thp}`",
        f"- try --budget {args.budget}; judge: {args.rounds} alternating rounds of {args.runs} "
        "hyperfine runs per side; ratio = deployed / as-is wall time (below 1: faster)",
        f"- load: {args.load} (busy: one CPU of work at normal priority, started by the judge)",
        "",
    ]


def write_atomic(path: Path, text: str) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    with os.fdopen(fd, "w") as f:
        f.write(text)
        os.fchmod(f.fileno(), 0o644)
    os.replace(tmp, path)


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--programs", help=f"comma-separated, of: {', '.join(p.name for p in panel.PANEL)}"
    )
    ap.add_argument("--budget", default=None, help="try's --budget (default 3m; --quick: 40s)")
    ap.add_argument(
        "--rounds", type=int, default=None, help="alternating rounds (default 5; quick 2)"
    )
    ap.add_argument(
        "--runs", type=int, default=None, help="hyperfine runs per side per round (3; quick 2)"
    )
    ap.add_argument("--as", dest="who", choices=["root", "user", "both"], default="root")
    ap.add_argument("--user", default="nobody", help="the unprivileged user for --as user|both")
    ap.add_argument(
        "--load",
        choices=["quiet", "busy", "both"],
        default="quiet",
        help="busy: a background load the judge starts (one CPU of work at normal priority)",
    )
    ap.add_argument(
        "--allow-machine-wide",
        action="store_true",
        help="deploy machine-wide sysfs writes (journaled, put back after each program)",
    )
    ap.add_argument(
        "--out", default="results/judge", type=Path, help="a new stamped directory in it"
    )
    ap.add_argument("--quick", action="store_true", help="tiny inputs: smoke-test the pipeline")
    ap.add_argument(
        "--hugebench",
        default=shutil.which("hugebench") or str(Path(sys.executable).parent / "hugebench"),
    )
    args = ap.parse_args(argv)
    args.budget = args.budget or ("40s" if args.quick else "3m")
    args.rounds = args.rounds or (2 if args.quick else 5)
    args.runs = args.runs or (2 if args.quick else 3)
    try:
        parse_budget(args.budget)
    except Exception as exc:
        ap.error(str(exc))
    if args.rounds < 2 or args.runs < 1:
        ap.error("--rounds must be at least 2 (a CI needs two) and --runs at least 1")
    return args


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if os.geteuid() != 0:
        sys.exit("judge: run as root (it runs try as root, and as --user through setpriv)")
    programs = panel.select(args.programs)
    for tool in ("hyperfine", "gcc", "setpriv", args.hugebench):
        if not shutil.which(tool):
            sys.exit(f"judge: {tool} not found (apt-get install -y hyperfine gcc util-linux)")
    args.out.mkdir(parents=True, exist_ok=True)
    base = args.out.resolve() / time.strftime("%Y%m%d-%H%M%S")
    base.mkdir()
    for d in ("logs", "try", "bin"):
        (base / d).mkdir()
    names = {"root": ["root"], "user": [args.user], "both": ["root", args.user]}[args.who]
    whos = [Who(n, base) for n in names]
    thp_off = panel.make_thp_off(base / "bin")
    loads = {"quiet": ["quiet"], "busy": ["busy"], "both": ["quiet", "busy"]}[args.load]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))  # the finally blocks run: knobs, load
    rows: list = []
    lines: list[str] = []
    for prog in programs:
        for who in whos:
            for load in loads:
                with jr.background_load(load == "busy") as pid:
                    if pid:
                        print(f"background load: pid {pid}, one CPU at normal priority", flush=True)
                    rows.append(judge_one(prog, who, base, thp_off, args, load))
                # written after every row: a judge cut short keeps what it measured
                lines = _write(base, args, argv, rows)
    print("\n".join(lines))
    print(f"\nwritten: {base / 'judge.md'}, {base / 'judge.json'}")
    return 0


def _write(base: Path, args, argv: list, rows: list) -> list[str]:
    lines = header(args, [sys.argv[0], *argv]) + lib.table(rows) + [""] + lib.summary(rows)
    write_atomic(base / "judge.md", "\n".join(lines) + "\n")
    write_atomic(base / "judge.json", json.dumps(rows, indent=1, default=str))
    return lines


if __name__ == "__main__":
    sys.exit(main())
