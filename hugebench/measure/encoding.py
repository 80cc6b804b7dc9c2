"""Turn chosen perf events into (label, type, config, config1) for the in-process counters of ``_core``.

``_core`` opens each counter with perf_event_open, so it needs the numeric perf_event_attr fields, not a
name. Generic events map to fixed kernel ABI numbers; vendor events (``dtlb_load_misses.walk_completed``)
are looked up in ``perf list --details`` (which prints e.g. ``cpu/event=0x8,period=0x186a3,umask=0xe/``)
and their terms placed into config bits as /sys/bus/event_source/devices/<pmu>/format/* describes.
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from hugebench import kernel
from hugebench.kernel.host import LOCAL, Host
from hugebench.measure.events import EventChoice

# include/uapi/linux/perf_event.h
PERF_TYPE_HARDWARE, PERF_TYPE_SOFTWARE, PERF_TYPE_HW_CACHE, PERF_TYPE_RAW = 0, 1, 3, 4
_CACHE_DTLB, _CACHE_ITLB = 3, 4
_OP_READ, _RESULT_ACCESS, _RESULT_MISS = 0, 0, 1


def hw_cache_config(cache_id: int, op: int, result: int) -> int:
    """PERF_TYPE_HW_CACHE config: id | (op << 8) | (result << 16)."""
    return cache_id | (op << 8) | (result << 16)


GENERIC_EVENTS: dict[str, tuple[int, int]] = {
    "cycles": (PERF_TYPE_HARDWARE, 0),
    "cpu-cycles": (PERF_TYPE_HARDWARE, 0),
    "instructions": (PERF_TYPE_HARDWARE, 1),
    "dTLB-loads": (PERF_TYPE_HW_CACHE, hw_cache_config(_CACHE_DTLB, _OP_READ, _RESULT_ACCESS)),
    "dTLB-load-misses": (PERF_TYPE_HW_CACHE, hw_cache_config(_CACHE_DTLB, _OP_READ, _RESULT_MISS)),
    "iTLB-loads": (PERF_TYPE_HW_CACHE, hw_cache_config(_CACHE_ITLB, _OP_READ, _RESULT_ACCESS)),
    "iTLB-load-misses": (PERF_TYPE_HW_CACHE, hw_cache_config(_CACHE_ITLB, _OP_READ, _RESULT_MISS)),
    "cpu-clock": (PERF_TYPE_SOFTWARE, 0),
    "task-clock": (PERF_TYPE_SOFTWARE, 1),
    "page-faults": (PERF_TYPE_SOFTWARE, 2),
    "faults": (PERF_TYPE_SOFTWARE, 2),
    "context-switches": (PERF_TYPE_SOFTWARE, 3),
    "cs": (PERF_TYPE_SOFTWARE, 3),
    "cpu-migrations": (PERF_TYPE_SOFTWARE, 4),
    "minor-faults": (PERF_TYPE_SOFTWARE, 5),
    "major-faults": (PERF_TYPE_SOFTWARE, 6),
}

# perf terms that are not config bits: sampling settings and perf-tool-only hints.
_NON_CONFIG_TERMS = {"period", "freq", "name", "percore", "metric-id", "call-graph", "stack-size"}


class EncodingError(ValueError):
    """An event that cannot be expressed as (type, config, config1); the message says why."""


@dataclass(frozen=True)
class CounterSpec:
    """An in-process counter for ``_core``, or the reason a label has none."""

    label: str
    event: str | None
    type: int | None = None
    config: int = 0
    config1: int = 0
    reason: str | None = None
    note: str | None = None

    def as_tuple(self) -> tuple[str, int, int, int]:
        """What ``_core`` counts; only a spec without a reason has it (its type is known)."""
        if self.type is None:
            raise ValueError(f"{self.label}: not encoded ({self.reason})")
        return (self.label, self.type, self.config, self.config1)


def read_pmu_format(pmu: str = "cpu", host: Host = LOCAL) -> dict[str, list[tuple[str, int, int]]]:
    """Bit layout of a PMU's terms (see ``kernel.read_pmu_format``); EncodingError without that PMU."""
    fmt = kernel.read_pmu_format(pmu, host)
    if fmt is None:
        raise EncodingError(
            f"no PMU '{pmu}' in {Path(host.sys, kernel.sysfs.PMU_DIR)} (no hardware PMU driver here)"
        )
    return fmt


