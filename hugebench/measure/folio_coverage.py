"""Per-size coverage of a process tree: the share of its resident anonymous memory in folios of each size
(4 KiB, each mTHP size, 2 MiB), with the coverage-gap explainer of the same reading.

One reading walks each process's smaps (mappings, ``THPeligible``, ``VmFlags``) and, as root, its pagemap and
the kpageflags of its frames (``kernel.folios``). Without root the sizes are unknown (``folio.reason`` says
why) and the gap is split by mapping from smaps alone (``gap.basis: smaps``).

Columns (documented in the column reference): ``folio_share.<N>kB`` (share 0-1 of resident anonymous bytes
in folios of that size), ``folio_bytes.<N>kB``, ``folio.anon_bytes``, ``folio.anonhuge_bytes`` (smaps'
AnonHugePages of the same reading: the cross-check of ``folio_bytes.2048kB``, which also counts PTE-mapped
2 MiB folios), ``folio.read_s``; per process (the tree's largest, by name and pid, each with its own
sizes) ``folio.by_process`` and ``folio.processes``; time-weighted over the samples ``folio_share_tw.<N>kB``; and the gap's.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from hugebench import kernel
from hugebench.kernel.folios import PAGE, VmaFolios, read_folio_orders
from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.smaps import read_smaps, thread_stack_pointers
from hugebench.measure.coverage_gap import Gap, explain
from hugebench.measure.coverage_gap import columns as gap_columns
from hugebench.measure.phases import time_weighted

TOP_PROCESSES = 4  # processes named in folio.by_process


def size_name(order: int) -> str:
    return f"{(PAGE << order) // 1024}kB"


@dataclass
class FolioReading:
    """One reading of a process tree: anonymous bytes by folio order, the gap, and how it was read."""

    by_order: dict[int, int] = field(default_factory=dict)
    anon_huge: int = 0
    gap: Gap = field(default_factory=Gap)
    basis: str = "pagemap"
    reason: str | None = None
    read_s: float = 0.0
    processes: int = 0
    per_process: list[tuple[int, str, dict[int, int]]] = field(
        default_factory=list
    )  # pid, name, by order

    @property
    def anon(self) -> int:
        return sum(self.by_order.values())

    def shares(self) -> dict[int, float]:
        total = self.anon
        return {o: b / total for o, b in self.by_order.items()} if total else {}


def read_process(pid: int, host: Host = LOCAL, reading: FolioReading | None = None):
    """Adds one process to ``reading`` (a new one when None) and returns it; OSError when it is gone."""
    reading = reading or FolioReading()
    vmas = read_smaps(pid, host)
    anon = [v for v in vmas if v.fields.get("Anonymous")]
    folios = None
    if reading.basis == "pagemap":
        try:
            counts = read_folio_orders(pid, [(v.start, v.end) for v in anon], host)
            by_vma = dict(zip((id(v) for v in anon), counts, strict=True))
            folios = [by_vma.get(id(v)) or VmaFolios() for v in vmas]
        except PermissionError as exc:
            reading.basis, reading.reason = "smaps", f"folio sizes need root: {exc}"
    thp = kernel.process_thp_enabled(pid, host)
    gap = explain(vmas, folios, thp, thread_stack_pointers(pid, host), pid)
    reading.gap = reading.gap.merged(gap)
    reading.anon_huge += sum(v.fields.get("AnonHugePages", 0) for v in vmas)
    mine: dict[int, int] = {}
    for vma_folios in folios or ():
        for order, size in vma_folios.by_order.items():
            mine[order] = mine.get(order, 0) + size
            reading.by_order[order] = reading.by_order.get(order, 0) + size
    reading.per_process.append((pid, kernel.process_comm(pid, host) or "?", mine))
    reading.processes += 1
    return reading


def by_process(reading: FolioReading, limit: int = TOP_PROCESSES) -> str | None:
    """The tree's largest processes by resident anonymous memory, each with its own folio sizes:
    ``name (pid): N MiB anon, 2048kB 91%, 4kB 9%`` joined by ``; `` (a tree's sum can hide that the server
    is on huge pages and its driver is not)."""
    ranked = sorted(reading.per_process, key=lambda p: -sum(p[2].values()))
    parts = []
    for pid, name, orders in ranked[:limit]:
        anon = sum(orders.values())
        if not anon:
            continue
        sizes = sorted(orders.items(), key=lambda x: -x[1])
        shares = ", ".join(f"{size_name(o)} {b / anon:.0%}" for o, b in sizes if b / anon >= 0.005)
        parts.append(f"{name} ({pid}): {anon / (1 << 20):.1f} MiB anon, {shares}")
    return "; ".join(parts) or None


def read_tree(pids: list[int], host: Host = LOCAL) -> FolioReading:
    """One reading of every process in ``pids`` (those gone by the time they are read are skipped)."""
    started = time.perf_counter()
    reading = FolioReading()
    for pid in pids:
        try:
            read_process(pid, host, reading)
        except OSError as exc:
            if reading.processes == 0 and pid == pids[0] and not isinstance(exc, FileNotFoundError):
                reading.reason = reading.reason or f"pid {pid}: {exc.strerror or exc}"
            continue
    if reading.basis == "smaps":
        reading.by_order = {}
    reading.read_s = time.perf_counter() - started
    return reading


def columns(reading: FolioReading | None, offered_kb: list[int], why: str | None = None) -> dict:
    """The end-of-window columns of a reading (every offered size present, 0 where none was seen)."""
    if reading is None:
        return {"folio.reason": why or "no per-size reading was taken"}
    out: dict = {"folio.basis": reading.basis, "folio.read_s": round(reading.read_s, 6)}
    out["gap.basis"] = reading.basis
    out.update(gap_columns(reading.gap))
    if reading.reason:
        out["folio.reason"] = reading.reason
    if reading.basis != "pagemap" or not reading.processes:
        return out
    names = {size_name(o): o for o in reading.by_order} | {f"{kb}kB": None for kb in offered_kb}
    shares, sizes = reading.shares(), dict(reading.by_order)
    for name in sorted(names, key=lambda n: int(n[:-2])):
        order = _order_of(name)
        out[f"folio_bytes.{name}"] = sizes.get(order, 0)
        out[f"folio_share.{name}"] = shares.get(order, 0.0) if reading.anon else None
    out["folio.anon_bytes"] = reading.anon
    out["folio.anonhuge_bytes"] = reading.anon_huge
    out["folio.processes"] = reading.processes
    out["folio.by_process"] = by_process(reading)
    return out


def _order_of(name: str) -> int:
    return (int(name[:-2]) * 1024 // PAGE).bit_length() - 1


def time_weighted_columns(
    samples: list[tuple[float, FolioReading]], until: float | None = None
) -> dict:
    """``folio_share_tw.<N>kB``: each size's bytes time-weighted over the samples, over the time-weighted
    anonymous bytes (the formula of ``hp_coverage_tw``); ``folio.samples`` and their summed cost.
    ``until``: when the program ended; the last reading then holds until that moment. The per-size readings
    are few (``sampler.FOLIO_BUDGET``): without it, a run read twice, at its start (a few MiB on 4 KiB pages)
    and once its 1 GiB array was on 2 MiB pages, gave all the weight to the first reading -- "4kB 100%"
    beside a huge-page coverage of 96% from the same run (issue 55)."""
    out: dict = {
        "folio.samples": len(samples),
        "folio.sampled_read_s": round(sum(r.read_s for _, r in samples), 6),
    }
    kept = [(t, r) for t, r in samples if r.basis == "pagemap" and r.anon]
    if not kept:
        return out
    if until is not None and until > kept[-1][0]:
        kept.append(
            (until, kept[-1][1])
        )  # the last reading holds until the end (the end gets none)
    times = [t for t, _ in kept]
    total = time_weighted(times, [r.anon for _, r in kept])
    orders = sorted({o for _, r in kept for o in r.by_order})
    for order in orders:
        part = time_weighted(times, [r.by_order.get(order, 0) for _, r in kept])
        if total and part is not None:
            out[f"folio_share_tw.{size_name(order)}"] = part / total
    return out
