"""What ``hugebench try`` may run here: the configurations (allocator x THP mode x text pages) this machine
and this user can do, in the order they are kept when the budget is cut, and the experiment file that runs them.

A configuration is one cell of an ordinary ``command`` experiment. The file written here goes through the
same load -> plan -> sweep path as any other, so ``hugebench sweep`` of it re-runs the same cells with the
same run ids (and resumes into the same results directory).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hugebench import kernel
from hugebench.errors import HugebenchError, PrivilegeError, SpecError, ToolMissingError
from hugebench.kernel.host import LOCAL, Host
from hugebench.knob_catalogue import MTHP_PREFIX, REPORTING_ORDER, THP_DIR, mthp_name
from hugebench.machine import allocators as alloc_mod
from hugebench.workloads.command.template import BUILTIN_FIELDS

THP_ORDER = ("never", "madvise", "always")
SELECTIVE = (
    "selective"  # --select RULE: libhbselect.so, huge pages for the regions the rule selects
)
AS_IS = "as-is"  # the program untouched: no preload, its own malloc (hugebench.machine.allocators)
# Huge-page-aware settings tried besides as-is (TCMalloc when installed), in the order they are kept:
# glibc's own tunable first, the smallest change (no preload for a program on glibc's malloc).
HUGE_AWARE = ("glibc-hugetlb", "jemalloc-thp", "mimalloc-large", "tcmalloc")
# Multi-size THP size sets tried where the kernel offers the sizes (as root): each set's sizes 'always', the
# other sizes named here 'never' (a 64 KiB-only cell turns 2 MiB off). Kept short on purpose: the sets the
# published results name (64 KiB: arm64's kernel build; 16+64 KiB: small folios with little bloat; 64 KiB
# + 2 MiB: fewer faults beside full TLB reach); racing in the schedule drops the ones that lose.
MTHP_SETS = (("64kB",), ("16kB", "64kB"), ("64kB", "2048kB"))


@dataclass(frozen=True)
class Request:
    """What the user asked for on the command line (hugebench.cli.try_ fills it)."""

    argv: tuple
    budget_s: float = 600.0
    metric: str = "wall"  # wall | json:KEY | regex:PATTERN
    higher_is_better: bool = False
    driver: str | None = None  # --driver NAME[:TEST]: the driver's metrics, its throughput judged
    guards: tuple = ()  # --guard [higher:][NAME=]json:KEY|regex:RE: recorded and guarded
    warmup: int = 0  # --warmup N: uncounted runs of each configuration before its first block
    window: str = "process"
    stdin: str | None = None
    cwd: str | None = None
    env: dict = field(default_factory=dict)
    server: str | None = None
    ready: str | None = None
    text_pages: bool = False
    aged: bool = (
        False  # --aged: every configuration on a fresh and on a fragmented machine (memory_state)
    )
    # --aged-level P%: the share of free 2 MiB blocks the fragmented state pins (None: not given, 100)
    aged_level: int | None = None
    allocator_paths: tuple = ()  # --allocator X.so
    # --select RULE: one more configuration, 'selective' (libhbselect.so: huge pages for those regions alone)
    select: str | None = None
    thp: tuple = ()  # --thp MODE: only these (refused when this user cannot set one)
    only: tuple = ()  # --allocators a,b: only these built-in settings (as-is is always measured)
    # --regime back-to-back | cold | both | warm (hugebench.system.regime); None: both (back to back and
    # after idle, reporting as found) where the machine reports free pages (matrix.default_regime), the
    # machine as found elsewhere
    regime: str | None = None
    idle_s: float = 4.0  # --idle: the cold regime's idle gap before each run
    name: str | None = None
    mthp: bool = False  # the CLI sets it unless --no-mthp: try multi-size THP size sets (MTHP_SETS)


@dataclass(frozen=True)
class Matrix:
    """The configurations of a try: cells in keep order (the baseline, as-is, first) and what was left out;
    ``linked``: the allocator the program brings itself (its as-is malloc), None for glibc's."""

    cells: list
    baseline: dict
    thp_found: str
    notes: list = field(
        default_factory=list
    )  # said before running: modes not settable, allocators missing
    user_allocators: dict = field(default_factory=dict)
    linked: str | None = None


