"""The perf tool: what this machine can count, the ``perf stat`` wrapper argv, and its CSV output.

``detect()`` runs once per sweep: perf's path and version (or why it is missing), perf_event_paranoid,
which candidate events ``perf stat`` accepts (one batched probe), and whether a hardware PMU exists at all.
``parse_perf_csv()`` reads ``perf stat -x,`` output (perf-stat(1), "CSV FORMAT"): optional interval time
stamp, optional CPU/socket id and CPU count, then value, unit, event, [variance%,] run time, % running,
metric value, metric unit. Values perf prints are already scaled for multiplexing; we keep the running
percentage beside them so a reader can see the estimate.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from hugebench._util import run_text
from hugebench.kernel import CpuInfo, cpu_pmu_devices, read_cpu_info, read_paranoid
from hugebench.kernel.host import LOCAL, Host
from hugebench.measure.counters import (
    NOT_COUNTED_REASON,
    Counter,
    counting_scope,
    derive,
    pmu_columns,
    row_columns,
)
from hugebench.measure.encoding import CounterSpec, counter_specs, resolve_counters
from hugebench.measure.events import EventChoice, candidate_events, choose_events

# The one import a caller needs: detection, the wrapper, parsing, labels, encodings and row columns.
__all__ = [
    "PerfCapabilities",
    "detect",
    "probe_events",
    "perf_version",
    "hypervisor_vendor",
    "cpu_pmu_devices",
    "perf_stat_argv",
    "parse_perf_csv",
    "by_label",
    "perf_columns",
    "user_space_only",
    "Counter",
    "NOT_COUNTED_REASON",
    "counting_scope",
    "no_permission_reason",
    "CpuInfo",
    "EventChoice",
    "read_cpu_info",
    "candidate_events",
    "choose_events",
    "CounterSpec",
    "resolve_counters",
    "counter_specs",
    "row_columns",
    "pmu_columns",
    "derive",
]

PERF_PACKAGE_HINT = "apt-get install linux-perf (Debian) or linux-tools-$(uname -r) (Ubuntu)"


@dataclass(frozen=True)
class PerfCapabilities:
    """What perf can measure on this machine, found once per sweep."""

    perf_path: str | None
    perf_version: str | None
    missing_reason: str | None
    paranoid: int | None
    supported: frozenset = field(default_factory=frozenset)
    unsupported: tuple = ()  # ((event, reason), ...)
    pmu_available: bool = False
    pmu_reason: str | None = None
    hypervisor: str | None = None
    cpu_pmus: tuple = ()
    scope: str | None = (
        None  # "user" (perf counts user space only here), "user+kernel", None: nothing counted
    )

    @property
    def available(self) -> bool:
        """perf itself runs (hardware counters may still be missing: see ``pmu_available``)."""
        return self.perf_path is not None and self.missing_reason is None

    @property
    def path(self) -> str | None:
        return self.perf_path

    def reason_for(self, event: str) -> str | None:
        return dict(self.unsupported).get(event)

    def including(self, events: list[str]) -> PerfCapabilities:
        """These capabilities with ``events`` probed too (a YAML override names events detect() never saw)."""
        known = self.supported | {event for event, _ in self.unsupported}
        new = [event for event in dict.fromkeys(events) if event not in known]
        if not new:
            return self
        more_supported: set[str]
        more_reasons: dict[str, str]
        if self.perf_path is None or not self.available:
            more_supported, more_reasons = (
                set(),
                {event: self.missing_reason or "perf missing" for event in new},
            )
        else:
            more_supported, more_reasons = probe_events(self.perf_path, new, paranoid=self.paranoid)
        unsupported = tuple(sorted({**dict(self.unsupported), **more_reasons}.items()))
        return replace(
            self, supported=self.supported | frozenset(more_supported), unsupported=unsupported
        )

    def to_dict(self) -> dict:
        return {
            "perf_path": self.perf_path,
            "perf_version": self.perf_version,
            "missing_reason": self.missing_reason,
            "paranoid": self.paranoid,
            "supported": sorted(self.supported),
            "unsupported": dict(self.unsupported),
            "pmu_available": self.pmu_available,
            "pmu_reason": self.pmu_reason,
            "hypervisor": self.hypervisor,
            "cpu_pmus": list(self.cpu_pmus),
            "scope": self.scope,
        }


def hypervisor_vendor(cpu: CpuInfo, lscpu_text: str | None = None) -> str | None:
    """'KVM', 'VMware', ... inside a VM (lscpu reads CPUID leaf 0x40000000), 'unknown hypervisor', or None."""
    if not cpu.hypervisor:
        return None
    if lscpu_text is None:
        lscpu_text = run_text(["lscpu"]) or ""
    match = re.search(r"^Hypervisor vendor:\s*(.+)$", lscpu_text, re.MULTILINE)
    return match.group(1).strip() if match else "unknown hypervisor"


def perf_version(perf_bin: str = "perf") -> tuple[str | None, str | None, str | None]:
    """(path, version, missing_reason). Debian's wrapper fails when no perf matches the running kernel."""
    path = shutil.which(perf_bin)
    if path is None:
        return None, None, f"perf not found on PATH; install it: {PERF_PACKAGE_HINT}"
    try:
        proc = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return path, None, f"{path} --version failed: {exc}"
    match = re.search(r"perf version (\S+)", proc.stdout)
    if proc.returncode != 0 or not match:
        first = (proc.stderr or proc.stdout).strip().splitlines()[:1]
        return (
            path,
            None,
            f"{path} does not run ({first[0] if first else 'no output'}); {PERF_PACKAGE_HINT}",
        )
    return path, match.group(1), None


