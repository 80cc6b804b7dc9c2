"""How to run a configuration ``try`` recommends outside hugebench: deploy lines, least invasive first.

1. **This program only** (``per-process``): the allocator's environment (``LD_PRELOAD`` and its knobs) on the
   program's command line, and the THP mode where a process can have it by itself: ``never`` by
   ``prctl(PR_SET_THP_DISABLE)`` (any kernel), ``madvise`` on a machine set to ``always`` by Linux 6.18's
   ``PR_THP_DISABLE_EXCEPT_ADVISED``; ``hugebench exec --thp MODE --`` is the launcher that does it.
2. **A systemd service** (``systemd``): ``Environment=`` (systemd.exec(5)); ``MemoryTHP=`` only where this
   machine's systemd has it (version 260 and later).
3. **The whole machine** (``machine-wide``): the THP sysfs write, shown with what else it changes; offered
   after a per-process way, or alone where there is none (no process can raise THP above the machine's mode).
   A configuration measured with free page reporting held off (regime ``warm``) gets that write too, as a
   line it needs (``required``): its runs had it, a deployment without it would not be what was measured.

Each line is a plain shell command a test runs (tests/trial/test_try_deploy.py).
"""

from __future__ import annotations

import functools
import re
import shlex
from collections.abc import Mapping

from hugebench._util import run_text
from hugebench.knob_catalogue import MTHP_PREFIX, REPORTING_DIR, THP_DIR, sys_path
from hugebench.machine import allocators as alloc_mod
from hugebench.trial.verdict_types import Deploy, DeployLine

THP_PATH = sys_path(f"{THP_DIR}/enabled")
MTHP_PATH = sys_path(f"{THP_DIR}/hugepages-{{size}}/enabled")  # size: '64kB'
SYSTEMD_MEMORY_THP = (
    260  # systemd.exec(5) MemoryTHP= (disable | madvise | system | inherit) from this version
)
# What a machine-wide THP mode changes besides the program (said beside the sysfs line).
AFFECTS = {
    "always": "every process on this machine that has not opted out gets THP on all its anonymous "
    "memory: more memory for sparse heaps, khugepaged collapsing in the background, possible "
    "compaction stalls on faults (defrag)",
    "madvise": "every process on this machine gets THP only where it madvises: programs that "
    "relied on 'always' lose their huge pages",
    "never": "no process on this machine gets THP, even those that madvise for it",
}
REPORTING_PATH = sys_path(f"{REPORTING_DIR}/page_reporting_order")
AFFECTS_REPORTING = (
    "the host no longer takes back this guest's free memory (free page reporting held off for the whole "
    "machine: every free block stays with this VM); undo: echo {found} > " + REPORTING_PATH
)
AFFECTS_MTHP = (
    "every process on this machine: a size set 'always' backs all its anonymous memory where a folio of "
    "that size fits, a size set 'never' none of it, even where the process madvises"
)


def command_of(spec) -> list[str]:
    """The measured program's command line as the experiment gives it (a server's when there is one)."""
    params = getattr(spec, "params", None) or {}
    server = params.get("server")
    return [str(a) for a in (server["argv"] if server else params.get("argv") or [])]


def deploy(
    cell: Mapping,
    spec,
    thp_found: str,
    text_library: str | None = None,
    per_process_thp: dict | None = None,
    systemd_version: int | None = None,
    linked: str | None = None,
    mthp_found: dict | None = None,
) -> Deploy:
    """The deploy lines of ``cell`` (``lines``: per-process first, machine-wide last), and the same parts
    by name (``env``, ``shell``, ``thp``, ``thp_per_process``, ``systemd``, ``sysfs``). ``linked``: the
    allocator the program links (glibc settings then preload libc, as their runs did). ``mthp_found``: the
    multi-size THP settings as found (``{'thp.mthp.64kB': 'inherit', ...}``); a cell that changes them gets
    their sysfs writes, which only the whole machine can have (no process sets its own folio sizes)."""
    env = environment(cell, spec, text_library, linked)
    sizes = mthp_writes(cell, mthp_found or {})
    mode = cell["thp"]
    changes_thp = mode != thp_found
    per_process_thp = process_thp_support() if per_process_thp is None else per_process_thp
    launcher = _launcher(mode, thp_found, per_process_thp) if changes_thp else None
    command = command_of(spec)
    lines = []
    if env or launcher:
        lines.append(
            DeployLine(
                scope="per-process",
                shell=_shell(env, launcher, command),
                affects="this program and the processes it starts, nothing else",
            )
        )
    systemd = _systemd(
        env, mode if changes_thp else None, systemd_version, bool(launcher) or not changes_thp
    )
    if systemd:
        lines.append(
            DeployLine(
                scope="systemd", shell=systemd, affects="that service only (systemctl edit SERVICE)"
            )
        )
    machine = f"echo {mode} > {THP_PATH}" if changes_thp else None
    if machine:
        lines.append(DeployLine(scope="machine-wide", shell=machine, affects=AFFECTS[mode]))
    held = reporting_write(cell)
    if held:
        lines.append(
            DeployLine(
                scope="machine-wide",
                shell=f"echo {held[1]} > {held[0]}",
                affects=AFFECTS_REPORTING.format(found=held[2]),
                required=True,  # the runs had it: no per-process way to keep the host's hands off
            )
        )
    if sizes:
        lines.append(
            DeployLine(
                scope="machine-wide",
                shell=" && ".join(f"echo {v} > {path}" for path, v in sizes),
                affects=AFFECTS_MTHP,
                required=True,  # not an alternative to a line above: no other way to get these sizes
            )
        )
    return Deploy(
        lines=tuple(lines),
        env=env,
        shell=" ".join(f"{k}={shlex.quote(v)}" for k, v in env.items()) or None,
        thp=(
            f"{machine}   (as root; at boot: systemd-tmpfiles line 'w {THP_PATH} - - - - {mode}'); "
            f"also changes: {AFFECTS[mode]}"
            if machine
            else None
        ),
        thp_per_process=_per_process_text(mode, thp_found, launcher) if changes_thp else None,
        systemd=systemd,
        sysfs=tuple(
            [{"path": THP_PATH, "value": mode}] * bool(machine)
            + [{"path": path, "value": v} for path, v in sizes]
            + ([{"path": held[0], "value": held[1]}] if held else [])
        ),
    )