def available_allocators(
    paths=(), only=(), linked: str | None = None
) -> tuple[list[str], dict, list[str]]:
    """(names usable here, user allocator table, notes): as-is, glibc forced when the program links another
    allocator (``linked``), each built-in huge-page-aware setting whose library resolves (or those of
    ``only``), plus one entry per ``--allocator X.so`` (refused when the file does not exist)."""
    names, notes, user = [AS_IS], [], {}
    if linked and (not only or "glibc" in only):
        names.append("glibc")
    unknown = [n for n in only if n not in alloc_mod.BUILTIN or alloc_mod.BUILTIN[n].mode == "void"]
    if unknown:
        raise SpecError(
            f"--allocators: unknown {', '.join(unknown)}; known: "
            + ", ".join(n for n, a in alloc_mod.BUILTIN.items() if a.mode != "void")
        )
    for name in [n for n in only if n not in ("glibc", AS_IS)] if only else HUGE_AWARE:
        try:
            alloc_mod.BUILTIN[name].resolve()
        except ToolMissingError as exc:
            if only:
                raise
            if name != "tcmalloc":  # TCMalloc is tried when present; the others are expected
                notes.append(f"{name} left out: {exc}")
            continue
        names.append(name)
    for path in paths:
        real = os.path.abspath(path)
        if not os.path.isfile(real):
            raise ToolMissingError(f"--allocator {path}: no such file")
        name = re.sub(r"[^A-Za-z0-9._-]", "-", Path(real).name.split(".so")[0]) or "custom"
        name = f"{name}-custom" if name in alloc_mod.BUILTIN or name in user else name
        user[name] = {"path": real}
        names.append(name)
    return names, user, notes


def thp_modes(
    asked=(), host: Host = LOCAL, euid: int | None = None
) -> tuple[list[str], str, list[str]]:
    """(THP modes to try, the mode as found, notes). Root sets every mode; without root only 'never' (per
    process, prctl) and the mode as found can be had: asking for another is refused, naming what still runs."""
    found = kernel.thp_modes(host).get("enabled")
    if found is None:
        raise HugebenchError(
            f"{host.sys}/{THP_DIR}/enabled is missing: this kernel has no "
            "THP, and try compares THP modes; run your program with hugebench sweep instead"
        )
    root = (os.geteuid() if euid is None else euid) == 0
    settable = list(THP_ORDER) if root else [m for m in THP_ORDER if m in ("never", found)]
    wanted = list(asked) or list(THP_ORDER)
    missing = [m for m in wanted if m not in settable]
    notes = []
    if missing and asked:
        raise PrivilegeError(
            f"THP {', '.join(missing)} cannot be set by uid {os.geteuid()} (THP is {found!r} "
            f"here; without root only 'never' per process and {found!r} as found): "
            f"still possible: --thp {' --thp '.join(settable)}; or run try as root"
        )
    if missing:
        notes.append(
            f"not root: THP {', '.join(missing)} left out (needs root); tried: "
            + ", ".join(
                f"{m} (per process)" if m == "never" and m != found else f"{m} (as found)"
                for m in settable
            )
        )
    return [m for m in THP_ORDER if m in wanted and m in settable], found, notes


def build(request: Request, host: Host = LOCAL) -> Matrix:
    """The cells of this try, as-is first, then in the order a cut keeps them: one change from as-is first
    (each allocator setting under the mode as found, then another THP mode), then the combinations."""
    linked = linked_allocator(request)
    names, user, notes = available_allocators(request.allocator_paths, request.only, linked)
    if request.select is not None:
        user[SELECTIVE], names = selective_allocator(request.select), [*names, SELECTIVE]
    modes, found, thp_notes = thp_modes(request.thp, host)
    if found not in modes:
        modes = [found] + modes  # as-is is always measured, whatever --thp asks
    texts = ["off", "thp"] if request.text_pages else [None]
    baseline = _cell(AS_IS, found, texts[0])
    cells = [baseline]
    candidates = [_cell(a, m, t) for t in texts for a in names for m in modes if _sensible(a, m, t)]
    # per-process changes (an allocator's setting) before system-wide ones (the machine's THP mode)
    cells += sorted(
        (c for c in candidates if c != baseline),
        key=lambda c: (_distance(c, baseline), c["thp"] != found, candidates.index(c)),
    )
    sizes, mthp_notes = mthp_sets(request, host)
    if sizes:
        cells = _with_mthp(cells, sizes, kernel.mthp_modes(host), found)
        baseline = cells[0]
    notes += mthp_notes
    if request.aged:
        level = 100 if request.aged_level is None else request.aged_level
        cells, baseline = _aged(_aged_order(cells, found), level)
    regime, regime_note = default_regime(request, host)
    if regime:
        cells = [{**cell, "regime": r} for cell in cells for r in regimes(request, host, regime)]
        baseline = cells[0]
    notes += [regime_note] if regime_note else []
    if linked:
        notes.append(
            f"the program brings its own malloc ({linked}): as-is measures it untouched; glibc settings "
            f"preload libc so that glibc's malloc wins (named 'forced over the linked {linked}')"
        )
    return Matrix(cells, baseline, found, notes + thp_notes, user, linked)


