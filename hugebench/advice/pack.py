"""A pack of vendor advice as checked data, and the ordinary experiment it becomes.

What belongs here: reading a pack file (``packs/<name>.yaml``, or any path), checking every key with
file:line:key errors before anything runs, and :func:`to_spec`, which expands the ``preset`` axis into the
knobs and options the presets set (their other combinations excluded) and the claims into ``expected:``.
What does not: running (``session``), judging (``hugebench.report.advice``), any kernel I/O.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from hugebench import knob_catalogue as catalogue
from hugebench.errors import SpecError
from hugebench.experiment.claims import known_keys, text_field
from hugebench.experiment.model import ExperimentSpec
from hugebench.experiment.validation import validate_data
from hugebench.knob_catalogue import THP_DEFRAG
from hugebench.yamlsafe import Where, read_text, read_yaml

PRESET_AXIS = "preset"
NAME_PREFIX = "advice-"  # an advice experiment's name: advice-<pack>
PROGRAMS_PARAM = "programs_dir"  # {programs_dir} in a pack's argv: where its shipped programs are
MAX_COMBINATIONS = (
    4096  # settings combinations of the presets' keys (each one not a preset is excluded)
)

_PACK_KEYS = {
    "pack": "the pack's name (what `hugebench advice NAME` takes)",
    "title": "one line: whose advice, about what",
    "vendor": "who gives the advice",
    "judges": "what is measured: the program itself, or only the mechanism (e.g. not mongod itself)",
    "needs": "programs that must be on PATH: [redis-server, ...]",
    "run_s": "seconds one run takes here, roughly (sizes the repetitions to the budget)",
    "max_repetitions": "most runs per cell (int >= 1)",
    "quotes": "the vendor's words: [{id: ID, says: TEXT, source: URL}]",
    "presets": "NAME -> {doc: TEXT, knobs: {thp: always, ...}, options: {param: value}}",
    "defaults": "knob or option values for presets that do not set them: {KEY: VALUE}",
    "experiment": "an experiment's keys (workload, params, axes with preset: [...], baseline, ...)",
    "claims": "the vendor's words as claims: [{quote: ID, name, cell: {preset: A}, vs: {preset: B}, ...}]",
    "not_judged": "what the vendor says that this pack cannot judge: [{published: TEXT, why: TEXT}]",
    "lab": "what a lab machine would add to this pack's verdicts (free text)",
}
_QUOTE_KEYS = {"id": "short name claims refer to", "says": "the words", "source": "a link"}
_PRESET_KEYS = {
    "doc": "what this preset is, in the vendor's terms",
    "knobs": f"kernel knobs: {{thp: always, {THP_DEFRAG}: defer+madvise, ...}}",
    "options": "the program's options, as parameters of the experiment: {disable_thp: 'no'}",
}
_CLAIM_EXTRA = {"quote": "the id of the quote this claim judges"}


@dataclass(frozen=True)
class Preset:
    name: str
    doc: str
    knobs: dict = field(default_factory=dict)  # canonical knob name -> value
    options: dict = field(default_factory=dict)  # experiment parameter -> value

    def settings(self) -> dict:
        return {**self.knobs, **self.options}


@dataclass(frozen=True)
class Pack:
    name: str
    title: str
    vendor: str
    judges: str
    needs: tuple
    run_s: float
    max_repetitions: int
    quotes: dict  # id -> {says, source}
    presets: dict  # name -> Preset (file order)
    experiment: dict  # the raw experiment keys (preset still an axis)
    claims: tuple  # raw claims (quote + the keys of an expected: claim)
    not_judged: tuple
    lab: str
    source: str  # the file
    lines: dict = field(default_factory=dict, compare=False, repr=False)

    def preset_of(self, values: dict) -> str | None:
        """The preset whose every knob and option has its value in ``values`` (a cell or a row)."""
        for preset in self.presets.values():
            if all(_same(values.get(k), v) for k, v in preset.settings().items()):
                return preset.name
        return None


def _same(a, b) -> bool:
    return a == b or (a is not None and str(a) == str(b))


def packs_dir() -> Path:
    return Path(str(resources.files("hugebench.advice") / "packs"))


def programs_dir() -> Path:
    """The programs some packs run (sources, e.g. the JVM pack's HeapChurn.java)."""
    return Path(str(resources.files("hugebench.advice") / "programs"))


def _names_programs(params) -> bool:
    """The experiment's program (argv) or its setup (which may build a shipped source) names them."""
    return isinstance(params, dict) and "{" + PROGRAMS_PARAM + "}" in str(
        [params.get("argv"), params.get("setup")]
    )


def pack_names() -> list[str]:
    """The packs shipped with hugebench, by name."""
    return sorted(p.stem for p in packs_dir().glob("*.yaml"))


def load_pack(name_or_path: str) -> Pack:
    """A shipped pack by name, or a pack file by path; a SpecError names what is wrong and where."""
    path = Path(name_or_path)
    if not name_or_path.endswith((".yaml", ".yml")):
        if name_or_path not in pack_names():
            raise SpecError(
                f"no advice pack {name_or_path!r}; the packs: {', '.join(pack_names())} "
                "(`hugebench advice` lists them)"
            )
        path = packs_dir() / f"{name_or_path}.yaml"
    data, lines = read_yaml(read_text(path), str(path))
    return parse_pack(data, Where(str(path), lines))


def parse_pack(data, where: Where) -> Pack:
    if not isinstance(data, dict):
        raise where.error((), "a pack is a mapping of keys (pack, title, presets, experiment, ...)")
    known_keys(data, _PACK_KEYS, (), where)
    for key in ("pack", "title", "vendor", "judges", "presets", "experiment", "claims"):
        if key not in data:
            raise where.error((), f"missing required key '{key}' ({_PACK_KEYS[key]})")
    quotes = _quotes(data.get("quotes"), where)
    presets = _presets(data["presets"], data.get("defaults") or {}, where)
    experiment = data["experiment"]
    if not isinstance(experiment, dict):
        raise where.error(("experiment",), "must be a mapping of an experiment's keys")
    _claims_check(data["claims"], quotes, where)
    return Pack(
        name=text_field(data, "pack", (), where, required=True),
        title=text_field(data, "title", (), where, required=True),
        vendor=text_field(data, "vendor", (), where, required=True),
        judges=text_field(data, "judges", (), where, required=True),
        needs=tuple(_names(data.get("needs") or [], ("needs",), where)),
        run_s=_number(data, "run_s", 10.0, where),
        max_repetitions=int(_number(data, "max_repetitions", 10, where)),
        quotes=quotes,
        presets=presets,
        experiment=experiment,
        claims=tuple(data["claims"]),
        not_judged=tuple(data.get("not_judged") or ()),
        lab=text_field(data, "lab", (), where) or "",
        source=where.source,
        lines=where.lines,
    )


def _names(value, path, where) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise where.error(path, f"must be a list of program names, got {value!r}")
    return value


def _number(data, key, default, where) -> float:
    value = data.get(key, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 1e5:
        raise where.error((key,), f"must be a positive number ({_PACK_KEYS[key]}), got {value!r}")
    return float(value)


def _quotes(raw, where) -> dict:
    if not isinstance(raw, list) or not raw:
        raise where.error(("quotes",), f"must be a non-empty list ({_PACK_KEYS['quotes']})")
    out = {}
    for i, quote in enumerate(raw):
        path = ("quotes", i)
        if not isinstance(quote, dict):
            raise where.error(path, "must be a mapping {id, says, source}")
        known_keys(quote, _QUOTE_KEYS, path, where)
        entry = {key: text_field(quote, key, path, where, required=True) for key in _QUOTE_KEYS}
        out[entry["id"]] = entry
    return out


def _presets(raw, defaults, where) -> dict:
    if not isinstance(raw, dict) or len(raw) < 2:
        raise where.error(("presets",), "must name at least two presets (a claim compares two)")
    if not isinstance(defaults, dict):
        raise where.error(("defaults",), f"must be a mapping ({_PACK_KEYS['defaults']})")
    presets = {name: _preset(name, body, where) for name, body in raw.items()}
    keys = dict.fromkeys(k for p in presets.values() for k in p.settings())
    for name, preset in presets.items():
        for key in keys:
            if key in preset.settings():
                continue
            if key not in defaults:
                raise where.error(
                    ("presets", name),
                    f"does not set {key}, which another preset sets: give it a value here or "
                    f"in defaults: (every preset is one combination of the same settings)",
                )
            target = preset.knobs if catalogue.is_knob(key) else preset.options
            target[key] = defaults[key]
    seen: dict[tuple, str] = {}
    for name, preset in presets.items():
        signature = tuple(str(preset.settings()[k]) for k in keys)
        if signature in seen:
            raise where.error(("presets", name), f"sets exactly what {seen[signature]} sets")
        seen[signature] = name
    return presets


def _preset(name, body, where) -> Preset:
    path = ("presets", name)
    if not isinstance(name, str) or not name.replace("-", "").replace("_", "").isalnum():
        raise where.error(path, "a preset's name is letters, digits, '-' and '_'")
    if not isinstance(body, dict):
        raise where.error(path, f"must be a mapping ({_PACK_KEYS['presets']})")
    known_keys(body, _PRESET_KEYS, path, where)
    knobs, options = body.get("knobs") or {}, body.get("options") or {}
    for key, value in (("knobs", knobs), ("options", options)):
        if not isinstance(value, dict):
            raise where.error(path + (key,), f"must be a mapping ({_PRESET_KEYS[key]})")
    for knob in knobs:
        if not catalogue.is_knob(knob):
            raise where.error(
                path + ("knobs", knob),
                f"not a kernel knob; knob names start with {' or '.join(catalogue.USER_FAMILIES)}",
            )
    for option in options:
        if catalogue.is_knob(option):
            raise where.error(path + ("options", option), "is a kernel knob: put it under knobs:")
    canonical = {catalogue.canonical(k): v for k, v in knobs.items()}
    return Preset(
        name, text_field(body, "doc", path, where, required=True), canonical, dict(options)
    )


def _claims_check(raw, quotes, where) -> None:
    if not isinstance(raw, list) or not raw:
        raise where.error(("claims",), f"must be a non-empty list ({_PACK_KEYS['claims']})")
    for i, claim in enumerate(raw):
        path = ("claims", i)
        if not isinstance(claim, dict) or claim.get("quote") not in quotes:
            raise where.error(
                path, f"each claim names the quote it judges (quote: one of {', '.join(quotes)})"
            )
        if "values" in claim:
            raise where.error(
                path + ("values",), "a pack's claim is one number or direction: no 'values' table"
            )


# -- the experiment a pack becomes ------------------------------------------------------------------


class _Inside(Where):
    """Errors of the experiment's keys named where they are in the pack file (experiment.axes ...)."""

    def __init__(self, outer: Where):
        super().__init__(outer.source, outer.lines)

    def error(self, path, message, cls=SpecError):
        path = tuple(path)
        if path[:2] == ("expected", "claims"):  # the pack's own claims: named where they are
            return super().error(path[1:], message, cls)
        return super().error(("experiment", *path), message, cls)


def to_spec(
    pack: Pack, repetitions: int | None = None, params: dict | None = None
) -> ExperimentSpec:
    """The pack as an ordinary experiment: the preset axis expanded, the claims as ``expected:``.
    ``params`` replaces some of the experiment's parameters (a smaller size: the tests')."""
    where = Where(pack.source, dict(pack.lines))
    data = dict(pack.experiment)
    for key in ("name", "expected"):
        if key in data:
            raise where.error(
                ("experiment", key), "is the pack's own: its name and claims (claims:) make it"
            )
    if _names_programs(data.get("params")):  # a program shipped with the packs (programs/)
        data["params"] = {**data["params"], PROGRAMS_PARAM: str(programs_dir())}
    if params:
        data["params"] = {**(data.get("params") or {}), **params}
    axes = dict(data.get("axes") or {})
    presets = _chosen(pack, axes.pop(PRESET_AXIS, None), where)
    settings = _settings_axes(presets, where)
    data["axes"] = {**settings, **axes}
    data["exclude"] = [*(data.get("exclude") or []), *_not_presets(settings, presets, where)]
    if "baseline" in data:
        data["baseline"] = _cell(data["baseline"], pack, ("experiment", "baseline"), where)
    data["name"] = NAME_PREFIX + pack.name
    data.setdefault("description", pack.title)
    data["expected"] = _expected(pack, where)
    if repetitions is not None:
        data["repetitions"] = repetitions
    _point_at_presets(pack, presets, settings, where)
    return validate_data(data, _Inside(where))


def _chosen(pack: Pack, chosen, where) -> list[Preset]:
    """The presets the experiment's ``preset`` axis names, in its order."""
    if not isinstance(chosen, list) or not chosen:
        raise where.error(("experiment", "axes"), "needs a preset axis: preset: [NAME, ...]")
    for i, name in enumerate(chosen):
        if name not in pack.presets:
            raise where.error(
                ("experiment", "axes", PRESET_AXIS, i),
                f"no preset {name!r}; the pack's presets: {', '.join(pack.presets)}",
            )
    return [pack.presets[n] for n in dict.fromkeys(chosen)]


def _point_at_presets(pack: Pack, presets: list[Preset], settings: dict, where: Where) -> None:
    """An error about a generated axis value names the line of the preset that set it."""
    for key, values in settings.items():
        for i, value in enumerate(values):
            first = next(p for p in presets if _same(p.settings()[key], value))
            kind = "knobs" if key in first.knobs else "options"
            line = pack.lines.get(("presets", first.name, kind, key)) or pack.lines.get(
                ("presets", first.name)
            )
            if line is not None:  # (a line not known is as good as none)
                where.lines[("experiment", "axes", key, i)] = line


def _settings_axes(presets: list[Preset], where) -> dict:
    keys = dict.fromkeys(k for p in presets for k in p.settings())
    axes = {k: list(dict.fromkeys(p.settings()[k] for p in presets)) for k in keys}
    size = 1
    for values in axes.values():
        size *= len(values)
    if size > MAX_COMBINATIONS:
        raise where.error(
            ("presets",),
            f"the presets' settings make {size} combinations (at most {MAX_COMBINATIONS}); "
            "fewer presets or settings",
        )
    return axes


def _not_presets(axes: dict, presets: list[Preset], where) -> list[dict]:
    """Every combination of the settings' values that is not one of the presets."""
    names = list(axes)
    wanted = {tuple(str(p.settings()[k]) for k in names) for p in presets}
    return [
        dict(zip(names, combo))
        for combo in itertools.product(*(axes[k] for k in names))
        if tuple(str(v) for v in combo) not in wanted
    ]


def _cell(raw, pack: Pack, path, where) -> dict:
    """A partial cell naming a preset, as the knobs and options that preset sets."""
    if not isinstance(raw, dict):
        raise where.error(path, "must be a mapping, e.g. {preset: NAME, allocator: as-is}")
    cell = dict(raw)
    name = cell.pop(PRESET_AXIS, None)
    if name is None:
        return cell
    if name not in pack.presets:
        raise where.error(
            path + (PRESET_AXIS,), f"no preset {name!r}; the pack's: {', '.join(pack.presets)}"
        )
    return {**pack.presets[name].settings(), **cell}


def _expected(pack: Pack, where) -> dict:
    claims = []
    for i, raw in enumerate(pack.claims):
        path = ("claims", i)
        claim = {k: v for k, v in raw.items() if k not in _CLAIM_EXTRA}
        for side in ("cell", "vs"):
            if side in claim:
                claim[side] = _cell(claim[side], pack, path + (side,), where)
        claim.setdefault("source", pack.quotes[raw["quote"]]["source"])
        claims.append(claim)
    out = {"source": f"{pack.vendor}: {pack.title}", "claims": claims}
    if pack.not_judged:
        out["not_judged"] = list(pack.not_judged)
    return out


def claim_quotes(pack: Pack) -> list[str]:
    """Each claim's quote id, in the order of ``expected:``'s claims (a ``values:`` claim is one)."""
    return [raw["quote"] for raw in pack.claims]
