"""A test server whose tail latency gets worse under one configuration: preloaded with jemalloc it answers
most requests faster (higher throughput) but every 25th one slowly (a far worse p99); otherwise every request
takes the same time. Listens on the unix socket given as its argument; one line in, one line out."""

import os
import socket
import sys
import time

FAST, SLOW, STEADY, EVERY = 0.001, 0.020, 0.0025, 25
spiky = "jemalloc" in os.environ.get("LD_PRELOAD", "")

path = sys.argv[1]
listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
listener.bind(path + ".tmp")
os.rename(path + ".tmp", path)  # ready once it accepts
listener.listen(4)
served = 0
while True:
    conn, _ = listener.accept()
    with conn, conn.makefile("rwb") as stream:
        for _line in stream:
            served += 1
            time.sleep((SLOW if served % EVERY == 0 else FAST) if spiky else STEADY)
            stream.write(b"ok\n")
            stream.flush()
