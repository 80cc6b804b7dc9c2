"""Which counter answers which question on this CPU: stable labels mapped to per-vendor perf event names.

A label (``stlb_misses``) is a column name that means the same thing in every sweep; the event behind it
depends on the CPU. Each label lists candidates in order of preference; the first one that ``perf stat``
accepts on this machine wins, and a label with no usable candidate is kept with the reason. Candidates for
several generations can share one list because perf only knows the event names of the CPU it runs on.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from hugebench.kernel import CpuInfo

# What each event counts, so a reader of the results knows that Intel's and AMD's "dTLB misses" differ.
EVENT_MEANING = {
    "cycles": "core cycles (unhalted)",
    "instructions": "instructions retired",
    "dTLB-load-misses": "kernel's generic dTLB read-miss event: on Intel = completed load page walks, "
    "on AMD = L1 dTLB misses (including L2 TLB hits)",
    "iTLB-load-misses": "kernel's generic iTLB miss event (vendor mapping differs)",
    "dtlb_load_misses.miss_causes_a_walk": "loads missing all TLB levels and starting a page walk (incl. speculative)",
    "dtlb_load_misses.walk_completed": "load page walks that completed, any page size (incl. speculative)",
    "mem_inst_retired.stlb_miss_loads": "retired loads that missed the STLB",
    "itlb_misses.walk_completed": "code page walks that completed, any page size",
    "itlb_misses.walk_completed_4k": "code page walks that completed to a 4 KiB page (text on small pages)",
    "frontend_retired.itlb_miss": "retired instructions whose fetch missed the iTLB (precise)",
    "bp_l1_tlb_miss_l2_tlb_miss.if4k": "instruction fetches missing L1 and L2 iTLB, to a 4 KiB page",
    "dtlb_load_misses.walk_active": "cycles with at least one load page walk in progress",
    "dtlb_load_misses.walk_duration": "cycles the page miss handler was busy with load walks",
    "ls_l1_d_tlb_miss.all": "L1 dTLB misses, all page sizes (L2 TLB hits and misses)",
    "ls_l1_d_tlb_miss.all_l2_miss": "L1 dTLB misses that also missed the L2 TLB (page walks)",
    "bp_l1_tlb_miss_l2_tlb_miss": "instruction fetches missing L1 and L2 iTLB (page walks)",
    "bp_l1_tlb_miss_l2_tlb_miss.all": "instruction fetches missing L1 and L2 iTLB (page walks)",
    "bp_l1_tlb_miss_l2_miss": "instruction fetches missing L1 and L2 iTLB (page walks, Zen1 name)",
    "task-clock": "CPU time of the task, ns",
    "page-faults": "page faults (minor + major)",
    "minor-faults": "page faults served without I/O",
    "major-faults": "page faults that needed I/O",
    "context-switches": "context switches",
    "cpu-migrations": "migrations between CPUs",
}

SOFTWARE_LABELS = {
    "task_clock": "task-clock",
    "page_faults": "page-faults",
    "minor_faults": "minor-faults",
    "major_faults": "major-faults",
    "context_switches": "context-switches",
    "cpu_migrations": "cpu-migrations",
}

_NO_AMD_WALK_CYCLES = (
    "AMD Zen exposes no page-walk cycle event (ls_tablewalker.* counts walks, not cycles), "
    "so walk_cycles_share cannot be computed"
)

# label -> candidates, most preferred first. An empty tuple names a label the vendor cannot measure.
HARDWARE_PROFILES: dict[str, dict[str, tuple[str, ...]]] = {
    "intel": {
        "cycles": ("cycles",),
        "instructions": ("instructions",),
        "dtlb_load_misses": (
            "dtlb_load_misses.miss_causes_a_walk",
            "dtlb_load_misses.walk_completed",
            "dTLB-load-misses",
        ),
        "stlb_misses": ("dtlb_load_misses.walk_completed", "mem_inst_retired.stlb_miss_loads"),
        "itlb_misses": ("itlb_misses.walk_completed", "iTLB-load-misses"),
        "itlb_misses_4k": ("itlb_misses.walk_completed_4k",),
        "itlb_frontend_misses": ("frontend_retired.itlb_miss",),
        "walk_cycles": ("dtlb_load_misses.walk_active", "dtlb_load_misses.walk_duration"),
    },
    "amd": {
        "cycles": ("cycles",),
        "instructions": ("instructions",),
        "dtlb_load_misses": ("ls_l1_d_tlb_miss.all", "dTLB-load-misses"),
        "stlb_misses": ("ls_l1_d_tlb_miss.all_l2_miss",),
        "itlb_misses": (
            "bp_l1_tlb_miss_l2_tlb_miss",
            "bp_l1_tlb_miss_l2_tlb_miss.all",
            "bp_l1_tlb_miss_l2_miss",
            "iTLB-load-misses",
        ),
        "itlb_misses_4k": ("bp_l1_tlb_miss_l2_tlb_miss.if4k",),
        "itlb_frontend_misses": (),
        "walk_cycles": (),
    },
    "other": {
        "cycles": ("cycles",),
        "instructions": ("instructions",),
        "dtlb_load_misses": ("dTLB-load-misses",),
        "stlb_misses": (),
        "itlb_misses": ("iTLB-load-misses",),
        "itlb_misses_4k": (),
        "itlb_frontend_misses": (),
        "walk_cycles": (),
    },
}
_EMPTY_REASONS = {
    ("amd", "walk_cycles"): _NO_AMD_WALK_CYCLES,
    ("other", "stlb_misses"): "no generic perf event for second-level TLB misses on this vendor",
    ("other", "walk_cycles"): "no generic perf event for page-walk cycles on this vendor",
    ("other", "itlb_misses_4k"): "no generic perf event for iTLB walks by page size on this vendor",
    (
        "other",
        "itlb_frontend_misses",
    ): "no generic perf event for retired iTLB-missing fetches on this vendor",
    (
        "amd",
        "itlb_frontend_misses",
    ): "AMD has no retired-instruction iTLB-miss event; see itlb_misses(_4k)",
}


@dataclass(frozen=True)
class EventChoice:
    """One column label and the perf event that measures it here, or why nothing does."""

    label: str
    event: str | None
    candidates: tuple[str, ...] = ()
    reason: str | None = None

    @property
    def meaning(self) -> str:
        return EVENT_MEANING.get(self.event or "", "")


def _supported_lookup(supported) -> dict[str, str]:
    return {name.lower(): name for name in supported}


def _choose(
    label: str, candidates: tuple[str, ...], found: dict[str, str], why_none: str
) -> EventChoice:
    for event in candidates:
        if event.lower() in found:
            return EventChoice(label, event, candidates)
    return EventChoice(label, None, candidates, why_none)


def override_pairs(override) -> list[tuple[str, str]]:
    """Normalise a YAML override (event names, {label: event} mappings, or a mix) to (label, event) pairs."""
    items = override.items() if isinstance(override, dict) else None
    pairs: list[tuple[str, str]] = []
    for item in [dict(items)] if items is not None else override:
        if isinstance(item, dict):
            pairs.extend((str(k), str(v)) for k, v in item.items())
        elif isinstance(item, str):
            pairs.append((label_for_event(item), item))
        else:
            raise ValueError(
                f"perf event override entries must be names or {{label: event}}, got {item!r}"
            )
    return pairs


def label_for_event(event: str) -> str:
    """A column-safe label for a raw event name: 'cpu/event=0x08,umask=0x0e/' -> 'cpu_event_0x08_umask_0x0e'."""
    return re.sub(r"[^0-9a-z]+", "_", event.lower()).strip("_")


def choose_events(
    cpu: CpuInfo, supported, override=None, pmu_reason: str | None = None
) -> list[EventChoice]:
    """Map every label to the first candidate this machine supports.

    ``supported``: event names ``perf stat`` accepted, or the ``PerfCapabilities`` of ``perf.detect()``
    (whose ``pmu_reason`` then fills in ``pmu_reason``, and which probes override events it has not seen:
    the only case where this function runs perf). ``override`` replaces the
    hardware labels (software labels are always kept: they are cheap and the fault metrics need them).
    ``pmu_reason`` (e.g. "KVM guest without vPMU") makes the reason of unsupported hardware labels specific.
    """
    if hasattr(
        supported, "supported"
    ):  # a PerfCapabilities: probe override events detect() did not see
        if override:
            supported = supported.including([event for _, event in override_pairs(override)])
        pmu_reason = pmu_reason or supported.pmu_reason
        probe_reasons = dict(supported.unsupported)
        supported = supported.supported
    else:
        probe_reasons = {}
    found = _supported_lookup(supported)
    not_here = f"not supported here: {pmu_reason}" if pmu_reason else None
    choices: list[EventChoice] = []
    if override:
        for label, event in override_pairs(override):
            why = (
                f"{event}: {probe_reasons[event]}"
                if event in probe_reasons
                else (not_here or f"{event} not supported here (perf stat probe)")
            )
            choices.append(_choose(label, (event,), found, why))
    else:
        vendor = cpu.vendor if cpu.vendor in HARDWARE_PROFILES else "other"
        for label, candidates in HARDWARE_PROFILES[vendor].items():
            if not candidates:
                choices.append(
                    EventChoice(
                        label, None, (), _EMPTY_REASONS.get((vendor, label), "no event known")
                    )
                )
                continue
            why = not_here or f"none of {', '.join(candidates)} is supported here (perf stat probe)"
            choices.append(_choose(label, candidates, found, why))
    for label, event in SOFTWARE_LABELS.items():
        why = (
            f"{event}: {probe_reasons[event]}"
            if event in probe_reasons
            else f"{event} not supported here (perf stat probe)"
        )
        choices.append(_choose(label, (event,), found, why))
    return choices


def candidate_events(cpu: CpuInfo, override=None) -> list[str]:
    """Every event name ``choose_events`` could pick, in order and without duplicates: what to probe once."""
    names: list[str] = []
    if override:
        names.extend(event for _, event in override_pairs(override))
    else:
        vendor = cpu.vendor if cpu.vendor in HARDWARE_PROFILES else "other"
        for candidates in HARDWARE_PROFILES[vendor].values():
            names.extend(candidates)
    names.extend(SOFTWARE_LABELS.values())
    return list(dict.fromkeys(names))


def chosen_events(choices: list[EventChoice]) -> list[str]:
    """The distinct events to pass to perf stat (two labels may share one event)."""
    return list(dict.fromkeys(c.event for c in choices if c.event))
