"""The judge benchmark's pure parts (benchmarks/judge.py runs them; tests/trial/test_judge_bench.py tests them):
reading ``hugebench try --json``'s verdict into a :class:`Verdict`, turning its deploy lines into a
:class:`Deploy` the judge can run, the paired ratio of the judge's rounds with its bootstrap CI, and the
agreement of the two. Nothing here runs a program or touches a knob.

The format relied on (``hugebench try --json``, hugebench/trial/verdict.py ``build`` and ``deploy``, as of
the branch point of this benchmark) is read in ONE place, :func:`parse_verdict`; adapt it there when try's
output changes:

- ``metric`` ("window_s" for wall time), ``better`` ("lower" | "higher"), ``recommend`` ("best" | "as-is"),
  ``resolved`` (bool), ``no_difference`` (bool);
- ``best``: ``name``, ``cell`` ({allocator, thp[, text_pages, memory_state]}), ``class``
  ("better" | "worse" | "same within noise" | ...), ``ratio``: {value, ci_lo, ci_hi, n, paired, resolved};
- ``deploy`` (only when ``recommend`` is "best"): ``env`` (dict), ``shell`` ("NAME=VALUE ..." or null),
  ``thp`` ("echo MODE > /sys/kernel/mm/transparent_hugepage/enabled   (as root; ...)" or null),
  ``thp_per_process`` (prose: "prctl(PR_SET_THP_DISABLE, 1) in the program or its launcher ..." for
  ``never``; for other modes a sentence saying there is none), ``systemd``;
- ``baseline``: the as-is configuration (``name``, ``cell``).
A future structured ``deploy.sysfs`` list of {path, value} is used when present instead of the echo line.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field

import numpy as np

from hugebench.stats import bootstrap_ci


class DeployNotUnderstood(ValueError):
    """A deploy line the judge cannot run as printed: the judge fails loudly rather than guess."""


@dataclass(frozen=True)
class SysfsWrite:
    path: str
    value: str


@dataclass(frozen=True)
class Deploy:
    """How to run the recommended configuration: environment (a shell prefix), and either nothing more, a
    per-process THP switch (``thp_off``: prctl(PR_SET_THP_DISABLE) in a launcher) or machine-wide sysfs
    writes. ``source`` says where it came from: "printed" (try's deploy lines) or "best's cell" (a keep-as-is
    verdict prints none; the judge then deploys the best configuration try measured, to check its ratio)."""

    env: dict = field(default_factory=dict)
    thp_off: bool = False
    sysfs: tuple = ()
    source: str = "printed"

    @property
    def machine_wide(self) -> bool:
        return bool(self.sysfs)

    def prefix(self) -> str:
        """The environment as the shell prefix try prints ("NAME=VALUE ..."), quoted for sh."""
        return " ".join(f"{k}={shlex.quote(str(v))}" for k, v in self.env.items())

    def describe(self) -> str:
        parts = [self.prefix()] if self.env else []
        if self.thp_off:
            parts.append("prctl THP off (per process)")
        parts += [f"{w.value} > {w.path}" for w in self.sysfs]
        return "; ".join(parts) or "nothing (as-is)"


@dataclass(frozen=True)
class Verdict:
    """What the judge needs of try's answer."""

    text: str  # "use X" | "keep as-is: no difference" | "keep as-is (best X not resolved)" | ...
    recommend: bool
    resolved: bool
    best: str | None
    ratio: float | None
    ci_lo: float | None
    ci_hi: float | None
    pairs: int | None
    deploy: Deploy | None  # None: nothing to judge (no best configuration with a ratio)
    regime: str | None = (
        None  # the regime try measured its verdict in (warm, cold:4s), None: as found
    )
    expected: tuple | None = (
        None  # (lo, hi): the second range of try's JSON before issue 55 (now ci_lo-ci_hi is the one)
    )
    likely: bool = False  # "likely X, re-run quiet to confirm": a resolved claim on a busy machine

    @property
    def idle_s(self) -> float:
        """The idle gap before each run the regime asks the judge to reproduce (cold:Ns), else 0."""
        match = re.fullmatch(r"cold:([0-9.]+)s", self.regime or "")
        return float(match.group(1)) if match else 0.0


