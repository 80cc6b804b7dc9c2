"""``hugebench where``'s answer: a program run under the region sampler (``machine.regions``), its call sites
recorded by libhbselect, optionally timed bare too (the sampler's own cost), and the per-region table.

What belongs here: one run of the view and its text. What does not: the sampling itself
(``machine.regions``), the rule language (``machine.select_rule``), the command's options (``cli.where``).
"""

from __future__ import annotations

import statistics
import tempfile
import textwrap
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from hugebench.errors import ToolMissingError
from hugebench.knob_catalogue import THP_SHMEM_ENABLED
from hugebench.machine import regions as rg
from hugebench.machine import select_rule

WIDTH = 80
ASSUMED_ENTRIES = (
    1536  # a second-level TLB of 1536 entries (Intel since Haswell, AMD Zen 2/3's 2048 close)
)


@dataclass
class View:
    """What ``where`` found: the verdicts, the run, the sampling cost when timed bare too."""

    argv: list[str]
    verdicts: list[rg.Verdict]
    reach: rg.Reach
    watched: rg.Watched
    interval: float
    sites: bool
    notes: list[str] = field(default_factory=list)
    max_cost: float = 0.0
    bare_s: list[float] = field(default_factory=list)
    sampled_s: list[float] = field(default_factory=list)

    @property
    def rule(self) -> str | None:
        return rg.suggested_rule(self.verdicts)

    @property
    def cost(self) -> float | None:
        """Median wall time sampled / bare over the timing pairs (None without --bare)."""
        if not self.bare_s or not self.sampled_s:
            return None
        return statistics.median(self.sampled_s) / statistics.median(self.bare_s)


def watch(
    argv: Sequence[str],
    env: dict[str, str],
    reach: rg.Reach,
    *,
    interval: float = 1.0,
    sites: bool = True,
    bare: int = 0,
    timeout: float | None = None,
    max_cost: float = 0.0,
) -> View:
    """Run ``argv`` under the sampler (every ``interval`` s or more: stretched so that its own time stays
    within ``max_cost`` of one CPU), with call sites recorded when ``sites``; then ``bare`` more pairs of
    a bare run and a sampled one, alternating, to measure the sampler's cost."""
    with tempfile.TemporaryDirectory(prefix="hugebench-where-") as tmp:
        run_env, notes = env, []
        if sites:
            try:
                run_env = rg.site_environment(Path(tmp), select_rule.library(), env)
            except ToolMissingError as exc:
                sites, notes = False, [f"call sites not recorded: {exc}"]
        watched = rg.run_program(
            list(argv), run_env, interval=interval, timeout=timeout, max_share=max_cost
        )
        regions = list(watched.watch.regions.values())
        if sites:
            rg.attach_sites(regions, rg.read_sites(Path(tmp)))
        view = View(
            list(argv),
            rg.summarise(regions, reach),
            reach,
            watched,
            interval,
            sites,
            notes,
            max_cost,
        )
        for _ in range(bare):
            view.bare_s.append(
                rg.run_program(list(argv), env, interval=None, timeout=timeout).wall_s
            )
            again = rg.run_program(
                list(argv), run_env, interval=interval, timeout=timeout, max_share=max_cost
            )
            view.sampled_s.append(again.wall_s)
    return view


def _mib(size: int) -> str:
    if size >= 10 << 30:
        return f"{size / (1 << 30):.0f}G"
    if size >= 1 << 30:
        return f"{size / (1 << 30):.1f}G"
    return f"{size / (1 << 20):.1f}M" if size < 100 << 20 else f"{size / (1 << 20):.0f}M"


def _thp(region: rg.Region) -> str:
    """The THP column: 'hg' the program madvised it, 'nh' refused, 'yes'/'no' THPeligible as found."""
    if region.advised:
        return region.advised
    eligible = region.samples[-1].eligible
    return "?" if eligible is None else "yes" if eligible else "no"


HEADER = (
    f"{'pid':>7} {'region':<24} {'size':>7} {'rss':>7} {'hot':>7} {'huge':>5} {'thp':>4} verdict"
)


