"""The load driver of latency_server.py: N requests one after another; prints one JSON line with its
throughput (rps) and its latency percentiles (p50_ms, p99_ms)."""

import json
import socket
import sys
import time

path, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 150
with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
    s.connect(path)
    stream = s.makefile("rwb")
    took = []
    start = time.perf_counter()
    for _ in range(n):
        t = time.perf_counter()
        stream.write(b"get\n")
        stream.flush()
        stream.readline()
        took.append((time.perf_counter() - t) * 1000)
    wall = time.perf_counter() - start
took.sort()
print(json.dumps({"rps": n / wall, "p50_ms": took[n // 2], "p99_ms": took[int(n * 0.99) - 1]}))
