"""A server under a load driver: the server launched as the measured process, the driver run against it once
it is ready (after its unmeasured warm-up runs), the server stopped, and the driver's run as the timed window.

What does not belong here: what is common with a program run to its end (``run.measured``).
"""

from __future__ import annotations

import re
import socket
import time
from pathlib import Path

from hugebench.machine.kevents import driver_windows
from hugebench.machine.launch import Ended, Launched
from hugebench.run.command_spec import CommandFailed, how_ended, open_streams
from hugebench.run.measured import POLL_S, Measured
from hugebench.workloads.command.metric import WINDOW_COLUMN, extract_all
from hugebench.workloads.command.soak import combine, parse_duration
from hugebench.workloads.command.streams import Streams, both_tails, read_output

READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0


class Served(Measured):
    """The measured process is a server; the load driver's run is the timed window."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.soak_columns: dict = {}  # a soak's own columns (hugebench.workloads.command.soak)
        self.metrics_found: dict | None = None  # a soak's metrics, each the median over its runs

    def serve(self, deadline: float) -> tuple[dict, str]:
        server_out = self.workdir / "server.out"
        with open_streams(self.command, self.workdir, "driver") as driver_streams:
            driven, ended = self._drive(driver_streams, server_out, deadline)
            output = driver_streams.output()
        if driven.timed_out or driven.code != 0:
            status = "timeout" if driven.timed_out else "failed"
            raise CommandFailed(
                f"the load driver {self.command.argv[0]!r} "
                f"{'ran past the timeout' if driven.timed_out else how_ended(driven)}",
                status,
                both_tails(output, read_output(server_out)),
            )
        if ended.code not in (0, 128 + 15, -15) and not ended.timed_out:
            raise CommandFailed(
                f"the server {how_ended(ended)} before it was stopped",
                "crashed" if ended.code < 0 else "failed",
                read_output(server_out),
                ended.signal_name,
            )
        self._check_leftovers(ended, both_tails(output, read_output(server_out)))
        window = (
            self.control.window_seconds()
            if self.control
            else driven.status.get("wall_s", driven.wall_s)
        )
        if self.metrics_found:  # a soak's window: the median driver run (its metrics: the medians)
            window = self.metrics_found.get(WINDOW_COLUMN, (window,))[0] or window
        row = self._row(ended, window, end=self.window_end)
        row.update(self.soak_columns)
        row.update(driver_windows(self.sampler.events, self.driver_started, output))
        row["server_stop_s"] = ended.wall_s
        if self.warmup_s is not None and self.command.server:
            row["server_warmup_runs"] = int(self.command.server["warmup"])
            row["server_warmup_s"] = self.warmup_s
        return row, output

    def _drive(
        self, driver_streams: Streams, server_out: Path, deadline: float
    ) -> tuple[Ended, Ended]:
        """The server started, the load driver run against it once it is ready, the server stopped."""
        launched = self._launch(Streams(None, self.workdir, "server"))
        try:
            self._wait_ready(launched, server_out, deadline)
            self._warm_up(deadline, server_out)
            self.driver_started = time.monotonic()
            driven = self._drive_once(driver_streams, deadline)
            if self.command.server and self.command.server.get("soak"):
                driven = self._soak(driven, driver_streams, deadline)
            # the server's state at the end of the timed window
            self.window_end = self.sampler.sample(end=True)
        except BaseException:
            launched.kill()
            launched.proc.wait()
            raise
        finally:
            if self.control:
                self.control.stop()
        return driven, launched.stop(self._pid(), STOP_GRACE_S)

    def _drive_once(self, driver_streams: Streams, deadline: float) -> Ended:
        driver = Launched(
            self.command.argv,
            self.env,
            self.command.cwd,
            status_path=self.workdir / "driver.status",
            container=self.container,
            **driver_streams.files(),
        )
        return self._sample_while(driver, deadline)

    def _soak(self, driven: Ended, driver_streams: Streams, deadline: float) -> Ended:
        """``server.soak``: the driver run again until the duration is over, each run's metrics read as it
        ends (hugebench.workloads.command.soak); the last run's end is the driver's."""
        assert self.command.server is not None
        seconds = parse_duration(self.command.server["soak"])
        runs = []
        while True:
            if driven.timed_out or driven.code != 0:
                return driven  # serve() fails the run with both tails
            wall = driven.status.get("wall_s", driven.wall_s)
            found = extract_all(
                self.command.metrics, driver_streams.output(), wall, self.command.cwd
            )
            runs.append((time.monotonic() - self.driver_started, found))
            if time.monotonic() - self.driver_started >= seconds:
                break
            driven = self._drive_once(driver_streams, deadline)
        self.metrics_found, self.soak_columns = combine(runs, seconds)
        return driven

    def _warm_up(self, deadline: float, server_out: Path) -> None:
        """``server.warmup``: the load driver run that many times against the ready server, unmeasured (a
        database's first run fills its caches); each must succeed, its output kept beside the run's."""
        assert self.command.server is not None
        times = int(self.command.server.get("warmup") or 0)
        began = time.monotonic()
        for i in range(times):
            out = self.workdir / f"driver-warmup-{i}.out"
            ended = Launched(
                self.command.argv, self.env, self.command.cwd, stdout=out, container=self.container
            ).wait(max(0.1, deadline - time.monotonic()), tick=POLL_S, on_tick=self._tick)
            if ended.timed_out or ended.code != 0:
                how = "ran past the run's timeout" if ended.timed_out else how_ended(ended)
                raise CommandFailed(
                    f"warm-up run {i + 1} of {times} of the load driver {how}; nothing was measured",
                    "timeout" if ended.timed_out else "failed",
                    both_tails(read_output(out), read_output(server_out)),
                )
        self.warmup_s = round(time.monotonic() - began, 3) if times else None

    def _wait_ready(self, launched: Launched, server_out: Path, deadline: float) -> None:
        server = self.command.server
        assert server is not None  # only serve() waits, and only for a command with a server
        ready = server.get("ready") or {}
        limit = min(
            deadline,
            time.monotonic() + float(server.get("ready_timeout", READY_TIMEOUT_S)),
        )
        while not _is_ready(ready, server_out):
            if launched.proc.poll() is not None:
                ended = launched.wait(1)
                raise CommandFailed(
                    f"the server {how_ended(ended)} before it was ready",
                    output=read_output(server_out),
                )
            if time.monotonic() > limit:
                launched.kill()
                raise CommandFailed(
                    f"the server was not ready ({ready}) within "
                    f"{server.get('ready_timeout', READY_TIMEOUT_S)} s",
                    "timeout",
                    read_output(server_out),
                )
            self._tick()
            time.sleep(POLL_S)


def _is_ready(ready: dict, server_out: Path) -> bool:
    """A server is ready when its socket file exists, its TCP port on loopback accepts, or its log matches."""
    if "path" in ready:
        return Path(ready["path"]).exists()
    if "port" in ready:
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex(("127.0.0.1", int(ready["port"]))) == 0
    if "log" in ready:
        return re.search(ready["log"], read_output(server_out), re.MULTILINE) is not None
    return True
