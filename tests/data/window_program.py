"""The Python twin of window_program.c: `python window_program.py OUTSIDE INSIDE with|decorator|calls`."""

import sys
import time

from hugebench import window as hbw


def burn(seconds):
    end = time.process_time() + seconds
    while time.process_time() < end:
        pass


def main():
    outside, inside, style = float(sys.argv[1]), float(sys.argv[2]), sys.argv[3]

    def timed():
        print(f"enabled {time.monotonic():.6f}", flush=True)
        burn(inside)
        print(f"disabling {time.monotonic():.6f}", flush=True)

    burn(outside / 2)
    if style == "with":
        with hbw.window():
            timed()
    elif style == "decorator":
        hbw.window()(timed)()
    else:
        hbw.enable()
        timed()
        hbw.disable()
    print(f"disabled {time.monotonic():.6f}", flush=True)
    burn(outside / 2)


main()
