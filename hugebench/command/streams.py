"""Where a command's standard streams go and what of its output is read back: bounded, text-safe.

By default a program reads /dev/null and writes stdout and stderr together to ``<name>.out`` in the run's
directory; ``stdin: FILE`` and ``stdout: FILE | discard`` change that (stderr then has the log to itself).
The runner never reads more than the last :data:`OUTPUT_BYTES` of an output (the metric's regex or JSON is
looked for there) and a row keeps only a text-safe tail (:func:`output_tail`).
"""

from __future__ import annotations

import os
from pathlib import Path

from hugebench.launch import TAIL_BYTES, read_end, text_safe

from .checks import DISCARD

OUTPUT_BYTES = 1 << 20  # of a program's output, the end the runner reads back (metric, tail)


def output_tail(output: str | None) -> str | None:
    """What a row keeps of a program's output: its last TAIL_BYTES characters, text-safe (no control bytes
    but newline and tab), None when there was none."""
    return text_safe(output[-TAIL_BYTES:].encode(errors="replace")) or None if output else None


def read_output(path: Path) -> str:
    """The end of a program's output file (at most OUTPUT_BYTES: the metric's regex or JSON is looked for
    there), as text; "" when there is none."""
    return read_end(path, OUTPUT_BYTES).decode(errors="replace")


class Streams:
    """Where a program's standard streams go (``stdin:``/``stdout:`` of the command, else /dev/null and
    ``<name>.out`` in the run's directory with stderr) and what of its output the runner reads back."""

    def __init__(self, command, workdir: Path, name: str):
        cwd = command.cwd if command else "."
        stdin, stdout = (command.stdin, command.stdout) if command else (None, None)
        self.log = workdir / f"{name}.out"
        self.stdin = os.path.join(cwd, stdin) if stdin else None
        self.stdout = (
            (os.devnull if stdout == DISCARD else os.path.join(cwd, stdout)) if stdout else None
        )

    def files(self) -> dict:
        """Launched's keyword arguments: stdout (and stderr into the log when stdout goes elsewhere), stdin."""
        if self.stdout is None:
            return {"stdout": self.log, "stdin": self.stdin}
        return {"stdout": self.stdout, "stderr": self.log, "stdin": self.stdin}

    def output(self) -> str:
        """What the metric reads: the end of stdout's file (unless discarded), then the end of stderr's."""
        own = read_output(Path(self.stdout)) if self.stdout and self.stdout != os.devnull else ""
        return own + ("\n" if own and not own.endswith("\n") else "") + read_output(self.log)
