"""Run one `command` cell: the user's program (or server + load driver) as the measured process.

The worker process is only the supervisor here: it runs no workload code itself and is not under the
allocator. It starts ``[perf stat] hb-exec [allocator's LD_PRELOAD + probe] -- program``, samples the
program tree's huge-page coverage while it runs, marks the timed window (the whole process, the program's
own enable/disable markers, or the load driver's run), proves from the probe library which malloc each
process of the program really used, and turns all of it into one flat row.
"""

from __future__ import annotations

import contextlib
import os
import socket
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

from .. import allocators, kernel
from ..command import template
from ..command.kevents import driver_windows
from ..command.metric import WINDOW_COLUMN, Metric, extract_all, parse_metrics
from ..command.program import user_path
from ..command.sampler import FIELDS, CoverageSampler, tree_peak_rss
from ..command.streams import Streams, both_tails, output_tail, read_output
from ..environment import worker_environment
from ..errors import HugebenchError, UnsafePathError
from ..launch import Ended, Launched, tail
from ..measure.phases import coverage
from ..system.containment import TOKEN
from .argv import measured_argv
from .rundir import RunDir

POLL_S = 0.02  # how often the supervisor looks at the program between coverage samples
READY_TIMEOUT_S = 60.0
STOP_GRACE_S = 10.0


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
        )

    def resolved(self, env: dict) -> Command:
        """The same command with its program (and a server's) as the absolute file it names on the user's PATH
        (``env``'s): what runs is exactly that file, whatever PATH perf gives its child."""
        from ..command.program import resolve, user_path

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


def run(request, workdir: Path) -> dict:
    """The row of one command run (raises CommandFailed when there is no measurement)."""
    tmp = workdir / "tmp"
    tmp.mkdir(exist_ok=True)
    command = Command.from_params(request.run["params"], tmp)
    deadline = time.monotonic() + float(
        request.run["timeout"]
    )  # the orchestrator allows the worker more
    base_env = {**os.environ, **command.env}
    if command.setup:
        _run_setup(command.setup, command.cwd, base_env, workdir, deadline)
    command = command.resolved(base_env)
    measured = _Measured(request, command, workdir, base_env)
    vm_before = kernel.read_vmstat()
    if command.server:
        row, output = measured.serve(deadline)
    else:
        row, output = measured.run_program(deadline)
    row.update(
        {
            f"vmstat.{k}": v
            for k, v in kernel.counter_delta(
                vm_before, kernel.read_vmstat(), kernel.THP_VMSTAT
            ).items()
        }
    )
    _metrics_into(row, command, output)
    row["stdout_tail"] = output_tail(output)
    return row


def _metrics_into(row: dict, command: Command, output: str) -> None:
    """Every metric's value (or its ``.reason``) into the row: without the judged one the run failed; another
    that could not be read is absent with its reason."""
    found = extract_all(command.metrics, output, row.get(WINDOW_COLUMN), command.cwd)
    for i, (column, (value, why)) in enumerate(found.items()):
        row[column] = value
        if why:
            row[f"{column}.reason"] = why
            if i == 0:
                raise CommandFailed(why, output=output)


def _run_setup(setup: list, cwd: str, env: dict, workdir: Path, deadline: float) -> None:
    out = workdir / "setup.out"
    ended = Launched(setup, env, cwd, stdout=out).wait(max(1.0, deadline - time.monotonic()))
    if ended.timed_out or ended.code != 0:
        how = "ran past the run's timeout" if ended.timed_out else _how(ended)
        raise CommandFailed(
            f"setup command {setup[0]!r} {how}; nothing was measured", output=tail(out)
        )


def _how(ended: Ended) -> str:
    return (
        f"died of signal {ended.signal_name}"
        if ended.code < 0
        else f"exited with code {ended.code}"
    )


