"""The verdict of ``hugebench try`` as typed frozen values: ``Verdict``, each configuration's ``Configuration``,
a ``Ratio`` to as-is, the best's ``Confirmation``, and the ``Deploy`` lines of the recommendation.

``to_dict()`` is the JSON form (``try --json``, ``--export-json``; benchmarks/judge.py and users read it): its
keys, their order and which are left out are those of the verdict while it was a dict, so the JSON is the same
byte for byte; ``from_dict`` reads it back. The parts other modules build and read as data stay mappings: a
configuration's cell, its folio shares and allocator, a guard's entry (:mod:`.guards`), the page-size sets
(:mod:`.sizes`) and the deploy's sysfs writes. Nothing here measures or decides (:mod:`.verdict` does).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any


class _Absent:
    """The value of a key the JSON leaves out (a ratio that is None when present): false, as None is."""

    def __bool__(self) -> bool:
        return False

    def __repr__(self) -> str:
        return "ABSENT"


_ABSENT: Any = _Absent()


@dataclass(frozen=True)
class Ratio:
    """A ratio to as-is with its interval; an end its interval cannot bound yet (0 or infinity) is None."""

    value: float
    ci_lo: float | None
    ci_hi: float | None
    n: int
    paired: bool
    level: float
    family: int  # the configurations the 5 % was shared by (Bonferroni): 1 for a confirmation's interval
    resolved: bool

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Ratio | None:
        return None if data is None else cls(**data)


@dataclass(frozen=True)
class Confirmation:
    """The best's confirmation on fresh pairs: how it ended, how many pairs, and whether it resolved."""

    ended: str
    pairs: int
    resolved: bool

    def to_dict(self) -> dict[str, Any]:
        return {"ended": self.ended, "pairs": self.pairs, "resolved": self.resolved}


def ends(lo: float | None, hi: float | None) -> str:
    """An interval's ends as 'lo-hi', an end not bounded as 0 or inf."""
    return f"{'0' if lo is None else f'{lo:.3f}'}-{'inf' if hi is None else f'{hi:.3f}'}"


@dataclass(frozen=True)
class Interval:
    """How the best's one interval (its ``ratio``'s ``ci_lo``-``ci_hi``) was built
    (:func:`.sequential.deployment_interval`): the fresh pairs' confidence sequence ``cs_lo``-``cs_hi``,
    widened for a deployment timed the same way in another window of ``pairs`` pairs by such a check's own
    noise and ``drift``, the factor the ratio drifted by between this try's blocks (1.0: none seen); an end
    that cannot be bounded is None."""

    cs_lo: float | None
    cs_hi: float | None
    pairs: int
    drift: float

    def to_dict(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}


@dataclass(frozen=True)
class DeployLine:
    """One way to deploy the best: where it applies (per-process, systemd, machine-wide), the command, and
    what else it changes; ``required``: not an alternative to a line above (mTHP sizes)."""

    scope: str
    shell: str
    affects: str
    required: bool | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"scope": self.scope, "shell": self.shell, "affects": self.affects}
        if self.required is not None:
            out["required"] = self.required
        return out


@dataclass(frozen=True)
class Deploy:
    """The deploy lines (per-process first, machine-wide last) and the same parts by name."""

    lines: tuple[DeployLine, ...]
    env: Mapping[str, str]
    shell: str | None
    thp: str | None
    thp_per_process: str | None
    systemd: str | None
    sysfs: tuple[Mapping[str, str], ...]

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": [line.to_dict() for line in self.lines],
            "env": self.env,
            "shell": self.shell,
            "thp": self.thp,
            "thp_per_process": self.thp_per_process,
            "systemd": self.systemd,
            "sysfs": list(self.sysfs),
        }

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Deploy | None:
        if data is None:
            return None
        lines = tuple(DeployLine(**line) for line in data["lines"])
        return cls(**{**data, "lines": lines, "sysfs": tuple(data["sysfs"])})


