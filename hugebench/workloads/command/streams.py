"""Where a command's standard streams go and what of its output is read back: bounded, text-safe.

By default a program reads /dev/null and writes stdout and stderr together to ``<name>.out`` in the run's
directory; ``stdin: FILE`` and ``stdout: FILE | discard`` change that (stderr then has the log to itself).
The runner never reads more than the last :data:`OUTPUT_BYTES` of an output (the metric's regex or JSON is
looked for there) and a row keeps only a text-safe tail (:func:`output_tail`).
"""

from __future__ import annotations

import os
import select
import stat
import time
from pathlib import Path

from hugebench.errors import UnsafePathError
from hugebench.machine.launch import TAIL_BYTES, read_end, text_safe
from hugebench.safefs import open_below
from hugebench.workloads.command.checks import DISCARD, stdout_problem

OUTPUT_BYTES = 1 << 20  # of a program's output, the end the runner reads back (metric, tail)


def output_tail(output: str | None) -> str | None:
    """What a row keeps of a program's output: its last TAIL_BYTES characters, text-safe (no control bytes
    but newline and tab), None when there was none."""
    return text_safe(output[-TAIL_BYTES:].encode(errors="replace")) or None if output else None


def both_tails(driver: str, server: str) -> str:
    """A failed server run's output: the end of the driver's and of the server's, each labelled (the
    driver's failure is often the server's refusal, said in the server's log)."""
    half = TAIL_BYTES // 2 - 40
    return (
        f"-- load driver's output (end) --\n{driver[-half:]}\n"
        f"-- server's output (end) --\n{server[-half:] or '(none)'}"
    )


def read_output(path: Path) -> str:
    """The end of a program's output file (at most OUTPUT_BYTES: the metric's regex or JSON is looked for
    there), as text; "" when there is none."""
    return read_end(path, OUTPUT_BYTES).decode(errors="replace")


class Streams:
    """Where a program's standard streams go (``stdin:``/``stdout:`` of the command, else /dev/null and
    ``<name>.out`` in the run's directory with stderr) and what of its output the runner reads back.

    A ``stdout:`` file is a name below the command's cwd (or below the run's directory, through ``{tmp}``):
    opened once, without following a link (:func:`hugebench.safefs.open_below`), and read back through the
    same descriptor, so that nothing swapped in after the run is read either."""

    def __init__(self, command, workdir: Path, name: str):
        cwd = command.cwd if command else "."
        stdin, stdout = (command.stdin, command.stdout) if command else (None, None)
        self.log = workdir / f"{name}.out"
        self.stdin = os.path.join(cwd, stdin) if stdin else None
        self.discard = stdout == DISCARD
        self.stdout = None if self.discard else stdout
        self._base = str(workdir) if stdout and _below(stdout, workdir) else cwd
        self._fd: int | None = None
        self._in: int | None = None  # stdin's descriptor when it is a named pipe (wait_input)

    def wait_input(self, deadline: float) -> None:
        """Check ``stdin:`` before anything starts: opened without blocking; a named pipe (FIFO) is kept open
        and waited on until its writer has written (or closed), at most until ``deadline``
        (time.monotonic(): the run's end), else InputTimedOut. OSError when it cannot be opened."""
        if self.stdin is None or self._in is not None:
            return
        fd = os.open(self.stdin, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
        try:
            if not stat.S_ISFIFO(os.fstat(fd).st_mode):
                return  # a file: each start opens it afresh from its beginning (Launched)
            poll = select.poll()
            poll.register(fd, select.POLLIN | select.POLLHUP)
            if not poll.poll(max(0.0, deadline - time.monotonic()) * 1000):
                raise InputTimedOut(
                    f"{self.stdin} is a named pipe (FIFO) that no process wrote to before the run's "
                    "timeout; give a file, or start its writer first"
                )
            os.set_blocking(fd, True)
            self._in, fd = fd, -1
        finally:
            if fd >= 0:
                os.close(fd)

    def files(self) -> dict:
        """Launched's keyword arguments: stdout (and stderr into the log when stdout goes elsewhere), stdin.
        UnsafePathError (or OSError) when the ``stdout:`` file cannot be made safely."""
        stdin = self.stdin if self._in is None else self._in
        if self.discard:
            return {"stdout": os.devnull, "stderr": self.log, "stdin": stdin}
        if self.stdout is None:
            return {"stdout": self.log, "stdin": stdin}
        return {"stdout": self._open(self.stdout), "stderr": self.log, "stdin": stdin}

    def _open(self, stdout: str) -> int:
        """The ``stdout:`` file's descriptor, opened once; UnsafePathError (or OSError) saying why not."""
        if self._fd is None:
            relative = stdout
            if relative.startswith("/"):
                relative = os.path.relpath(relative, self._base)
            why = stdout_problem(relative)
            if why:
                raise UnsafePathError(f"{stdout}: {why}")
            self._fd = open_below(self._base, relative)
        return self._fd

    def output(self) -> str:
        """What the metric reads: the end of stdout's file (unless discarded), then the end of stderr's."""
        own = (
            read_end(self._fd, OUTPUT_BYTES).decode(errors="replace")
            if self._fd is not None
            else ""
        )
        return own + ("\n" if own and not own.endswith("\n") else "") + read_output(self.log)

    def close(self) -> None:
        for fd in (self._fd, self._in):
            if fd is not None:
                os.close(fd)
        self._fd = self._in = None


class InputTimedOut(Exception):
    """A ``stdin:`` named pipe had no writer before the run's deadline."""


def _below(path: str, directory: Path) -> bool:
    return path.startswith("/") and Path(path).is_relative_to(directory)
