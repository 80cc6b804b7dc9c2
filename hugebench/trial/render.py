"""The verdict of ``hugebench try`` as text for a terminal (the JSON form is ``Verdict.to_dict()``): the short
form by default (at most MAX_LINES lines: decision, effect with CI, memory, deploy, a tally of the rest) and
the full one of ``--details``, either fitted to the terminal's width."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import replace

from hugebench.measure.phases import COVERAGE_EXPECTED
from hugebench.report.terminal import wrap_lines as fit
from hugebench.trial.guards import lines as guard_lines
from hugebench.trial.verdict_types import Configuration, Deploy, Interval, Ratio, Verdict, ends


def effect(ratio: Ratio | None, better: str) -> str:
    """'0.62x as-is (38% less time) [95% CI 0.60-0.64, 8 pairs]'; a selection interval shared by K
    configurations says so ('95% CI jointly over 12'); an end not bounded yet is 0 or inf."""
    if not ratio:
        return "no ratio (too few successful runs)"
    value = ratio.value
    if better == "lower":
        change = f"{abs(1 - value):.0%} {'less' if value < 1 else 'more'}"
    else:
        change = f"{abs(value - 1):.0%} {'more' if value > 1 else 'less'}"
    return f"{value:.3f}x as-is ({change}) [{interval(ratio)}]"


def interval(ratio: Ratio) -> str:
    """The interval part of :func:`effect`."""
    if ratio.ci_lo is None and ratio.ci_hi is None and not ratio.n:
        return "no CI: too few runs"
    family = ratio.family or 1
    level = "95% CI" + (f" jointly over {family}" if family > 1 else "")
    return (
        f"{level} {ends(ratio.ci_lo, ratio.ci_hi)}, {ratio.n} {'pairs' if ratio.paired else 'runs'}"
    )


def built(iv: Interval) -> str:
    """How the verdict's one interval was built (:class:`.Interval`), for --details."""
    drift = f"x{iv.drift:.2f}" if iv.drift > 1.005 else "none seen"
    return (
        f"its interval: the fresh pairs' 95% confidence sequence {ends(iv.cs_lo, iv.cs_hi)}, widened to "
        f"cover a deployment timed alike in another window ({iv.pairs} pairs): such a check's own noise "
        f"and the drift between this try's blocks ({drift})"
    )


def beside(config: Configuration) -> str:
    """'; CPU time 0.55x' (the process tree's CPU time beside wall time, or wall beside CPU time)."""
    if config.cpu_ratio:
        return f"; CPU time {config.cpu_ratio.value:.2f}x"
    if config.wall_ratio:
        return f"; wall time {config.wall_ratio.value:.2f}x"
    return ""


def likely(verdict: Verdict) -> str:
    """'VERDICT: likely X (0.53x), the machine was busy: re-run quiet to confirm'."""
    best = verdict.best
    assert best is not None and best.ratio is not None  # recommend "likely" has a confirmed best
    return f"VERDICT: likely {best.name} ({best.ratio.value:.2f}x), {verdict.likely}"


def leaning(verdict: Verdict) -> str:
    """'VERDICT: keep as-is for now: X leads (0.57x as-is; 9 of 10 fresh pairs faster) but is not
    resolved; the machine was busy: re-run quiet to confirm'."""
    best = verdict.best
    assert best is not None and best.ratio is not None and verdict.leaning
    pairs, _, why = verdict.leaning.partition("; ")
    return (
        f"VERDICT: keep as-is for now: {best.name} leads ({best.ratio.value:.2f}x as-is; {pairs}) but "
        f"is not resolved; {why}"
    )


def memory(config: Configuration) -> str:
    """The memory cost line: the process tree's peak RSS vs as-is, and the cgroup's peak where measured."""
    what = (
        "process tree's peak RSS" if config.peak_rss_column == "tree_peak_rss_bytes" else "peak RSS"
    )
    out = f"{what} {_times(config.peak_rss_ratio)}"
    if config.cgroup_peak_ratio:
        out += f"; cgroup memory peak {_times(config.cgroup_peak_ratio)} (page cache included)"
    return out


def _times(ratio: Ratio | None) -> str:
    if not ratio:
        return "unknown"
    ci = f" [95% CI {ratio.ci_lo:.3f}-{ratio.ci_hi:.3f}]" if ratio.ci_lo is not None else ""
    return f"{ratio.value:.2f}x as-is{ci}"


