"""The supervisor's end of the timed window: a program marks the part worth measuring, we see it.

Protocol (perf's control words, so the same words can drive ``perf stat --control``):

* ``HUGEBENCH_CTL``: a FIFO the program writes ``enable\\n`` / ``disable\\n`` to;
* ``HUGEBENCH_ACK``: a FIFO the program then reads one line (``ack\\n``) from, so the window has really
  started (or stopped) before it goes on.

Programs use ``hugebench_window.h`` (C/C++, :func:`header_path`) or :mod:`hugebench.window` (Python).
:class:`ControlChannel` serves both FIFOs from a daemon thread: it timestamps each word, forwards it to perf's
own control FIFO and waits for perf's ack, lets the runner act on it (``on_edge``: e.g. sample smaps at each
``disable``), and only then acks the program. Every FIFO is opened O_RDWR, so neither side blocks on open
and a program that dies mid-window leaves nobody stuck.
"""

from __future__ import annotations

import os
import select
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from hugebench.errors import ToolMissingError
from hugebench.window import ACK_ENV, CTL_ENV

WORDS = ("enable", "disable")
_MAX_LINE = (
    256  # longer "words" are garbage; dropping them keeps a stray writer from growing our buffer
)


def header_path() -> str:
    """The installed ``hugebench_window.h`` (compile measured C/C++ programs with ``-I`` its directory)."""
    path = Path(__file__).resolve().parents[2] / "include" / "hugebench_window.h"
    if not path.is_file():
        raise ToolMissingError(
            f"{path} is missing: reinstall hugebench (pip install .) to install its header"
        )
    return str(path)


def _fifo(path: Path) -> Path:
    if path.exists() and not stat.S_ISFIFO(path.stat().st_mode):
        raise FileExistsError(f"{path} exists and is not a FIFO")
    if not path.exists():
        os.mkfifo(path, 0o600)
    return path


class PerfFifos(NamedTuple):
    """perf's control FIFOs and the ``perf stat`` arguments that start it with events disabled on them."""

    ctl: Path
    ack: Path
    argv: list[str]


def perf_fifos(directory: str | os.PathLike) -> PerfFifos:
    """Make ``perf-ctl``/``perf-ack`` FIFOs in ``directory``; pass ``argv`` to ``perf stat`` and the paths to
    :class:`ControlChannel` (start the channel before perf: perf's open of its ack FIFO waits for a reader)."""
    ctl, ack = _fifo(Path(directory) / "perf-ctl"), _fifo(Path(directory) / "perf-ack")
    return PerfFifos(ctl, ack, ["--control", f"fifo:{ctl},{ack}", "-D", "-1"])


