"""The run directory: one temporary directory per run, and every file a run leaves in it, named here once.

| file          | written by                                    | read by                                        |
|---------------|-----------------------------------------------|------------------------------------------------|
| request.json  | the sweep (``run.execute``)                   | the worker (``hugebench.run.worker``)          |
| reply.json    | the worker, atomically (:meth:`write_reply`)  | the sweep (``run.rows.reply_fields``)          |
| status.json   | hb-exec: the real end of what it ran          | ``hugebench.machine.launch`` (``Launched.wait``)       |
| perf.csv      | ``perf stat -x, -o`` around the measured one  | the sweep (:meth:`RunDir.perf_text`)           |
| stderr.txt    | the worker's stdout and stderr                | the sweep: its tail goes into the row          |
| text/         | the text library, one report per process      | the sweep (``hugebench.machine.textpages.read_reports``)    |

The worker runs with the run directory as its working directory; a ``command`` run's supervisor
(``run.supervisor``) writes its program's perf.csv and text/ here too, so the sweep reads them the
same way for both. The directory is named ``hb-run-<sweep pid>-*`` so that a dead sweep's are recognised.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from hugebench import kernel
from hugebench._util import write_json_atomic

RUN_DIR_PREFIX = "hb-run-"  # + the sweep's pid: a dead sweep's leftovers are recognised and removed


class _File:
    """A file of the run directory, named once: ``RunDir.<attribute>`` is its path in that directory."""

    def __init__(self, name: str):
        self.name = name

    def __get__(self, rundir: RunDir | None, owner: type | None = None):
        return self if rundir is None else rundir.path / self.name


@dataclass(frozen=True)
class RunDir:
    """The files of one run's directory (see the table above)."""

    path: Path
    request = _File("request.json")
    reply = _File("reply.json")
    status = _File("status.json")
    perf = _File("perf.csv")
    stderr = _File("stderr.txt")
    text = _File("text")

    @classmethod
    @contextlib.contextmanager
    def create(cls) -> Iterator[RunDir]:
        """A fresh run directory, removed with everything in it at the end of the block."""
        with tempfile.TemporaryDirectory(prefix=f"{RUN_DIR_PREFIX}{os.getpid()}-") as tmp:
            yield cls(Path(tmp))

    def perf_text(self) -> str | None:
        """What perf stat wrote (None: nothing, e.g. the run was killed before perf wrote its counts)."""
        try:
            return self.perf.read_text()
        except OSError:
            return None


def read_reply(path: str | os.PathLike) -> dict | None:
    """The worker's reply (None: it wrote none, or not a JSON object)."""
    try:
        reply = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return reply if isinstance(reply, dict) else None


def write_reply(path: str | os.PathLike, reply: dict) -> None:
    """The worker's one reply, whole or absent (never half a file)."""
    write_json_atomic(path, reply, default=str)


def failure_reply(exc: Exception) -> dict:
    """The reply of a run that raised ``exc`` (a worker's, or the in-process supervisor's): its status, the
    error, the program's output tail and the signal that ended it, when the exception carries them."""
    return {
        "status": getattr(exc, "status", "failed"),
        "error": f"{type(exc).__name__}: {exc}",
        "output_tail": getattr(exc, "output", None),
        "signal": getattr(exc, "signal", None),
    }


def remove_stale_run_dirs(tmp_root: str | None = None) -> list[Path]:
    """Remove the temporary run directories of sweeps that are gone (killed with -9); return them."""
    removed = []
    for path in Path(tmp_root or tempfile.gettempdir()).glob(f"{RUN_DIR_PREFIX}*-*"):
        pid = path.name.removeprefix(RUN_DIR_PREFIX).split("-", 1)[0]
        if pid.isdigit() and kernel.process_start_ticks(int(pid)) is None:
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
    return removed
