"""The judge benchmark's panel: real programs of different kinds, each with the inputs the judge generates
for it (deterministic, seeded) into its work directory, sized so one run takes ~0.3-3 s on the 2-core guest
this was written on (``--quick``: tiny inputs, ~0.1 s, to smoke-test the pipeline).

A program is an argv (``{work}``: the work directory; ``{tmp}``: the directory of a server's socket), with an
optional file on stdin, an environment both sides get (try's ``--env``), and for a server its command and
ready condition (try's ``--server``/``--ready``; the argv is then the load driver, whose wall time is the
metric). Only the heap program's C source is the judge's own (the one issue 40 describes).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

HEAP_C = r"""
/* issue 40's heap program: malloc MIB MiB in 256 KiB blocks, write every byte, then READS random
   8-byte reads over the blocks; prints a checksum so nothing is optimised away. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
int main(int argc, char **argv) {
    size_t mib = argc > 1 ? strtoull(argv[1], 0, 10) : 1024, reads = argc > 2 ? strtoull(argv[2], 0, 10) : 60000000;
    size_t block = 256 << 10, n = mib * (1 << 20) / block, words = block / 8;
    uint64_t **blocks = malloc(n * sizeof *blocks), sum = 0, x = 88172645463325252ull;
    if (!blocks) return 1;
    for (size_t i = 0; i < n; i++) {
        if (!(blocks[i] = malloc(block))) return 1;
        memset(blocks[i], (int)i, block);
    }
    for (size_t r = 0; r < reads; r++) {
        x ^= x << 13; x ^= x >> 7; x ^= x << 17;
        sum += blocks[(x >> 20) % n][x % words];
    }
    printf("%llu\n", (unsigned long long)sum);
    for (size_t i = 0; i < n; i++) free(blocks[i]);
    free(blocks);
    return 0;
}
"""

THP_OFF_C = r"""
/* the judge's launcher for try's per-process deploy line "prctl(PR_SET_THP_DISABLE, 1) in the program or
   its launcher": switch THP off for this process (inherited), then exec the program. */
#include <stdio.h>
#include <sys/prctl.h>
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2 || prctl(PR_SET_THP_DISABLE, 1, 0, 0, 0) != 0) { perror("thp-off"); return 127; }
    execvp(argv[1], argv + 1);
    perror(argv[1]);
    return 127;
}
"""

PY_ALLOC = """
import sys
n = int(sys.argv[1])
table = {}
for i in range(n):
    table[("key", i)] = [i, str(i) * 3, {"v": i * 0.5}]