def table(verdicts: Sequence[rg.Verdict], limit: int = 20) -> list[str]:
    """One line per region, within 80 columns; the rest counted on a last line."""
    lines = [HEADER]
    for v in verdicts[:limit]:
        r = v.region
        label = r.label if len(r.label) <= 24 else r.label[:11] + ".." + r.label[-11:]
        lines.append(
            f"{r.pid:>7} {label:<24} {_mib(r.size):>7} {_mib(r.rss):>7} {_mib(r.hot):>7} "
            f"{r.huge_share:>5.0%} {_thp(r):>4} {v.verdict}"
        )
    if len(verdicts) > limit:
        lines.append(f"... and {len(verdicts) - limit} more regions (--json has them all)")
    return lines


def wrapped(lines: Sequence[str], width: int = WIDTH) -> list[str]:
    """Prose lines wrapped at words to ``width`` (continued with an indent); the table's lines and the
    deploy line (a command, never cut) as they are."""
    out: list[str] = []
    for line in lines:
        indent = line[: len(line) - len(line.lstrip())]
        if len(line) <= width or line.startswith(DEPLOY_INDENT):
            out.append(line)
        else:
            out += textwrap.wrap(
                line, width, subsequent_indent=indent + "  ", break_on_hyphens=False
            )
    return out


DEPLOY_INDENT = "    "  # the deploy line: printed whole


KIND_WORDS = {"shm": "shared memory", "file": "file mappings", "stack": "stacks"}
ALLOCATOR_OBJECTS = ("libjemalloc", "libtcmalloc", "libmimalloc")


def _allocator_of(verdicts: Sequence[rg.Verdict]) -> str | None:
    """The allocator library whose call sites made most of the paying regions' hot set, if one did."""
    paying = [v.region for v in verdicts if v.verdict == "pays" and v.region.site]
    total = sum(r.hot for r in paying)
    for name in ALLOCATOR_OBJECTS:
        mine = sum(r.hot for r in paying if (r.site or "").startswith(name))
        if total and mine * 2 > total:
            return name
    return None