def reporting_write(cell: Mapping, host=None) -> tuple[str, str, str] | None:
    """(sysfs path, value, the value as found) holding free page reporting off, for a cell whose regime
    held it off for its runs (``warm``); None for every other cell."""
    from hugebench.kernel import reporting
    from hugebench.kernel.host import LOCAL
    from hugebench.system.regime import holds_reporting

    if not cell.get("regime") or not holds_reporting(cell["regime"]):
        return None
    host = host or LOCAL
    top = reporting.buddy_orders(host) or 11  # above the largest order: nothing is reported
    found = reporting.page_reporting(host).get("order")
    return REPORTING_PATH, str(top), str(found if found is not None else reporting.HUGE_ORDER)


def mthp_writes(cell: Mapping, found: dict) -> list[tuple[str, str]]:
    """(sysfs path, value) for each multi-size THP setting of ``cell`` that differs from ``found``,
    smallest size first."""
    changed = [
        (k.rsplit(".", 1)[1], v)
        for k, v in cell.items()
        if k.startswith(MTHP_PREFIX) and found.get(k) != v
    ]
    changed.sort(key=lambda kv: int(kv[0][:-2]))
    return [(MTHP_PATH.format(size=size), v) for size, v in changed]


def environment(cell: Mapping, spec, text_library: str | None, linked: str | None = None) -> dict:
    """The variables the program needs: the allocator's (LD_PRELOAD, knobs) and the text library's. glibc
    forced over a linked allocator preloads libc itself, as the run did."""
    alloc = alloc_mod.registry(spec.allocators)[cell["allocator"]]
    env = {} if alloc.mode == "as-is" else dict(alloc.environment())
    if alloc.mode == "malloc" and alloc.library is None and linked:
        env["LD_PRELOAD"] = alloc_mod.glibc_path() or "libc.so.6"
    if cell.get("text_pages") == "thp" and text_library:
        env["LD_PRELOAD"] = ":".join(p for p in (env.get("LD_PRELOAD"), text_library) if p)
        env["HB_TEXT_PAGES"] = "thp"
    return env


def _launcher(mode: str, found: str, supported: dict) -> str | None:
    """``hugebench exec --thp MODE --`` where a process can have ``mode`` by itself, else None."""
    if mode == "never" and supported.get("never"):
        return "hugebench exec --thp never --"
    if mode == "madvise" and found == "always" and supported.get("madvise"):
        return "hugebench exec --thp madvise --"
    return None


def _shell(env: dict, launcher: str | None, command: list[str]) -> str:
    words = [f"{k}={shlex.quote(v)}" for k, v in env.items()]
    if launcher:
        words.append(launcher)
    return " ".join(words + [shlex.join(command) if command else "PROGRAM ARGS..."])


def _per_process_text(mode: str, found: str, launcher: str | None) -> str:
    if launcher:
        return (
            f"{launcher} PROGRAM (prctl PR_SET_THP_DISABLE"
            + (", PR_THP_DISABLE_EXCEPT_ADVISED" if mode == "madvise" else "")
            + "; kept across exec, inherited by children; no root needed)"
        )
    if mode == "madvise" and found == "always":
        return "none on this kernel: PR_THP_DISABLE_EXCEPT_ADVISED needs Linux 6.18"
    return (
        "none raises THP above the machine's mode; under 'madvise' an allocator that madvises its heap "
        "(jemalloc-thp, glibc-hugetlb) gets huge pages for that process alone"
    )


def _systemd(env: dict, mode: str | None, version: int | None, per_process: bool) -> str | None:
    """A [Service] drop-in: Environment= for the variables; MemoryTHP= where this systemd has it (a
    per-process THP policy, so only where the kernel takes it)."""
    version = systemd_version() if version is None else version
    lines = []
    if env:
        lines.append("Environment=" + " ".join(f'"{k}={v}"' for k, v in env.items()))
    memory_thp = {"never": "disable", "madvise": "madvise"}.get(mode or "")
    if memory_thp and per_process and version and version >= SYSTEMD_MEMORY_THP:
        lines.append(f"MemoryTHP={memory_thp}")
    return "[Service]\n" + "\n".join(lines) if lines else None


@functools.cache
def systemd_version() -> int | None:
    """This machine's systemd version (``systemctl --version``), or None."""
    out = run_text(["systemctl", "--version"], timeout=10) or ""
    found = re.match(r"systemd (\d+)", out)
    return int(found.group(1)) if found else None


@functools.cache
def process_thp_support() -> dict:
    """Which THP policies a process can set for itself on this kernel (hugebench exec --thp)."""
    from hugebench.system import process_thp_supported

    return {mode: process_thp_supported(mode) for mode in ("never", "madvise")}
