"""A bound on how long a block of a test may take: a hang fails the test instead of blocking the suite."""

from __future__ import annotations

import contextlib
import signal


@contextlib.contextmanager
def time_limit(seconds: int, what: str):
    """Raise AssertionError naming ``what`` when the block runs longer than ``seconds`` (SIGALRM; main thread)."""

    def hang(signum, frame):
        raise AssertionError(f"{what} took more than {seconds} s")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