_ECHO = re.compile(r"^\s*echo\s+(\S+)\s+>\s+(/sys/\S+)(\s+\(.*\))?\s*$")
_PRCTL_OFF = re.compile(r"^\s*prctl\(PR_SET_THP_DISABLE,\s*1\)")
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")
THP_ENABLED = "/sys/kernel/mm/transparent_hugepage/enabled"
MTHP_ENABLED = "/sys/kernel/mm/transparent_hugepage/hugepages-{size}/enabled"


def parse_verdict(data: dict) -> Verdict:
    """try's --json verdict -> :class:`Verdict` (the one place that knows try's output format)."""
    for key in ("recommend", "best", "metric", "better"):
        if key not in data:
            raise DeployNotUnderstood(
                f"try's JSON has no {key!r}: not the verdict format the judge knows"
            )
    if data["metric"] != "window_s" or data["better"] != "lower":
        raise DeployNotUnderstood(
            f"try compared {data['metric']} ({data['better']} is better); the judge times wall seconds"
        )
    best = data.get("best")
    ratio = (best or {}).get("ratio") or {}
    recommend = data["recommend"] == "best"
    likely = (
        data["recommend"] == "likely"
    )  # deployed as printed, and its sign judged like a recommendation
    deploy = None
    if recommend or likely:
        deploy = parse_deploy(data.get("deploy"), best["cell"]["thp"])
    elif best and ratio:
        base_cell = (data.get("baseline") or {}).get("cell") or {}
        mthp_found = {k: v for k, v in base_cell.items() if k.startswith("thp.mthp.")}
        deploy = deploy_of_cell(best["cell"], _found(data), mthp_found, data.get("linked"))
    regimes = list(data.get("by_regime") or {})
    regime = regimes[0] if regimes else None  # the top-level verdict is the first regime's
    return Verdict(
        regime=regime,
        text=_with_regime(_verdict_text(data, best, recommend, likely), regime),
        recommend=recommend,
        resolved=bool(data.get("resolved")),
        best=(best or {}).get("name"),
        ratio=ratio.get("value"),
        ci_lo=ratio.get("ci_lo"),
        ci_hi=ratio.get("ci_hi"),
        pairs=ratio.get("n"),
        deploy=deploy,
        expected=_expected((best or {}).get("expected")),
        likely=likely,
    )


def _expected(exp: dict | None) -> tuple | None:
    """try's range for a deployment timed alike (its ``expected``: an end it cannot bound is None)."""
    if not exp:
        return None
    return (exp.get("lo") or 0.0, exp.get("hi") if exp.get("hi") is not None else float("inf"))


def _with_regime(text: str, regime: str | None) -> str:
    """The verdict's text saying its regime once (a best's name already ends with it)."""
    return text if not regime or text.endswith(f", {regime}") else f"{text}, {regime}"


def _verdict_text(data: dict, best: dict | None, recommend: bool, likely: bool = False) -> str:
    if recommend:
        return f"use {best['name']}"
    if likely:
        return f"likely {best['name']} ({data.get('likely') or 'not firm'})"
    if data.get("no_difference"):
        return "keep as-is: no difference"
    if not best:
        return "keep as-is: nothing to compare"
    if data.get("leaning"):
        return f"keep as-is for now, leaning to {best['name']} ({data['leaning']})"
    state = (
        "resolved worse"
        if best.get("class") == "worse" and data.get("resolved")
        else "not resolved"
    )
    return f"keep as-is ({state})"


def _found(data: dict) -> str:
    """The THP mode as found: the as-is configuration's."""
    base = data.get("baseline") or {}
    mode = (base.get("cell") or {}).get("thp")
    if not mode:
        raise DeployNotUnderstood("try's JSON has no baseline cell with a thp mode")
    return mode


