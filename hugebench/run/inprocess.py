"""A `command` run supervised from the sweep's own process: no worker process per run (issue 42).

A `command` run's worker runs no workload code: it only supervises the user's program (``run.supervisor``),
which is a process of its own anyway. Starting a Python interpreter per run for that cost 0.3-0.4 s here
(its imports alone 0.27 s, numpy 0.1 s), against 1 ms for hyperfine. :func:`supervise` calls the same
supervisor in the sweep's process instead, with what the worker had: the environment a worker would get
(``worker_environment``), the run's directory as the program's ``.`` and every process it starts (setup,
program, server, load driver) put into the run's cgroup before exec and carrying its token
(``Launched(container=...)``). The guarantees stay the worker's:

* a crashing or hanging program is a process of its own: its end, its timeout (the whole cgroup killed)
  and its leftovers are the supervisor's, as in a worker; whatever the supervisor raises becomes the reply a
  worker would have written (``rundir.failure_reply``), its traceback in the run's stderr.txt;
* the reply goes through JSON like a worker's, so a row holds the same values either way;
* the sweep's process is not in the run's cgroup: the run's cgroup accounting is the program's alone, and
  killing the run never kills the sweep.

What stays in a worker: the built-in workloads (``_core`` runs in the measured process: a crashing
workload must not take the sweep down), other runners (``codetlb``), and a run that must turn THP off for
itself by prctl (``thp_prctl_disable``: without root, the worker disables it for itself and its program).
"""

from __future__ import annotations

import json
import os
import time
import traceback

from hugebench.machine.environment import worker_environment
from hugebench.machine.launch import tail
from hugebench.run.request import WorkerRequest
from hugebench.run.rows import reply_row
from hugebench.run.rundir import RunDir, failure_reply
from hugebench.system.containment import RunContainer

SUPERVISOR = "hugebench.run.supervisor:run"  # the runner a `command` run's worker calls


def applies(run, request: WorkerRequest) -> bool:
    """Whether ``run`` is supervised from the sweep's process (see the module header)."""
    return run.workload_def.runner == SUPERVISOR and not request.thp_prctl_disable


def supervise(request: WorkerRequest, rundir: RunDir, container: RunContainer) -> dict:
    """The row fields of one command run supervised here, as a worker's end and reply would give them:
    ``wall_s`` (the supervisor's wall time), ``launcher``, the CPU time of the supervisor and of the
    processes it started (``supervisor.*``) and the reply's measurements or failure."""
    from hugebench.run import supervisor

    env = worker_environment({})
    started, cpu = time.perf_counter(), os.times()
    try:
        reply = {"status": "ok", "row": supervisor.run(request, rundir.path, env, container)}
    except Exception as exc:  # the worker's rule: the reply carries the failure
        if getattr(exc, "output", None) is None:  # a program's own failure is its output
            with open(rundir.stderr, "a") as err:
                traceback.print_exc(file=err)
        reply = failure_reply(exc)
    used = os.times()
    fields = {
        "wall_s": time.perf_counter() - started,
        "exit_code": 0 if reply["status"] == "ok" else 1,
        "stderr_tail": tail(rundir.stderr),
        "launcher": "sweep",
        "supervisor.utime_s": used.user - cpu.user,
        "supervisor.stime_s": used.system - cpu.system,
        # every process the run started, reaped (perf, hb-exec and the program's tree below them)
        "supervisor.children_utime_s": used.children_user - cpu.children_user,
        "supervisor.children_stime_s": used.children_system - cpu.children_system,
    }
    # through JSON as a worker's reply goes: the same values (lists, not tuples; str of the unknown)
    reply = json.loads(json.dumps(reply, default=str))
    fields.update(reply_row(reply, {"exit_code": 0}))
    return fields
