"""The measured process of a `command` run: launched under the allocator, the probe and perf, sampled while
it runs, timed (the whole process or the program's own markers) and turned into one flat row.

:class:`Measured` runs a program to its end; ``run.served`` extends it to a server under a load driver.
What does not belong here: the run's parameters and failure (``run.command_spec``), the entry point
(``run.supervisor``), the parsers and samplers themselves (``hugebench.workloads.command``).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from hugebench import kernel
from hugebench.knob_catalogue import THP_ENABLED
from hugebench.machine import allocators
from hugebench.machine.environment import worker_environment
from hugebench.machine.launch import Ended, Launched
from hugebench.machine.program import user_path
from hugebench.machine.sampler import FIELDS, CoverageSampler, tree_peak_rss
from hugebench.measure.phases import coverage
from hugebench.run.argv import measured_argv
from hugebench.run.command_spec import Command, CommandFailed, how_ended, open_streams
from hugebench.run.rundir import RunDir
from hugebench.system.containment import TOKEN, RunContainer
from hugebench.workloads.command.metric import WINDOW_COLUMN
from hugebench.workloads.command.streams import Streams, read_output

POLL_S = 0.02  # how often the supervisor looks at the program between coverage samples


class Measured:
    """The measured process: launched under the allocator, the probe and perf, sampled while it runs."""

    def __init__(
        self,
        request,
        command: Command,
        workdir: Path,
        base_env: dict,
        container: RunContainer | None = None,
    ):
        """``container``: the run's (its processes started into its cgroup) when this supervisor runs in the
        sweep's process (``run.inprocess``); None in a worker, which is itself in the run's cgroup."""
        from hugebench.workloads.command.control import ControlChannel, perf_fifos

        self.request, self.command, self.workdir = request, command, workdir
        self.container = container
        self.probes = workdir / "probes"
        self.probes.mkdir(exist_ok=True)
        # probe: untimed keeps hugebench's probe library out of every timed run (what is timed is the
        # program as deployed); its warm-up runs carry it and say which malloc served (a lead-in, the
        # untimed run a back-to-back run follows, is the program as deployed too)
        run = request.run
        self.probed = command.probe != "untimed" or (
            bool(run.get("warmup")) and not run.get("lead_in")
        )
        self.status = workdir / "measured.status"
        group = container.cgroup if container else None
        self.sampler = CoverageSampler(
            members=container.members if container else None,
            cgroup=group.path if group is not None else None,
        )
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
            probe_dir=self.probes if self.probed else None,
            text_pages=request.text_pages,
            extra_env=extra_env,
        )
        self.env = base_env  # the load driver's: a program of the experiment's, like setup
        # perf's and hb-exec's: a whitelist of the worker's own environment and the run's containment token
        # (which every process of the run carries), nothing of the experiment's
        # (the container adds its token itself)
        self.helper_env = worker_environment(
            {TOKEN: os.environ[TOKEN]} if TOKEN in os.environ and not container else {}
        )
        self.window_end: dict | None = None
        self.warmup_s: float | None = None  # the server's warm-up runs of the load driver, seconds
        self.driver_started = 0.0  # monotonic time the measured driver run started
        self._last_sample = 0.0
        self.ended_at: float | None = (
            None  # monotonic time a program run to its end was seen to end
        )

    def _edge(self, word: str) -> None:
        if word == "disable":
            self.window_end = self.sampler.sample(end=True)

    # -- a program that runs to its end ----------------------------------------------------------------

    def run_program(self, deadline: float) -> tuple[dict, str]:
        with open_streams(self.command, self.workdir, "program", deadline) as streams:
            launched = self._launch(streams)
            ended = self._watch(launched, deadline)
            self.ended_at = time.monotonic()
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

    # -- shared --------------------------------------------------------------------------------------

    def _launch(self, streams: Streams) -> Launched:
        if self.control:
            self.control.start()
        return Launched(
            self.argv,
            self.helper_env,
            self.command.cwd,
            status_path=self.status,
            container=self.container,
            **streams.files(),
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
                f"{what} {how_ended(ended)}",
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
        from hugebench.machine.mallocprobe import read_exits, read_probes, verify

        probes = read_probes(self.probes)
        row = (
            verify(
                self.request.allocator,
                self.request.allocator_path,
                probes,
                self.request.allocator_expect,
                as_is=self.request.allocator_mode == "as-is",
            )
            if self.probed
            else {}  # not probed (a timed run of probe: untimed): its warm-up run said which malloc
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
                "noise.nivcsw": status.get("nivcsw"),
            }
        )  # the program's, not its supervisor's
        row.update(tree_peak_rss(exits, self.sampler.rss_peaks))
        for key in FIELDS:
            row[f"smaps.{key}"] = end.get(key)
        row.update(self.sampler.summary())
        row.update(self.sampler.folio_columns(until=self.ended_at))
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
            from hugebench.machine.treeproof import tree_proof

            row.update(
                tree_proof(self.sampler.mapped, self.sampler.pid_names, self.request.allocator_path)
            )
        return row

    def _thp_state(self, probes: list, exits: dict) -> dict:
        """What THP each measured process got vs the mode the cell asked (hugebench.machine.thpstate)."""
        from hugebench.machine.thpstate import process_states, thp_columns

        asked = (
            "never"
            if self.request.thp_prctl_disable
            else self.request.run.get("system", {}).get(THP_ENABLED)
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
    hugebench.machine.textpages)."""
    from hugebench.machine.textpages import prepare_page_cache

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
