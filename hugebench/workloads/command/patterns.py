"""A user's regular expression run over a program's output within the time the run has left.

A metric's ``regex`` and a server's ``ready: {log: ...}`` are the user's, and a pattern like
``^(x+x+)+y([0-9])`` backtracks for ages over a line of ``x``s: a run's timeout bounds that too. In the main
thread (the sweep's own process, a worker), Python's matcher is interrupted by a real-time timer
(``ITIMER_REAL``: ``_sre`` checks for signals while it backtracks), the previous handler and a caller's
pending alarm put back after; in any other thread (a Dask task), where no handler can be set, the match runs in a small Python
process of its own (``-I -S``: nothing imported but ``re`` and ``json``) killed at the deadline.

What does not belong here: what a match means (``metric``), when a server is ready (``run.served``).
"""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time

MIN_S = (
    0.5  # the least a match is given: the end of a run that used its timeout still gets its metric
)


class PatternTimedOut(Exception):
    """The pattern did not finish within the time given (catastrophic backtracking, most likely)."""


def last_groups(pattern: str, text: str, seconds: float | None) -> tuple | None:
    """The groups of the LAST match of ``pattern`` in ``text`` (re.MULTILINE), None when it never matches;
    PatternTimedOut after ``seconds`` (at least :data:`MIN_S`; None: unbounded)."""
    if seconds is None:
        return _last(pattern, text)
    seconds = max(MIN_S, seconds)
    if threading.current_thread() is threading.main_thread():
        return _in_thread(pattern, text, seconds)
    return _in_process(pattern, text, seconds)


def _last(pattern: str, text: str) -> tuple | None:
    last = None
    for match in re.finditer(pattern, text, re.MULTILINE):
        last = match
    return None if last is None else last.groups()


class _Alarm(Exception):
    pass


def _ring(signum, frame):
    raise _Alarm


def _in_thread(pattern: str, text: str, seconds: float) -> tuple | None:
    outer, interval = signal.getitimer(signal.ITIMER_REAL)
    if outer and outer <= seconds:  # the caller's own alarm comes first: it bounds the match
        return _last(pattern, text)
    old, started = signal.signal(signal.SIGALRM, _ring), time.monotonic()
    try:
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return _last(pattern, text)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
    except _Alarm:
        raise PatternTimedOut(_said(pattern, seconds)) from None
    finally:
        signal.signal(signal.SIGALRM, old)
        if outer:  # the caller's alarm, put back with what was left of it
            left = max(0.001, outer - (time.monotonic() - started))
            signal.setitimer(signal.ITIMER_REAL, left, interval)


_CHILD = (
    "import json,re,sys\n"
    "p,t=json.load(sys.stdin)\n"
    "m=None\n"
    "for m in re.finditer(p,t,re.MULTILINE): pass\n"
    "json.dump(None if m is None else m.groups(),sys.stdout)\n"
)


def _in_process(pattern: str, text: str, seconds: float) -> tuple | None:
    try:
        done = subprocess.run(
            [sys.executable, "-I", "-S", "-c", _CHILD],
            input=json.dumps([pattern, text]),
            capture_output=True,
            text=True,
            timeout=seconds,
        )
    except subprocess.TimeoutExpired:
        raise PatternTimedOut(_said(pattern, seconds)) from None
    if done.returncode != 0:  # cannot happen for a pattern checked at load; said, not raised raw
        raise PatternTimedOut(f"regex {pattern!r} could not be run: {done.stderr.strip()[-200:]}")
    groups = json.loads(done.stdout)
    return None if groups is None else tuple(groups)


def _said(pattern: str, seconds: float) -> str:
    return (
        f"regex {pattern!r} was still matching the output when the run's time ran out ({seconds:.1f} s "
        "left): it backtracks catastrophically; write it without nested repeats like (x+)+"
    )
