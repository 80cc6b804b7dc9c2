"""What THP each measured process really got, against the mode its cell asked for.

A program can turn THP off for itself: ``prctl(PR_SET_THP_DISABLE, 1, 0)`` disables it completely (redis
7.x does this when the system mode is ``always``, unless started with ``--disable-thp no``), and Linux 6.18's
``prctl(PR_SET_THP_DISABLE, 1, PR_THP_DISABLE_EXCEPT_ADVISED)`` keeps it only where the program madvises
(``THP always`` then acts as ``madvise`` for that process). Children inherit both across fork and exec.

Two witnesses, both recorded per process: the sampler reads ``/proc/PID/status`` ``THP_enabled`` while the
program runs (0 only for the complete disable: the kernel shows no other flag to another process), and the
probe library asks ``PR_GET_THP_DISABLE`` inside each process at load and at ``exit()`` (0, 1, or 3 for
except-advised; a process ending by ``_exit`` or a signal leaves no exit record). This module turns them into
the row's ``thp.*`` columns; a cell whose asked mode a process overrode gets ``thp.overridden`` true and the
reason, and the report and ``try``'s verdict say so instead of calling it by the mode it asked.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

# PR_GET_THP_DISABLE's answer (prctl(2)): bit 0 THP disabled, bit 1 except where advised.
PRCTL_DISABLED, PRCTL_EXCEPT_ADVISED = 1, 3
STATES = (
    "enabled",
    "except-advised",
    "disabled",
)  # in the order of how much of THP a process loses


def process_states(
    sampled: Mapping[int, bool], probes: list[dict], exits: Mapping[int, dict]
) -> dict[int, str]:
    """pid -> 'enabled' | 'except-advised' | 'disabled': the least THP any witness saw the process have."""
    states: dict[int, str] = {}

    def worse(pid: int, state: str) -> None:
        old = states.get(pid, "enabled")
        states[pid] = max(old, state, key=STATES.index)

    for pid, enabled in sampled.items():
        worse(int(pid), "enabled" if enabled else "disabled")
    for record in [*probes, *exits.values()]:
        witness, flags = record.get("pid"), record.get("thp_disable")
        if not isinstance(witness, int) or not isinstance(flags, int):
            continue
        state = (
            "disabled"
            if flags == PRCTL_DISABLED
            else "except-advised"
            if flags == PRCTL_EXCEPT_ADVISED
            else "enabled"
        )
        worse(witness, state)
    return states


def overrides(asked: str | None, state: str) -> bool:
    """A process in ``state`` did not get the THP mode ``asked``: disabled under 'always' or 'madvise',
    except-advised under 'always' (under 'madvise' except-advised changes nothing)."""
    if asked == "always":
        return state != "enabled"
    if asked == "madvise":
        return state == "disabled"
    return False


def thp_columns(
    asked: str | None,
    states: Mapping[int, str],
    exes: Mapping[int, str],
    inherited: bool = False,
) -> dict:
    """The row's ``thp.*`` columns: ``thp.asked`` (the system mode the cell ran under), ``thp.process_enabled``
    (every measured process had THP as the system gives it), ``thp.process_state`` (each state and its
    processes), ``thp.overridden`` (a process did not get the asked mode) with ``thp.overridden.why``.
    ``inherited``: hugebench's own process already had THP disabled (the processes inherited it)."""
    if not states:
        return {
            "thp.asked": asked,
            "thp.process_enabled": None,
            "thp.process_enabled.reason": "no process of the program was sampled or left a probe record",
        }
    by_state: dict[str, list[str]] = {}
    for pid, state in sorted(states.items()):
        name = os.path.basename(str(exes.get(pid) or "?"))
        by_state.setdefault(state, []).append(f"{name} ({pid})")
    out = {
        "thp.asked": asked,
        "thp.process_enabled": set(by_state) == {"enabled"},
        "thp.process_state": "; ".join(
            f"{state}: {', '.join(names[:4])}{' ...' if len(names) > 4 else ''}"
            for state, names in by_state.items()
        ),
        "thp.overridden": False,
    }
    hit = {pid: state for pid, state in states.items() if overrides(asked, state)}
    if hit:
        pid, state = next(iter(sorted(hit.items())))
        name = os.path.basename(str(exes.get(pid) or "?"))
        how = (
            "THP disabled (prctl PR_SET_THP_DISABLE)"
            if state == "disabled"
            else "THP only where advised (prctl PR_THP_DISABLE_EXCEPT_ADVISED)"
        )
        who = (
            "inherited from hugebench's own process"
            if inherited
            else "set by the program for itself"
        )
        out["thp.overridden"] = True
        out["thp.overridden.why"] = (
            f"THP {asked!r} was asked, but {name} (pid {pid}) ran with {how}, {who}"
            + (f"; {len(hit) - 1} more process(es) too" if len(hit) > 1 else "")
        )
    return out