_RATIOS = (
    "ratio",
    "peak_rss_ratio",
    "cgroup_peak_ratio",
    "selection_ratio",
    "wall_ratio",
    "cpu_ratio",
)


@dataclass(frozen=True)
class Configuration:
    """One configuration's numbers against as-is (``kind`` is the JSON's ``class``: better, worse, same within
    noise, failed, too few runs, baseline, not run, THP overridden). ``ties``, ``selection_ratio``,
    ``confirmation``, ``wall_ratio``, ``cpu_ratio``, ``interval`` and ``guards`` are the best's alone (absent from the others' JSON)."""

    cell: Mapping[str, Any]
    runs: int
    failed: int
    median: float | None
    ratio: Ratio | None
    equivalent: bool
    unstable: str | None
    modes: str | None
    peak_rss_column: str
    peak_rss_ratio: Ratio | None
    cgroup_peak_ratio: Ratio | None
    hp_coverage: float | None
    folio_shares: Mapping[str, Any]
    gap: list[str]
    allocator_proof: str | None
    allocator_served: Mapping[str, Any] | None
    thp_overridden: int
    thp_overridden_why: str | None
    error: str | None = None  # every run failed: the first one's error
    name: str = ""
    dropped: str | None = None
    cut: bool = False
    kind: str = ""
    ties: tuple[str, ...] | None = None
    selection_ratio: Ratio | None = _ABSENT
    confirmation: Confirmation | None = None
    wall_ratio: Ratio | None = _ABSENT
    cpu_ratio: Ratio | None = _ABSENT  # the process tree's CPU time beside a wall-time metric
    interval: Interval | None = _ABSENT
    guards: tuple[Mapping[str, Any], ...] | None = None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is _ABSENT or (value is None and f.name in _NONE_IS_ABSENT):
                continue
            if f.name in _RATIOS or f.name in ("confirmation", "interval"):
                value = value and value.to_dict()
            elif f.name in ("ties", "guards"):
                value = list(value)
            out["class" if f.name == "kind" else f.name] = value
        return out

    @classmethod
    def from_dict(cls, data: Mapping | None) -> Configuration | None:
        if data is None:
            return None
        values = {("kind" if k == "class" else k): v for k, v in data.items()}
        for key in _RATIOS:
            if key in values:
                values[key] = Ratio.from_dict(values[key])
        if values.get("confirmation") is not None:
            values["confirmation"] = Confirmation(**values["confirmation"])
        if values.get("interval") is not None:
            values["interval"] = Interval(**values["interval"])
        for key in ("ties", "guards"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values)


_NONE_IS_ABSENT = ("error", "ties", "confirmation", "guards")


@dataclass(frozen=True)
class Session:
    """What the whole try adds to its verdict: the program, where its results are, and what it cost."""

    program: tuple[str, ...]
    results: str
    experiment_file: str
    runs: int
    wall_s: float
    budget_s: float
    plan: tuple[str, ...]


