"""Touch MIB mebibytes of fresh anonymous memory page by page, ROUNDS times (fault-heavy: what coverage
sampling, which reads smaps_rollup under the program's mmap lock, could slow down). Prints seconds as JSON."""

import json
import mmap
import sys
import time

mib, rounds = int(sys.argv[1]), int(sys.argv[2])
started = time.perf_counter()
for _ in range(rounds):
    buf = mmap.mmap(-1, mib << 20, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    for offset in range(0, mib << 20, 4096):
        buf[offset] = 1
    buf.close()
print(json.dumps({"touch_s": time.perf_counter() - started}))
