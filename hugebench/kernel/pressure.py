"""Pressure stall information (PSI): the time some (or all) tasks stalled on cpu, memory or io, from a cgroup
v2 directory's ``<kind>.pressure`` or the machine's ``/proc/pressure/<kind>``.

What belongs here: reading and parsing those files, and finding this process's own cgroup v2 directory.
What does not: what a stall share means for a run (``hugebench.machine.psi``).
"""

from __future__ import annotations

from pathlib import Path

from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.procfs import cgroup_mounts
from hugebench.kernel.read import read_optional

KINDS = ("cpu", "memory", "io")


def parse_pressure(text: str) -> dict[str, int]:
    """``some avg10=... total=N`` / ``full ... total=N`` -> {"some": N, "full": N} (microseconds)."""
    out = {}
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        fields = dict(kv.split("=", 1) for kv in rest.split() if "=" in kv)
        if name in ("some", "full") and fields.get("total", "").isdigit():
            out[name] = int(fields["total"])
    return out


def read_pressure(kind: str, cgroup: Path | None, host: Host = LOCAL) -> dict | None:
    """The stall totals of ``kind`` in ``cgroup`` (a v2 directory), or machine-wide when ``cgroup`` is None;
    None where the kernel has no such file (no PSI, or psi=0 on its command line)."""
    path = cgroup / f"{kind}.pressure" if cgroup else Path(host.proc, "pressure", kind)
    text = read_optional(path)
    return parse_pressure(text) if text else None


def own_cgroup_v2(host: Host = LOCAL) -> Path | None:
    """This process's cgroup v2 directory, or None when it is the hierarchy's root or there is none."""
    mount = cgroup_mounts(host)["v2"]
    for line in (read_optional(Path(host.proc, "self", "cgroup")) or "").splitlines():
        if line.startswith("0::"):
            path = line[3:].strip()
            if mount and path not in ("", "/"):
                return Path(mount, path.lstrip("/"))
    return None
