"""Run one `command` cell: the user's program (or server + load driver) as the measured process.

The supervisor runs no workload code itself and is not under the allocator: it runs in the sweep's
process (``run.inprocess``), or in a worker process where a run needs one. It starts ``[perf stat] hb-exec [allocator's LD_PRELOAD + probe] -- program``, samples the
program tree's huge-page coverage while it runs, marks the timed window (the whole process, the program's
own enable/disable markers, or the load driver's run), proves from the probe library which malloc each
process of the program really used, and turns all of it into one flat row.
"""

from __future__ import annotations

import os
import time
from dataclasses import replace
from pathlib import Path

from hugebench import kernel
from hugebench.machine.launch import Launched, tail
from hugebench.run.command_spec import Command, CommandFailed, how_ended
from hugebench.run.measured import Measured
from hugebench.run.served import Served
from hugebench.system.containment import RunContainer
from hugebench.workloads.command.metric import WINDOW_COLUMN, extract_all
from hugebench.workloads.command.streams import output_tail

__all__ = ["Command", "CommandFailed", "run"]


def run(
    request, workdir: Path, env: dict | None = None, container: RunContainer | None = None
) -> dict:
    """The row of one command run (raises CommandFailed when there is no measurement).

    In a worker: ``workdir`` is its working directory, ``env`` its environment and its run's containment
    its own. In the sweep's process (``run.inprocess``): ``env`` is the environment a worker would have had
    and every process is started into ``container``."""
    tmp = workdir / "tmp"
    tmp.mkdir(exist_ok=True)
    command = Command.from_params(request.run["params"], tmp)
    command = replace(command, cwd=os.path.join(workdir, command.cwd))  # "." is the run's directory
    deadline = time.monotonic() + float(
        request.run["timeout"]
    )  # the orchestrator allows the worker more
    base_env = {**(os.environ if env is None else env), **command.env}
    if command.setup:
        _run_setup(command.setup, command.cwd, base_env, workdir, deadline, container)
    command = command.resolved(base_env)
    kind = Served if command.server else Measured
    measured = kind(request, command, workdir, base_env, container)
    vm_before = kernel.read_vmstat()
    if isinstance(measured, Served):
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
    _metrics_into(row, getattr(measured, "metrics_found", None), command, output)
    row["stdout_tail"] = output_tail(output)
    return row


def _metrics_into(row: dict, found: dict | None, command: Command, output: str) -> None:
    """Every metric's value (or its ``.reason``) into the row: without the judged one the run failed; another
    that could not be read is absent with its reason. ``found``: already read (a soak's medians)."""
    if found is None:
        found = extract_all(command.metrics, output, row.get(WINDOW_COLUMN), command.cwd)
    for i, (column, (value, why)) in enumerate(found.items()):
        row[column] = value
        if why:
            row[f"{column}.reason"] = why
            if i == 0:
                raise CommandFailed(why, output=output)


def _run_setup(setup: list, cwd: str, env: dict, workdir: Path, deadline: float, container) -> None:
    out = workdir / "setup.out"
    ended = Launched(setup, env, cwd, stdout=out, container=container).wait(
        max(1.0, deadline - time.monotonic())
    )
    if ended.timed_out or ended.code != 0:
        how = "ran past the run's timeout" if ended.timed_out else how_ended(ended)
        raise CommandFailed(
            f"setup command {setup[0]!r} {how}; nothing was measured", output=tail(out)
        )
