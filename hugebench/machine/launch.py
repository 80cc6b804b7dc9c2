"""Starting and ending the processes of a run: its own session, death with its parent, a timeout, the kill
of its whole group (with a run's container, of every process of the run: hugebench.system.containment), the
real end recorded by hb-exec; the name of a signal.

Used for every process a sweep starts (the worker, and for ``workload: command`` the measured program, its
setup command and its load driver), so that all of them end the same way and none outlives the sweep.
"""

from __future__ import annotations

import functools
import json
import os
import select
import signal
import stat
import subprocess
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from hugebench.system import die_with_parent
from hugebench.system.containment import TRACK_INTERVAL_S, RunContainer

TAIL_BYTES = 4000


def wait_exit(proc: subprocess.Popen, timeout: float | None) -> int:
    """``proc.wait(timeout)``, woken the moment the process ends: Popen's own wait with a timeout polls,
    sleeping up to 50 ms between looks, which every run paid twice (the sweep for its worker, the worker for
    the program). A pidfd (Linux 5.3) becomes readable at the exit; without one, Popen's wait. Raises
    ``subprocess.TimeoutExpired`` as Popen.wait does."""
    if timeout is None or proc.returncode is not None:
        return proc.wait(timeout)
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):  # no pidfd here, or the process was reaped meanwhile
        return proc.wait(timeout)
    try:
        ready, _, _ = select.select([fd], [], [], max(timeout, 0.0))
    finally:
        os.close(fd)
    if not ready:
        raise subprocess.TimeoutExpired(proc.args, timeout)
    return proc.wait()


@dataclass
class Ended:
    """How a process ended: ``code`` as subprocess reports it (negative: killed by that signal)."""

    code: int
    wall_s: float
    timed_out: bool = False
    status: dict = field(
        default_factory=dict
    )  # hb-exec's record: rusage of the tree, leftover processes

    @property
    def signal_name(self) -> str | None:
        if self.code >= 0:
            return None
        return signal_name(-self.code)


