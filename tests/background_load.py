"""Ordinary background activity a real-kernel test runs beside: processes the test starts and stops that keep
a CPU busy and allocate, touch and free memory in a loop (what a build, a browser or a service does to the free
2 MiB blocks while hugebench works). Stopped by their own pids, never by name."""

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

LOAD = """
import sys, time
mib, spin = int(sys.argv[1]), 0
while True:
    buf = bytearray(mib << 20)                       # mmap'ed by malloc: freed to the kernel by del
    buf[::4096] = b"\\1" * len(range(0, len(buf), 4096))  # every page faulted
    del buf
    spin += sum(range(200_000))                       # and some CPU between
    time.sleep(0.01)
"""


def cpu_ticks(pid: int) -> int:
    """User + system clock ticks ``pid`` has used (to show the load really ran)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@contextlib.contextmanager
def background_load(workers: int = 1, mib: int = 64):
    """``workers`` load processes, each churning ``mib`` MiB; yields their pids, ends them on exit."""
    procs = [
        subprocess.Popen([sys.executable, "-c", LOAD, str(mib)], start_new_session=True)
        for _ in range(workers)
    ]
    try:
        yield [p.pid for p in procs]
    finally:
        for p in procs:
            p.kill()
            p.wait()