def perf_stat_argv(
    perf_bin: str, events: list[str], out_path: str | Path, extra: Sequence[str] = ()
) -> list[str]:
    """``perf stat`` prefix that writes CSV counts of ``events`` to ``out_path``; append the command to it.
    ``extra`` options go before the command (e.g. ``--control fifo:CTL,ACK -D -1``).

    Run it with LC_ALL=C (or at least LC_NUMERIC=C): perf prints decimals in the locale's format.
    """
    if not events:
        raise ValueError(
            "perf stat needs at least one event (without -e it would pick its own defaults)"
        )
    return [
        perf_bin,
        "stat",
        "-x,",
        "--no-big-num",
        "-o",
        str(out_path),
        "-e",
        ",".join(events),
        *extra,
        "--",
    ]


def probe_events(
    perf_bin: str, events: list[str], *, paranoid: int | None = None
) -> tuple[set[str], dict[str, str]]:
    """Which events ``perf stat`` can count here: (supported, {event: reason}).

    One batched ``perf stat -x, -e a,b,c true``; an unknown name makes perf reject the whole list, so only
    then each event is tried alone to tell which one it was. ``paranoid`` (perf_event_paranoid) goes into
    the reason when perf is not allowed to count at all for this user.
    """
    supported, reasons, _ = _probe(perf_bin, events, paranoid)
    return supported, reasons


def _probe(
    perf_bin: str, events: list[str], paranoid: int | None
) -> tuple[set[str], dict[str, str], str | None]:
    """probe_events, plus the scope perf counted in (``counting_scope``), None when nothing counted."""
    ok, counters, error = _stat_true(perf_bin, events, paranoid)
    if not ok and len(events) == 1:
        return set(), {events[0]: error}, None
    supported: set[str] = set()
    reasons: dict[str, str] = {}
    if not ok:
        scopes = set()
        for event in events:
            one_supported, one_reasons, one_scope = _probe(perf_bin, [event], paranoid)
            supported |= one_supported
            reasons.update(one_reasons)
            scopes.add(one_scope)
        return (
            supported,
            reasons,
            "user" if "user" in scopes else ("user+kernel" if supported else None),
        )
    for event in events:
        counter = _lookup(counters, event)
        if counter is None:
            reasons[event] = "missing from perf stat output"
        elif counter.value is None and counter.reason != NOT_COUNTED_REASON:
            reasons[event] = (
                counter.reason or "no value"
            )  # (a Counter without a value has a reason)
        else:
            supported.add(event)
    return supported, reasons, counting_scope(counters.values())


_NO_PERMISSION = (
    "No permission",
    "not have permission",
    "Access to performance monitoring",
    "perf_event_paranoid",
)


def no_permission_reason(paranoid: int | None) -> str:
    """Why perf counts nothing for this user: the kernel's perf_event_paranoid, and the fix."""
    level = "unknown" if paranoid is None else str(paranoid)
    return (
        f"no permission to count as uid {os.geteuid()}: kernel.perf_event_paranoid={level} (user-space counts "
        f"need <= 2, kernel counts <= 1, or root/CAP_PERFMON: `sudo sysctl kernel.perf_event_paranoid=2`)"
    )


def _stat_true(
    perf_bin: str, events: list[str], paranoid: int | None = None
) -> tuple[bool, dict, str]:
    with tempfile.TemporaryDirectory(prefix="hb-perf-probe-") as tmp:
        out = Path(tmp) / "stat.csv"
        argv = perf_stat_argv(perf_bin, events, out) + ["true"]
        try:
            proc = subprocess.run(
                argv,
                capture_output=True,
                text=True,
                timeout=60,
                check=False,
                env={**os.environ, "LC_ALL": "C"},
            )
        except (OSError, subprocess.TimeoutExpired) as exc:
            return False, {}, f"perf stat failed: {exc}"
        text = out.read_text() if out.exists() else ""
    if proc.returncode != 0:
        lines = [
            ln.strip() for ln in proc.stderr.splitlines() if ln.strip() and ln.strip() != "Error:"
        ]
        why = (
            "no such event for this CPU in this perf (event syntax error)"
            if "syntax error" in proc.stderr
            else no_permission_reason(paranoid)
            if any(m in proc.stderr for m in _NO_PERMISSION)
            else (lines[0] if lines else f"perf stat exited {proc.returncode}")
        )
        return False, {}, why
    return True, parse_perf_csv(text), ""


