"""`hugebench probe`: size the pools that can be had, run the probe experiment through the normal sweep
(lock, journal, rows, resume), then summarise curves and verdict into the results directory and this
machine's cache.

The sweep that puts ``hugebench.workloads.tlbprobe``'s parts together; it sits above the sweep and the report, which read
those parts (the machine's cached verdict, the probe figure), so it is not one of them.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from hugebench import kernel
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import THP_ENABLED
from hugebench.workloads.tlbprobe import cache
from hugebench.workloads.tlbprobe import curves as curves_mod
from hugebench.workloads.tlbprobe import plan as plan_mod


@dataclass(frozen=True)
class ProbeOptions:
    largest: int = 1 << 30
    out: Path | None = None  # default: this machine's cache directory
    repetitions: int = 3
    accesses: int = 2_000_000
    quiet: bool = False
    host: Host = LOCAL
    journal: Path | None = None


@dataclass
class ProbeOutcome:
    out: Path
    summary: dict
    skipped: dict  # backing -> why it was not measured
    figure: list


def _system_and_backings(largest: int, options: ProbeOptions) -> tuple[dict, list[str], dict]:
    wanted = plan_mod.pool_pages(largest)
    answers = plan_mod.grantable_pools(wanted, host=options.host, journal=options.journal)
    system: dict[str, str | int] = {}
    backings, skipped = ["4k", "thp"], {}
    if kernel.thp_modes(options.host).get("enabled") == "never":
        system[THP_ENABLED] = (
            "madvise"  # MADV_HUGEPAGE needs madvise or always; restored after the sweep
        )
    for backing, (knob, _) in plan_mod.POOL_PAGE.items():
        if answers.get(knob):
            skipped[backing] = answers[knob]
        else:
            system[knob] = wanted[knob]
            backings.append(backing)
    return system, backings, skipped


def run_probe(options: ProbeOptions) -> ProbeOutcome:
    from hugebench import experiment as spec_mod
    from hugebench.store import load
    from hugebench.sweep import plan
    from hugebench.sweep.orchestrator import SweepOptions, run_sweep

    sizes = plan_mod.working_sets(options.largest, kernel.mem_available(options.host))
    system, backings, skipped = _system_and_backings(sizes[-1], options)
    text = plan_mod.probe_spec_text(sizes, backings, system, options.repetitions, options.accesses)
    spec = spec_mod.parse_spec(text, source="<hugebench probe>")
    out = Path(options.out or cache.cache_dir(options.host))
    run_sweep(
        spec,
        plan.plan(spec),
        SweepOptions(
            out=out,
            quiet=options.quiet,
            spec_source="hugebench probe",
            host=options.host,
            journal=options.journal,
        ),
    )
    summary = summarise(load(out), out, skipped)
    cache.write_summary(out, summary)
    if options.out is not None:  # the machine's cache always holds the latest summary
        cache.write_summary(cache.cache_dir(options.host), summary)
    from hugebench.report.figures import save
    from hugebench.workloads.tlbprobe.figure import probe_figure

    figure = save(probe_figure(curves_mod.curves(load(out)), summary["verdict"]), out, "probe")
    return ProbeOutcome(out, summary, skipped, figure)


def summarise(rows, out: Path, skipped: dict | None = None) -> dict:
    """The cached summary: curves, verdict, the largest saving, what was not measured and why."""
    all_curves = curves_mod.curves(rows)
    return {
        "measured_at": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "results": str(out),
        "curves": [
            {"pattern": c.pattern, "backing": c.backing, "points": c.points, "refused": c.refused}
            for c in all_curves
        ],
        "verdict": curves_mod.reach_verdict(all_curves).to_dict(),
        "best_saving": curves_mod.best_saving(all_curves),
        "skipped": skipped or {},
    }