def mthp_sets(request: Request, host: Host = LOCAL, euid: int | None = None):
    """(size sets to try, notes): :data:`MTHP_SETS` whose sizes this kernel offers, as root, unless
    --no-mthp; none with a note saying why otherwise."""
    if not request.mthp:
        return [], []
    offered = kernel.mthp_modes(host)
    if not offered:
        return [], []
    if (os.geteuid() if euid is None else euid) != 0:
        return [], ["not root: multi-size THP sizes (hugepages-<N>kB/enabled) left as found"]
    sets = [s for s in MTHP_SETS if all(size in offered for size in s)]
    return sets, []


def sets_name(sizes: tuple) -> str:
    return "+".join(sizes) + (" only" if len(sizes) == 1 else "")


def _with_mthp(cells: list, sets: list, found_modes: dict, thp_found: str) -> list:
    """Every cell with the mTHP knobs the sets touch as found, then one cell per set (as-is allocator, THP
    mode as found) with the set's sizes 'always' and the other touched sizes 'never'."""
    touched = sorted({size for s in sets for size in s}, key=lambda n: int(n[:-2]))
    found = {mthp_name(n): found_modes[n] for n in touched}
    out = [{**cell, **found} for cell in cells]
    for sizes in sets:
        knobs = {mthp_name(n): "always" if n in sizes else "never" for n in touched}
        cell = {**cells[0], **knobs, "mthp": sets_name(sizes)}
        if {k: v for k, v in cell.items() if k != "mthp"} not in out:
            out.append(cell)
    return out


def mthp_knobs(cell: dict) -> dict:
    """The cell's multi-size THP settings ({'thp.mthp.64kB': 'always', ...})."""
    return {k: v for k, v in cell.items() if k.startswith(MTHP_PREFIX)}


def linked_allocator(request: Request) -> str | None:
    """The allocator the measured program (the server's when there is one) brings besides glibc's, from
    its ELF file (hugebench.machine.linked), or None."""
    from hugebench.machine.linked import linked_allocator as from_elf
    from hugebench.machine.program import resolve, user_path

    measured = shlex.split(request.server)[0] if request.server else request.argv[0]
    path, _ = resolve(measured, user_path(request.env), os.path.abspath(request.cwd or "."))
    return from_elf(path)


def default_regime(request: Request, host: Host = LOCAL) -> tuple[str | None, str | None]:
    """(the regime this try measures, a note when it was not asked for). On a machine whose balloon reports
    free pages, the conditions between runs decide what a huge-page fault costs (issue 40: the same deployed
    command 1.20 s back to back, 3.32 s after 4 s idle), so they are measured, never left to how the runs
    happen to fall: back to back and after idle, each with its own verdict, free page reporting left as
    found in both (what the deploy lines will meet; holding it off is a machine setting, ``--regime warm``
    names it in every configuration with its sysfs line). Elsewhere, and with --aged (its memory states are
    the condition), nothing: the machine as found."""
    from hugebench.kernel.reporting import page_reporting

    if request.regime or request.aged:
        return request.regime, None
    if not page_reporting(host)["active"]:
        return None, None
    return "both", (
        "free page reporting is on here (idle 2 MiB blocks go back to the host, and a huge-page fault "
        f"on one costs more): measured back to back and after {request.idle_s:g} s idle (a job run "
        "again at once, a job started after idle), reporting left as found, a verdict for each; "
        "--regime back-to-back or cold for one"
    )


