"""What one `command` run is asked to run, and how it failed when it gave no measurement.

:class:`Command` is the run's parameters with their ``{tmp}``/``{python}`` templates substituted and its
programs resolved on the user's PATH; :class:`CommandFailed` the one exception a command run raises when
there is no measurement (the worker turns it into a failed row); :func:`open_streams` the program's output
files, opened safely before anything starts. What does not belong here: launching or sampling the program
(``run.measured``, ``run.served``).
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from hugebench.errors import HugebenchError, UnsafePathError
from hugebench.machine.launch import Ended
from hugebench.workloads.command import template
from hugebench.workloads.command.metric import Metric, parse_metrics
from hugebench.workloads.command.streams import InputTimedOut, Streams, output_tail


class CommandFailed(RuntimeError):
    """The program (or its setup, server or driver) did not give a measurement; ``status`` and ``tail`` say
    how it ended and what it printed last, ``signal`` the signal that killed it (the sweep tells an OOM kill
    from a crash by it)."""

    def __init__(
        self,
        message: str,
        status: str = "failed",
        output: str | None = None,
        signal: str | None = None,
    ):
        super().__init__(message)
        self.status, self.output, self.signal = status, output_tail(output), signal


@dataclass(frozen=True)
class Command:
    """The parameters of one command run, substituted."""

    argv: list
    cwd: str
    env: dict
    metrics: tuple[Metric, ...]  # the judged one first
    setup: list | None
    server: dict | None
    sample_interval: float
    window: str  # process | markers
    stdin: str | None = None  # a file, else /dev/null
    stdout: str | None = None  # a file, "discard", or None: program.out in the run's directory
    # every: the probe library in every run; untimed: only in warm-up runs (try: its timed runs are the
    # program as deployed, nothing of hugebench's preloaded)
    probe: str = "every"

    @classmethod
    def from_params(cls, params: dict, tmp: Path) -> Command:
        values = {k: v for k, v in params.items() if isinstance(v, (str, int, float, bool))}
        values.update(tmp=str(tmp), python=sys.executable)

        def sub(value):
            return template.substitute(value, values)

        server = params.get("server")
        return cls(
            argv=sub(list(params["argv"])),
            cwd=params.get("cwd") or ".",
            env=sub(dict(params.get("env") or {})),
            metrics=tuple(
                replace(m, pattern=sub(m.pattern)) if m.kind == "hdr" else m
                for m in parse_metrics(params.get("metric"))
            ),
            setup=sub(params["setup"]) if params.get("setup") else None,
            server=sub(dict(server)) if server else None,
            sample_interval=float(params.get("sample_interval", 1.0)),
            window=params.get("window", "process"),
            stdin=sub(params.get("stdin")),
            stdout=sub(params.get("stdout")),
            probe=str(params.get("probe") or "every"),
        )

    def resolved(self, env: dict) -> Command:
        """The same command with its program (and a server's) as the absolute file it names on the user's PATH
        (``env``'s): what runs is exactly that file, whatever PATH perf gives its child."""
        from hugebench.machine.program import resolve, user_path

        def absolute(argv: list, where: str) -> list:
            path, why = resolve(str(argv[0]), user_path(env), self.cwd)
            if path is None:
                raise CommandFailed(f"{where}: {why} (PATH={user_path(env)}); nothing was measured")
            return [path, *argv[1:]]

        server = (
            {**self.server, "argv": absolute(self.server["argv"], "server.argv")}
            if self.server
            else None
        )
        return replace(self, argv=absolute(self.argv, "argv"), server=server)

    @property
    def program(self) -> str:
        """The measured program's file: the server's when there is one."""
        return (self.server["argv"] if self.server else self.argv)[0]


def how_ended(ended: Ended) -> str:
    return (
        f"died of signal {ended.signal_name}"
        if ended.code < 0
        else f"exited with code {ended.code}"
    )


@contextlib.contextmanager
def open_streams(command: Command, workdir: Path, name: str, deadline: float) -> Iterator[Streams]:
    """The program's streams, its ``stdout:`` file closed at the end; a file that cannot be made safely
    (a link, another user's file: hugebench.safefs) fails the run before anything started, and so does a
    ``stdin:`` that cannot be opened or a named pipe without a writer by ``deadline`` (a timeout)."""
    streams = Streams(command, workdir, name)
    try:
        try:
            streams.files()  # opens the stdout: file once, now
        except (UnsafePathError, OSError) as exc:
            why = exc if isinstance(exc, HugebenchError) else f"{exc.filename}: {exc.strerror}"
            raise CommandFailed(f"stdout: {why}; nothing was measured", output=str(why)) from None
        try:
            streams.wait_input(deadline)
        except OSError as exc:
            why = f"{exc.filename}: {exc.strerror}"
            raise CommandFailed(f"stdin: {why}; nothing was measured", output=why) from None
        except InputTimedOut as exc:
            raise CommandFailed(f"stdin: {exc}; nothing was measured", "timeout") from None
        yield streams
    finally:
        streams.close()