def _pmu_verdict(
    supported: set[str],
    reasons: dict[str, str],
    hypervisor: str | None,
    cpu_pmus: tuple,
    perf_ok: bool,
) -> tuple[bool, str | None]:
    if perf_ok and "cycles" in supported:
        return True, None
    if hypervisor and not cpu_pmus:
        return False, f"{hypervisor} guest without vPMU"
    if not cpu_pmus:
        return False, "no CPU PMU driver (/sys/bus/event_source/devices/cpu missing)"
    if not perf_ok:
        return True, "perf missing; a CPU PMU driver is registered, so in-process counters may work"
    return False, f"cycles not countable: {reasons.get('cycles', 'not probed')}"


def detect(
    perf_bin: str = "perf",
    candidates: list[str] | None = None,
    *,
    cpu: CpuInfo | None = None,
    host: Host = LOCAL,
) -> PerfCapabilities:
    """Find what perf can count here. ``candidates`` defaults to every event the CPU's profile could use."""
    cpu = cpu or read_cpu_info(host)
    path, version, missing = perf_version(perf_bin)
    events = list(dict.fromkeys(["cycles", *(candidates or candidate_events(cpu))]))
    supported: set[str] = set()
    scope, paranoid = None, read_paranoid(host)
    if missing is None and path is not None:  # (perf_version gives a path when nothing is missing)
        supported, reasons, scope = _probe(path, events, paranoid)
    else:
        reasons = {event: missing or "perf missing" for event in events}
    hypervisor = hypervisor_vendor(cpu)
    cpu_pmus = cpu_pmu_devices(host)
    pmu_ok, pmu_reason = _pmu_verdict(supported, reasons, hypervisor, cpu_pmus, missing is None)
    return PerfCapabilities(
        path,
        version,
        missing,
        paranoid,
        frozenset(supported),
        tuple(sorted(reasons.items())),
        pmu_ok,
        pmu_reason,
        hypervisor,
        cpu_pmus,
        scope,
    )


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _rejoin_pmu_events(fields: list[str], sep: str) -> list[str]:
    """Glue back event names perf printed with the separator inside, e.g. 'cpu/event=0x8,umask=0xe/'."""
    out: list[str] = []
    i = 0
    while i < len(fields):
        merged = None
        if re.match(r"^[\w.-]+/", fields[i]) and fields[i].count("/") % 2:
            for j in range(i + 1, len(fields)):
                candidate = sep.join(fields[i : j + 1])
                if re.match(r"^[\w.-]+/[^/]*/[A-Za-z:]*$", candidate):
                    merged, i = candidate, j + 1
                    break
        if merged is None:
            merged, i = fields[i], i + 1
        out.append(merged)
    return out


def _is_value(text: str) -> bool:
    return text in ("<not supported>", "<not counted>") or _float(text) is not None


def _value_index(fields: list[str]) -> int | None:
    """Where the counter value sits after the optional time stamp / CPU id / CPU count columns."""
    for i in range(min(4, len(fields) - 2)):
        value, unit, event = fields[i], fields[i + 1], fields[i + 2]
        if _is_value(value) and not _is_value(unit) and event and not _is_value(event):
            return i
    return None


def _parse_row(fields: list[str]) -> tuple[str, Counter] | None:
    i = _value_index(fields)
    if i is None:
        return None
    raw_value, unit, event = fields[i], fields[i + 1], fields[i + 2]
    rest = fields[i + 3 :]
    variance = None
    if rest and rest[0].endswith("%"):  # -r N: perf 6.x prints the variance right after the event
        variance, rest = _float(rest[0][:-1]), rest[1:]
    pct = _float(rest[1]) if len(rest) > 1 else None
    user_only = user_space_only(event)
    if raw_value == "<not supported>":
        return event, Counter(None, unit, pct, reason="not supported (perf stat: <not supported>)")
    if raw_value == "<not counted>":
        return event, Counter(None, unit, pct, reason=NOT_COUNTED_REASON)
    value = float(raw_value)
    if unit == "msec":
        value, unit = value * 1e6, "ns"
    multiplexed = pct is not None and pct < 100.0
    return event, Counter(value, unit, pct, multiplexed, None, variance, user_only=user_only)


_MODIFIERS = re.compile(r"[ukhGHpPSDIWeb]+")