def regimes(request: Request, host: Host = LOCAL, regime: str | None = None) -> list[str]:
    """The regime axis values of --regime, or of ``regime`` chosen by :func:`default_regime`
    (back-to-back: at once; cold: idle first; both: the two; warm: back to back with free page
    reporting held off, a machine setting each configuration then names)."""
    from hugebench.kernel.reporting import page_reporting
    from hugebench.system.regime import canonical

    regime = regime or request.regime
    if request.aged:
        raise SpecError("--regime and --aged: choose one per try (each gives a verdict per state)")
    if regime not in ("back-to-back", "warm", "cold", "both"):
        raise SpecError(f"--regime {regime!r}: give back-to-back, cold, both or warm")
    wanted = ["back-to-back", "cold"] if regime == "both" else [regime]
    if "warm" in wanted and os.geteuid() != 0 and page_reporting(host)["active"]:
        raise PrivilegeError(
            f"--regime warm holds free page reporting off ({REPORTING_ORDER}): that needs root; "
            "run try as root, or use --regime back-to-back or cold"
        )
    return [canonical(f"cold:{request.idle_s:g}s" if w == "cold" else w) for w in wanted]


def _aged_order(cells: list, found: str) -> list:
    """The keep order for --aged: aging only matters to what asks for huge pages, so at each distance from
    as-is those come first, a per-process change (an allocator's setting) and a system-wide one (the THP mode)
    in turn, so that a small budget keeps both kinds; the configurations that ask for none come last."""
    base, out = cells[0], [cells[0]]
    for distance in sorted({_distance(c, base) for c in cells[1:]}):
        same = [c for c in cells[1:] if _distance(c, base) == distance]
        per = [c for c in same if uses_huge_pages(c) and c["thp"] == found]
        system = [c for c in same if uses_huge_pages(c) and c["thp"] != found]
        for i in range(max(len(per), len(system))):
            out += [c[i] for c in (per, system) if i < len(c)]
        out += [c for c in same if not uses_huge_pages(c)]
    return out


def aged_states(level: int = 100) -> tuple[str, str]:
    """The memory states of try --aged: fresh, and fragmented at ``level`` % (memory_state's own values)."""
    return ("fresh", f"fragmented:{level}%")


def _aged(cells: list, level: int) -> tuple[list, dict]:
    """Each configuration in both memory states, side by side in keep order (as-is first in each);
    refused up front where the states cannot be made."""
    from hugebench.system.aging import why_not_here

    why = why_not_here()
    if why:
        raise PrivilegeError(f"--aged: {why}; run try as root, or leave --aged out")
    aged = [{**cell, "memory_state": state} for cell in cells for state in aged_states(level)]
    return aged, aged[0]


def uses_huge_pages(cell: Mapping) -> bool:
    """The configuration asks for huge pages: THP always, a huge-page-aware allocator setting, or text on THP."""
    return (
        cell["thp"] == "always"
        or cell.get("thp.mthp.2048kB") == "always"
        or cell["allocator"] in ("jemalloc-thp", "mimalloc-large", "glibc-hugetlb")
        or cell.get("text_pages") == "thp"
    )


def _cell(allocator: str, thp: str, text: str | None) -> dict:
    cell = {"allocator": allocator, "thp": thp}
    if text is not None:
        cell["text_pages"] = text
    return cell


def selective_allocator(rule_text: str) -> dict:
    """The user allocator entry that deploys a --select rule: libhbselect.so with the normalised rule."""
    from hugebench.machine import select_rule

    rule = select_rule.parse(rule_text)
    return {
        "path": select_rule.library(),
        "env": {select_rule.ENV_VAR: rule.normalised()},
        "description": f"selective: huge pages for {rule.describe()} alone",
    }


def _sensible(allocator: str, thp: str, text: str | None) -> bool:
    """glibc's hugetlb tunable and the selective preload only madvise (a change under THP 'madvise'
    alone); text on THP needs THP on."""
    if allocator in ("glibc-hugetlb", SELECTIVE) and thp != "madvise":
        return False
    return not (text == "thp" and thp == "never")


def _distance(cell: dict, base: dict) -> int:
    return sum(cell.get(k) != base.get(k) for k in set(cell) | set(base))