def answer(
    verdict: Verdict,
    plan_lines: list[str],
    details: bool = True,
    width: int | None = None,
    reserve: int = 1,
) -> str:
    """What try prints: the verdict (``details``: every configuration and caveat, else the short form of
    trial.brief), each line fitted to ``width``; with --aged the whole try's line once, then each memory
    state's verdict with only its own runs, cut and caveats. ``reserve``: the lines printed after it (the
    results line, wrapped) that count against the short form's MAX_LINES."""
    axis, each_state = verdict.by_condition or (None, None)
    states = each_state if axis == "memory_state" else None
    regimes = each_state if axis == "regime" else None
    if not states and not regimes:
        return _one(verdict, plan_lines, details, width, reserve)
    if (
        not states and regimes and len(regimes) == 1
    ):  # the regime try held without being asked: one line says which
        (regime,) = regimes
        said = f"regime {regime}: {REGIME_SHORT[regime.split(':')[0]]}"
        if details:
            return "\n".join(fit([text(verdict, plan_lines, width), said], width))
        return "\n".join(short(verdict, plan_lines, width, said, reserve))
    out = list(plan_lines)
    for memory, each in (states or {}).items():
        out.append(
            f"== on a {memory.split(':')[0]} machine (memory_state {memory}; {each.runs} runs) =="
        )
        out.append(_one(each, list(each.plan or []), details, width))
    if verdict.disagreement:  # one configuration wins in one regime and loses in another: first
        out.insert(0, f"VERDICTS DISAGREE: {verdict.disagreement}")
    for regime, each in (regimes or {}).items():
        out.append(f"== {regime_title(regime)} (regime {regime}; {each.runs} runs) ==")
        out.append(_one(each, list(each.plan or []), details, width))
    return "\n".join(fit(out, width))


def _one(
    verdict: Verdict, plan_lines: list[str], details: bool, width: int | None, reserve: int = 1
) -> str:
    if details:
        return text(verdict, plan_lines, width)
    return "\n".join(short(verdict, plan_lines, width, reserve=reserve))


REGIME_SHORT = {  # one line under the answer at 80 columns
    "back-to-back": "runs back to back, free page reporting as found",
    "warm": "free page reporting held off (its deploy line says so), runs back to back",
    "cold": "idle before each run, as a job started after idle",
}
REGIME_TITLES = {
    "back-to-back": "back to back: a job run again at once or a service, free page reporting as found",
    "warm": "warm: back to back with free page reporting held off (a machine setting: deploy line)",
    "cold": "cold: a job started after {idle}, free page reporting as found",
}


def regime_title(regime: str) -> str:
    """The heading of one regime's verdict."""
    from hugebench.trial.matrix import regime_name

    kind = regime.split(":")[0]
    return REGIME_TITLES[kind].format(idle=regime_name(regime).removeprefix("after "))


def text(verdict: Verdict, plan_lines: list[str], width: int | None = None) -> str:
    better, best = verdict.better, verdict.best
    what = {"window_s": "time", "tree_cpu_s": "CPU time"}.get(verdict.metric, verdict.metric)
    lines = list(plan_lines)
    if verdict.as_is:
        lines.append(verdict.as_is)
    if verdict.recommend == "best" and best:
        lines.append(
            f"VERDICT: use {best.name}: {what} {effect(best.ratio, better)}{beside(best)}; confirmed "
            "on fresh pairs, resolved at 95%."
        )
    elif verdict.recommend == "likely" and best:
        lines.append(f"{likely(verdict)}: {what} {effect(best.ratio, better)}{beside(best)}.")
    elif verdict.guarded and verdict.resolved and best and best.kind == "better":
        lines.append(
            f"VERDICT: keep as-is: {best.name} wins on {what} ({effect(best.ratio, better)}) but "
            "a guarded metric refuses it (see the caveats)."
        )
    elif verdict.no_difference and best:
        lines.append(
            f"VERDICT: keep as-is: no difference worth deploying, within ±{verdict.margin:.0%} of "
            f"as-is (95% CI); {best_word(best, better)}, {best.name}: {what} {effect(best.ratio, better)}."
        )
    elif verdict.leaning and best:
        lines.append(f"{leaning(verdict)}. {_why_not(best, what, better)}")
    elif best:
        lines.append(f"VERDICT: keep as-is: no recommendation. {_why_not(best, what, better)}")
    else:
        lines.append("VERDICT: keep as-is: no other configuration has a successful run to compare.")
    if best:
        lines += [f"  {built(best.interval)}"] if best.interval else []
        lines += _phase_lines(best, what, better)
        lines += guard_lines(list(best.guards or []))
    if best:
        lines.append(f"  memory: {memory(best)}")
        cov = best.hp_coverage
        lines.append(
            f"  huge-page coverage: {'unknown' if cov is None else f'{cov:.0%}'} (median of its runs; "
            f"as-is: {_cov(verdict.baseline)})"
        )
        lines += _size_lines(best, verdict.baseline)
        if best.allocator_proof:
            lines.append(f"  allocator: {best.allocator_proof}")
    lines += _deploy(verdict.deploy, width)
    if verdict.others:
        lines.append("Other configurations (vs as-is):")
    for config in verdict.others:
        lines.append(f"  {config.kind:17s} {config.name}: {_other(config, better)}")
    lines += _page_size_lines(verdict.page_sizes, better)
    if verdict.caveats:
        lines.append("Caveats:")
        lines += [f"  - {c}" for c in verdict.caveats]
    return "\n".join(fit(lines, width))