def text(view: View) -> list[str]:
    """The answer: the table, the hot set against the TLB's reach, the regions the program madvises
    itself, the rule that selects the regions that pay and its deploy line, the sampler's cost; prose
    wrapped to 80 columns (:func:`wrapped`)."""
    w = view.watched
    every = f"every {view.interval:g} s"
    if w.watch.ticks > 1 and w.wall_s / w.watch.ticks > view.interval * 1.5:
        each = w.watch.cost_s / w.watch.ticks
        every = (
            f"every {w.wall_s / w.watch.ticks:.1f} s on average ({each * 1000:.0f} ms a sample, "
            f"kept within {view.max_cost:.0%} of one CPU)"
        )
    out = [
        f"{len(view.verdicts)} regions of {len({v.region.pid for v in view.verdicts})} process(es), "
        f"sampled {w.watch.ticks} times {every} over {w.wall_s:.1f} s"
    ]
    out += table(view.verdicts)
    hot = sum(v.region.hot for v in view.verdicts)
    entries = -(-hot // rg.PAGE)
    out.append(
        f"hot set of all regions: {_mib(hot)}, {entries} TLB entries at 4 KiB, "
        f"{-(-hot // rg.HUGE_PAGE)} at 2 MiB"
    )
    out.append(
        f"this machine's TLB: {view.reach.entries} entries ({_mib(view.reach.at_4k)} at 4 KiB, "
        f"{_mib(view.reach.at_2m)} at 2 MiB), {view.reach.source}"
    )
    for v in view.verdicts:
        if v.verdict in ("pays", "sparse", "huge"):
            out.append(f"  {v.verdict}: {v.region.label} (pid {v.region.pid}): {v.why}")
    advised = [v.region for v in view.verdicts if v.region.advised == "hg"]
    if advised:
        names = ", ".join(f"{r.label} ({_mib(r.size)})" for r in advised[:4])
        out.append(f"the program madvises huge pages itself for {len(advised)} region(s): {names}")
    rule = view.rule
    if rule:
        parsed = select_rule.parse(rule)
        out.append(f"huge pages for the regions that pay: --select '{rule}' ({parsed.describe()}):")
        try:
            out.append(DEPLOY_INDENT + select_rule.deploy_line(parsed, view.argv))
        except ToolMissingError as exc:
            out.append(f"  ({exc})")
        left = [
            v.region
            for v in view.verdicts
            if v.verdict == "pays"
            and v.region.kind == "anon"
            and (
                rg.small_blocks(v.region)
                or not parsed.selects("", rg.selectable(v.region), v.region.site)
            )
        ]
        if left:
            small = sum(1 for r in left if rg.small_blocks(r))
            unnamed = sum(1 for r in left if not r.site and not rg.small_blocks(r))
            out.append(
                f"  left out: {len(left)} paying region(s), {_mib(sum(r.hot for r in left))} hot "
                f"({small} of blocks below 2 MiB, which no rule selects; {unnamed} the preload did "
                f"not see made; {len(left) - small - unnamed} from call sites or sizes shared with "
                "regions huge pages would grow or waste)"
            )
    elif any(v.verdict == "huge" for v in view.verdicts) and not any(
        v.verdict == "pays" for v in view.verdicts
    ):
        out.append("no region needs more: the hot ones are on 2 MiB pages already")
    elif not any(v.verdict == "pays" for v in view.verdicts):
        out.append("no region pays for huge pages here")
    elif not any(v.verdict == "pays" and v.region.kind in ("anon", "heap") for v in view.verdicts):
        kinds = sorted({v.region.kind for v in view.verdicts if v.verdict == "pays"})
        out.append(
            f"the regions that pay are {' and '.join(KIND_WORDS.get(k, k) for k in kinds)}, which "
            "--select does not reach (it madvises anonymous blocks and the heap): shared memory "
            f"takes huge pages from {THP_SHMEM_ENABLED} or the program's own hugetlb option, files "
            "from a file system mounted with huge pages"
        )
    elif all(  # (a paying heap would have been selected: the rule above)
        rg.small_blocks(v.region)
        for v in view.verdicts
        if v.verdict == "pays" and v.region.kind == "anon"
    ):
        merged = [v.region for v in view.verdicts if v.verdict == "pays"]
        out.append(
            f"the regions that pay ({_mib(sum(r.size for r in merged))}) are made of blocks below "
            "2 MiB that the kernel merged into larger mappings: no rule selects a block that small "
            "(no huge page fits in one); an allocator that carves them from huge-page arenas does "
            "(`hugebench try` races them)"
        )
    else:
        out.append(
            "no rule tells the regions that pay from the ones huge pages would grow or waste "
            "(their call sites and sizes overlap)"
        )
        allocator = _allocator_of(view.verdicts)
        if allocator:
            out.append(
                f"  the regions that pay are {allocator}'s arenas, which hold the others too: its own "
                "huge-page setting places them (`hugebench try` races it)"
            )
    if view.cost is not None:
        out.append(
            f"sampling cost: {view.cost:.3f}x bare (median wall {statistics.median(view.sampled_s):.2f} s "
            f"sampled vs {statistics.median(view.bare_s):.2f} s bare, {len(view.bare_s)} pairs)"
        )
    out += [f"note: {note}" for note in view.notes]
    if w.code != 0 or w.timed_out:
        out.append(f"note: the program {'timed out' if w.timed_out else f'exited with {w.code}'}")
    return wrapped(out)


def as_json(view: View) -> dict:
    """Every region with its samples (for plots and scripts)."""
    return {
        "argv": view.argv,
        "interval_s": view.interval,
        "wall_s": view.watched.wall_s,
        "exit_code": view.watched.code,
        "ticks": view.watched.watch.ticks,
        "max_cost": view.max_cost,
        "sampler_s": view.watched.watch.cost_s,
        "reach": {"entries": view.reach.entries, "source": view.reach.source},
        "rule": view.rule,
        "cost": view.cost,
        "bare_s": view.bare_s,
        "sampled_s": view.sampled_s,
        "regions": [
            {
                "pid": v.region.pid,
                "comm": v.region.comm,
                "start": f"{v.region.start:x}",
                "name": v.region.name,
                "kind": v.region.kind,
                "site": v.region.site,
                "largest_block_bytes": v.region.block,  # what a rule selects (None: not recorded)
                "label": v.region.label,
                "size": v.region.size,
                "rss": v.region.rss,
                "hot": v.region.hot,
                "huge_share": v.region.huge_share,
                "advised": v.region.advised,
                "thp": _thp(v.region),
                "verdict": v.verdict,
                "why": v.why,
                "hot_over_time": [[round(s.t, 3), s.referenced] for s in v.region.samples],
            }
            for v in view.verdicts
        ],
    }