def parse_deploy(dep: dict | None, thp_mode: str) -> Deploy:
    """try's deploy dict -> :class:`Deploy`; a line the judge does not understand raises."""
    if not isinstance(dep, dict):
        raise DeployNotUnderstood(f"try recommends a change but gives no deploy dict: {dep!r}")
    env = dep.get("env")
    if env is None:
        env = parse_env_line(dep.get("shell") or "")
    if not isinstance(env, dict):
        raise DeployNotUnderstood(f"deploy.env is not a mapping: {env!r}")
    if isinstance(dep.get("lines"), list):  # try's deploy lines, least invasive first
        return _from_lines(dep["lines"], dict(env), thp_mode)
    if dep.get("sysfs") is not None:  # structured, when try gives it
        writes = tuple(SysfsWrite(w["path"], str(w["value"])) for w in dep["sysfs"])
        return Deploy(dict(env), bool(dep.get("thp_off")), writes)
    line = dep.get("thp")
    if not line:
        return Deploy(dict(env))
    m = _ECHO.match(line)
    if not m or m.group(2) != THP_ENABLED:
        raise DeployNotUnderstood(f"deploy THP line not understood: {line!r}")
    if m.group(1) != thp_mode:
        raise DeployNotUnderstood(
            f"deploy THP line says {m.group(1)!r}, the cell says {thp_mode!r}"
        )
    if _PRCTL_OFF.match(dep.get("thp_per_process") or ""):
        if thp_mode != "never":
            raise DeployNotUnderstood(f"per-process THP off offered for mode {thp_mode!r}")
        return Deploy(dict(env), thp_off=True)  # per process first: nothing machine-wide needed
    return Deploy(dict(env), sysfs=(SysfsWrite(THP_ENABLED, thp_mode),))


_LAUNCHER = re.compile(r"(?:^|\s)hugebench exec --thp (\S+) --(?:\s|$)")


def _from_lines(lines: list, env: dict, thp_mode: str) -> Deploy:
    """The least invasive way the lines offer: the per-process line (environment, and ``hugebench exec
    --thp never`` deployed by the judge's own prctl launcher, which does the same without a Python start),
    else the machine-wide ``echo MODE > /sys/...`` line."""
    required = [str(line.get("shell") or "") for line in lines if line.get("required")]
    extra = tuple(w for shell in required for w in _writes(shell))  # mTHP sizes: in every case
    lines = [line for line in lines if not line.get("required")]
    scopes = {line.get("scope"): str(line.get("shell") or "") for line in lines}
    unknown = set(scopes) - {"per-process", "systemd", "machine-wide"}
    if unknown:
        raise DeployNotUnderstood(f"deploy line scopes not understood: {sorted(unknown)}")
    launcher = _LAUNCHER.search(scopes.get("per-process", ""))
    if launcher:
        if launcher.group(1) != "never" or thp_mode != "never":
            raise DeployNotUnderstood(
                f"per-process THP launcher for {launcher.group(1)!r} (cell {thp_mode!r}): "
                "the judge deploys only 'never' per process"
            )
        return Deploy(env, thp_off=True, sysfs=extra)
    machine = scopes.get("machine-wide")
    if machine:
        m = _ECHO.match(machine)
        if not m or m.group(2) != THP_ENABLED or m.group(1) != thp_mode:
            raise DeployNotUnderstood(f"machine-wide line not understood: {machine!r}")
        return Deploy(env, sysfs=(SysfsWrite(THP_ENABLED, thp_mode), *extra))
    return Deploy(env, sysfs=extra)


_MTHP_ENABLED = re.compile(r"^/sys/kernel/mm/transparent_hugepage/hugepages-\d+kB/enabled$")


def _writes(shell: str) -> list[SysfsWrite]:
    """'echo always > /sys/.../hugepages-64kB/enabled && echo never > ...' -> its writes; only the
    multi-size THP files are accepted."""
    out = []
    for part in shell.split("&&"):
        m = _ECHO.match(part)
        if not m or not _MTHP_ENABLED.match(m.group(2)):
            raise DeployNotUnderstood(f"required machine-wide line not understood: {shell!r}")
        out.append(SysfsWrite(m.group(2), m.group(1)))
    return out


def parse_env_line(line: str) -> dict:
    """'A=1 LD_PRELOAD=/x.so' -> {'A': '1', 'LD_PRELOAD': '/x.so'}; anything but NAME=VALUE words raises."""
    out = {}
    for word in shlex.split(line):
        if not _ENV_WORD.match(word):
            raise DeployNotUnderstood(
                f"deploy environment word not NAME=VALUE: {word!r} in {line!r}"
            )
        name, _, value = word.partition("=")
        out[name] = value
    return out


