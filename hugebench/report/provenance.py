"""What the numbers were measured on and with, as report sections: sweeps, the command a `command` sweep
measured, machine, allocators, knobs.

Everything here is read from what the sweep recorded (``sweeps/<id>.json`` and the rows' ``knob.*`` and
``allocator*`` columns); nothing is read from the machine the report is made on. :func:`machine_facts`
flattens one sweep's machine context into labelled text, so ``compare`` can say what differs between two.
"""

from __future__ import annotations

from collections.abc import Mapping

import pandas as pd

from hugebench.report.model import Flag, Section
from hugebench.report.rendering import DASH, display_frame, format_bytes, is_missing
from hugebench.report.results import Results, sweep_ids
from hugebench.stats import ok_mask, ok_rows


def provenance_sections(results: Results) -> list[Section]:
    """Sweeps, the machine of each, the allocators (with what each run proved) and the kernel knobs read back."""
    sections = [
        _store_notes(results),
        _sweeps(results),
        _command(results),
        _machines(results),
        _allocators(results),
        _knobs(results),
    ]
    return [s for s in sections if s is not None]


def _store_notes(results: Results) -> Section | None:
    """What reading the store skipped or merged (bad lines, rows stored twice, unreadable contexts)."""
    if not results.notes:
        return None
    return Section(
        "Reading the results store",
        None,
        ["Lines, rows or files the report could not use, and why."],
        warnings=[Flag(note) for note in results.notes],
        kind="store",
    )


def machine_facts(context: Mapping) -> dict[str, str]:
    """One sweep's machine and build as label -> text (CPU, kernel, memory, THP at start, perf, versions)."""
    machine = context.get("machine") or {}
    cpu, memory, perf = (
        machine.get("cpu") or {},
        machine.get("memory") or {},
        machine.get("perf") or {},
    )
    hb, kernel = machine.get("hugebench") or {}, machine.get("kernel") or {}
    build = hb.get("core_build") or {}
    thp = memory.get("thp") or {}
    facts = {
        "host": machine.get("hostname"),
        "CPU": " ".join(
            str(v)
            for v in (cpu.get("model_name"), cpu.get("microarch") and f"({cpu['microarch']})")
            if v
        ),
        "cores": cpu.get("cores")
        and f"{cpu.get('cores')} cores, {cpu.get('logical_cpus')} logical CPUs",
        "hypervisor": cpu.get("hypervisor") or ("none" if cpu else None),
        "TLB": "; ".join((machine.get("tlb") or {}).get("entries") or []) or None,
        "caches": _caches(machine.get("caches") or []),
        "memory": memory.get("total_bytes") and format_bytes(memory["total_bytes"]),
        "kernel": kernel.get("release"),
        "THP at start": thp and f"enabled={thp.get('enabled')}, defrag={thp.get('defrag')}",
        "hugetlb pools at start": _pools(memory.get("hugetlb_pools") or {}),
        "glibc": machine.get("glibc"),
        "python": (machine.get("python") or {}).get("version"),
        "perf": perf.get("perf_version") or perf.get("missing_reason"),
        "hardware counters": (
            "available" if perf.get("pmu_available") else f"not available: {perf.get('pmu_reason')}"
        )
        if perf
        else None,
        "hugebench": hb.get("version") or context.get("hugebench_version"),
        "git": hb.get("git_sha")
        and (hb["git_sha"][:12] + (" (dirty)" if hb.get("git_dirty") else "")),
        "core build": build
        if isinstance(build, str)
        # metadata.core_build_info: why it is unavailable
        else build
        and f"{build.get('build_type')}, {build.get('compiler')}, {str(build.get('cxx_flags')).strip()}",
    }
    return {label: str(value) for label, value in facts.items() if value}


def _sweeps(results: Results) -> Section | None:
    ids = sweep_ids(results.rows)
    if not ids:
        return None
    body = []
    for sweep_id in ids:
        context = results.contexts.get(sweep_id, {})
        spec = context.get("spec") or {}
        rows = results.rows[results.rows["sweep_id"].astype(str) == sweep_id]
        system = ", ".join(f"{k}={v}" for k, v in (spec.get("system") or {}).items()) or DASH
        body.append(
            [
                sweep_id,
                context.get("experiment", DASH),
                spec.get("source", DASH),
                context.get("started_at", DASH),
                context.get("ended_at", "not recorded"),
                f"{len(ok_rows(rows))} ok of {len(rows)}",
                context.get("hugebench_version", DASH),
                system,
            ]
        )
    table = display_frame(
        ["sweep", "experiment", "file", "started", "ended", "runs", "hugebench", "system knobs"],
        body,
    )
    flags = []
    if any(c.get("synthetic") for c in results.contexts.values()):
        flags.append(Flag("synthetic test data: these rows were generated, not measured"))
    return Section("Sweeps", table, warnings=flags, kind="context")


