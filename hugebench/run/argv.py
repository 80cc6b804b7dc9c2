"""The measured process's command line, built in one place: ``[perf stat -o perf.csv] hb-exec STATUS VARS --
program``, with the variables of the measured process only (the allocator's, the probe's, the text
library's and any the caller adds), so that perf and hb-exec never run under the allocator under test.

Used for the worker of a built-in workload (``run.execute``) and for the program a ``command`` run's worker
supervises (``run.supervisor``); both write perf's counts and the text reports into the run
directory, where the sweep reads them (``run.rundir``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence

from hugebench.machine.environment import launch_argv, measured_environment
from hugebench.measure.perf import perf_stat_argv
from hugebench.run.rundir import RunDir


def measured_argv(
    program: Sequence[str],
    alloc_env: Mapping[str, str],
    rundir: RunDir,
    *,
    status: str | os.PathLike | None = None,
    perf_bin: str | None = None,
    perf_events: Sequence = (),
    perf_extra: Sequence[str] = (),
    probe_dir: str | os.PathLike | None = None,
    text_pages: str | None = None,
    extra_env: Mapping[str, str] | None = None,
) -> list[str]:
    """``program`` launched by hb-exec (its end recorded in ``status``, default the run directory's) under
    ``alloc_env`` plus the probe and text libraries, with ``extra_env`` last; wrapped in ``perf stat`` writing
    to the run directory's perf.csv when ``perf_bin`` and ``perf_events`` are given."""
    env = measured_environment(
        alloc_env, probe_dir=probe_dir, text_pages=text_pages, text_dir=rundir.text
    )
    env.update(extra_env or {})
    argv = launch_argv(program, env, status or rundir.status)
    if perf_bin and perf_events:
        argv = (
            perf_stat_argv(perf_bin, list(perf_events), str(rundir.perf), list(perf_extra)) + argv
        )
    return argv