def deploy_of_cell(
    cell: dict, thp_found: str, mthp_found: dict | None = None, linked: str | None = None
) -> Deploy:
    """A keep-as-is verdict prints no deploy lines: deploy its best configuration the way try would have
    printed it (try's own environment: the allocator's, and libc preloaded for glibc's settings over a
    program that links another allocator, ``linked``)."""
    from types import SimpleNamespace

    from hugebench.trial.deploy import environment

    # regime is not a change to deploy but the condition the verdict holds for (Verdict.idle_s times it)
    sizes = {k: v for k, v in cell.items() if k.startswith("thp.mthp.")}
    known = set(cell) - {"allocator", "thp", "regime", "mthp"} - set(sizes)
    if known:
        raise DeployNotUnderstood(f"best cell has axes the judge cannot deploy: {sorted(known)}")
    env = environment(cell, SimpleNamespace(allocators={}), None, linked)
    extra = tuple(
        SysfsWrite(MTHP_ENABLED.format(size=k.rsplit(".", 1)[1]), v)
        for k, v in sizes.items()
        if v != (mthp_found or {}).get(k)
    )
    mode = cell["thp"]
    if mode == thp_found:
        return Deploy(env, sysfs=extra, source="best's cell")
    if mode == "never":
        return Deploy(env, thp_off=True, sysfs=extra, source="best's cell")
    return Deploy(env, sysfs=(SysfsWrite(THP_ENABLED, mode), *extra), source="best's cell")


# --- the judge's numbers -------------------------------------------------------------------------


@dataclass(frozen=True)
class Judged:
    ratio: float
    ci_lo: float | None
    ci_hi: float | None
    rounds: int


def round_ratio(as_is: list, deployed: list) -> float:
    """One round: median of the deployed runs' seconds over the median of the as-is runs'."""
    a, b = np.median(np.asarray(as_is, float)), np.median(np.asarray(deployed, float))
    if not (np.isfinite(a) and np.isfinite(b)) or a <= 0:
        raise ValueError(f"a round needs positive finite times, got {as_is!r} and {deployed!r}")
    return float(b / a)


def judge(rounds: list[tuple[list, list]], seed: int = 0) -> Judged:
    """The judge's ratio: the median of the per-round ratios (each round: as-is and deployed back to back,
    paired), with a 95% percentile-bootstrap CI over the rounds (None with fewer than two rounds)."""
    ratios = [round_ratio(a, b) for a, b in rounds]
    if not ratios:
        raise ValueError("no rounds to judge")
    lo, hi = bootstrap_ci(ratios, np.median, 0.95, 2000, seed)
    fin = [float(x) if np.isfinite(x) else None for x in (lo, hi)]
    return Judged(float(np.median(ratios)), fin[0], fin[1], len(ratios))


def agreement(verdict: Verdict, judged: Judged) -> dict:
    """``inside``: the judge's ratio inside try's CI (None: try gave no CI); ``expected``: inside try's
    range for a deployment timed alike (None: try gave none, an unconfirmed best). ``sign``: for a resolved verdict,
    "agrees" when the judge's CI lies on try's side of 1, "WRONG SIGN" when it lies on the other side,
    "judge unresolved" when it includes 1; "n/a" for an unresolved verdict."""
    inside = None
    if verdict.ci_lo is not None and verdict.ci_hi is not None:
        inside = bool(verdict.ci_lo <= judged.ratio <= verdict.ci_hi)
    expected = None
    if verdict.expected is not None:
        expected = bool(verdict.expected[0] <= judged.ratio <= verdict.expected[1])
    sign = "n/a"
    if verdict.resolved and verdict.ratio is not None:
        faster = verdict.ratio < 1
        if judged.ci_lo is None or judged.ci_hi is None:
            sign = "judge unresolved"
        elif (judged.ci_hi < 1) if faster else (judged.ci_lo > 1):
            sign = "agrees"
        elif (judged.ci_lo > 1) if faster else (judged.ci_hi < 1):
            sign = "WRONG SIGN"
        else:
            sign = "judge unresolved"
    return {"inside": inside, "expected": expected, "sign": sign}