def _input(stdin: str | os.PathLike | int | None) -> BinaryIO:
    """A program's standard input as a file object: a descriptor given (kept open), else the file opened
    with O_NONBLOCK (an open of a named pipe without a writer never blocks), then made blocking."""
    if isinstance(stdin, int):
        return open(stdin, "rb", closefd=False)
    fd = os.open(stdin or os.devnull, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    os.set_blocking(fd, True)
    return open(fd, "rb")


class Launched:
    """A process started in its own session (its group is what gets killed) that dies with us; with a
    ``container`` (hugebench.system.containment), it and all it starts are the run's: in its cgroup from before
    exec, carrying its token, tracked while it runs and all killed with it."""

    def __init__(
        self,
        argv: Sequence[str],
        env: Mapping[str, str],
        cwd: str | os.PathLike,
        *,
        stdout: str | os.PathLike | int,
        stderr: str | os.PathLike | None = None,
        status_path: str | os.PathLike | None = None,
        container: RunContainer | None = None,
        stdin: str | os.PathLike | int | None = None,
    ):
        """``stdout`` (and ``stderr``, default: with stdout) are files written from the start (``stdout`` may
        be an open descriptor, which stays the caller's); ``stdin`` a file read (default: /dev/null), opened
        without blocking (a named pipe swapped in reads as empty, never holds the start), or a descriptor,
        which stays the caller's."""
        self.status_path = Path(status_path) if status_path else None
        self.container = container
        if container is not None:
            env = {**env, **container.env()}
        self.started = time.perf_counter()
        shim = _enter_shim()
        ready_r, ready_w = os.pipe() if shim else (-1, -1)
        if shim:  # hb-exec joins the cgroups and dies with us, then execs argv (see _shim_argv)
            argv = _shim_argv(shim, ready_w, container, argv)
        with (
            open(stdout, "wb", closefd=not isinstance(stdout, int)) as out,
            _input(stdin) as inp,
        ):
            err = open(stderr, "wb") if stderr else None
            try:
                self.proc = subprocess.Popen(
                    list(argv),
                    env=dict(env),
                    cwd=cwd,
                    stdin=inp,
                    stdout=out,
                    stderr=err or subprocess.STDOUT,
                    start_new_session=True,
                    preexec_fn=None if shim else self._in_child,
                    pass_fds=(ready_w,) if shim else (),
                )
            except BaseException:
                if shim:
                    os.close(ready_r)
                raise
            finally:
                if err:
                    err.close()
                if shim:
                    os.close(ready_w)
        if shim:
            _wait_ready(ready_r)
        if container is not None:
            container.adopt(self.proc.pid)

    def _in_child(self) -> None:
        """Between fork and exec: die with the sweep, and be in the run's cgroup before the program starts."""
        die_with_parent()
        if self.container is not None:
            self.container.enter()

    @property
    def pid(self) -> int:
        return self.proc.pid

    def wait(
        self,
        timeout: float | None,
        tick: float | None = None,
        on_tick: Callable[[], None] | None = None,
    ) -> Ended:
        """Wait for the end (calling ``on_tick`` every ``tick`` s meanwhile); ``timeout`` seconds from now,
        kill the group. On any exception (Ctrl-C, SIGTERM) the group is killed before it propagates.
        """
        deadline = None if timeout is None else time.perf_counter() + timeout
        if self.container is not None:
            tick = min(tick or TRACK_INTERVAL_S, TRACK_INTERVAL_S)
            on_tick = self._tracking(self.container, on_tick)
        try:
            while True:
                left = None if deadline is None else deadline - time.perf_counter()
                step = left if tick is None else (tick if left is None else min(tick, left))
                if step is not None and step <= 0:
                    self.kill()
                    self.proc.wait()
                    return self._ended(timed_out=True)
                try:
                    wait_exit(self.proc, step)
                    return self._ended()
                except subprocess.TimeoutExpired:
                    if on_tick is not None:
                        on_tick()
        except BaseException:
            self.kill()
            self.proc.wait()
            raise

    def _tracking(
        self, container: RunContainer, on_tick: Callable[[], None] | None
    ) -> Callable[[], None]:
        def tick() -> None:
            container.track(self.pid)
            if on_tick is not None:
                on_tick()

        return tick

    def stop(self, pid: int | None = None, grace: float = 10.0) -> Ended:
        """SIGTERM to ``pid`` (default: the group), then SIGKILL to the group after ``grace`` seconds (a server
        at the end of its run; signalling the server alone lets perf around it write its counts)."""
        if pid is None:
            self.signal(signal.SIGTERM)
        else:
            try:
                os.kill(pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        return self.wait(grace)

    def signal(self, sig: int) -> None:
        try:
            os.killpg(self.proc.pid, sig)
        except ProcessLookupError:
            pass  # it ended (and was reaped) just before we got to it

    def kill(self) -> None:
        """SIGKILL the group, and with a container every process of the run (daemons that left the group)."""
        if self.container is not None:
            self.container.kill()
        self.signal(signal.SIGKILL)

    def _ended(self, timed_out: bool = False) -> Ended:
        wall = time.perf_counter() - self.started
        status = read_status(self.status_path) if self.status_path else {}
        code = self.proc.returncode
        if "exit_code" in status:
            code = status.pop("exit_code")
        elif "signal" in status:
            code = -status.pop("signal")
        return Ended(code=code, wall_s=wall, timed_out=timed_out, status=status)


@functools.cache
def _enter_shim() -> str | None:
    """hb-exec, which starts a process the way ``Launched._in_child`` would (``hb-exec --enter``), or None
    where it is missing or older than ``--enter`` (a build from before it: then Python does it between fork
    and exec). Looked up once per process."""
    from hugebench.errors import ToolMissingError
    from hugebench.machine.environment import launcher

    try:
        path = launcher()
        with open(path, "rb") as f:
            return path if ENTER_USAGE in f.read() else None
    except (ToolMissingError, OSError):
        return None


ENTER_USAGE = b"usage: hb-exec --enter READY_FD"  # in a build of hb-exec that has --enter


def _shim_argv(
    shim: str, ready_w: int, container: RunContainer | None, argv: Sequence[str]
) -> list[str]:
    """``hb-exec --enter READY_FD [cgroup.procs ...] -- argv``: the process dies with the sweep and is in the
    run's cgroups before argv's first instruction. Python's own preexec_fn forces a full fork() of the
    sweep's process (5-20 ms here) where this lets subprocess vfork."""
    files = container.join_files() if container is not None else []
    return [shim, "--enter", str(ready_w), *files, "--", *argv]


def _wait_ready(ready_r: int) -> None:
    """Until hb-exec --enter has joined the cgroups (it closes its end of the pipe, or it died)."""
    try:
        while os.read(ready_r, 64):
            pass
    finally:
        os.close(ready_r)


def read_status(path: Path) -> dict:
    """hb-exec's record of how its child ended; {} when hb-exec itself was killed (timeout, Ctrl-C)."""
    try:
        ended = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return {}
    return ended if isinstance(ended, dict) else {}


# Control characters a tail never carries (newline and tab stay): a binary output's bytes, terminal escapes.
_CONTROL = (
    dict.fromkeys(c for c in range(32) if c not in (9, 10))
    | {127: None}
    | dict.fromkeys(range(0x80, 0xA0))
)


def read_end(path: str | os.PathLike | int, size: int) -> bytes:
    """At most the last ``size`` bytes of a regular file (b"" when missing, unreadable or not a regular
    file): never more in memory, whatever the program wrote. An open descriptor is read, not closed."""
    try:
        with open(path, "rb", closefd=not isinstance(path, int)) as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode):
                return b""
            f.seek(max(0, st.st_size - size))
            return f.read(size)
    except OSError:
        return b""


def text_safe(data: bytes) -> str:
    """Bytes as text that is safe to store and show: undecodable bytes replaced, control characters (but
    newline and tab) removed."""
    return data.decode(errors="replace").translate(_CONTROL)


def tail(path: str | os.PathLike, size: int = TAIL_BYTES) -> str | None:
    """The last ``size`` bytes of a log, as text-safe text (:func:`text_safe`; None when empty or missing)."""
    return text_safe(read_end(path, size)) or None


def signal_name(sig: int) -> str:
    """``SIGKILL`` for 9: the one naming of a signal in rows and messages (its number when Python has no name)."""
    return signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