rows = sorted(table.values(), key=lambda r: r[1])
total = sum(len(r[1]) for r in rows)
del table
chunks = [bytearray(4096 + (i % 64) * 1024) for i in range(n // 20)]
print(total, len(chunks))
"""

WORDS = (
    "huge page table walk memory allocator arena heap extent slab span cache line kernel fault "
    "zero compact reclaim buddy order folio madvise transparent translation lookaside buffer miss"
).split()


def _text(path: Path, mb: float, seed: int) -> None:
    """Compressible text: seeded words, numbers and some random tokens (xz and zstd work on it)."""
    rng = random.Random(seed)
    target = int(mb * (1 << 20))
    with open(path, "w") as f:
        size = 0
        while size < target:
            line = " ".join(
                rng.choice(WORDS) if rng.random() < 0.8 else f"{rng.getrandbits(24):x}"
                for _ in range(12)
            )
            f.write(line + "\n")
            size += len(line) + 1


def _lines(path: Path, n: int, seed: int) -> None:
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            f.write(f"{rng.getrandbits(40):010x} {rng.choice(WORDS)} {rng.randrange(10**6)}\n")


def _sql(path: Path, n: int, seed: int) -> None:
    """A SQL script for sqlite3 on stdin: inserts in one transaction, an index, joins and aggregates."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        f.write(
            "PRAGMA cache_size=-200000;\nCREATE TABLE t(id INTEGER PRIMARY KEY, k INT, s TEXT);\n"
        )
        f.write("CREATE TABLE u(k INT, w TEXT);\nBEGIN;\n")
        for i in range(n):
            f.write(
                f"INSERT INTO t VALUES({i},{rng.randrange(n // 4 + 1)},'{rng.choice(WORDS)}{i}');\n"
            )
        for i in range(n // 4):
            f.write(f"INSERT INTO u VALUES({i},'{rng.choice(WORDS)}');\n")
        f.write("COMMIT;\nCREATE INDEX tk ON t(k);\nCREATE INDEX ts ON t(s);\n")
        f.write("SELECT count(*), sum(length(t.s)) FROM t JOIN u ON t.k = u.k;\n")
        f.write("SELECT u.w, count(*) FROM t JOIN u ON t.k = u.k GROUP BY u.w ORDER BY 2 DESC;\n")
        f.write("SELECT count(DISTINCT s) FROM t;\n")


def _c_source(path: Path, n: int) -> None:
    """A C file of n functions with loops and switches: work for gcc -O2's optimiser (cc1 mallocs a lot)."""
    with open(path, "w") as f:
        f.write("#include <stddef.h>\n")
        for i in range(n):
            f.write(
                f"int f{i}(int *a, size_t n) {{ int s = {i}; for (size_t j = 0; j < n; j++) {{ "
                f"switch ((a[j] + {i}) % 5) {{ case 0: s += a[j] * {i % 7 + 1}; break; case 1: s ^= a[j]; "
                f"break; case 2: s -= j; break; default: s += (int)(j * {i % 3 + 2}); }} }} "
                f"return s + (n > {i % 11} ? f{i - 1 if i else 0}(a, n - 1) : 0); }}\n"
            )


@dataclass(frozen=True)
class Program:
    name: str
    kind: str
    argv: tuple  # {work}: the work directory; {tmp}: a server's socket directory
    make: Callable[[Path, bool], None]  # (work dir, quick) -> inputs written
    needs: tuple = ()  # executables that must be installed
    stdin: str | None = None  # a file in the work directory
    env: dict = field(default_factory=dict)
    server: str | None = None
    ready: str | None = None  # path:{tmp}/FILE (the only kind the judge's own server start knows)


def _compile(source: str, out: Path, *flags: str) -> None:
    src = out.with_suffix(".c")
    src.write_text(source)
    subprocess.run(["gcc", "-O2", "-o", str(out), str(src), *flags], check=True)


def make_heap(work: Path, quick: bool) -> None:
    _compile(HEAP_C, work / "heap")


def make_thp_off(work: Path) -> Path:
    out = work / "thp-off"
    _compile(THP_OFF_C, out)
    return out


def _args(quick: bool, full, small):
    return small if quick else full


PANEL = (
    Program(
        "xz",
        "compressor",
        ("xz", "-T1", "-6", "-k", "-f", "{work}/xz.txt"),
        lambda w, q: _text(w / "xz.txt", _args(q, 2, 0.2), 1),
        ("xz",),
    ),
    Program(
        "zstd",
        "compressor",
        ("zstd", "-q", "-T1", "-15", "-f", "{work}/zstd.txt", "-o", "{work}/zstd.zst"),
        lambda w, q: _text(w / "zstd.txt", _args(q, 2, 0.2), 2),
        ("zstd",),
    ),
    Program(
        "gzip",
        "compressor (control: little malloc)",
        ("gzip", "-6", "-k", "-f", "{work}/gzip.txt"),
        lambda w, q: _text(w / "gzip.txt", _args(q, 10, 1), 3),
        ("gzip",),
    ),
    Program(
        "sqlite3",
        "database on stdin",
        ("sqlite3", ":memory:"),
        lambda w, q: _sql(w / "sqlite.sql", _args(q, 120_000, 8_000), 4),
        ("sqlite3",),
        stdin="sqlite.sql",
    ),
    Program(
        "redis",
        "server under its load driver",
        (
            "redis-benchmark",
            "-s",
            "{tmp}/redis.sock",
            "-q",
            "-t",
            "set,get,lpush,lpop",
            "-r",
            "200000",
            "-d",
            "256",
            "-n",
            "__N__",
        ),
        lambda w, q: None,
        ("redis-server", "redis-benchmark"),
        server="redis-server --port 0 --unixsocket {tmp}/redis.sock --save '' --appendonly no",
        ready="path:{tmp}/redis.sock",
    ),
    Program(
        "python3",
        "interpreter",
        ("/usr/bin/python3", "{work}/alloc.py", "__N__"),
        lambda w, q: (w / "alloc.py").write_text(PY_ALLOC),
        ("/usr/bin/python3",),
    ),
    Program(
        "sort",
        "GNU sort",
        ("sort", "-S", "512M", "--parallel=1", "-o", "{work}/sorted.txt", "{work}/sort.txt"),
        lambda w, q: _lines(w / "sort.txt", _args(q, 1_500_000, 100_000), 5),
        ("sort",),
        env={"LC_ALL": "C"},
    ),
    Program(
        "heap",
        "heap-heavy C program (issue 40)",
        ("{work}/heap", "__MIB__", "__READS__"),
        make_heap,
        ("gcc",),
    ),
    Program(
        "gcc",
        "compiler (cc1, a process tree)",
        ("gcc", "-O2", "-c", "{work}/gen.c", "-o", "{work}/gen.o"),
        lambda w, q: _c_source(w / "gen.c", _args(q, 100, 10)),
        ("gcc",),
    ),
)

# the sizes given on the command line rather than in a file: (full, quick)
SIZES = {
    "redis": {"__N__": ("30000", "2000")},
    "python3": {"__N__": ("200000", "20000")},
    "heap": {"__MIB__": ("1024", "64"), "__READS__": ("60000000", "2000000")},
}


def argv_of(program: Program, work: Path, tmp: Path, quick: bool) -> list[str]:
    sizes = {k: v[1 if quick else 0] for k, v in SIZES.get(program.name, {}).items()}
    out = []
    for arg in program.argv:
        arg = sizes.get(arg, arg)
        out.append(arg.replace("{work}", str(work)).replace("{tmp}", str(tmp)))
    return out


def missing(program: Program) -> list[str]:
    return [n for n in program.needs if not (shutil.which(n) or os.access(n, os.X_OK))]


def select(names: str | None) -> list[Program]:
    """--programs a,b -> those programs in panel order; an unknown name is an error naming the known ones."""
    if not names:
        return list(PANEL)
    wanted = [n.strip() for n in names.split(",") if n.strip()]
    known = {p.name: p for p in PANEL}
    bad = [n for n in wanted if n not in known]
    if bad:
        raise SystemExit(f"--programs: unknown {', '.join(bad)}; known: {', '.join(known)}")
    return [p for p in PANEL if p.name in wanted]