@dataclass(frozen=True)
class Verdict:
    """The answer of one try (or of one memory state or regime of it, with --aged or --regime): the best
    configuration and whether it is recommended (``recommend``: best | likely | as-is; likely: its one
    interval excludes 1 but a cell it rests on is unstable, ``likely`` says why, and a quiet re-run would
    confirm it), how to deploy it, the other
    configurations and the caveats. ``by_condition``: with --aged (memory_state) or --regime, the axis and
    each state's own verdict (this one is the first state's); ``cells``, ``runs`` and ``plan`` are a
    state's own; ``session`` is the whole try's (:func:`with_session`)."""

    metric: str
    better: str
    baseline: Configuration
    best: Configuration | None
    resolved: bool
    recommend: str
    guarded: str | None
    no_difference: bool
    margin: float
    selection_alpha: float
    deploy: Deploy | None
    as_is: str
    linked: str | None
    others: tuple[Configuration, ...]
    page_sizes: Mapping[str, Any] | None
    stopped: str | None
    blocks: int
    run_s: float | None
    caveats: tuple[str, ...] = ()
    likely: str | None = (
        None  # recommend "likely": why it is not firm ("the machine was busy", ...)
    )
    # not resolved, but the best's fresh pairs point one way beyond chance (a sign test) by more than the
    # smallest effect: '9 of 10 fresh pairs faster; the machine was busy' (keep as-is until re-run)
    leaning: str | None = None
    warmups: int = 0  # warm-up runs (each configuration's first) left out of the pairs
    answered_s: float | None = None  # seconds from the start to a firm answer (resolved or none)
    cells: tuple[str, ...] | None = None
    runs: int | None = None
    by_condition: tuple[str, Mapping[str, Verdict]] | None = None
    plan: tuple[str, ...] | None = None
    session: Session | None = field(default=None)
    # the regimes' verdicts disagree in sign on one configuration (trial.regimes): the answer's first line
    disagreement: str | None = None

    def states(self) -> Mapping[str, Verdict] | None:
        """Each memory state's (or regime's) verdict, None without --aged or --regime."""
        return self.by_condition[1] if self.by_condition else None

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric": self.metric,
            "better": self.better,
            "baseline": self.baseline.to_dict(),
            "best": self.best and self.best.to_dict(),
            "resolved": self.resolved,
            "recommend": self.recommend,
            "leaning": self.leaning,
            "guarded": self.guarded,
            "no_difference": self.no_difference,
            "margin": self.margin,
            "selection_alpha": self.selection_alpha,
            "deploy": self.deploy and self.deploy.to_dict(),
            "as_is": self.as_is,
            "linked": self.linked,
            "others": [c.to_dict() for c in self.others],
            "page_sizes": self.page_sizes,
            "stopped": self.stopped,
            "blocks": self.blocks,
            "run_s": self.run_s,
            "caveats": list(self.caveats),
            "likely": self.likely,
            "warmups": self.warmups,
            "answered_s": self.answered_s,
        }
        if self.cells is not None:
            out.update(cells=list(self.cells), runs=self.runs)
        if self.disagreement:
            out["disagreement"] = self.disagreement
        if self.by_condition:
            axis, each = self.by_condition
            out[f"by_{axis}"] = {state: v.to_dict() for state, v in each.items()}
        if self.plan is not None:
            out["plan"] = list(self.plan)
        if self.session:  # as the dict had them: a state's runs keep their place and take the try's
            s = self.session
            out.update(
                program=list(s.program), results=s.results, experiment_file=s.experiment_file
            )
            out.update(runs=s.runs, wall_s=s.wall_s, budget_s=s.budget_s, plan=list(s.plan))
        return out

    @classmethod
    def from_dict(cls, data: Mapping) -> Verdict:
        values = dict(data)
        session = None
        if "program" in values:  # the try's own keys; its runs replaced a state's (recovered below)
            pop = values.pop
            session = Session(
                program=tuple(pop("program")),
                results=pop("results"),
                experiment_file=pop("experiment_file"),
                runs=pop("runs"),
                wall_s=pop("wall_s"),
                budget_s=pop("budget_s"),
                plan=tuple(pop("plan")),
            )
        by = next(((k[3:], values.pop(k)) for k in list(values) if k.startswith("by_")), None)
        if by:
            by = (by[0], {state: cls.from_dict(v) for state, v in by[1].items()})
            values["runs"] = by[1][next(iter(by[1]))].runs
        values.update(
            baseline=Configuration.from_dict(values["baseline"]),
            best=Configuration.from_dict(values["best"]),
            deploy=Deploy.from_dict(values["deploy"]),
            others=tuple(Configuration.from_dict(c) for c in values["others"]),
            caveats=tuple(values["caveats"]),
        )
        for key in ("cells", "plan"):
            if values.get(key) is not None:
                values[key] = tuple(values[key])
        return cls(**values, by_condition=by, session=session)
