"""A program for the command workload's tests: 64 MiB of anonymous memory asked for on huge pages
(MADV_HUGEPAGE) and written a byte per page, held for SECONDS, then (with "unmap") unmapped before exit.

    python thp_program.py SECONDS [unmap]
"""

import mmap
import sys
import time

size = 64 << 20
buf = mmap.mmap(-1, size, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
buf.madvise(mmap.MADV_HUGEPAGE)
for off in range(0, size, 4096):
    buf[off] = 1
time.sleep(float(sys.argv[1]))
if sys.argv[2:] == ["unmap"]:
    buf.close()  # munmap: nothing of it is left at exit
