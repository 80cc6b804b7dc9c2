"""Huge pages for the region that pays alone (issue 56), measured at the issue's full size.

The program (tests/data/regions_program.c): a hot 512 MiB region read at random, a cold 2 GiB region touched
once, one word per 64 KiB. Three configurations, in alternating rounds:

* as-is: THP ``madvise`` (set for the benchmark whatever it found, and put back after), nothing preloaded;
* THP always: the machine's mode set to ``always`` for the run (through hugebench's journalled knob API, put
  back on any exit, SIGTERM included);
* selective: ``hugebench where``'s suggested rule (found under ``madvise``) deployed by libhbselect.so.

For each: wall time (median of the rounds) and the process's peak RSS (``ru_maxrss`` of the child), printed
as ratios to as-is. Then ``where``'s own cost: in the same rounds, the program's wall time under ``hugebench
where`` (sampled every second, call sites recorded: the ``wall_s`` of its JSON) against the bare as-is run. Needs root (THP always); takes the host's sweep lock (no sweep runs beside it) and the
root test sessions' lock (their tests set THP modes too).

    sudo .venv/bin/python benchmarks/selective.py [--rounds 5] [--hot 512] [--cold 2048] [--reads 400000000]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
HUGEBENCH = str(Path(sys.executable).parent / "hugebench")


def _timed(argv: list[str], env: dict[str, str]) -> tuple[float, int]:
    """(wall seconds, peak RSS bytes) of one run of ``argv``, in a fresh child."""
    pid_start = time.perf_counter()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - pid_start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        raise SystemExit(f"{argv[0]} exited with {proc.returncode}")
    return wall, usage.ru_maxrss * 1024


def _rule(program: Path, args: list[str]) -> str:
    """The rule ``hugebench where`` suggests for the program (one run, sampled every 0.5 s)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "where.json"
        subprocess.run(
            [HUGEBENCH, "where", "--json", str(out), "--", str(program), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        rule = json.loads(out.read_text())["rule"]
    if not rule:
        raise SystemExit("hugebench where suggested no rule for the program")
    return rule


TEST_SESSIONS = Path(
    "/var/lib/hugebench/test-sessions.lock"
)  # tests/conftest.py's turn for root sessions


def _test_sessions_turn():
    """Wait for the root test sessions' turn (they write THP knobs) and hold it until we exit."""
    import fcntl

    TEST_SESSIONS.parent.mkdir(parents=True, exist_ok=True)
    handle = open(TEST_SESSIONS, "a+")
    print(f"waiting for {TEST_SESSIONS}", file=sys.stderr)
    fcntl.flock(handle, fcntl.LOCK_EX)
    return handle


def _where_wall(program: Path, args: list[str]) -> float:
    """The program's wall time under ``hugebench where`` (its JSON's ``wall_s``)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "where.json"
        subprocess.run(
            [HUGEBENCH, "where", "--interval", "1", "--json", str(out), "--", str(program), *args],
            check=True,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        return json.loads(out.read_text())["wall_s"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--hot", type=int, default=512, help="MiB")
    parser.add_argument("--cold", type=int, default=2048, help="MiB")
    parser.add_argument("--reads", type=int, default=400_000_000)
    opts = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root: THP always is a machine setting")
    from hugebench.machine import select_rule
    from hugebench.system import SystemState
    from hugebench.system.lock import SweepLock, default_lock_paths

    work = Path(tempfile.mkdtemp(prefix="hugebench-selective-"))
    try:
        program = work / "regions"
        subprocess.run(
            ["cc", "-O2", "-o", str(program), str(ROOT / "tests/data/regions_program.c")],
            check=True,
        )
        args = [str(opts.hot), str(opts.cold), str(opts.reads)]
        turn = _test_sessions_turn()
        with turn, SweepLock(default_lock_paths(), "benchmarks/selective.py"):
            with SystemState(purpose="benchmarks/selective.py") as state:
                # as-is and selective under madvise whatever another session left; put back on exit
                state.apply({"thp.enabled": "madvise"})
                rule = _rule(program, args)
                env = dict(os.environ)
                selective = {**env, **select_rule.deploy_environment(select_rule.parse(rule), env)}
                runs: dict[str, list[tuple[float, int]]] = {
                    "as-is": [],
                    "always": [],
                    "selective": [],
                }
                sampled: list[float] = []
                for _ in range(opts.rounds):
                    runs["as-is"].append(_timed([str(program), *args], env))
                    runs["selective"].append(_timed([str(program), *args], selective))
                    sampled.append(_where_wall(program, args))
                    state.apply({"thp.enabled": "always"})
                    runs["always"].append(_timed([str(program), *args], env))
                    state.apply({"thp.enabled": "madvise"})
        _report(runs, rule, opts)
        bare = statistics.median(t for t, _ in runs["as-is"])
        print(
            f"where's cost: {statistics.median(sampled) / bare:.3f}x bare (median wall "
            f"{statistics.median(sampled):.2f} s under where --interval 1, {bare:.2f} s bare; "
            f"runs {', '.join(f'{x:.2f}' for x in sampled)})"
        )
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _report(runs: dict[str, list[tuple[float, int]]], rule: str, opts) -> None:
    base_t = statistics.median(t for t, _ in runs["as-is"])
    base_m = statistics.median(m for _, m in runs["as-is"])
    print(f"hot {opts.hot} MiB, cold {opts.cold} MiB, {opts.reads} reads, {opts.rounds} rounds")
    print(f"selective rule (from hugebench where): {rule}")
    for name, got in runs.items():
        t = statistics.median(x for x, _ in got)
        m = statistics.median(y for _, y in got)
        spread = f"{min(x for x, _ in got):.2f}-{max(x for x, _ in got):.2f}"
        print(
            f"{name:>9}: time {t:.2f} s ({t / base_t:.3f}x as-is; runs {spread}), "
            f"peak RSS {m / (1 << 20):.0f} MiB ({m / base_m:.2f}x as-is)"
        )


if __name__ == "__main__":
    main()
