"""An experiment against the machine that would run it: the checks ``plan`` and ``sweep`` share.

What the file alone decides is checked when it is loaded (``hugebench.experiment``). What depends on this machine
is checked here, by ``hugebench plan`` before it prints and by a sweep's setup (``preflight.prepare_machine``)
before anything runs, so that ``plan`` refuses what ``sweep`` would: kernel knob names and values this
kernel has and accepts (a hugetlb pool that cannot fit its memory too), and text_pages thp while the
machine's THP is 'never'. Runs that cannot fit this machine's memory are not an error (the sweep skips
them with the reason): ``memory_skips`` says which, for both. Read-only: nothing is written anywhere.
"""

from __future__ import annotations

from typing import Any

from hugebench import kernel
from hugebench import knob_catalogue as catalogue
from hugebench.errors import SpecError, SystemStateError
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import THP_ENABLED
from hugebench.yamlsafe import Where, read_text, read_yaml

# Keep this much of MemAvailable free for the page cache, the parent and the kernel.
MEMORY_HEADROOM = 0.9


def check(spec, runs, host: Host = LOCAL) -> None:
    """Raise a SpecError naming file, line and key for what this machine cannot do (see the module)."""
    if spec.cluster:
        return  # its machines check themselves when they prepare
    _check_knobs(spec, host)
    _check_text_thp(spec, runs, host)


def memory_skips(runs, host: Host = LOCAL) -> dict[str, str]:
    """cell id -> why it cannot run here: its memory estimate is above what this machine has available."""
    available = kernel.mem_available(host)
    if available is None:
        return {}
    total = kernel.read_meminfo(host).get("MemTotal") or 0
    skips = {}
    for run in runs:
        need = run.memory_estimate
        if need and need > available * MEMORY_HEADROOM:
            have = (
                "which is more than this machine's memory (MemTotal)"
                if total and need > total
                else f"but only {available / 2**30:.1f} GiB is available (MemAvailable)"
            )
            skips[run.cell_id] = (
                f"needs about {need / 2**30:.1f} GiB, {have}; run it on a larger machine or "
                "shrink the cell"
            )
    return skips


def _where(spec) -> Where:
    """The file's key lines, read again (the spec keeps values, not lines); none for a spec without a file."""
    try:
        _, lines = read_yaml(read_text(spec.source), spec.source)
    except (SpecError, OSError):
        lines = {}
    return Where(spec.source, lines)


def _key(where: Where, section: str, name: str) -> tuple:
    """The file's own spelling of a canonical knob name (``thp`` for ``thp.enabled``, any alias)."""
    for spelled in catalogue.spellings(name):
        if (section, spelled) in where.lines:
            return section, spelled
    return section, name


def _check_knobs(spec, host: Host) -> None:
    from hugebench.system.knobs import discover_knobs, resolve_name

    settings: list[tuple[str, str, int | None, Any]]  # (section, knob, axis index, value)
    settings = [("system", name, None, value) for name, value in spec.system.items()]
    settings += [
        ("axes", name, i, value)
        for name, values in spec.axes.items()
        if catalogue.is_knob(name)
        for i, value in enumerate(values)
    ]
    if not settings:
        return
    knobs = discover_knobs(host)
    for section, name, index, value in settings:
        try:
            knobs[resolve_name(name, knobs)].validate(value)
        except SystemStateError as exc:
            where = _where(spec)
            key = _key(where, section, name) + (() if index is None else (index,))
            raise where.error(key, f"{exc} (this kernel, {host.sys})") from None


def _check_text_thp(spec, runs, host: Host) -> None:
    if not any(r.text_pages == "thp" and THP_ENABLED not in r.system for r in runs):
        return
    try:
        mode = kernel.thp_modes(host).get("enabled")
    except (OSError, ValueError):
        return  # no THP here: the sweep's text check says so
    if mode == "never":
        where = _where(spec)
        raise where.error(
            ("axes", "text_pages"),
            f"text_pages thp needs THP 'madvise' or 'always', and this "
            f"machine's is 'never' ({host.sys}): set it for the sweep "
            "with system: {thp: madvise}",
        )