def pmu_type(pmu: str = "cpu", host: Host = LOCAL) -> int:
    """perf_event_attr.type of a dynamic PMU; EncodingError without that PMU."""
    kind = kernel.read_pmu_type(pmu, host)
    if kind is None:
        raise EncodingError(
            f"no PMU '{pmu}' ({Path(host.sys, kernel.sysfs.PMU_DIR, pmu, 'type')} missing)"
        )
    return kind


def parse_terms(terms: str) -> dict[str, int]:
    """'event=0x8,period=0x186a3,umask=0xe,edge' -> {'event': 8, 'period': 100003, 'umask': 14, 'edge': 1}."""
    out: dict[str, int] = {}
    for term in filter(None, (t.strip() for t in terms.split(","))):
        name, eq, value = term.partition("=")
        try:
            out[name] = (
                (int(value, 16) if value.lower().startswith("0x") else int(value, 10)) if eq else 1
            )
        except ValueError:
            raise EncodingError(f"term {term!r} has no numeric value") from None
    return out


def encode_terms(
    terms: dict[str, int], fmt: dict[str, list[tuple[str, int, int]]]
) -> dict[str, int]:
    """Place term values into config/config1/config2 bits; a term split over ranges fills them low bits first."""
    configs = {"config": 0, "config1": 0, "config2": 0}
    for name, value in terms.items():
        if name in _NON_CONFIG_TERMS:
            continue
        if name in configs:  # pmu/config=0x1234/ sets the whole word
            configs[name] |= value
            continue
        if name not in fmt:
            raise EncodingError(
                f"term '{name}' is not in this PMU's format ({', '.join(sorted(fmt))})"
            )
        remaining = value
        for field_name, lo, hi in fmt[name]:
            width = hi - lo + 1
            configs[field_name] = configs.get(field_name, 0) | (
                (remaining & ((1 << width) - 1)) << lo
            )
            remaining >>= width
        if remaining:
            raise EncodingError(f"value {value:#x} of term '{name}' does not fit its bits")
    return configs


_PMU_EVENT = re.compile(r"^(?P<pmu>[\w.-]+)/(?P<terms>[^/]*)/$")
_RAW_EVENT = re.compile(r"^r(?P<hex>[0-9a-fA-F]+)$")


def parse_perf_list_details(text: str) -> dict[str, list[tuple[str, str]]]:
    """Map each event name (lower case) to its [(pmu, terms)] encodings in ``perf list --details`` output.

    Handles both the perf 6.x form ``cpu/event=0x8,umask=0xe/`` and the older bare ``event=0x8,umask=0xe``;
    a hybrid CPU lists one encoding per core type (cpu_core, cpu_atom).
    """
    out: dict[str, list[tuple[str, str]]] = {}
    current: str | None = None
    in_description = False
    for line in text.splitlines():
        stripped = line.strip()
        if in_description or stripped.startswith("["):
            in_description = not stripped.endswith("]")
            continue
        match = re.match(r"^(?:(?P<pmu>[\w.-]+)/)?(?P<terms>[\w-]+=[^\s/]+)/?$", stripped)
        if match and current:
            out.setdefault(current, []).append((match["pmu"] or "cpu", match["terms"]))
        elif line.startswith("  ") and stripped and " " not in stripped and "=" not in stripped:
            current = stripped.lower()
        elif not line.startswith(" "):
            current = None
    return out


def _pick_encoding(encodings: list[tuple[str, str]]) -> tuple[str, str, str | None]:
    pmus = [pmu for pmu, _ in encodings]
    for preferred in ("cpu", "cpu_core"):
        if preferred in pmus:
            pmu, terms = encodings[pmus.index(preferred)]
            note = (
                f"hybrid CPU: counts on {pmu} only (also on {', '.join(p for p in pmus if p != pmu)})"
                if len(pmus) > 1
                else None
            )
            return pmu, terms, note
    pmu, terms = encodings[0]
    return pmu, terms, None


