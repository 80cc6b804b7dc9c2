"""A run's row, made in one place: :func:`base_row` (who the run is; every row starts from it),
:func:`failure` (the fields that say how a run failed: every failed, crashed, timed-out, OOM-killed,
skipped or disturbed run is marked by it) and :func:`failed_row` (both at once, for a run that never
started), and :func:`reply_fields` (a worker's reply turned into row fields, or into a failure), :func:`oom_verdict`
(a failure caused by the OOM killer is ``oom``).

The store checks rows when it appends them (``hugebench.store``); the names a row may hold and the rule that
keeps a user's names off hugebench's are ``hugebench.columns``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path

from hugebench.columns import SCHEMA_VERSION, add_user_columns, clashes
from hugebench.run.rundir import read_reply
from hugebench.store.rows import STATUSES
from hugebench.system.memlimit import describe

FAILURES = tuple(s for s in STATUSES if s != "ok")
WORKER_FAILURES = (
    "failed",
    "crashed",
    "timeout",
)  # what a worker's reply may say of its run; else "failed"


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def base_row(run, sweep_id: str) -> dict:
    """The identifying columns every row has, success or failure (status ``ok`` until a failure says not)."""
    row = {
        "schema_version": SCHEMA_VERSION,
        "run_id": run.run_id,
        "cell_id": run.cell_id,
        "sweep_id": sweep_id,
        "experiment": run.experiment,
        "workload": run.workload,
        "repetition": run.repetition,
        "order_index": run.order_index,
        "warmup": run.warmup,
        "lead_in": getattr(run, "lead_in", False),
        "status": "ok",
        "error": None,
        "stderr_tail": None,
        "started_at": now(),
        "wall_s": None,
    }
    row["allocator"] = run.allocator  # also when the file has no allocator axis
    add_user_columns(row, {k: v for k, v in run.cell.items() if k != "allocator"}, "axis")
    row.update({f"param.{k}": v for k, v in run.params.items()})
    return row


def failure(status: str, error: str, **fields) -> dict:
    """The fields that mark a run as not ``ok``: its status (one of :data:`FAILURES`), the reason, and
    whatever else describes the end (``signal``, ``stdout_tail``, ``host`` ...)."""
    if status not in FAILURES:
        raise ValueError(f"{status!r} is not a failure status ({', '.join(FAILURES)})")
    return {"status": status, "error": error, **fields}


def failed_row(run, sweep_id: str, status: str, error: str, **fields) -> dict:
    """The row of a run that did not run or whose result was lost (skipped, a refused knob, a cluster task)."""
    row = base_row(run, sweep_id)
    row.update(failure(status, error, **fields))
    return row


def oom_verdict(fields: dict, vmstat_oom_kills: int) -> dict:
    """A failed run during which the OOM killer killed is ``oom``, not ``crashed``. Where the run has a cgroup
    with memory accounting its own count (``memory.events`` oom_kill) decides: any failure of a run that lost a
    process to the OOM killer (the worker, the program or any descendant, whatever the program then exited
    with). Elsewhere ``/proc/vmstat`` oom_kill (the kernel's and any cgroup's kills, machine-wide) during the
    run, and only for a process of the run killed by SIGKILL (the worker, or the program: the worker's reply
    names the signal). ``fields`` gains ``oom_kills`` either way."""
    own = fields.get("cgroup.oom_kills")
    if own is not None:
        kills, source = own, "its cgroup's memory.events oom_kill"
        hit = fields.get("status") in ("crashed", "failed") and kills > 0
    else:
        kills, source = vmstat_oom_kills, "/proc/vmstat oom_kill"
        hit = fields.get("status") == "crashed" and fields.get("signal") == "SIGKILL" and kills > 0
    limit = fields.get("memory_limit.oom_kills")
    if limit is not None:  # the run's own memory limit: its cgroup's count decides
        kills, source = (
            limit,
            f"the limit's cgroup v{fields.get('memory_limit.cgroup_version')} oom_kill",
        )
        hit = fields.get("status") in ("crashed", "failed") and kills > 0
    fields["oom_kills"] = kills
    if hit:
        under = (
            f"oom-killed under {fields['memory_limit.knob']}="
            f"{describe(fields['memory_limit_bytes'])}"
            if limit is not None
            else "killed by the OOM killer"
        )
        fields.update(
            failure(
                "oom",
                f"{under} ({source} rose by {kills} during the run; {fields.get('error')})",
            )
        )
    return fields


def measured_apart(fields: dict, cell: Mapping) -> dict:
    """A measurement named like one of the cell's axes (a workload reports what it did: ``lookups``, ``threads``)
    never replaces the axis value the run was planned with, which names its cell: where the two differ, the
    measurement is kept as ``result.<name>`` (``lookups: [0]`` means one lookup per key; 1000000 were done)."""
    out = dict(fields)
    for name, value in cell.items():
        if name in out and out[name] != value:
            out[f"result.{name}"] = out.pop(name)
    return out


def reply_fields(path: str | Path, fields: dict) -> dict:
    """The worker's reply at ``path`` as row fields, given ``fields`` (the end of the worker process): its
    measurements, or the failure it reports, or a failure when there is no usable reply."""
    if fields.get("status"):
        return {}
    return reply_row(read_reply(path), fields)


def reply_row(reply: dict | None, fields: dict) -> dict:
    """A reply (None: there was none) as row fields, given ``fields`` (how its process ended)."""
    if reply is None:
        return failure(
            "failed", f"worker exited with code {fields.get('exit_code')} without a reply"
        )
    if reply.get("status") != "ok":
        status = str(reply["status"]) if reply.get("status") in WORKER_FAILURES else "failed"
        return failure(
            status,
            str(reply.get("error") or "worker reported failure"),
            stdout_tail=reply.get("output_tail"),
            signal=reply.get("signal"),
        )
    out = dict(reply["row"])
    clash = clashes(out)
    if clash:  # names are checked at load; a reply that would rewrite who the run is, or how it ended, is a bug
        return failure(
            "failed",
            f"the worker's reply would replace the row's own column(s) {', '.join(clash)}; "
            "nothing of it was kept",
        )
    if fields.get("exit_code"):
        out.update(failure("failed", f"worker replied but exited with code {fields['exit_code']}"))
    return out
