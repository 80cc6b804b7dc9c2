"""The judge: does ``hugebench try``'s answer hold when deployed outside hugebench? (issue 40, "Done means")

    flock /work/wt/devlock python benchmarks/judge.py [--programs xz,heap] [--budget 3m] [--rounds 5]
        [--runs 3] [--as root|user|both] [--user nobody] [--allow-machine-wide] [--out results/judge] [--quick]

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

Prints a table (program, try's verdict, try's ratio and CI, the judge's ratio and CI, agreement) and writes
it, with the command, date and commit, to OUT/<stamp>/judge.md; the raw data to judge.json.
"""

from __future__ import annotations

import argparse
import json
import os
import pwd
import re
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import judge_lib as lib
import judge_panel as panel

from hugebench.cli_try import parse_budget

SYSTEM_PYTHON = "/usr/bin/python3"


class Who:
    """Who runs try and hyperfine: root as is, or a user through setpriv with a clean environment."""

    def __init__(self, name: str, base: Path):
        self.name = name
        self.root = name == "root"
        info = pwd.getpwnam(name)
        self.uid, self.gid = info.pw_uid, info.pw_gid
        self.home = base / "home-user"
        if not self.root:
            self.home.mkdir()
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": os.environ.get("HOME", "/root") if self.root else str(self.home),
            "LANG": "C.UTF-8",
        }
        if os.environ.get("PYTHONPATH"):
            self.env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        self.own(self.home)

    def hugebench(self, command: str) -> list[str]:
        """How this user starts hugebench: ``command``, unless the user may not execute the Python behind it
        (a virtualenv built from a Python under root's home); then the system's Python with the
        virtualenv's packages on PYTHONPATH (the workers then run with the same Python)."""
        if getattr(self, "_start", None):
            return self._start
        if self.root or _can_exec(self, _interpreter(command)):
            self._start = [command]
            return self._start
        site = sysconfig.get_paths()["purelib"]
        self.env["PYTHONPATH"] = ":".join(p for p in (self.env.get("PYTHONPATH"), site) if p)
        main = "import sys; sys.argv[0] = 'hugebench'; from hugebench.cli import main; main()"
        self._start = [SYSTEM_PYTHON, "-c", main]
        return self._start

    @property
    def label(self) -> str:
        return "root" if self.root else f"user {self.name}"

    def wrap(self, argv: list[str]) -> list[str]:
        if self.root:
            return argv
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--",
            *argv,
        ]

    def own(self, path: Path) -> None:
        if self.root:
            return
        for p in [path, *path.rglob("*")]:
            os.lchown(p, self.uid, self.gid)


def _interpreter(command: str) -> str:
    """The interpreter a console script starts (its #! line), else the command itself."""
    with open(command, "rb") as f:
        first = f.readline(4096)
    return first[2:].decode().split()[0] if first.startswith(b"#!") else command


def _can_exec(who: Who, path: str) -> bool:
    """``path`` runs as ``who`` from a process of its own (not only from setpriv's exec)."""
    probe = ["sh", "-c", 'exec "$0" -c pass', path]
    return run(probe, who, Path("/"), 30)[0] == 0