def _size_lines(best: Configuration, baseline: Configuration) -> list[str]:
    """Which folio sizes held the memory (best and as-is) and, when the best's coverage is short, why."""

    out = []
    if best.folio_shares:
        out.append(f"  folio sizes: {folio_text(best)} (as-is: {folio_text(baseline)})")
    cov = best.hp_coverage
    if best.gap and cov is not None and cov < COVERAGE_EXPECTED:
        out.append("  not on 2 MiB pages, by reason (largest first):")
        out += [f"    {line}" for line in best.gap]
    return out


MISSED_SHARE = 0.2  # 2 MiB folios this far below the huge-page coverage: not read at the same time


def folio_text(config: Configuration) -> str:
    """Its folio sizes ('2048kB 97%, 4kB 3%'), unless they contradict its huge-page coverage: memory on 2 MiB
    pages (AnonHugePages) is in 2 MiB folios, so a 2 MiB share well below the coverage means the few
    per-size readings did not see the memory the coverage did; then it says so, not '4kB 100%' beside a
    coverage of 96% (issue 55)."""
    from hugebench.report.coverage import shares_text

    shares, cov = config.folio_shares or {}, config.hp_coverage
    if shares and cov is not None and shares.get("2048kB", 0.0) + MISSED_SHARE < cov:
        return (
            f"not read while its huge pages were resident (its per-size readings saw "
            f"{shares_text(shares)}; its huge-page coverage {cov:.0%})"
        )
    return shares_text(shares)


def _page_size_lines(sizes: Mapping | None, better: str) -> list[str]:
    """The size sets tried (mTHP and THP always), each with its effect, memory and folio sizes, and the
    smallest set within noise of the best."""
    from hugebench.report.coverage import shares_text

    if not sizes:
        return []
    out = ["Page sizes (vs as-is; memory: process tree's peak RSS):"]
    for s in sizes["sets"]:
        memory = "n/a" if s["memory"] is None else f"{s['memory']:.2f}x"
        out.append(
            f"  {s['name']}: {effect(Ratio.from_dict(s['ratio']), better)}; memory {memory}; folio sizes "
            f"{shares_text(s['folio_shares'])}"
        )
    out.append(
        f"  smallest size set within noise of the best ({sizes['best']}): {sizes['smallest']}"
    )
    return out


def _cov(config: Configuration) -> str:
    return "unknown" if config.hp_coverage is None else f"{config.hp_coverage:.0%}"


def _other(config: Configuration, better: str) -> str:
    if config.cut:
        return "cut to fit the budget"
    if config.kind == "failed":
        return f"failed: {config.error or 'every run failed'}"
    out = effect(config.ratio, better)
    if config.equivalent:
        out += "; no difference worth deploying"
    if config.dropped:
        out += f"; dropped: {config.dropped}"
    return out


SCOPES = {
    "per-process": "this program only",
    "systemd": "a systemd service (systemctl edit SERVICE)",
    "machine-wide": "the whole machine (as root)",
}


def _deploy(dep: Deploy | None, width: int | None = None) -> list[str]:
    """The deploy lines, least invasive first; the machine-wide one with what else it changes. A command
    longer than ``width`` goes on continued lines below its scope."""
    if not dep:
        return []
    lines = ["How to deploy it (least invasive first):"]
    for n, line in enumerate(dep.lines, 1):
        shell = line.shell.splitlines()
        scope = SCOPES.get(line.scope, line.scope)
        head = (
            f"  {n}. {scope}, with any line above:"
            if line.required and n > 1
            else f"  {n}. {scope}:"
        )
        if width and len(head) + 1 + len(shell[0]) > width and len(shell) == 1:
            lines += [head, *shell_lines(shell[0], "       ", width)]
        else:
            lines.append(f"{head} {shell[0]}")
        lines += [f"       {more}" for more in shell[1:]]
        if line.scope == "machine-wide":
            lines.append(f"     also changes: {line.affects}")
            if dep.thp_per_process and n == 1:
                lines.append(f"     per process instead: {dep.thp_per_process}")
    if not dep.lines:
        lines.append("  nothing to change")
    return lines


