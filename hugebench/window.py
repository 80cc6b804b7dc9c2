"""Mark the timed window of a Python program measured by hugebench (the ``command`` workload).

    from hugebench.window import window

    with window():          # or @window() on a function, or enable() ... disable()
        the_part_worth_measuring()

Each edge writes ``enable``/``disable`` to the FIFO named by ``HUGEBENCH_CTL`` and waits for the line
``ack`` on the FIFO named by ``HUGEBENCH_ACK``: the counters run exactly while the block does. Outside
hugebench (the variables unset, or nobody reading the FIFO) every call does nothing. This module runs in
the measured process, so it imports nothing but the standard library's basics.
"""

from __future__ import annotations

import contextlib
import os

CTL_ENV, ACK_ENV = "HUGEBENCH_CTL", "HUGEBENCH_ACK"


def _send(word: str) -> None:
    ctl, ack = os.environ.get(CTL_ENV), os.environ.get(ACK_ENV)
    if not ctl or not ack:
        return
    try:  # O_NONBLOCK: fails (ENXIO) rather than waits when no supervisor holds the FIFO open
        fd = os.open(ctl, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:
        return
    try:
        os.set_blocking(fd, True)
        os.write(fd, f"{word}\n".encode())  # shorter than PIPE_BUF: one atomic write
    finally:
        os.close(fd)
    with open(ack, "rb", buffering=0) as reply:
        while reply.read(1) not in (b"\n", b""):
            pass


def enable() -> None:
    """Start the timed window (returns once the supervisor has started counting)."""
    _send("enable")


def disable() -> None:
    """End the timed window (returns once the supervisor has stopped counting)."""
    _send("disable")


class window(contextlib.ContextDecorator):
    """The timed window as a context manager, or as a decorator around a function."""

    def __enter__(self) -> window:
        enable()
        return self

    def __exit__(self, *exc) -> None:
        disable()
