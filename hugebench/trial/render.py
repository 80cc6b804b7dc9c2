"""The verdict of ``hugebench try`` as text for a terminal (the JSON form is the verdict dict itself)."""

from __future__ import annotations


def effect(ratio: dict | None, better: str) -> str:
    """'0.62x as-is (38% less time) [95% CI 0.60-0.64]'."""
    if not ratio:
        return "no ratio (too few successful runs)"
    value = ratio["value"]
    if better == "lower":
        change = f"{abs(1 - value):.0%} {'less' if value < 1 else 'more'}"
    else:
        change = f"{abs(value - 1):.0%} {'more' if value > 1 else 'less'}"
    ci = (
        f" [95% CI {ratio['ci_lo']:.3f}-{ratio['ci_hi']:.3f}, {ratio['n']} {'pairs' if ratio['paired'] else 'runs'}]"
        if ratio["ci_lo"] is not None
        else " [no CI: too few runs]"
    )
    return f"{value:.3f}x as-is ({change}){ci}"


def memory(config: dict) -> str:
    """The memory cost line: the process tree's peak RSS vs as-is, and the cgroup's peak where measured."""
    what = (
        "process tree's peak RSS"
        if config.get("peak_rss_column") == "tree_peak_rss_bytes"
        else "peak RSS"
    )
    out = f"{what} {_times(config.get('peak_rss_ratio'))}"
    if config.get("cgroup_peak_ratio"):
        out += f"; cgroup memory peak {_times(config['cgroup_peak_ratio'])} (page cache included)"
    return out


def _times(ratio: dict | None) -> str:
    if not ratio:
        return "unknown"
    ci = (
        f" [95% CI {ratio['ci_lo']:.3f}-{ratio['ci_hi']:.3f}]" if ratio["ci_lo"] is not None else ""
    )
    return f"{ratio['value']:.2f}x as-is{ci}"


def answer(verdict: dict, plan_lines: list[str]) -> str:
    """What try prints: the verdict; with --aged the whole try's line once, then each memory state's verdict
    with only its own runs, cut and caveats."""
    states = verdict.get("by_memory_state")
    if not states:
        return text(verdict, plan_lines)
    out = list(plan_lines)
    for memory, each in states.items():
        out.append(
            f"== on a {memory.split(':')[0]} machine (memory_state {memory}; {each['runs']} runs) =="
        )
        out.append(text(each, each.get("plan", [])))
    return "\n".join(out)


def text(verdict: dict, plan_lines: list[str]) -> str:
    better, best = verdict["better"], verdict["best"]
    what = "time" if verdict["metric"] == "window_s" else verdict["metric"]
    lines = list(plan_lines)
    if verdict.get("as_is"):
        lines.append(verdict["as_is"])
    if verdict["recommend"] == "best":
        lines.append(
            f"VERDICT: use {best['name']}: {what} {effect(best['ratio'], better)}; resolved at 95%."
        )
        simpler = best.get("simpler_unresolved") or []
        if simpler:
            lines.append(
                f"  simpler and as good within noise, but not resolved better than as-is on their own runs "
                f"(so not recommended): {'; '.join(simpler)}"
            )
        others = [t for t in best.get("ties") or [] if t not in simpler]
        if others:
            lines.append(
                f"  as good within noise (the simplest resolved change is shown): {'; '.join(others)}"
            )
    elif verdict.get("no_difference"):
        lines.append(
            f"VERDICT: keep as-is: no difference worth deploying. Every configuration left is within "
            f"±{verdict['margin']:.0%} of as-is (95% CI); the best, {best['name']}: {what} "
            f"{effect(best['ratio'], better)}."
        )
    elif best:
        state = "resolved worse" if best["class"] == "worse" else "not resolved"
        lines.append(
            f"VERDICT: keep as-is. The best other configuration, {best['name']}: {what} "
            f"{effect(best['ratio'], better)} ({state})."
        )
    else:
        lines.append("VERDICT: keep as-is: no other configuration has a successful run to compare.")
    if best:
        lines.append(f"  memory: {memory(best)}")
        cov = best["hp_coverage"]
        lines.append(
            f"  huge-page coverage: {'unknown' if cov is None else f'{cov:.0%}'} (median of its runs; "
            f"as-is: {_cov(verdict['baseline'])})"
        )
        if best["allocator_proof"]:
            lines.append(f"  allocator: {best['allocator_proof']}")
    lines += _deploy(verdict["deploy"])
    lines.append("Other configurations (vs as-is):")
    for config in verdict["others"]:
        lines.append(f"  {config['class']:17s} {config['name']}: {_other(config, better)}")
    if verdict["caveats"]:
        lines.append("Caveats:")
        lines += [f"  - {c}" for c in verdict["caveats"]]
    return "\n".join(lines)


def _cov(config: dict) -> str:
    return "unknown" if config["hp_coverage"] is None else f"{config['hp_coverage']:.0%}"


def _other(config: dict, better: str) -> str:
    if config["cut"]:
        return "cut to fit the budget"
    if config["class"] == "failed":
        return f"failed: {config.get('error', 'every run failed')}"
    out = effect(config["ratio"], better)
    if config.get("equivalent"):
        out += "; no difference worth deploying"
    if config["dropped"]:
        out += f"; dropped: {config['dropped']}"
    return out


SCOPES = {
    "per-process": "this program only",
    "systemd": "a systemd service (systemctl edit SERVICE)",
    "machine-wide": "the whole machine (as root)",
}


def _deploy(dep: dict | None) -> list[str]:
    """The deploy lines, least invasive first; the machine-wide one with what else it changes."""
    if not dep:
        return []
    lines = ["How to deploy it (least invasive first):"]
    for n, line in enumerate(dep.get("lines") or [], 1):
        shell = line["shell"].splitlines()
        lines.append(f"  {n}. {SCOPES.get(line['scope'], line['scope'])}: {shell[0]}")
        lines += [f"       {more}" for more in shell[1:]]
        if line["scope"] == "machine-wide":
            lines.append(f"     also changes: {line['affects']}")
            if dep.get("thp_per_process") and n == 1:
                lines.append(f"     per process instead: {dep['thp_per_process']}")
    if not dep.get("lines"):
        lines.append("  nothing to change")
    return lines