def _why_not(best: Configuration, what: str, better: str) -> str:
    """The reason a keep-as-is verdict gives for its best configuration."""
    conf = best.confirmation
    if not (conf and conf.pairs):
        return (
            f"The selection's {best_word(best, better).removeprefix('the ')}, {best.name}, was not "
            "confirmed on fresh pairs "
            f"({conf.ended if conf else 'not run'})."
        )
    state = "resolved worse" if best.kind == "worse" else "not resolved"
    return (
        f"The selection's {best_word(best, better).removeprefix('the ')}, {best.name}, on fresh "
        f"pairs: {what} "
        f"{effect(best.ratio, better)} ({state}; {conf.ended})."
    )


def _phase_lines(best: Configuration, what: str, better: str) -> list[str]:
    """The selection's ratio of the best (shown, never the effect), its wall time beside a CPU metric, and
    the configurations the selection could not tell from it."""
    out = []
    if best.confirmation and best.confirmation.pairs and best.selection_ratio:
        out.append(
            f"  in the selection (chosen as the best, so flattered): {effect(best.selection_ratio, better)}"
        )
    if best.wall_ratio:
        out.append(f"  wall time on the same fresh pairs: {effect(best.wall_ratio, better)}")
    if best.cpu_ratio:
        out.append(
            f"  the process tree's CPU time on the same fresh pairs: {effect(best.cpu_ratio, better)}"
        )
    if best.ties:
        out.append(
            f"  not told apart from it in the selection (not confirmed themselves): {'; '.join(best.ties)}"
        )
    return out


# a shell word: quoted parts kept whole, so a continuation never lands inside quotes
_SHELL_WORD = re.compile(r"""(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s'"\\])+""")


def shell_lines(shell: str, indent: str, width: int | None) -> list[str]:
    """A shell command split at its words onto continued lines (`` \\``) that fit ``width``; a word
    longer than the width stays whole (a path is never broken)."""
    out, line = [], indent
    for word in _SHELL_WORD.findall(shell):
        if width and line.strip() and len(line) + 1 + len(word) + 2 > width:
            out.append(line + " \\")
            line = indent + "  " + word
        else:
            line = f"{line} {word}" if line.strip() else line + word
    return out + [line]


# -- the short form (the default; --details prints text's full one) ----------------------------------


MAX_LINES = 12  # the whole default answer, the results line included (issue 43)


def short(
    verdict: Verdict,
    plan_lines: list[str],
    width: int | None = None,
    regime: str | None = None,
    reserve: int = 1,
) -> list[str]:
    """The verdict in at most MAX_LINES - ``reserve`` lines (the results line follows: ``reserve`` is how
    many lines it wraps to), each wrapped to ``width`` (None: not wrapped); ``regime``: the line saying which
    regime was measured."""
    better, best = verdict.better, verdict.best
    what = {"window_s": "time", "tree_cpu_s": "CPU time"}.get(verdict.metric, verdict.metric)
    head = [_decision(_clipped(verdict))]
    if best:
        confirmed = " on fresh pairs" if best.confirmation and best.confirmation.pairs else ""
        head.append(f"  effect{confirmed}: {what} {effect(best.ratio, better)}{beside(best)}")
        cov, base_cov = best.hp_coverage, verdict.baseline.hp_coverage
        rss = best.peak_rss_ratio
        head.append(
            f"  memory: peak RSS {'unknown' if not rss else format(rss.value, '.2f') + 'x'} as-is; "
            f"huge pages {_share(cov)} (as-is {_share(base_cov)})"
        )
    deploy = _deploy_short(verdict.deploy, width)
    tail = [_tally(verdict)] if _tally(verdict) else []
    tail += [regime] if regime else []
    if plan_lines:
        tail.append(plan_lines[0].split("; selection:")[0])
    tail.append("more: --details (every configuration and caveat), --json")
    # the regime's heading line is printed with the answer: it counts against the same 12 lines
    limit = MAX_LINES - (1 if regime else 0) - (max(reserve, 1) - 1)
    shown = fit(head + deploy, width)
    too_long = len(shown) + 1 >= limit or (width and any(len(x) > width for x in shown))
    if deploy and verdict.deploy and too_long:  # (deploy has lines only from verdict.deploy)
        deploy = _deploy_elsewhere(verdict.deploy)  # a command too long to show whole here
        shown = fit(head + deploy, width)
    out = shown + fit(tail, width)
    return out if len(out) < limit else shown + fit(tail[-1:], width)


