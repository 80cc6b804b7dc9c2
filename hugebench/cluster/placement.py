"""Which runs go to which machine: pure functions of the plan and the host names (no Dask, no I/O).

The client places runs with them when it sweeps, and ``hugebench plan`` shows the same expansion before
anything runs. ``machines: each``: every machine does every run, under ids made per host. ``machines:
spread``: whole repetition blocks go to the next free machine; the plan can only show the expected share
(blocks dealt round-robin, as equal machines free up in turn).
"""

from __future__ import annotations

import dataclasses

from hugebench.sweep.plan import content_hash


def place(runs: list, hosts: list[str]) -> dict[str, list]:
    """``each``: host -> every run, as that host does it (ids made per host)."""
    return {h: [on_host(r, h) for r in runs] for h in hosts}


def on_host(run, host: str):
    """The run as machine ``host`` does it in ``machines: each``: host is part of its cell."""
    return dataclasses.replace(
        run,
        run_id=content_hash([run.run_id, host]),
        cell_id=content_hash([run.cell_id, host]),
        cell={**run.cell, "host": host},
    )


def blocks(runs: list) -> list[list]:
    """The runs by repetition block (each warm-up block too), in plan order: at most one run of each cell."""
    cells = len({r.cell_id for r in runs}) or 1
    grouped: dict[tuple, list] = {}
    for run in (
        runs
    ):  # warm-ups all have repetition -1 and come first, one whole block of cells after another
        key = (0, run.order_index // cells) if run.warmup else (1, run.repetition)
        grouped.setdefault(key, []).append(run)
    return [grouped[b] for b in sorted(grouped)]


def expansion(runs: list, hosts: list[str], mode: str) -> dict[str, list]:
    """host -> the runs it does (``each``), or is expected to do (``spread``: blocks dealt in turn)."""
    if mode == "each":
        return place(runs, hosts)
    share: dict[str, list] = {h: [] for h in hosts}
    for number, block in enumerate(blocks(runs)):
        share[hosts[number % len(hosts)]].extend(block)
    return share


def plan_hosts(config) -> tuple[list[str], str]:
    """The machines ``hugebench plan`` shows: the ``ssh`` list, or (a scheduler's machines are known only when
    the sweep asks it) ``workers`` placeholders; and a note saying which."""
    if config.ssh:
        return list(config.ssh), f"the ssh hosts of {config.describe()}"
    names = [f"machine {n}" for n in range(1, config.workers + 1)]
    return names, (
        f"{config.workers} machine(s) as `workers` says; their names come from {config.scheduler} "
        "when the sweep starts"
    )


def host_lines(runs: list, config, history) -> list[str]:
    """``hugebench plan``'s per-machine expansion of a cluster sweep: runs and estimated time per machine."""
    from hugebench.sweep.estimate import estimate, format_duration

    hosts, note = plan_hosts(config)
    share = expansion(runs, hosts, config.machines)
    how = (
        "every run on every machine"
        if config.machines == "each"
        else "whole repetition blocks to the next free machine; shown: the blocks dealt in turn"
    )
    lines = [f"cluster: machines: {config.machines} ({how}), over {note}:"]
    count = len(blocks(runs))
    for number, host in enumerate(hosts):
        mine = share[host]
        detail = (
            f"{len({r.cell_id for r in mine})} cells"
            if config.machines == "each"
            else "blocks " + (", ".join(str(b) for b in range(number, count, len(hosts))) or "none")
        )
        lines.append(
            f"  {host}: {len(mine)} runs ({detail}), {format_duration(estimate(mine, history).seconds)}"
        )
    return lines
