"""``hugebench where`` on real programs under load, and what its sampling costs them (issue 56).

    sudo .venv/bin/python benchmarks/where_programs.py [--programs redis,postgresql,jvm] [--pairs 3]
        [--interval 1] [--out results/where-programs]

Each program is a shell script that starts the server, runs its load driver and stops the server (the
advice packs' own command lines: redis-server under redis-benchmark, PostgreSQL under pgbench -S as the
``postgres`` user, the JVM pack's HeapChurn.java with a 1 GiB G1 heap), so ``where`` samples the whole
process tree, server and driver. For each program:

1. one ``hugebench where --json`` run: its per-region table as printed, and its JSON;
2. ``--pairs`` pairs of a bare run (nothing preloaded, nothing sampled) and a run under ``hugebench where
   --interval I``, alternating; the cost is read on the program's own metric (requests/s, tps,
   replacements/s), since a server's wall time is the driver's: the median of bare / sampled throughput.

Writes OUT/<stamp>/where-programs.md (command, date, commit, each table, each cost) and every JSON. Takes
the host's sweep lock and the root test sessions' turn (nothing else measures meanwhile); THP is left as
found (``where`` changes no knob).
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from selective import HUGEBENCH, ROOT, _test_sessions_turn

JAVA_PROGRAM = ROOT / "hugebench" / "advice" / "programs" / "HeapChurn.java"

REDIS = r"""
T=$(mktemp -d)
redis-server --port 0 --unixsocket $T/redis.sock --save '' --appendonly no >/dev/null &
S=$!
for i in $(seq 200); do [ -S $T/redis.sock ] && break; sleep 0.05; done
redis-benchmark -s $T/redis.sock -q -t set,get,lpush,lpop -r 1000000 -d 256 -n 400000 --csv
kill $S; wait $S; rm -rf $T
"""

POSTGRESQL = r"""
T=$(mktemp -d); chmod 711 $T; install -d -o postgres -g postgres -m 700 $T/pg
B=$(ls -d /usr/lib/postgresql/*/bin | sort -V | tail -n 1)
AS="setpriv --reuid=postgres --regid=postgres --init-groups"
$AS $B/initdb -D $T/pg/data -A trust -U postgres >/dev/null
$AS $B/postgres -D $T/pg/data -c listen_addresses= -c unix_socket_directories=$T/pg \
    -c shared_buffers=256MB -c fsync=off -c synchronous_commit=off -c max_connections=20 >/dev/null 2>&1 &
S=$!
for i in $(seq 400); do [ -S $T/pg/.s.PGSQL.5432 ] && break; sleep 0.05; done
$AS pgbench -h $T/pg -U postgres -i -s 10 -q postgres >/dev/null 2>&1
$AS pgbench -h $T/pg -U postgres -S -c 4 -j 2 -t 100000 postgres
kill -INT $S; wait $S; rm -rf $T
"""

JVM = r"""
java -Xms1g -Xmx1g -XX:+UseG1GC {program} 400 8
"""


@dataclass(frozen=True)
class Program:
    name: str
    what: str
    script: str
    metric: str  # a regex whose first group is the program's throughput (higher is better)
    needs: tuple[str, ...]


PROGRAMS = (
    Program(
        "redis",
        "redis-server under redis-benchmark (set, get, lpush, lpop; 400 000 requests each)",
        REDIS,
        r'"GET","([0-9.]+)"',
        ("redis-server", "redis-benchmark"),
    ),
    Program(
        "postgresql",
        "PostgreSQL under pgbench -S (scale 10, 4 clients, 100 000 transactions each)",
        POSTGRESQL,
        r"tps = ([0-9.]+)",
        ("pgbench", "setpriv"),
    ),
    Program(
        "jvm",
        "the JVM pack's HeapChurn.java (1 GiB G1 heap, 400 MiB live set, 8 s)",
        JVM.format(program=shlex.quote(str(JAVA_PROGRAM))),
        r"ops_per_s=([0-9.]+)",
        ("java",),
    ),
)


def _metric(program: Program, text: str) -> float:
    found = re.findall(program.metric, text)
    if not found:
        raise SystemExit(f"{program.name}: no {program.metric!r} in its output:\n{text[-2000:]}")
    return float(found[-1])


def _bare(program: Program, script: Path) -> float:
    out = subprocess.run(["sh", str(script)], capture_output=True, text=True, timeout=600)
    return _metric(program, out.stdout + out.stderr)


def _where(
    program: Program, script: Path, interval: float, json_path: Path, sites: bool = True
) -> tuple[float, str]:
    """One run under ``hugebench where``: (the program's throughput, where's printed table)."""
    out = subprocess.run(
        [
            HUGEBENCH,
            "where",
            "--interval",
            str(interval),
            *([] if sites else ["--no-sites"]),
            "--json",
            str(json_path),
            "--",
            "sh",
            str(script),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if out.returncode != 0:
        raise SystemExit(
            f"{program.name}: hugebench where exited {out.returncode}:\n{out.stderr[-2000:]}"
        )
    return _metric(program, out.stderr), out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--programs", default=",".join(p.name for p in PROGRAMS))
    parser.add_argument("--pairs", type=int, default=3)
    parser.add_argument("--interval", type=float, default=1.0)
    parser.add_argument(
        "--no-sites",
        action="store_true",
        help="the cost runs without the call-site recorder (sampling alone)",
    )
    parser.add_argument("--out", default="results/where-programs")
    opts = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit(
            "needs root: PostgreSQL runs as its own user, and where reads every process"
        )
    chosen = [p for p in PROGRAMS if p.name in opts.programs.split(",")]
    missing = [n for p in chosen for n in p.needs if not shutil.which(n)]
    if missing:
        raise SystemExit(f"missing: {', '.join(missing)} (.ci/setup installs them)")
    from hugebench.system.lock import SweepLock, default_lock_paths

    stamp = time.strftime("%Y%m%d-%H%M%S")
    out_dir = Path(opts.out) / stamp
    out_dir.mkdir(parents=True)
    commit = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    lines = [
        f"# hugebench where on real programs ({datetime.datetime.now(datetime.timezone.utc):%Y-%m-%d %H:%M} UTC,"
        f" commit {commit})",
        "",
        f"    {shlex.join(sys.argv)}",
        "",
    ]
    work = Path(tempfile.mkdtemp(prefix="hugebench-where-programs-"))
    os.chmod(work, 0o755)  # PostgreSQL's user reads nothing here, but walks through
    try:
        with _test_sessions_turn(), SweepLock(default_lock_paths(), "benchmarks/where_programs.py"):
            for program in chosen:
                script = work / f"{program.name}.sh"
                script.write_text("set -e\n" + program.script)
                _, table = _where(program, script, opts.interval, out_dir / f"{program.name}.json")
                print(table)
                bare, sampled = [], []
                for _ in range(opts.pairs):
                    bare.append(_bare(program, script))
                    sampled.append(
                        _where(program, script, opts.interval, work / "c.json", not opts.no_sites)[
                            0
                        ]
                    )
                cost = statistics.median(b / s for b, s in zip(bare, sampled))
                summary = (
                    f"sampling cost (every {opts.interval:g} s, call sites "
                    f"{'off' if opts.no_sites else 'recorded'}): {cost:.3f}x (median of {opts.pairs} "
                    f"pairs of bare / sampled throughput;"
                    f" bare {', '.join(f'{x:.0f}' for x in bare)}, sampled {', '.join(f'{x:.0f}' for x in sampled)})"
                )
                print(f"{program.name}: {summary}")
                lines += [
                    f"## {program.name}: {program.what}",
                    "",
                    "```",
                    table.rstrip(),
                    "```",
                    "",
                    summary,
                    "",
                ]
                (out_dir / "where-programs.md").write_text("\n".join(lines))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"wrote {out_dir / 'where-programs.md'}")


if __name__ == "__main__":
    main()