NAME_ROOM = 56  # a configuration's name longer than this is shortened in the short form (whole in --details)


def _clipped(verdict: Verdict) -> Verdict:
    """The verdict with the best's name shortened in its middle (marked with ...) when it is too long."""
    best = verdict.best
    if not best or len(best.name) <= NAME_ROOM:
        return verdict
    name = best.name
    half = (NAME_ROOM - 3) // 2
    return replace(verdict, best=replace(best, name=f"{name[:half]}...{name[-half:]}"))


def _deploy_elsewhere(dep: Deploy) -> list[str]:
    """One line instead of a deploy command too long for the short form: where it is, whole."""
    scope = dep.lines[0].scope
    return [
        f"Deploy ({SCOPES.get(scope, scope)}): the command is too long for this answer; "
        "--details prints it, --export-markdown FILE and --json keep it whole"
    ]


def _share(value) -> str:
    return "unknown" if value is None else f"{value:.0%}"


def _decision(verdict: Verdict) -> str:
    """The decision alone: use it, or keep as-is and the one reason; then the best's name."""
    best = verdict.best
    if verdict.recommend == "best" and best:
        return f"VERDICT: use {best.name}"
    if verdict.recommend == "likely" and best:
        return likely(verdict)
    if verdict.no_difference and best:
        return (
            f"VERDICT: keep as-is: no difference worth deploying (within ±{verdict.margin:.0%}); "
            f"{best_word(best, verdict.better)}: {best.name}"
        )
    if not best:
        return "VERDICT: keep as-is: no other configuration has a successful run to compare"
    if verdict.leaning:
        return leaning(verdict)
    conf = best.confirmation
    if not (conf and conf.pairs):
        return (
            f"VERDICT: keep as-is: {best_word(best, verdict.better, 'the best so far')}, {best.name}, "
            "was not confirmed "
            f"({conf.ended if conf else 'not run'})"
        )
    state = "resolved worse" if best.kind == "worse" else "not resolved"
    return (
        f"VERDICT: keep as-is: {best_word(best, verdict.better)}, {best.name}, is {state} on fresh "
        f"pairs ({conf.ended})"
    )


def best_word(best: Configuration, better: str, word: str = "the best") -> str:
    """'the best', or, when its ratio is on as-is's side of 1 (fewer transactions, more time), 'the
    closest to as-is (none was better)': a configuration worse than as-is is never called the best."""
    ratio = best.ratio
    if ratio is None:
        return word
    ahead = ratio.value < 1 if better == "lower" else ratio.value > 1
    return word if ahead else "the closest to as-is (none was better)"


def _deploy_short(dep: Deploy | None, width: int | None) -> list[str]:
    """The least invasive deploy line in full; the others named (their text is in --details)."""
    if not dep:
        return []
    ways = dep.lines
    if not ways:
        return ["Deploy: nothing to change"]
    first = ways[0]
    lines = [f"Deploy ({SCOPES.get(first.scope, first.scope)}):"]
    if first.scope == "systemd":
        lines += [f"    {s}" for s in first.shell.splitlines()]
    else:
        lines += shell_lines(first.shell, "    ", width)
    if first.scope == "machine-wide":
        lines.append(f"  also changes: {first.affects}")
    if len(ways) > 1:
        others = " or ".join(w.scope for w in ways[1:])
        lines.append(f"  {others}: see --details")
    return lines


def unstable_count(verdict: Verdict) -> int:
    """The configurations (baseline, best, others; each once) the verdict marks unstable."""
    configs = (verdict.baseline, verdict.best, *verdict.others)
    return len({c.name for c in configs if c and c.unstable})


def _tally(verdict: Verdict) -> str:
    """'Others: 1 better, 3 same within noise, 7 dropped; caveats: variable, unstable (4)': a caveat kind
    by the number of its lines, except unstable, counted in configurations (its caveat lines name three and
    list the rest on one line)."""
    classes = Counter("dropped" if c.dropped else c.kind for c in verdict.others)
    kinds = Counter(c.split(":")[0].split(" too,")[0] for c in verdict.caveats)
    if kinds.get("unstable"):
        kinds["unstable"] = unstable_count(verdict)
    parts = []
    if classes:
        parts.append("others: " + ", ".join(f"{n} {k}" for k, n in classes.items()))
    if kinds:
        parts.append(
            "caveats: " + ", ".join(k if n == 1 else f"{k} ({n})" for k, n in kinds.items())
        )
    return "; ".join(parts).capitalize() if parts else ""
