"""Where huge pages pay inside a program: its memory region by region, and each region's hot set over time.

Every interval, for every process of the program and every mapping worth a look (the heap, stacks, each
anonymous mapping of 2 MiB or more, shared memory, file mappings of 2 MiB or more), one :class:`Sample` from
``/proc/PID/smaps``: size, resident, THP eligibility, memory on 2 MiB pages, the program's own madvise (VmFlags
``hg``/``nh``) and ``Referenced`` -- the pages touched since the previous interval, because each sample ends
by writing 1 to ``/proc/PID/clear_refs`` (which clears the accessed bits of the process's pages). The first
interval's ``Referenced`` counts from the mapping's birth, so the hot set is read from the later ones.

What belongs here: sampling and the per-region judgement (:func:`summarise`). What does not: the TLB reach
of this machine (the probe's cache, read by the command), the rule language (``machine.select_rule``), the
command and its table (``cli.where``).
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.procfs import process_comm, process_tree
from hugebench.kernel.smaps import Vma, read_smaps
from hugebench.machine.select_rule import MAX_SITES

MIN_REGION = 2 << 20  # an anonymous or file mapping smaller than one huge page is not worth a look
PAGE = 4096
HUGE_PAGE = 2 << 20
SHM_PREFIXES = ("/dev/shm/", "/memfd:", "/SYSV", "[anon_shmem")
HUGE_FIELDS = ("AnonHugePages", "ShmemPmdMapped", "FilePmdMapped")
DENSE = 0.5  # resident / size below this: 2 MiB pages would grow the region's memory (sparse)
COVERED = 0.9  # the share on 2 MiB pages that counts as on huge pages already


@dataclass(frozen=True)
class Reach:
    """The TLB reach of this machine: how much memory its second-level TLB maps with 4 KiB and with 2 MiB
    pages, and where that came from (the probe's measurement, or the assumption when there is none)."""

    entries: int
    source: str

    @property
    def at_4k(self) -> int:
        return self.entries * PAGE

    @property
    def at_2m(self) -> int:
        return self.entries * HUGE_PAGE


@dataclass(frozen=True)
class Sample:
    """One region at one moment: ``referenced`` counts the bytes touched since the previous sample."""

    t: float
    size: int
    rss: int
    referenced: int
    huge: int
    eligible: int | None
    flags: frozenset[str]


@dataclass
class Region:
    """One mapping of one process followed over the run (known by its start address)."""

    pid: int
    comm: str
    start: int
    name: str
    kind: str  # heap, stack, anon, shm, file
    samples: list[Sample] = field(default_factory=list)
    site: str | None = (
        None  # OBJECT+0xOFFSET of the largest block recorded in it (libhbselect's log)
    )
    # the largest block libhbselect recorded in it: what a rule can select (the kernel merges adjacent
    # mappings, so 4096 blocks of 256 KiB are one 806 MiB region, and no block of it is 2 MiB); 0: none
    # of 2 MiB or more was recorded in it; None: nothing was recorded (``where --no-sites``)
    block: int | None = None

    @property
    def label(self) -> str:
        if self.kind in ("heap", "stack"):
            return self.name.strip("[]")
        if self.kind == "anon":
            return self.site or f"anon@{self.start:x}"
        return Path(self.name).name or self.name

    @property
    def size(self) -> int:
        return max(s.size for s in self.samples)

    @property
    def rss(self) -> int:
        return max(s.rss for s in self.samples)

    @property
    def hot(self) -> int:
        """The largest number of bytes touched in one interval (the first, counted from the mapping's
        birth, only when it is the only one)."""
        later = self.samples[1:] or self.samples
        return max(s.referenced for s in later)

    @property
    def huge_share(self) -> float:
        last = self.samples[-1]
        return last.huge / last.rss if last.rss else 0.0

    @property
    def advised(self) -> str | None:
        """'hg' when the program itself asked for huge pages here (madvise MADV_HUGEPAGE), 'nh' when it
        refused them (MADV_NOHUGEPAGE), else None."""
        flags = self.samples[-1].flags
        return "hg" if "hg" in flags else "nh" if "nh" in flags else None


def kind_of(vma: Vma) -> str | None:
    """Which kind of region a mapping is, or None when it is not worth a look."""
    if vma.name == "[heap]":
        return "heap"
    if vma.name.startswith("[stack"):
        return "stack"
    if vma.name.startswith(SHM_PREFIXES) or ("sh" in vma.flags and vma.name):
        return "shm"
    if vma.size < MIN_REGION:
        return None
    if vma.name == "":
        return "anon"
    return "file" if vma.file_backed else None


def sample_of(vma: Vma, t: float) -> Sample:
    return Sample(
        t=t,
        size=vma.size,
        rss=vma.fields.get("Rss", 0),
        referenced=vma.fields.get("Referenced", 0),
        huge=sum(vma.fields.get(k, 0) for k in HUGE_FIELDS),
        eligible=vma.thp_eligible,
        flags=vma.flags,
    )


def clear_refs(pid: int, host: Host = LOCAL) -> bool:
    """Clear the accessed bits of ``pid``'s pages (False when it is gone or not ours)."""
    try:
        with open(host.proc / str(pid) / "clear_refs", "w") as f:
            f.write("1")
        return True
    except OSError:
        return False


EARLY_S = 0.05  # how much earlier than its due time a sample may be taken


@dataclass
class Watch:
    """The regions of a process tree, sampled by :meth:`tick` (call it every interval)."""

    root: int
    host: Host = LOCAL
    started: float = field(default_factory=time.perf_counter)
    regions: dict[tuple[int, int], Region] = field(default_factory=dict)
    ticks: int = 0
    cost_s: float = 0.0  # the sampler's own time (reading smaps, clearing the bits)
    interval: float = 0.0  # the least time from one sample to the next
    # the sampler's own time kept within this share of one CPU: after a sample that took d seconds the
    # next waits at least d / max_share (0: never stretched); a program of many processes and large
    # mappings (PostgreSQL's backends, ~0.2 s a sample here) is sampled less often, not slowed
    max_share: float = 0.0
    due: float = 0.0  # perf_counter time of the next sample

    def tick(self) -> None:
        """A sample, when one is due (the caller may call more often than the interval)."""
        began = time.perf_counter()
        if began < self.due:
            return
        t = began - self.started
        for pid in process_tree(self.root, self.host):
            try:
                vmas = read_smaps(pid, self.host)
            except OSError:
                continue
            comm = process_comm(pid, self.host) or "?"
            for vma in vmas:
                kind = kind_of(vma)
                if kind is None:
                    continue
                region = self.regions.setdefault(
                    (pid, vma.start), Region(pid, comm, vma.start, vma.name, kind)
                )
                region.samples.append(sample_of(vma, t))
            clear_refs(pid, self.host)
        self.ticks += 1
        took = time.perf_counter() - began
        self.cost_s += took
        stretched = took / self.max_share if self.max_share > 0 else 0.0
        # the caller's own period jitters: a sample is due a little early rather than a whole period late
        self.due = began + max(self.interval, stretched) - EARLY_S


def read_sites(directory: Path) -> list[tuple[int, int, int, str]]:
    """libhbselect's logs in ``directory`` (HB_SELECT_LOG): (pid, start, size, site) of each large block."""
    out = []
    for path in sorted(directory.glob("select-*.log")):
        try:
            lines = path.read_text(errors="replace").splitlines()[:100_000]
        except OSError:
            continue
        for line in lines:
            parts = line.split()
            if len(parts) < 6:
                continue
            try:
                out.append((int(parts[0]), int(parts[2], 16), int(parts[3]), parts[5]))
            except ValueError:
                continue
    return out


def attach_sites(regions: Iterable[Region], sites: list[tuple[int, int, int, str]]) -> None:
    """Name each anonymous region by the call site of the largest block recorded inside it, and keep that
    block's size (0 when none was: its blocks were below 2 MiB, or made where the preload does not see)."""
    for region in regions:
        if region.kind not in ("anon", "heap"):
            continue
        end = region.start + region.size
        inside = [
            (size, site)
            for pid, at, size, site in sites
            if pid == region.pid and region.start <= at < end
        ]
        region.block = max(inside)[0] if inside else 0
        if inside:
            region.site = max(inside)[1]


@dataclass(frozen=True)
class Verdict:
    """What one region's numbers say about huge pages for it."""

    region: Region
    verdict: str  # pays, huge, sparse, fits, cold
    why: str


def judge(region: Region, reach: Reach) -> Verdict:
    """pays: its hot set needs more 4 KiB TLB entries than half the machine has and it is dense enough that
    2 MiB pages would not grow it; huge: 90% or more of it is on 2 MiB pages already; sparse: hot, but
    2 MiB pages would grow its resident memory (resident under half its size); fits: hot, but within the
    4 KiB TLB's reach; cold: not touched after its first interval."""
    hot, rss, size = region.hot, region.rss, region.size
    entries = -(-hot // PAGE)
    if hot == 0:
        return Verdict(region, "cold", "no page touched in an interval after the first")
    if region.huge_share >= COVERED:
        return Verdict(region, "huge", f"{region.huge_share:.0%} on 2 MiB pages already")
    if hot * 2 < reach.at_4k:
        return Verdict(region, "fits", f"hot set {entries} pages: within the 4 KiB TLB's reach")
    if size and rss / size < DENSE and region.kind != "heap":
        return Verdict(
            region,
            "sparse",
            f"resident {rss / size:.0%} of its size: 2 MiB pages could grow it up to {size / max(rss, 1):.1f}x",
        )
    return Verdict(
        region,
        "pays",
        f"hot set {entries} pages of 4 KiB ({entries / reach.entries:.1f}x the TLB's entries), "
        f"{-(-hot // HUGE_PAGE)} of 2 MiB",
    )


def summarise(regions: Iterable[Region], reach: Reach) -> list[Verdict]:
    """Each region judged, the hottest first."""
    return sorted(
        (judge(r, reach) for r in regions if r.samples),
        key=lambda v: (-v.region.hot, -v.region.rss, v.region.pid, v.region.start),
    )


SITE_SHARE = (
    0.8  # a site rule may leave out unnamed paying regions holding under 20% of the paying hot set
)


def harmless(verdict: Verdict) -> bool:
    """Whether giving the region huge pages costs nothing worth refusing a rule for: it is on 2 MiB pages
    already, or hot and dense (resident at least half its size, so 2 MiB pages would not grow it much).
    A sparse or a cold region is what a rule must leave out (its memory would grow, or be wasted)."""
    r = verdict.region
    return verdict.verdict == "huge" or (
        verdict.verdict == "fits" and r.size > 0 and r.rss / r.size >= DENSE
    )


def selectable(region: Region) -> int:
    """The size a rule's ``anon>=`` compares for ``region``: its largest recorded block, else its size."""
    return region.block or region.size


def small_blocks(region: Region) -> bool:
    """Whether ``region`` is made of blocks below 2 MiB (the preload recorded none of 2 MiB or more in
    it): no rule selects any of it."""
    return region.kind == "anon" and region.block == 0


def suggested_rule(verdicts: Iterable[Verdict]) -> str | None:
    """The rule (machine.select_rule) that selects the regions that pay and none that huge pages would
    harm (a sparse or a cold one; :func:`harmless`): the call sites (libhbselect's names) that made paying
    regions and no harmed one, when they hold at least 80% of the paying hot set (the paying regions left
    out, unnamed or from a site that also made a harmed one, are said so by ``where``), else a window of
    sizes around them; the heap when it pays. None when no anonymous region or heap pays, or no rule
    can tell them from the harmed ones."""
    verdicts = list(verdicts)
    paying = [v.region for v in verdicts if v.verdict == "pays"]
    harmed = [
        v.region
        for v in verdicts
        if v.verdict != "pays" and v.region.kind == "anon" and not harmless(v)
    ]
    terms = []
    anon = [r for r in paying if r.kind == "anon"]
    # the call sites that made a paying region and no harmed one, the hottest first
    harmed_sites = {r.site for r in harmed if r.site}
    heat: dict[str, int] = {}
    for r in anon:
        if r.site and r.site not in harmed_sites:
            heat[r.site] = heat.get(r.site, 0) + r.hot
    chosen = sorted(heat, key=lambda site: -heat[site])[:MAX_SITES]
    if chosen and sum(heat[site] for site in chosen) >= SITE_SHARE * sum(r.hot for r in anon):
        terms += [f"site={site}" for site in chosen]
    # a size window selects blocks, not regions: sized by the largest block recorded in each (a region
    # of small blocks the kernel merged has none a rule can select), by the region without a record
    sized = [r for r in anon if r.block != 0]
    if sized and not terms:
        low, high = min(selectable(r) for r in sized), max(selectable(r) for r in sized)
        low_mib = max(2, low >> 20)
        blocks = [selectable(r) for r in harmed if r.block != 0]
        if any(low_mib << 20 <= size <= high for size in blocks):
            return None
        above = [size for size in blocks if size > high]
        terms.append(f"anon>={low_mib}M")
        if above:
            terms.append(f"anon<{-(-min(above) // (1 << 20))}M")
    if any(r.kind == "heap" for r in paying):
        terms.append("heap")
    return ",".join(terms) or None


@dataclass
class Watched:
    """A program run under the sampler: its regions, how it ended, its wall time and the sampler's."""

    watch: Watch
    code: int
    wall_s: float
    timed_out: bool


def run_program(
    argv: list[str],
    env: dict[str, str],
    *,
    interval: float | None,
    cwd: str | None = None,
    timeout: float | None = None,
    output: int = 2,
    max_share: float = 0.0,
) -> Watched:
    """Run ``argv`` (its output to descriptor ``output``) contained like a sweep's run (no process of it
    outlives this call), sampling its tree every ``interval`` seconds or more (None: not at all, the bare
    run), stretched so the sampler's time stays within ``max_share`` of one CPU (:class:`Watch`)."""
    from hugebench.machine.launch import Launched
    from hugebench.system.containment import RunContainer, record_dir

    with RunContainer(f"where-{os.getpid()}", record_dir()) as container:
        launched = Launched(argv, env, cwd or os.getcwd(), stdout=output, container=container)
        watch = Watch(launched.pid, interval=interval or 0.0, max_share=max_share)
        # called at least every interval (a container's tracking calls it every second or less); the
        # watch samples when one is due
        ended = launched.wait(
            timeout, tick=interval, on_tick=watch.tick if interval is not None else None
        )
    return Watched(watch, ended.code, ended.wall_s, ended.timed_out)


def site_environment(log_dir: Path, library: str, env: dict[str, str]) -> dict[str, str]:
    """``env`` with libhbselect preloaded to record the call site of each large block (HB_SELECT_LOG),
    selecting nothing (HUGEBENCH_SELECT removed)."""
    out = {k: v for k, v in env.items() if k != "HUGEBENCH_SELECT"}
    preload = " ".join(p for p in (library, out.get("LD_PRELOAD", "")) if p)
    return {**out, "LD_PRELOAD": preload, "HB_SELECT_LOG": str(log_dir)}