def user_space_only(event: str) -> bool:
    """Whether perf printed ``event`` as counted in user space only: a ``u`` modifier, asked for or added by
    perf itself when perf_event_paranoid forbids this user the kernel's share ('task-clock:u',
    'cycles:ppu', 'cpu/event=0x8/u')."""
    pmu_form = re.fullmatch(r"[\w.-]+/[^/]*/:?(?P<mods>[A-Za-z]*)", event)
    if pmu_form:
        mods = pmu_form["mods"]
    else:
        _, sep, mods = event.rpartition(":")
        if not sep or not _MODIFIERS.fullmatch(mods):
            return False
    return mods.endswith("u") and "k" not in mods


def _as_user_only(event: str) -> str:
    """The name perf prints for ``event`` when it counts user space only: 'cycles' -> 'cycles:u',
    'cycles:pp' -> 'cycles:ppu', 'cpu/event=0x8/' -> 'cpu/event=0x8/u'."""
    if re.fullmatch(r"[\w.-]+/[^/]*/[A-Za-z]*", event):
        return event + "u"
    base, sep, mods = event.rpartition(":")
    return event + "u" if sep and _MODIFIERS.fullmatch(mods) else event + ":u"


def _merge(a: Counter, b: Counter) -> Counter:
    """Rows of one event from several CPUs, intervals or hybrid core types add up."""
    if b.value is None:
        return replace(a, variance_pct=None, rows=a.rows + 1)
    if a.value is None:
        return replace(b, reason=None, variance_pct=None, rows=a.rows + 1)
    pcts = [p for p in (a.running_pct, b.running_pct) if p is not None]
    return Counter(
        a.value + b.value,
        a.unit,
        min(pcts) if pcts else None,
        a.multiplexed or b.multiplexed,
        None,
        None,
        a.rows + 1,
        a.user_only or b.user_only,
    )


def _plain_name(event: str) -> str:
    """'cpu_core/cycles/' -> 'cycles', 'cpu_core/cycles/u' -> 'cycles:u' (hybrid PMU prefix); raw
    'cpu/event=0x8/' stays as it is."""
    match = re.fullmatch(r"cpu(?:_core|_atom)?/([^=/]+)/([A-Za-z]*)", event)
    if not match:
        return event
    return f"{match.group(1)}:{match.group(2)}" if match.group(2) else match.group(1)


def parse_perf_csv(
    text: str, choices: list[EventChoice] | None = None, sep: str = ","
) -> dict[str, Counter]:
    """Parse ``perf stat -x<sep>`` output into {event: Counter}, or {label: Counter} when given choices.

    With ``choices``, every label appears: unsupported ones carry the choice's reason, and an event perf
    did not print gets "missing from perf output".
    """
    by_event: dict[str, Counter] = {}
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parsed = _parse_row(_rejoin_pmu_events([f.strip() for f in line.split(sep)], sep))
        if parsed is None:
            continue
        event, counter = _plain_name(parsed[0]), parsed[1]
        by_event[event] = _merge(by_event[event], counter) if event in by_event else counter
    return by_event if choices is None else by_label(choices, by_event)


def by_label(choices: list[EventChoice], by_event: dict[str, Counter]) -> dict[str, Counter]:
    """Re-key parsed counters by column label, keeping a reason for each label that has no value."""
    out: dict[str, Counter] = {}
    for choice in choices:
        if choice.event is None:
            out[choice.label] = Counter(None, reason=choice.reason)
            continue
        counter = _lookup(by_event, choice.event)
        out[choice.label] = counter or Counter(
            None, reason=f"{choice.event} missing from perf output"
        )
    return out


def _lookup(by_event: dict[str, Counter], event: str) -> Counter | None:
    """The parsed counter of ``event`` as asked for, case aside: perf prints the name it was given, or with
    its own ``u`` appended when it may count user space only ('task-clock' comes back as 'task-clock:u')."""
    names = (event, _as_user_only(event))
    for name in names:
        if name in by_event:
            return by_event[name]
    lower = {name.lower(): c for name, c in by_event.items()}
    return next((lower[n.lower()] for n in names if n.lower() in lower), None)


def perf_columns(text: str | None, choices) -> dict:
    """The ``perf.*`` row columns of one run from its ``perf stat`` output (None: perf wrote none), every
    label with its value or reason, and ``perf_scope`` (user-space only or not, see ``counting_scope``)."""
    choices = list(choices)
    if text is None:
        if any(c.event for c in choices):
            return {
                **{f"perf.{c.label}.reason": "perf stat wrote no output" for c in choices},
                "perf_scope": None,
            }
        text = ""  # nothing was asked of perf: every label keeps the reason it has none
    return row_columns("perf", by_label(choices, parse_perf_csv(text)))