def _split_modifiers(event: str) -> tuple[str, str | None]:
    """'cycles:u' -> ('cycles', 'u'); 'cpu/event=0x8/u' -> ('cpu/event=0x8/', 'u'); tracepoints stay whole."""
    pmu_form = re.match(r"^(?P<base>[\w.-]+/[^/]*/):?(?P<mods>[A-Za-z]*)$", event)
    if pmu_form:
        return pmu_form["base"], pmu_form["mods"] or None
    base, colon, mods = event.rpartition(":")
    if colon and re.fullmatch(r"[ukhGHpPSDIWeb]+", mods):
        return base, mods
    return event, None


def encode_event(
    event: str,
    details: dict[str, list[tuple[str, str]]] | None = None,
    host: Host = LOCAL,
) -> tuple[int, int, int, str | None]:
    """Return (type, config, config1, note) for one perf event name, or raise EncodingError with the reason.

    Accepts generic names (``cycles``, ``dTLB-load-misses``), ``rNNNN`` raw codes, ``pmu/term=v,.../`` and
    vendor names found in ``details`` (from ``parse_perf_list_details``). Modifiers such as ``:u`` are not
    part of (type, config, config1); they are dropped with a note.
    """
    base, mods = _split_modifiers(event)
    note = f"modifier ':{mods}' dropped for the in-process counter" if mods else None
    if base in GENERIC_EVENTS:
        kind, config = GENERIC_EVENTS[base]
        return kind, config, 0, note
    raw = _RAW_EVENT.match(base)
    if raw:
        return PERF_TYPE_RAW, int(raw["hex"], 16), 0, note
    pmu_event = _PMU_EVENT.match(base)
    if pmu_event:
        pmu, terms = pmu_event["pmu"], pmu_event["terms"]
    elif details is not None and base.lower() in details:
        pmu, terms, hybrid_note = _pick_encoding(details[base.lower()])
        note = "; ".join(filter(None, (note, hybrid_note))) or None
    else:
        raise EncodingError(
            f"'{base}' is not in perf list --details output, so its raw encoding is unknown"
        )
    configs = encode_terms(parse_terms(terms), read_pmu_format(pmu, host))
    if configs.get("config2"):
        raise EncodingError(f"'{event}' needs config2, which _core does not take")
    return pmu_type(pmu, host), configs["config"], configs["config1"], note


def perf_list_details(events: list[str], perf_bin: str = "perf", timeout: float = 60) -> str:
    """Run ``perf list --details <events...>`` (one call) and return its text ('' when perf fails)."""
    if not events:
        return ""
    try:
        proc = subprocess.run(
            [perf_bin, "list", "--details", *events],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout


def _needs_lookup(event: str) -> bool:
    base, _ = _split_modifiers(event)
    return not (base in GENERIC_EVENTS or _RAW_EVENT.match(base) or _PMU_EVENT.match(base))


def resolve_counters(
    choices: list[EventChoice],
    *,
    perf_bin: str = "perf",
    host: Host = LOCAL,
    details_text: str | None = None,
) -> list[CounterSpec]:
    """One CounterSpec per choice: numeric encoding, or the reason the label cannot be counted in-process."""
    vendor_events = [c.event for c in choices if c.event and _needs_lookup(c.event)]
    if details_text is None:
        details_text = perf_list_details(vendor_events, perf_bin)
    details = parse_perf_list_details(details_text)
    specs = []
    for choice in choices:
        if choice.event is None:
            specs.append(CounterSpec(choice.label, None, reason=choice.reason))
            continue
        try:
            kind, config, config1, note = encode_event(choice.event, details, host)
        except EncodingError as exc:
            specs.append(CounterSpec(choice.label, choice.event, reason=str(exc)))
            continue
        specs.append(CounterSpec(choice.label, choice.event, kind, config, config1, note=note))
    return specs


def counter_specs(choices: list[EventChoice], **kwargs) -> list[tuple[str, int, int, int]]:
    """The ``counters=`` argument for ``_core`` workloads; labels that cannot be encoded are left out
    (``resolve_counters`` gives their reasons)."""
    return [spec.as_tuple() for spec in resolve_counters(choices, **kwargs) if spec.reason is None]
