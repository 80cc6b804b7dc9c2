"""An interpreter as the workload: a dict/str-heavy Python program (experiments/python.yaml).

Builds a large dict of short strings, then does random lookups and string edits in a timed window marked
with hugebench.window (the interpreter's start-up and the build are not in it), and prints its throughput as
one JSON line: {"lookups_per_s": ...}.
"""

import json
import random
import sys
import time

try:
    from hugebench import window
except ImportError:  # run by hand without hugebench: the whole loop is the window
    window = None

def main(keys: int, lookups: int) -> None:
    rng = random.Random(1)
    table = {f"k{rng.getrandbits(48):x}": str(i) * (i % 5 + 1) for i in range(keys)}
    names = list(table)
    order = [names[rng.randrange(keys)] for _ in range(lookups)]
    if window:
        window.enable()
    started = time.perf_counter()
    total = 0
    for name in order:
        value = table[name]
        total += len(value.upper())
    elapsed = time.perf_counter() - started
    if window:
        window.disable()
    print(json.dumps({"lookups_per_s": lookups / elapsed, "checksum": total}))


if __name__ == "__main__":
    main(int(sys.argv[1]), int(sys.argv[2]))