def describe(cell: Mapping, thp_found: str, linked: str | None = None) -> str:
    """A configuration as the verdict names it: 'jemalloc-thp, THP always (+text on THP)'; glibc's settings
    over a program that links another allocator say so: 'glibc forced over the linked jemalloc'."""
    thp = cell["thp"] + (" (as found)" if cell["thp"] == thp_found else "")
    text = {"thp": ", program text on huge pages", "off": ""}.get(cell.get("text_pages", ""), "")
    memory = f", {cell['memory_state'].split(':')[0]} memory" if cell.get("memory_state") else ""
    regime = f", {regime_name(cell['regime'])}" if cell.get("regime") else ""
    mthp = f", mTHP {cell['mthp']}" if cell.get("mthp") else ""
    return f"{allocator_name(cell['allocator'], linked)}, THP {thp}{mthp}{text}{memory}{regime}"


def regime_name(regime: str) -> str:
    """How a configuration's name says its regime: 'back to back', 'after 4 s idle', 'back to back,
    free page reporting held off' (warm: a machine setting, with its own deploy line)."""
    from hugebench.system.regime import parse

    got = parse(regime)
    if got.kind == "cold":
        return f"after {got.idle_s:g} s idle"
    if got.kind == "warm":
        return "back to back, free page reporting held off"
    return "back to back"


def allocator_name(allocator: str, linked: str | None = None) -> str:
    """'glibc forced over the linked jemalloc' for glibc's settings when the program links another allocator
    (libc is preloaded so that glibc's malloc wins); the allocator's name otherwise."""
    table = alloc_mod.BUILTIN
    if linked and allocator in table and table[allocator].mode == "malloc":
        if table[allocator].library is None:
            return (
                f"glibc forced over the linked {linked}"
                if allocator == "glibc"
                else f"{allocator} (glibc forced over the linked {linked})"
            )
    return allocator


def metric_param(metric: str, higher: bool):
    """The command workload's ``metric`` from --metric (wall | json:KEY | regex:PATTERN)."""
    if metric in ("wall", "cpu", "", None):  # cpu: try compares the runs' CPU time (trial.schedule)
        if higher:
            raise SpecError(
                "--higher-is-better needs --metric json:KEY or regex:PATTERN (wall and CPU time are "
                "lower-better)"
            )
        return "wall"
    kind, _, pattern = metric.partition(":")
    if kind not in ("json", "regex") or not pattern:
        raise SpecError(
            f"--metric {metric!r}: give wall, json:KEY or regex:'PATTERN with ([0-9.]+)'"
        )
    from hugebench.columns import user_name_problem
    from hugebench.workloads import get

    usable = (
        kind == "json"
        and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", pattern)
        and pattern not in get("command").params
        and not user_name_problem(pattern)
    )
    name = (
        pattern if usable else "score"
    )  # the column the values land in; a regex has no name of its own
    return {kind: pattern, "name": name, "better": "higher" if higher else "lower"}


def metrics_param(request: Request):
    """The command workload's ``metric`` from --metric, --driver and --guard: one metric, or a list whose
    first is judged and the rest guarded."""
    if request.driver:
        if request.metric not in ("wall", "", None) or request.higher_is_better:
            raise SpecError("--driver gives the judged metric (its throughput): leave --metric out")
        name, _, test = request.driver.partition(":")
        first = {"driver": name, **({"test": test} if test else {})}
    else:
        first = metric_param(request.metric, request.higher_is_better)
    if not request.guards:
        return first
    return [first, *(guard_param(text, i) for i, text in enumerate(request.guards, 1))]


def guard_param(text: str, index: int) -> dict:
    """A metric from --guard [higher:|lower:][NAME=]json:KEY|regex:RE."""
    better = "lower"
    for word in ("higher", "lower"):
        if text.startswith(word + ":"):
            better, text = word, text[len(word) + 1 :]
    name = None
    m = re.match(r"([A-Za-z_][A-Za-z0-9_.]*)=(json|regex):", text)
    if m:
        name, text = m.group(1), text[len(m.group(1)) + 1 :]
    kind, _, pattern = text.partition(":")
    if kind not in ("json", "regex") or not pattern:
        raise SpecError(
            f"--guard {text!r}: give [higher:][NAME=]json:KEY or [higher:][NAME=]regex:'PATTERN ([0-9.]+)'"
        )
    if name is None:
        name = (
            pattern
            if kind == "json" and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.]*", pattern)
            else (f"guard{index}")
        )
    return {kind: pattern, "name": name, "better": better}