COMMAND_KEYS = (
    "argv",
    "server",
    "setup",
    "cwd",
    "env",
    "stdin",
    "stdout",
    "metric",
    "window",
    "sample_interval",
)


def _command(results: Results) -> Section | None:
    """For `workload: command` sweeps: the command that was measured (argv, server, setup, its own parameters
    and axes, as the sweep recorded them) and the files that really ran (the rows' program_path and
    program_exes)."""
    columns: dict[str, dict] = {}
    for sweep_id in sweep_ids(results.rows):
        spec = (results.contexts.get(sweep_id) or {}).get("spec") or {}
        if spec.get("workload") != "command" or not isinstance(spec.get("params"), Mapping):
            continue
        rows = results.rows[results.rows["sweep_id"].astype(str) == sweep_id]
        facts = _command_facts(spec, rows)
        if facts not in columns.values():
            columns[sweep_id] = facts
    if not columns:
        return None
    labels = list(dict.fromkeys(label for facts in columns.values() for label in facts))
    body = [[label] + [facts.get(label, DASH) for facts in columns.values()] for label in labels]
    return Section(
        "Command measured",
        display_frame([""] + list(columns), body),
        [
            "{name} fields are filled per run from the parameters and axes; 'ran' is the file each run "
            "executed, resolved once on the user's PATH, and 'process images' every program the probe saw."
        ],
        kind="context",
    )


def command_lines(experiment) -> list[str]:
    """One note naming the measured command of a `command` experiment (for every report format): argv (the
    server's and its load driver's) and the file that ran."""
    spec = experiment.context.get("spec") or {}
    if spec.get("workload") != "command" or not isinstance(spec.get("params"), Mapping):
        return []
    facts = _command_facts(spec, experiment.rows)
    shown = [
        f"{label} {facts[key]}"
        for key, label in (
            ("server", "server:"),
            ("argv", "command:" if "server" not in facts else "load driver:"),
            ("ran", "ran"),
        )
        if key in facts
    ]
    lines = (
        ["; ".join(shown) + " (all its parameters: the HTML report's 'Command measured')"]
        if shown
        else []
    )
    return lines + linked_notes(ok_rows(experiment.rows))


def _command_facts(spec: Mapping, rows: pd.DataFrame) -> dict[str, str]:
    params = spec["params"]
    facts = {"experiment": str(spec.get("name") or DASH)}
    for key in COMMAND_KEYS:
        value = params.get(key)
        if value is None or value == {}:
            continue
        if key == "server" and isinstance(value, Mapping):
            facts["server"] = _argv_text(value.get("argv"))
            facts["server ready"] = str(value.get("ready") or DASH)
        else:
            facts[key] = _argv_text(value) if key in ("argv", "setup") else str(value)
    own = {k: v for k, v in params.items() if k not in COMMAND_KEYS}
    if own:
        facts["parameters"] = ", ".join(f"{k}={v}" for k, v in own.items())
    axes = spec.get("axes") or {}
    if isinstance(axes, Mapping) and axes:
        facts["axes"] = "; ".join(
            f"{k}: {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in axes.items()
        )
    for column, label in (("program_path", "ran"), ("program_exes", "process images")):
        if column in rows.columns and rows[column].notna().any():
            facts[label] = _values(rows[column])
    return facts


def _argv_text(argv) -> str:
    """An argv as one shell-quoted line (it is never run through a shell; quoting only shows the words)."""
    import shlex

    return shlex.join(map(str, argv)) if isinstance(argv, list) else str(argv)


