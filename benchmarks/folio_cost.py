"""The cost of per-size coverage: one reading (smaps + pagemap + kpageflags of every mapping) of a process
with GIB GiB resident, and that process's slowdown while it is read back to back (the worst case; the sampler
spends at most 5% of the run's time on it), as the ratio of its work rate in sampled to unsampled periods of
the same run, interleaved.

    sudo python benchmarks/folio_cost.py [--gib 4] [--readings 5] [--pairs 4] [--period 2]

Builds benchmarks/folio_cost.c with cc; runs it twice (its memory on 4 KiB pages, then madvised for 2 MiB
pages). Needs root (pagemap's frame numbers, /proc/kpageflags). Prints a Markdown table headed by the command
line, the date and the commit.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
from hugebench.measure.folio_coverage import read_tree  # noqa: E402


def build(out: Path) -> Path:
    exe = out / "folio_cost"
    subprocess.run(["cc", "-O2", "-o", str(exe), str(HERE / "folio_cost.c")], check=True)
    return exe


class Rates:
    """Reads the program's per-100 ms counts in a thread, each with the period it fell in."""

    def __init__(self, proc):
        self.proc, self.period, self.counts = proc, "warm-up", []
        self.thread = threading.Thread(target=self._read, daemon=True)
        self.thread.start()

    def _read(self):
        for line in self.proc.stdout:
            self.counts.append((self.period, int(line)))

    def mean(self, period: str) -> float:
        return statistics.mean(n for p, n in self.counts if p == period) * 10


def sampled_ratio(pid: int, rates: Rates, pairs: int, period: float) -> tuple[float, int]:
    """Work rate while read back to back / while not, over ``pairs`` interleaved periods; readings."""
    readings = 0
    for i in range(pairs):
        for state in ("off", "on") if i % 2 == 0 else ("on", "off"):
            rates.period = f"{state}-skip"
            time.sleep(0.25)  # the count line in flight belongs to neither
            rates.period = state
            end = time.monotonic() + period
            while time.monotonic() < end:
                if state == "on":
                    read_tree([pid])
                    readings += 1
                else:
                    time.sleep(0.05)
    return rates.mean("on") / rates.mean("off"), readings


def measure(exe: Path, gib: float, how: str, n: int, pairs: int, period: float) -> dict:
    proc = subprocess.Popen(
        [str(exe), str(gib), how], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout.readline().strip() == "ready"
        times, reading = [], None
        for _ in range(n):
            reading = read_tree([proc.pid])
            times.append(reading.read_s)
        rates = Rates(proc)
        ratio, readings = sampled_ratio(proc.pid, rates, pairs, period)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    sizes = ", ".join(
        f"{(4 << o)}kB {b / reading.anon:.0%}" for o, b in sorted(reading.by_order.items())
    )
    return {
        "memory": f"{reading.anon / 2**30:.2f} GiB ({sizes})",
        "reading": f"{statistics.median(times):.3f} s (min {min(times):.3f}, {n} readings)",
        "ratio": f"{ratio:.3f} ({readings} readings in {pairs} x {period:.0f} s)",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--gib", type=float, default=4)
    parser.add_argument("--readings", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=4)
    parser.add_argument("--period", type=float, default=2.0)
    args = parser.parse_args()
    commit = subprocess.run(
        ["git", "-C", str(HERE), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    print(
        f"`{' '.join(['python', *sys.argv])}`, {datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, commit {commit}\n"
    )
    print("| memory | one reading (median) | work rate read back to back / unsampled |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        exe = build(Path(tmp))
        for how in ("small", "huge"):
            row = measure(exe, args.gib, how, args.readings, args.pairs, args.period)
            print(f"| {row['memory']} | {row['reading']} | {row['ratio']} |")


if __name__ == "__main__":
    main()