def run(argv, who: Who, cwd: Path, timeout: float, log: Path | None = None) -> tuple[int, str, str]:
    """Run argv as ``who`` in its own session; on timeout its whole group is ended."""
    proc = subprocess.Popen(
        who.wrap(argv),
        cwd=cwd,
        env=who.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\njudge: timed out after {timeout:.0f} s"
        proc.returncode = -9
    if log is not None:
        log.write_text(err)
    return proc.returncode, out, err


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
    rc, out, err = run(argv, who, work, parse_budget(args.budget) + 300, dirs["log"])
    if rc != 0:
        tail = [line for line in err.strip().splitlines() if line.strip()][-1:] or ["no output"]
        raise RuntimeError(f"try exited {rc}: {tail[0][:300]}")
    return json.loads(out)


def commands(prog, deploy: lib.Deploy, work: Path, tmp: Path, thp_off: Path, quick: bool) -> dict:
    """The shell commands of each side: 'A' as-is (untouched), 'B' deployed; for a server the timed command
    is the load driver and the server starts in hyperfine's --prepare (the deploy applies to the server)."""
    base = shlex.join(panel.argv_of(prog, work, tmp, quick))
    if prog.stdin:
        base += f" < {shlex.quote(str(work / prog.stdin))}"
    penv = " ".join(f"{k}={shlex.quote(v)}" for k, v in prog.env.items())
    change = " ".join(
        p for p in (deploy.prefix(), shlex.quote(str(thp_off)) if deploy.thp_off else "") if p
    )
    if not prog.server:
        return {
            side: (" ".join(p for p in (penv, extra, base) if p), None, None)
            for side, extra in (("A", ""), ("B", change))
        }
    kind, _, ready = prog.ready.partition(":")
    if kind != "path":
        raise lib.DeployNotUnderstood(
            f"the judge starts servers with --ready path: only, not {prog.ready}"
        )
    ready = ready.replace("{tmp}", str(tmp))
    server = " ".join(shlex.quote(a.replace("{tmp}", str(tmp))) for a in shlex.split(prog.server))
    out = {}
    for side, extra in (("A", ""), ("B", change)):
        script = tmp / f"serve-{side}.sh"
        line = " ".join(p for p in (penv, extra, server) if p)
        script.write_text(_serve(tmp, ready, line))
        out[side] = (" ".join(p for p in (penv, base) if p), f"sh {shlex.quote(str(script))}", line)
    return out


def _serve(tmp: Path, ready: str, command: str) -> str:
    """hyperfine's --prepare for a server: end the previous one, start this one, wait until it is ready."""
    pid, ready_q = shlex.quote(str(tmp / "server.pid")), shlex.quote(ready)
    return (
        f'if [ -f {pid} ]; then p=$(cat {pid}); kill "$p" 2>/dev/null; '
        f'while kill -0 "$p" 2>/dev/null; do sleep 0.02; done; fi\n'
        f"rm -f {ready_q} {pid}\n"
        f"{command} > {shlex.quote(str(tmp / 'server.log'))} 2>&1 &\n"
        f"echo $! > {pid}\n"
        f"i=0; while [ ! -e {ready_q} ]; do i=$((i+1)); "
        f'[ $i -gt 1500 ] && {{ echo "server not ready in 30 s" >&2; exit 1; }}; sleep 0.02; done\n'
    )


def stop_server(tmp: Path, who: Who) -> None:
    """End the server the last --prepare started, as the user who started it (by the pid it recorded)."""
    pid = shlex.quote(str(tmp / "server.pid"))
    script = (
        f'if [ -f {pid} ]; then p=$(cat {pid}); kill "$p" 2>/dev/null; i=0; '
        f'while kill -0 "$p" 2>/dev/null && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.02; done; '
        f'kill -9 "$p" 2>/dev/null; rm -f {pid}; fi'
    )
    run(["sh", "-c", script], who, tmp, 30)


def check_preload(deploy: lib.Deploy, who: Who) -> None:
    """Every library the deploy preloads is mapped in a process started with its environment (the dynamic
    loader only warns and runs on when a preload fails: the judge would time as-is twice)."""
    libs = [p for p in re.split(r"[: ]", deploy.env.get("LD_PRELOAD", "")) if p]
    if not libs:
        return
    env = [f"{k}={v}" for k, v in deploy.env.items()]
    rc, maps, err = run(["env", *env, "cat", "/proc/self/maps"], who, Path("/"), 30)
    missing = [p for p in libs if os.path.realpath(p) not in maps]
    if rc != 0 or missing:
        raise RuntimeError(
            f"deploy's LD_PRELOAD did not load {missing or libs}: {err.strip()[:200]}"
        )


def hyperfine(
    cmd: str, prepare: str | None, who: Who, cwd: Path, json_out: Path, runs: int
) -> dict:
    argv = [
        "hyperfine",
        "--runs",
        str(runs),
        "--style",
        "basic",
        "--shell",
        "sh",
        "--export-json",
        str(json_out),
    ]
    if prepare:
        argv += ["--prepare", prepare]
    rc, _, err = run([*argv, cmd], who, cwd, 120 + 120 * runs)
    if rc != 0:
        tail = [line for line in err.strip().splitlines() if line.strip()][-2:]
        raise RuntimeError(f"hyperfine exited {rc} on {cmd!r}: {' / '.join(tail)[:300]}")
    fd = os.open(json_out, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as f:
        result = json.load(f)["results"][0]
    return {"times": result["times"], "user": result["user"], "system": result["system"]}


@contextmanager
def machine_wide(writes: tuple, journal: Path):
    """Yield set(side): side 'B' writes the deployed values, 'A' the values found. Every knob goes back to
    the value found in the finally (the journal on disk says what to restore if the judge itself dies)."""
    if not writes:
        yield lambda side: None
        return
    found = {w.path: _current(w.path) for w in writes}
    journal.write_text(json.dumps({"restore": found, "pid": os.getpid()}))
    old = signal.signal(signal.SIGTERM, lambda *_: sys.exit("judge: terminated; restoring knobs"))

    def set_side(side: str) -> None:
        for w in writes:
            want = w.value if side == "B" else found[w.path]
            _write(w.path, want)
            if _current(w.path) != want:
                raise RuntimeError(f"wrote {want!r} to {w.path} but it reads {_current(w.path)!r}")

    try:
        yield set_side
    finally:
        for path, value in found.items():
            _write(path, value)
        signal.signal(signal.SIGTERM, old)
        bad = {p: _current(p) for p, v in found.items() if _current(p) != v}
        if bad:
            print(f"judge: COULD NOT RESTORE {bad} (journal {journal})", file=sys.stderr)
        else:
            journal.unlink()


def _current(path: str) -> str:
    text = Path(path).read_text().strip()
    if "[" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


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
                got[side] = hyperfine(
                    cmd, prepare, who, work, dirs["hf"] / f"r{r}-{side}.json", args.runs
                )
            finally:
                stop_server(dirs["tmp"], who)
        out.append(got)
        ratio = lib.round_ratio(got["A"]["times"], got["B"]["times"])
        print(f"  round {r + 1}/{args.rounds}: deployed/as-is {ratio:.3f}", flush=True)
    return out


def judge_one(prog, who: Who, base: Path, thp_off: Path, args) -> dict:
    """One program as one user: its inputs, try, the deploy, the rounds; a failure is a row with its reason."""
    tag = f"{prog.name}-{'root' if who.root else 'user'}"
    row = {"program": prog.name, "kind": prog.kind, "as": who.label}
    gone = panel.missing(prog)
    if gone:
        return {**row, "error": f"not installed: {', '.join(gone)}"}
    work = base / f"work-{'root' if who.root else 'user'}" / prog.name
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
        check_preload(verdict.deploy, who)
        sides = commands(prog, verdict.deploy, work, tmp, thp_off, args.quick)
        row["commands"] = {
            s: {"timed": c, "prepare": p, "server": v} for s, (c, p, v) in sides.items()
        }
        with machine_wide(verdict.deploy.sysfs, base / f"journal-{tag}.json") as set_side:
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
    rows = []
    for prog in programs:
        for who in whos:
            rows.append(judge_one(prog, who, base, thp_off, args))
    lines = header(args, [sys.argv[0], *argv]) + lib.table(rows) + [""] + lib.summary(rows)
    print("\n".join(lines))
    write_atomic(base / "judge.md", "\n".join(lines) + "\n")
    write_atomic(base / "judge.json", json.dumps(rows, indent=1, default=str))
    print(f"\nwritten: {base / 'judge.md'}, {base / 'judge.json'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