def experiment(request: Request, matrix: Matrix, name: str, timeout: float) -> dict:
    """The experiment file's content (a mapping; :func:`write` turns it into YAML)."""
    params = {
        "argv": [literal(a) for a in request.argv],
        "cwd": literal(os.path.abspath(request.cwd or "."), keep=()),
        "sample_interval": 0.2,
        "metric": metrics_param(request),
        "window": request.window,
        # the probe library only in each configuration's warm-up run (not timed): the timed runs are the
        # program as its deploy lines run it, nothing of hugebench's preloaded (issue 55)
        "probe": "untimed",
    }
    if request.env:
        params["env"] = {name: literal(value) for name, value in request.env.items()}
    if request.stdin:
        params["stdin"] = literal(os.path.abspath(request.stdin), keep=())
    if request.server:
        params["server"] = {
            "argv": [literal(a) for a in shlex.split(request.server)],
            "ready": ready_param(request.ready),
        }
    axes = {
        "allocator": list(dict.fromkeys(c["allocator"] for c in matrix.cells)),
        "thp": list(dict.fromkeys(c["thp"] for c in matrix.cells)),
    }
    for axis in ("text_pages", "memory_state", "regime"):
        if any(axis in c for c in matrix.cells):
            axes[axis] = list(dict.fromkeys(c[axis] for c in matrix.cells))
    for knob in mthp_knobs(matrix.cells[0]):
        axes[knob] = list(dict.fromkeys(c[knob] for c in matrix.cells))
    data = {
        "name": name,
        "workload": "command",
        "description": f"hugebench try -- {shlex.join(request.argv)}",
        "repetitions": 1,
        "timeout": round(timeout, 1),
        "perf": "off",
        "counters": "off",
        "params": params,
        "axes": axes,
        "baseline": {k: v for k, v in matrix.baseline.items() if k != "mthp"},
    }
    # at least one warm-up run of each configuration: its verification (which malloc served, what pages
    # it got), untimed; the schedule runs it just before the configuration's first timed run
    data["warmup"] = max(1, request.warmup)
    excluded = _excluded(axes, [{k: v for k, v in c.items() if k != "mthp"} for c in matrix.cells])
    if excluded:
        data["exclude"] = excluded
    if matrix.user_allocators:
        data["allocators"] = dict(matrix.user_allocators)
    return data


def literal(text: str, keep=BUILTIN_FIELDS) -> str:
    """``text`` as the experiment file must spell it to pass it on as typed: every brace doubled (the
    file's ``{name}`` fields are the file's own), except the fields of ``keep`` (``{tmp}``, ``{python}``),
    which try's options document: ``find . -exec cmd {} ;`` stays itself, ``-s {tmp}/s`` is the run's
    directory."""
    kept = {"{" + name + "}" for name in keep}
    parts = re.split("(" + "|".join(map(re.escape, kept)) + ")", text) if kept else [text]
    return "".join(p if p in kept else p.replace("{", "{{").replace("}", "}}") for p in parts)


def _excluded(axes: dict, cells: list) -> list:
    import itertools

    names = list(axes)
    every = [dict(zip(names, values)) for values in itertools.product(*axes.values())]
    return [c for c in every if c not in cells]


def ready_param(ready: str | None) -> dict:
    """--ready path:FILE | port:N | log:REGEX -> the server's ready condition."""
    if not ready:
        raise SpecError(
            "--server needs --ready path:FILE, port:N or log:REGEX (when the server takes requests)"
        )
    kind, _, value = ready.partition(":")
    if kind not in ("path", "port", "log") or not value:
        raise SpecError(f"--ready {ready!r}: give path:FILE, port:N or log:REGEX")
    if kind == "port":
        if not (value.isascii() and value.isdigit()) or not 1 <= int(value[:6]) <= 65535:
            raise SpecError(f"--ready {ready!r}: port must be a TCP port number from 1 to 65535")
        return {"port": int(value)}
    return {kind: literal(value)}