class ControlChannel:
    """Serves a program's window markers: ``start()``, run the program with ``env()``, ``stop()``,
    then read ``windows()`` / ``window_seconds()``.

    ``errors`` lists what went wrong on the way (an ``on_edge`` that raised, perf not acknowledging within
    ``perf_timeout`` seconds); the program is acked regardless, so it never hangs on us.
    """

    def __init__(
        self,
        directory: str | os.PathLike,
        perf_ctl: Path | None = None,
        perf_ack: Path | None = None,
        on_edge: Callable[[str], None] | None = None,
        perf_timeout: float = 5.0,
    ):
        if (perf_ctl is None) != (perf_ack is None):
            raise ValueError("give both perf_ctl and perf_ack, or neither")
        self.ctl_path = _fifo(Path(directory) / "hugebench-ctl")
        self.ack_path = _fifo(Path(directory) / "hugebench-ack")
        self.perf_ctl, self.perf_ack = perf_ctl, perf_ack
        self.on_edge, self.perf_timeout = on_edge, perf_timeout
        self.ignored_words = 0
        self.errors: list[str] = []
        self._edges: list[tuple[str, float]] = []
        self._lock = threading.Lock()
        self._fds: dict[str, int] = {}
        self._thread: threading.Thread | None = None
        self._stopped_at: float | None = None

    def env(self) -> dict[str, str]:
        """The variables that point the program's helpers at this channel."""
        return {CTL_ENV: str(self.ctl_path), ACK_ENV: str(self.ack_path)}

    def start(self) -> ControlChannel:
        """Open the FIFOs and serve them from a daemon thread until :meth:`stop`."""
        if self._thread is not None:
            raise RuntimeError("this ControlChannel was already started")
        paths = {
            "ctl": self.ctl_path,
            "ack": self.ack_path,
            "perf_ctl": self.perf_ctl,
            "perf_ack": self.perf_ack,
        }
        self._fds = {
            name: os.open(path, os.O_RDWR | os.O_CLOEXEC) for name, path in paths.items() if path
        }
        self._fds["wake_r"], self._fds["wake_w"] = os.pipe()
        self._thread = threading.Thread(target=self._serve, name="hugebench-control", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Handle the words already sent, stop the thread, close our ends; an open window ends now."""
        if self._thread is None or self._stopped_at is not None:
            return
        os.write(self._fds["wake_w"], b"x")
        self._thread.join(timeout=max(10.0, 2 * self.perf_timeout))
        self._stopped_at = time.monotonic()
        if (
            self._thread.is_alive()
        ):  # stuck in on_edge: leave it its descriptors rather than pull them away
            self.errors.append("the control thread did not finish (on_edge still running?)")
            return
        for fd in self._fds.values():
            os.close(fd)

    def __enter__(self) -> ControlChannel:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()

    @property
    def edges(self) -> list[tuple[str, float]]:
        """Every accepted word with its ``time.monotonic()`` on arrival."""
        with self._lock:
            return list(self._edges)

    def windows(self) -> list[tuple[float, float]]:
        """(enable, disable) times; a second enable inside a window or a disable outside one is ignored,
        and a window still open ends at :meth:`stop` (or now, before it)."""
        out, opened = [], None
        for word, at in self.edges:
            if word == "enable" and opened is None:
                opened = at
            elif word == "disable" and opened is not None:
                out.append((opened, at))
                opened = None
        if opened is not None:
            out.append(
                (opened, self._stopped_at if self._stopped_at is not None else time.monotonic())
            )
        return out

    def window_seconds(self) -> float:
        """Total time inside windows."""
        return sum(end - begin for begin, end in self.windows())

    # -- the serving thread ----------------------------------------------------------------------------

    def _serve(self) -> None:
        ctl, wake, pending, discarding = self._fds["ctl"], self._fds["wake_r"], b"", False
        while True:
            ready, _, _ = select.select([ctl, wake], [], [])
            if ctl not in ready:
                return  # woken by stop() with no word left to handle
            pending += os.read(ctl, 4096)
            *lines, pending = pending.split(b"\n")
            for line in lines:
                if discarding:  # the rest of an over-long line, already counted
                    discarding = False
                    continue
                self._handle(line.strip().decode("ascii", "replace"))
            if len(pending) > _MAX_LINE:
                if not discarding:
                    self.ignored_words += 1
                pending, discarding = b"", True

    def _handle(self, word: str) -> None:
        if word not in WORDS:
            self.ignored_words += 1  # not acked either, as perf does with words it does not know
            return
        with self._lock:
            self._edges.append((word, time.monotonic()))
        if "perf_ctl" in self._fds:
            self._forward_to_perf(word)
        if self.on_edge is not None:
            try:
                self.on_edge(word)
            except (
                Exception
            ) as exc:  # the runner's bug must not leave the program waiting for its ack
                self.errors.append(f"on_edge({word!r}) raised {exc!r}")
        os.write(self._fds["ack"], b"ack\n")

    def _forward_to_perf(self, word: str) -> None:
        os.write(self._fds["perf_ctl"], f"{word}\n".encode())
        deadline, reply = time.monotonic() + self.perf_timeout, b""
        while b"\n" not in reply:  # perf writes "ack\n\0"
            left = deadline - time.monotonic()
            ready, _, _ = select.select([self._fds["perf_ack"]], [], [], max(left, 0))
            if not ready:
                self.errors.append(
                    f"perf did not acknowledge {word!r} within {self.perf_timeout:g} s"
                )
                return
            reply += os.read(self._fds["perf_ack"], 64)