def _machines(results: Results) -> Section | None:
    """One column per distinct machine context (usually one), labelled by its first sweep."""
    columns: dict[str, dict] = {}
    for sweep_id in sweep_ids(results.rows):
        facts = machine_facts(results.contexts.get(sweep_id, {}))
        if facts and facts not in columns.values():
            columns[sweep_id] = facts
    if not columns:
        return None
    labels = list(dict.fromkeys(label for facts in columns.values() for label in facts))
    body = [[label] + [facts.get(label, DASH) for facts in columns.values()] for label in labels]
    return Section("Machine", display_frame([""] + list(columns), body), kind="context")


def _allocators(results: Results) -> Section | None:
    """Per allocator: the library and settings the sweep resolved, and what the runs found mapped and used."""
    rows = ok_rows(results.rows)
    if "allocator" not in rows.columns:
        return None
    resolved: dict[str, dict] = {}
    for context in results.contexts.values():
        resolved.update(context.get("allocators") or {})
    proofs = [
        c
        for c in rows.columns
        if c
        in ("allocator_served", "allocator_mapped", "allocator_malloc_from", "allocator_linked")
        or c.startswith("allocator.")
    ]
    body = []
    for name in rows["allocator"].dropna().unique():
        info = resolved.get(str(name), {})
        mine = rows[rows["allocator"] == name]
        seen = "; ".join(
            f"{column}: {_values(mine[column])}" for column in proofs if mine[column].notna().any()
        )
        env = " ".join(f"{k}={v}" for k, v in (info.get("env") or {}).items())
        body.append(
            [
                str(name),
                info.get("path") or "(libc)",
                info.get("version") or DASH,
                env or DASH,
                seen or "nothing recorded",
            ]
        )
    notes = [
        "found in the runs: what each worker saw mapped, where its malloc resolved, and the allocator's own "
        "view of its knobs (distinct values over the successful runs)."
    ] + linked_notes(rows)
    return Section(
        "Allocators",
        display_frame(
            ["allocator", "library", "version", "environment", "found in the runs"], body
        ),
        notes,
        kind="context",
    )


def linked_notes(rows: pd.DataFrame) -> list[str]:
    """Per allocator whose runs found another malloc library linked into the program (Debian's redis-server
    links jemalloc): what the preload proved, and what it did not."""
    if "allocator_linked" not in rows.columns or "allocator" not in rows.columns:
        return []
    linked = rows[rows["allocator_linked"].notna()]
    return [
        f"{name}: the preload proved that malloc and free resolve to this allocator in every process; it did "
        f"not remove what the program links: {_values(group['allocator_linked'])} stays mapped and its own API "
        "(mallctl/nallocx, mi_version, tc_malloc) still answers, so its knobs are not this cell's (not shown)."
        for name, group in linked.groupby("allocator", sort=False)
    ]


def _knobs(results: Results) -> Section | None:
    """Every kernel knob the rows read back after applying the cell's settings, with the values seen."""
    named = [c for c in results.rows.columns if c.startswith("knob.")]
    rows = results.rows.loc[ok_mask(results.rows), named]  # not the other ~300 columns
    knobs = sorted(c for c in named if rows[c].notna().any())
    if not knobs:
        return None
    body = [[k.removeprefix("knob."), _values(rows[k])] for k in knobs]
    return Section(
        "Kernel knobs read back",
        display_frame(["knob", "values in the runs"], body),
        ["each run reads every knob back after its cell's settings were applied."],
        kind="context",
    )


_NEVER_MISSING = (
    str,
    int,
    bool,
)  # the common knob values, which is_missing (pd.isna) never calls missing


def _values(column: pd.Series) -> str:
    values = list(  # as text: lists too (unhashable); tolist: iterating an Arrow column is slow
        dict.fromkeys(
            v if type(v) is str else str(v)
            for v in column.tolist()
            if type(v) in _NEVER_MISSING or not is_missing(v)
        )
    )
    return ", ".join(str(v) for v in values[:8]) + (
        f" (+{len(values) - 8} more)" if len(values) > 8 else ""
    )


def _caches(caches: list) -> str | None:
    parts = [
        f"L{c.get('level')}{(c.get('type') or '')[:1].lower() if c.get('level') == 1 else ''} "
        f"{format_bytes(c.get('size_bytes'))}"
        for c in caches
        if c.get("size_bytes")
    ]
    return ", ".join(parts) or None


def _pools(pools: Mapping) -> str | None:
    return ", ".join(f"{size}: {p.get('nr')}" for size, p in pools.items()) or None