def summary(rows: list[dict]) -> list[str]:
    """The goal's counts over the judged rows: wrong-sign resolved verdicts, and the share inside try's
    interval, overall and in each condition (load x user; goal: at least 90 % in each)."""
    judged = [r for r in rows if r.get("agreement")]
    with_ci = [r for r in judged if r["agreement"]["inside"] is not None]
    inside = sum(r["agreement"]["inside"] for r in with_ci)
    wrong = [r["program"] for r in judged if r["agreement"]["sign"] == "WRONG SIGN"]
    resolved = sum(r["agreement"]["sign"] != "n/a" for r in judged)
    share = f"{inside / len(with_ci):.0%}" if with_ci else "n/a"
    out = [
        f"judged {len(judged)} of {len(rows)} programs; failed or not judged: {len(rows) - len(judged)}",
        f"judge's ratio inside try's 95% interval: {inside} of {len(with_ci)} ({share}; goal: at least 90%)",
        f"resolved verdicts: {resolved}; of the wrong sign: {len(wrong)}"
        + (f" ({', '.join(wrong)})" if wrong else "")
        + " (goal: none)",
    ]
    missed = [  # try kept as-is as "no difference" where the judge found 15 % or more
        r["program"]
        for r in judged
        if (r.get("verdict") or {}).get("text", "").startswith("keep as-is: no difference")
        and (r.get("judged") or {}).get("ci_hi") is not None
        and r["judged"]["ci_hi"] < 1 / 1.15
    ]
    out.append(
        f"missed wins: {len(missed)}"
        + (f" ({', '.join(missed)})" if missed else "")
        + " (goal: none)"
    )
    conditions = sorted({(r.get("load", "quiet"), _who(r)) for r in with_ci})
    for load, who in conditions if len(conditions) > 1 else ():
        got = [r for r in with_ci if (r.get("load", "quiet"), _who(r)) == (load, who)]
        n_in = sum(r["agreement"]["inside"] for r in got)
        out.append(f"  {load}, {who}: inside {n_in} of {len(got)} ({n_in / len(got):.0%})")
    with_exp = [r for r in judged if r["agreement"].get("expected") is not None]
    if with_exp:  # a verdict of try before issue 55, with its second range
        exp_in = sum(r["agreement"]["expected"] for r in with_exp)
        out.append(
            f"judge's ratio inside try's expected range for a deployment timed alike: {exp_in} of "
            f"{len(with_exp)} ({exp_in / len(with_exp):.0%}; goal: at least 90%)"
        )
    return out


def _who(row: dict) -> str:
    return "root" if row.get("as") == "root" else "user"


def _num(x, fmt="{:.3f}") -> str:
    return "—" if x is None else fmt.format(x)


def table(rows: list[dict]) -> list[str]:
    """The markdown table: one row per program (and user)."""
    head = (
        "| program | kind | as | load | try's verdict | try's best | try's ratio [95% interval] | "
        "judge's ratio [95% CI] | deployed | inside | try's expected range (before issue 55) | "
        "inside it | sign |"
    )
    out = [head, "|" + "---|" * 13]
    for r in rows:
        v, j, a = r.get("verdict") or {}, r.get("judged") or {}, r.get("agreement") or {}
        try_ratio = (
            f"{_num(v.get('ratio'))} [{_num(v.get('ci_lo'))}, {_num(v.get('ci_hi'))}]" if v else "—"
        )
        judge_ratio = (
            f"{_num(j.get('ratio'))} [{_num(j.get('ci_lo'))}, {_num(j.get('ci_hi'))}], "
            f"{j.get('rounds')} rounds"
            if j
            else f"not judged: {r['skipped']}"
            if r.get("skipped")
            else "—"
        )
        yes_no = {True: "yes", False: "NO", None: "—"}
        inside = yes_no[a.get("inside")] if a else "—"
        exp = v.get("expected")
        expected = f"[{_num(exp[0])}, {_num(exp[1])}]" if exp else "—"
        cells = [
            r["program"],
            r["kind"],
            r["as"],
            r.get("load", "quiet"),
            f"{v.get('text', '')} FAILED: {r['error']}".strip()
            if r.get("error")
            else v.get("text"),
            v.get("best") or "—",
            try_ratio,
            judge_ratio,
            r.get("deployed") or "—",
            inside,
            expected,
            yes_no[a.get("expected")] if a else "—",
            a.get("sign", "—"),
        ]
        out.append("| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |")
    return out
