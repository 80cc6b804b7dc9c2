"""Privileges: before a sweep starts, every knob exists, every value is allowed, and we may write what differs.

Without root one change is still possible: THP 'never' for the worker process alone, via
prctl(PR_SET_THP_DISABLE), which the worker calls on itself.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

from hugebench import kernel
from hugebench import knob_catalogue as catalogue
from hugebench.errors import PrivilegeError, SystemStateError
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import THP_ENABLED
from hugebench.system.knobs import Knob, discover_knobs, resolve_name

PR_SET_THP_DISABLE = 41
PR_GET_THP_DISABLE = 42


def _describe(name: str, value: str) -> str:
    if name == THP_ENABLED:
        return f"THP mode {value!r}"
    if catalogue.family(name) == "hugetlb":
        return f"a {name.split('.')[1]} hugetlb pool of {value} pages"
    return f"{name}={value!r}"


def sudo_hugebench() -> str:
    """How to name this hugebench after ``sudo``: a venv's script by its path (sudo's secure_path holds no
    venv, so ``sudo hugebench`` would not find it), relative when under the current directory."""
    script = Path(sys.prefix, "bin", "hugebench")
    if sys.prefix == sys.base_prefix or not script.exists():
        return "hugebench"
    here = Path.cwd()
    return (
        str(script.relative_to(here))
        if here != Path("/") and script.is_relative_to(here)
        else str(script)
    )


def _privilege_error(changes: list[tuple[Knob, str]], rerun: str) -> PrivilegeError:
    what = ", ".join(_describe(k.name, v) for k, v in changes)
    verb = "needs" if len(changes) == 1 else "need"
    commands = "\n".join(f"  echo {v} | sudo tee {k.path}" for k, v in changes)
    return PrivilegeError(
        f"{what} {verb} root: run `sudo {rerun}`, or set it yourself:\n{commands}"
    )


def check_privileges(
    settings_list: Iterable[Mapping[str, str | int]],
    host: Host = LOCAL,
    euid: int | None = None,
    *,
    allow_prctl_never: bool = False,
    rerun: str = "hugebench sweep FILE",
) -> dict[str, str]:
    """Check every settings dict the sweep will apply; raise before anything runs.

    Returns the settings that will be done per process by prctl instead of sysfs: {'thp.enabled': 'never'}
    when allow_prctl_never is set, we are not root and some cell asks for it; else {}.
    The orchestrator must then not pass those to SystemState.apply but have the worker call
    disable_thp_for_this_process().
    """
    euid = os.geteuid() if euid is None else euid
    knobs = discover_knobs(host)
    current = {}
    changes: dict[str, tuple[Knob, str]] = {}
    by_prctl: dict[str, str] = {}
    for settings in settings_list:
        for raw_name, raw_value in settings.items():
            knob = knobs[resolve_name(raw_name, knobs)]
            value = knob.validate(raw_value)
            if knob.name not in current:
                current[knob.name] = knob.read()
            if value == current[knob.name]:
                continue
            if euid != 0 and allow_prctl_never and knob.name == THP_ENABLED and value == "never":
                by_prctl[knob.name] = value
                continue
            changes.setdefault(f"{knob.name}={value}", (knob, value))
    if changes and euid != 0:
        raise _privilege_error(list(changes.values()), rerun)
    read_only = [k for k, _ in changes.values() if not kernel.writable(k.path)]
    if read_only:
        paths = ", ".join(str(k.path) for k in read_only)
        raise SystemStateError(
            f"{paths} not writable even as root (read-only /sys in a container?)"
        )
    return by_prctl


def _prctl(option: int, arg2: int = 0, arg3: int = 0) -> int:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.restype = ctypes.c_int
    zero = ctypes.c_ulong(0)
    # Unused arguments must be 0: since 6.18, arg3 of PR_SET_THP_DISABLE carries flags.
    return libc.prctl(ctypes.c_int(option), ctypes.c_ulong(arg2), ctypes.c_ulong(arg3), zero, zero)


PR_THP_DISABLE_EXCEPT_ADVISED = (
    2  # Linux 6.18: arg3 of PR_SET_THP_DISABLE; PR_GET_THP_DISABLE then says 3
)
# A process's THP policy by prctl, as `hugebench exec --thp` names it: (arg2, arg3) to set, what GET answers.
PROCESS_THP = {
    "never": (1, 0, 1),
    "madvise": (1, PR_THP_DISABLE_EXCEPT_ADVISED, 3),
    "system": (0, 0, 0),
}


def set_process_thp(mode: str) -> None:
    """This process's (and its later children's) THP policy by prctl: 'never' (THP off, any kernel since
    3.15), 'madvise' (THP only where the program madvises, Linux 6.18's PR_THP_DISABLE_EXCEPT_ADVISED) or
    'system' (the machine's mode). Raises SystemStateError when the kernel refuses it or does not confirm it."""
    arg2, arg3, expected = PROCESS_THP[mode]
    if _prctl(PR_SET_THP_DISABLE, arg2, arg3) != 0:
        err = ctypes.get_errno()
        hint = " (PR_THP_DISABLE_EXCEPT_ADVISED needs Linux 6.18 or later)" if arg3 else ""
        raise SystemStateError(
            f"prctl(PR_SET_THP_DISABLE, {arg2}, {arg3}) failed: {os.strerror(err)}{hint}"
        )
    if _prctl(PR_GET_THP_DISABLE) != expected:
        raise SystemStateError(f"THP {mode!r} for this process did not take (PR_GET_THP_DISABLE)")


def process_thp_supported(mode: str) -> bool:
    """The kernel takes ``mode`` for a process (tried on this one and put back; only when it has no policy)."""
    if mode == "never" or mode == "system":
        return True
    if _prctl(PR_GET_THP_DISABLE) != 0:
        return False  # this process already has a policy; do not disturb it
    arg2, arg3, _ = PROCESS_THP[mode]
    ok = _prctl(PR_SET_THP_DISABLE, arg2, arg3) == 0
    _prctl(PR_SET_THP_DISABLE, 0, 0)
    return ok


def disable_thp_for_this_process() -> bool:
    """THP off for this process and its children (no root needed). True when the kernel confirms it."""
    if _prctl(PR_SET_THP_DISABLE, 1) != 0:
        return False
    return _prctl(PR_GET_THP_DISABLE) == 1


PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """Ask the kernel to SIGKILL this process when its parent dies (for a child between fork and exec:
    a worker must never outlive the sweep that started it, even one killed with -9)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