class _Measured:
    """The measured process: launched under the allocator, the probe and perf, sampled while it runs."""

    def __init__(self, request, command: Command, workdir: Path, base_env: dict):
        from ..command.control import ControlChannel, perf_fifos

        self.request, self.command, self.workdir = request, command, workdir
        self.probes = workdir / "probes"
        self.probes.mkdir(exist_ok=True)
        self.status = workdir / "measured.status"
        self.sampler = CoverageSampler()
        rundir = RunDir(
            workdir
        )  # the worker's run directory: the sweep reads perf.csv and text/ from it
        # glibc cells preload libc itself, so that glibc's malloc wins over one the program is linked with;
        # as-is preloads no allocator (the probe library, which defines no malloc, is all it gets)
        as_is = request.allocator_mode == "as-is"
        library = None if as_is else request.allocator_path or allocators.glibc_path()
        program = command.server["argv"] if command.server else command.argv
        self.page_cache = (
            prepare_text(command.program, request.text_pages, rundir.text)
            if request.text_pages
            else {}
        )
        self.control = None
        perf_extra: list[str] = []
        # The experiment's env: is the program's only: it goes to hb-exec as NAME=VALUE pairs, which hb-exec
        # sets in its child alone, so LD_DEBUG_OUTPUT or LD_LIBRARY_PATH never reach perf or hb-exec (run as
        # root with the worker's whitelisted environment). perf stat puts its own directories first on its
        # child's PATH: the program gets the user's back.
        extra_env = {**command.env, "PATH": user_path(base_env)}
        if command.window == "markers":
            perf_ctl = perf_ack = None
            if request.perf_bin:  # perf starts disabled and counts the program's windows only
                perf_ctl, perf_ack, perf_extra = perf_fifos(workdir)
            self.control = ControlChannel(
                workdir, perf_ctl=perf_ctl, perf_ack=perf_ack, on_edge=self._edge
            )
            extra_env = {**extra_env, **self.control.env()}
        self.argv = measured_argv(
            program,
            {**request.allocator_env, **({"LD_PRELOAD": library} if library else {})},
            rundir,
            status=self.status,
            perf_bin=request.perf_bin,
            perf_events=request.perf_events,
            perf_extra=perf_extra,
            probe_dir=self.probes,
            text_pages=request.text_pages,
            extra_env=extra_env,
        )
        self.env = base_env  # the load driver's: a program of the experiment's, like setup
        # perf's and hb-exec's: a whitelist of the worker's own environment and the run's containment token
        # (which every process of the run carries), nothing of the experiment's
        self.helper_env = worker_environment(
            {TOKEN: os.environ[TOKEN]} if TOKEN in os.environ else {}
        )
        self.window_end: dict | None = None
        self.warmup_s: float | None = None  # the server's warm-up runs of the load driver, seconds
        self.driver_started = 0.0  # monotonic time the measured driver run started
        self._last_sample = 0.0

    def _edge(self, word: str) -> None:
        if word == "disable":
            self.window_end = self.sampler.sample(end=True)

    # -- a program that runs to its end ----------------------------------------------------------------

    def run_program(self, deadline: float) -> tuple[dict, str]:
        with _streams(self.command, self.workdir, "program") as streams:
            launched = self._launch(streams)
            ended = self._watch(launched, deadline)
            output = streams.output()
        self._check_end(ended, "the program", output)
        if self.control and not self.control.windows():
            raise CommandFailed(
                "window: markers, but the program marked no window (it never wrote 'enable' to "
                "$HUGEBENCH_CTL: use hugebench_window.h or hugebench.window)",
                output=output,
            )
        window = (
            self.control.window_seconds()
            if self.control
            else ended.status.get("wall_s", ended.wall_s)
        )
        return self._row(ended, window, end=self.window_end if self.control else None), output

    # -- a server under a load driver ------------------------------------------------------------------

    def serve(self, deadline: float) -> tuple[dict, str]:
        server_out = self.workdir / "server.out"
        with _streams(self.command, self.workdir, "driver") as driver_streams:
            driven, ended = self._drive(driver_streams, server_out, deadline)
            output = driver_streams.output()
        if driven.timed_out or driven.code != 0:
            status = "timeout" if driven.timed_out else "failed"
            raise CommandFailed(
                f"the load driver {self.command.argv[0]!r} "
                f"{'ran past the timeout' if driven.timed_out else _how(driven)}",
                status,
                both_tails(output, read_output(server_out)),
            )
        if ended.code not in (0, 128 + 15, -15) and not ended.timed_out:
            raise CommandFailed(
                f"the server {_how(ended)} before it was stopped",
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
        row = self._row(ended, window, end=self.window_end)
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
            driver = Launched(
                self.command.argv,
                self.env,
                self.command.cwd,
                status_path=self.workdir / "driver.status",
                **driver_streams.files(),
            )
            driven = self._sample_while(driver, deadline)
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

    def _warm_up(self, deadline: float, server_out: Path) -> None:
        """``server.warmup``: the load driver run that many times against the ready server, unmeasured (a
        database's first run fills its caches); each must succeed, its output kept beside the run's."""
        assert self.command.server is not None
        times = int(self.command.server.get("warmup") or 0)
        began = time.monotonic()
        for i in range(times):
            out = self.workdir / f"driver-warmup-{i}.out"
            ended = Launched(self.command.argv, self.env, self.command.cwd, stdout=out).wait(
                max(0.1, deadline - time.monotonic()), tick=POLL_S, on_tick=self._tick
            )
            if ended.timed_out or ended.code != 0:
                how = "ran past the run's timeout" if ended.timed_out else _how(ended)
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
                    f"the server {_how(ended)} before it was ready", output=read_output(server_out)
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

    # -- shared --------------------------------------------------------------------------------------

    def _launch(self, streams: Streams) -> Launched:
        if self.control:
            self.control.start()
        return Launched(
            self.argv, self.helper_env, self.command.cwd, status_path=self.status, **streams.files()
        )

    def _watch(self, launched: Launched, deadline: float) -> Ended:
        try:
            return self._sample_while(launched, deadline)
        finally:
            if self.control:
                self.control.stop()

    def _sample_while(self, launched: Launched, deadline: float) -> Ended:
        return launched.wait(max(0.1, deadline - time.monotonic()), tick=POLL_S, on_tick=self._tick)

    def _tick(self) -> None:
        if self.sampler.pid is None:
            self.sampler.pid = self._pid()
        now = time.monotonic()
        if self.sampler.pid is not None and now - self._last_sample >= self.command.sample_interval:
            self._last_sample = now
            self.sampler.sample()

    def _pid(self) -> int | None:
        return _read_pid(self.status)

    def _check_end(self, ended: Ended, what: str, output: str) -> None:
        if ended.timed_out:
            raise CommandFailed(
                f"{what} ran past the run's timeout and was killed", "timeout", output
            )
        if ended.code != 0:
            raise CommandFailed(
                f"{what} {_how(ended)}",
                "crashed" if ended.code < 0 else "failed",
                output,
                ended.signal_name,
            )
        self._check_leftovers(ended)

    def _check_leftovers(self, ended: Ended, output: str | None = None) -> None:
        left = ended.status.get("leftover_processes") or 0
        if left:
            raise CommandFailed(
                f"the program left {left} process(es) running after it ended (a daemon?); they "
                "were killed. Measure a program that stays in the foreground (e.g. a server's "
                "--daemonize no)",
                output=output,
            )

    def _row(self, ended: Ended, window: float, end: dict | None) -> dict:
        from ..command.mallocprobe import read_exits, read_probes, verify

        probes = read_probes(self.probes)
        row = verify(
            self.request.allocator,
            self.request.allocator_path,
            probes,
            self.request.allocator_expect,
            as_is=self.request.allocator_mode == "as-is",
        )
        exits = read_exits(self.probes)
        end = end or _sum_exits(exits) or self.sampler.last or {}
        row[WINDOW_COLUMN] = window
        row["program_path"] = (
            self.command.program
        )  # the file that ran, resolved once on the user's PATH
        # each process image the probe saw (its /proc/self/exe): the interpreter of a script, a driver's children
        # and every one the sampler saw in the tree (a static child the probe cannot enter, too)
        exes = {str(p["exe"]) for p in probes if p.get("exe")} | self.sampler.exes
        row["program_exes"] = "; ".join(sorted(exes)) or None
        if self.control:
            row["windows"] = len(self.control.windows())
        status = ended.status
        row.update(
            {
                "utime_s": status.get("utime_s"),
                "stime_s": status.get("stime_s"),
                "minflt": status.get("minflt"),
                "majflt": status.get("majflt"),
                "peak_rss_bytes": status["maxrss_kib"] * 1024 if "maxrss_kib" in status else None,
                "process_wall_s": status.get("wall_s", ended.wall_s),
                "noise.migrations": status.get("nr_migrations"),
            }
        )  # the program's, not its supervisor's
        row.update(tree_peak_rss(exits, self.sampler.rss_peaks))
        for key in FIELDS:
            row[f"smaps.{key}"] = end.get(key)
        row.update(self.sampler.summary())
        row.update(self.sampler.folio_columns())
        row.update(
            _coverage_columns(
                coverage(end) if end else None,
                row.get("hp_coverage_tw"),
                run_to_end=not (self.control or self.command.server),
                interval=self.command.sample_interval,
            )
        )
        row.update(self.page_cache)
        row.update(self._thp_state(probes, exits))
        if self.request.allocator_mode != "as-is":
            from ..command.treeproof import tree_proof

            row.update(
                tree_proof(self.sampler.mapped, self.sampler.pid_names, self.request.allocator_path)
            )
        return row

    def _thp_state(self, probes: list, exits: dict) -> dict:
        """What THP each measured process got vs the mode the cell asked (hugebench.command.thpstate)."""
        from ..command.thpstate import process_states, thp_columns

        asked = (
            "never"
            if self.request.thp_prctl_disable
            else self.request.run.get("system", {}).get("thp.enabled")
            or kernel.thp_modes().get("enabled")
        )
        exes = {
            p["pid"]: p.get("comm") or p.get("exe")
            for p in [*probes, *exits.values()]
            if isinstance(p.get("pid"), int)
        }
        exes.update(
            self.sampler.pid_names
        )  # the name it was run by (redis-server, not its link target)
        states = process_states(self.sampler.thp_enabled, probes, exits)
        inherited = kernel.process_thp_enabled() is False and not self.request.thp_prctl_disable
        return thp_columns(asked, states, exes, inherited)


@contextlib.contextmanager
def _streams(command: Command, workdir: Path, name: str) -> Iterator[Streams]:
    """The program's streams, its ``stdout:`` file closed at the end; a file that cannot be made safely
    (a link, another user's file: hugebench.safefs) fails the run before anything started."""
    streams = Streams(command, workdir, name)
    try:
        try:
            streams.files()  # opens the stdout: file once, now
        except (UnsafePathError, OSError) as exc:
            why = exc if isinstance(exc, HugebenchError) else f"{exc.filename}: {exc.strerror}"
            raise CommandFailed(f"stdout: {why}; nothing was measured", output=str(why)) from None
        yield streams
    finally:
        streams.close()


def _coverage_columns(
    at_end: float | None, time_weighted: float | None, run_to_end: bool, interval: float
) -> dict:
    """``hp_coverage`` is the coverage that describes the measured phase, and ``hp_coverage_basis`` says which
    one it is: for a program timed to its end, time-weighted over its run (at exit it has often freed most of
    its memory: ``sort`` is at 0% then, 99% over its run), kept as ``hp_coverage_exit`` beside it; for a
    marked window or a server, at the end of the timed window."""
    if not run_to_end:
        return {"hp_coverage": at_end, "hp_coverage_basis": "window end"}
    out = {
        "hp_coverage": time_weighted,
        "hp_coverage_basis": "time-weighted",
        "hp_coverage_exit": at_end,
    }
    if time_weighted is None:
        out["hp_coverage.reason"] = (
            f"no coverage sample was read while the program ran (sample_interval "
            f"{interval} s): sample more often for a short program"
        )
    return out


def prepare_text(program: str, mode: str, text_dir: Path) -> dict:
    """Page cache of the program's binary (its resolved file) put in the same state before every run (see
    hugebench.textpages)."""
    from ..textpages import prepare_page_cache

    text_dir.mkdir(exist_ok=True)
    return prepare_page_cache(os.path.realpath(program), mode)


def _sum_exits(exits: dict) -> dict:
    """The program's coverage at its end: each process's smaps at its own exit, summed over the tree (a
    compiler driver is small; the cc1plus it ran is what matters)."""
    return {key: sum(e.get(key) or 0 for e in exits.values()) for key in FIELDS} if exits else {}


def _read_pid(status: Path) -> int | None:
    """The measured process's pid, which hb-exec writes beside its status file once it has forked."""
    text = read_output(Path(f"{status}.pid")).strip()
    return int(text) if text.isdigit() else None


def _is_ready(ready: dict, server_out: Path) -> bool:
    """A server is ready when its socket file exists, its TCP port on loopback accepts, or its log matches."""
    if "path" in ready:
        return Path(ready["path"]).exists()
    if "port" in ready:
        with socket.socket() as s:
            s.settimeout(0.2)
            return s.connect_ex(("127.0.0.1", int(ready["port"]))) == 0
    if "log" in ready:
        import re

        return re.search(ready["log"], read_output(server_out), re.MULTILINE) is not None
    return True
