"""Advice packs as data: every shipped pack reads and becomes an ordinary experiment (its presets expanded
into knob and option axes, the combinations outside the presets excluded, the claims as ``expected:``); a
bad pack is refused with file:line:key; the budget decides the blocks; the report says the verdicts in the
vendor's terms. No kernel, no server."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from hugebench.advice import pack as pack_mod
from hugebench.advice.session import budget_batches, missing, run_pack
from hugebench.cli import main
from hugebench.errors import SpecError, ToolMissingError
from hugebench.experiment import cells
from hugebench.report.advice import HOLDS, advice_sections
from hugebench.report.results import Experiment
from hugebench.report.sections import expected_sections
from hugebench.yamlsafe import Where, read_yaml


@pytest.mark.parametrize("name", pack_mod.pack_names())
def test_every_shipped_pack_becomes_an_experiment_of_its_presets(name):
    pack = pack_mod.load_pack(name)
    spec = pack_mod.to_spec(pack)
    assert spec.name == f"advice-{name}"
    chosen = pack.experiment["axes"]["preset"]
    found = {pack.preset_of(cell) for cell in cells(spec)}
    assert found == set(chosen)  # every cell is one of the presets, and every preset has a cell
    others = [
        a for a in spec.axes if a not in {k for p in pack.presets.values() for k in p.settings()}
    ]
    per_preset = 1
    for axis in others:
        per_preset *= len(spec.axes[axis])
    assert len(cells(spec)) == len(chosen) * per_preset
    assert len(spec.expected.claims) == len(pack.claims)
    for claim in spec.expected.claims:
        assert pack.preset_of(claim["cell"]) is not None
        assert claim["source"].startswith("http")


def test_redis_presets_are_knobs_and_options():
    pack = pack_mod.load_pack("redis")
    spec = pack_mod.to_spec(pack)
    assert spec.axes["thp.enabled"] == ("always", "madvise")
    assert spec.axes["disable_thp"] == ("yes", "no")
    assert {"thp.enabled": "madvise", "disable_thp": "no"} in spec.exclude  # not a preset
    assert spec.baseline == {"thp.enabled": "madvise", "disable_thp": "yes", "allocator": "as-is"}
    kept = spec.expected.claims[0]
    assert kept["cell"] == {"thp.enabled": "always", "disable_thp": "no", "allocator": "as-is"}
    assert kept["direction"] == "higher" and kept["metric"] == "p99_ms"


GOOD = """\
pack: t
title: a test pack
vendor: V
judges: the mechanism
quotes: [{id: q, says: "it is so", source: "https://example.org"}]
presets:
  a: {doc: one, knobs: {thp: always}}
  b: {doc: two, knobs: {thp: never}}
experiment:
  workload: command
  params: {argv: [sh, -c, "echo 1"], metric: {regex: "([0-9]+)", name: v}}
  axes: {preset: [a, b]}
claims:
  - {quote: q, cell: {preset: a}, vs: {preset: b}, direction: lower}
"""


def _parse(text: str):
    data, lines = read_yaml(text, "p.yaml")
    return pack_mod.parse_pack(data, Where("p.yaml", lines))


def test_a_small_pack_expands():
    pack = _parse(GOOD)
    spec = pack_mod.to_spec(pack, repetitions=2)
    assert spec.axes == {"thp.enabled": ("always", "never")} and spec.repetitions == 2


@pytest.mark.parametrize(
    "change, message",
    [
        (("vendor: V\n", "vendor: V\ncolour: red\n"), "p.yaml:4: key 'colour': unknown key"),
        (
            ("{thp: never}", "{thp.defrag: never}"),
            "p.yaml:7: key 'presets.a': does not set thp.defrag",
        ),
        (("{thp: never}", "{thp: always}"), "p.yaml:8: key 'presets.b': sets exactly what a sets"),
        (
            ("knobs: {thp: always}", "options: {thp: always}"),
            "is a kernel knob: put it under knobs",
        ),
        (
            ("knobs: {thp: always}", "knobs: {vm.swappiness: 1}"),
            "presets.a.knobs.vm.swappiness': not a",
        ),
        (
            ("preset: [a, b]", "preset: [a, c]"),
            "p.yaml:12: key 'experiment.axes.preset.1': no preset",
        ),
        (("quote: q,", "quote: z,"), "p.yaml:14: key 'claims.0': each claim names the quote"),
        (
            ("{preset: b}, direction", "{preset: x}, direction"),
            "key 'claims.0.vs.preset': no preset",
        ),
        (
            ("direction: lower", "direction: down"),
            "p.yaml:14: key 'claims.0.direction': must be lower",
        ),
        (("  workload: command\n", "  workload: command\n  name: x\n"), "is the pack's own"),
        (
            ("{thp: never}", "{thp: nevr}"),
            "p.yaml:8: key 'experiment.axes.thp.enabled.1': THP mode",
        ),
    ],
)
def test_a_bad_pack_is_refused_with_file_line_and_key(change, message):
    text = GOOD.replace(*change)
    assert text != GOOD
    with pytest.raises(SpecError) as err:
        pack_mod.to_spec(_parse(text))
    assert message in str(err.value)


def test_an_unknown_pack_names_the_packs():
    with pytest.raises(SpecError, match="no advice pack 'nosuch'; the packs: .*redis"):
        pack_mod.load_pack("nosuch")


def test_a_pack_lacking_its_programs_is_refused_before_anything(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    assert missing(pack_mod.load_pack("redis")) == ("redis-server", "redis-benchmark", "redis-cli")
    with pytest.raises(ToolMissingError, match="needs redis-server, redis-benchmark, redis-cli"):
        run_pack("redis", 600, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_a_budget_too_small_for_one_block_is_refused(tmp_path):
    with pytest.raises(SpecError, match="--budget 30s: one run of each of the pack's 6 cells"):
        run_pack("redis", 30, out=tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_blocks_follow_while_the_slowest_fits():
    now = [0.0]
    batches = budget_batches(100.0, 10, clock=lambda: now[0])
    made = []
    for batch in batches(None, ["b0"], None, lambda spec, r: [f"b{r}"]):
        made.append(batch)
        now[0] += 30.0  # each block takes 30 s: 0, 30, 60 started; a fourth would end at 120
    assert made == [["b0"], ["b1"], ["b2"]]
    capped = budget_batches(1e9, 2, clock=lambda: 0.0)
    assert list(capped(None, ["b0"], None, lambda spec, r: [f"b{r}"])) == [["b0"], ["b1"]]


def test_the_listing_says_what_runs_here(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    result = CliRunner().invoke(main, ["advice"])
    assert result.exit_code == 0, result.output
    assert "redis: Redis" in result.output
    assert "not runnable here: needs redis-server" in result.output


def _experiment(pack, p99_kept: list, p99_fix: list, p99_shipped: list | None = None) -> Experiment:
    spec = pack_mod.to_spec(pack)
    rows = []
    shipped = p99_fix if p99_shipped is None else p99_shipped
    for preset, values in (("thp-kept", p99_kept), ("warning-fix", p99_fix), ("shipped", shipped)):
        for allocator in ("as-is", "glibc"):
            for r, value in enumerate(values):
                rows.append(
                    {
                        **pack.presets[preset].settings(),
                        "allocator": allocator,
                        "status": "ok",
                        "repetition": r,
                        "warmup": False,
                        "p99_ms": value,
                        "rps": 1000.0,
                        "max_ms": value,
                        "peak_rss_bytes": 1e8,
                    }
                )
    context = {"spec": spec.to_dict(), "axes": list(spec.axes)}
    return Experiment(spec.name, pd.DataFrame(rows), context)


def test_the_report_says_the_verdicts_as_advice():
    from hugebench.report import Options

    pack = pack_mod.load_pack("redis")
    experiment = _experiment(pack, [2.0, 2.1, 2.2, 1.9, 2.0, 2.05, 2.1], [1.0] * 7)
    (section,) = advice_sections(experiment, None, Options())
    assert section.title.startswith("Vendor advice, judged here: Redis")
    table = section.table
    first = table.iloc[0]
    assert first["Presets"] == "thp-kept, allocator=as-is vs warning-fix"
    assert first["Verdict"] == HOLDS and first["Advice"] == "[1]"
    assert any("syscheck.c" in note for note in section.notes)
    assert any(note.startswith("not judged: redis PR #5124") for note in section.notes)
    assert any(note.startswith("A lab machine would add: bare metal") for note in section.notes)
    # the generic "expected vs observed" section gives way to it
    assert expected_sections(experiment, None, Options()) == []


def test_a_contradicted_claim_is_said_so_and_flagged():
    from hugebench.report import Options

    pack = pack_mod.load_pack("redis")
    experiment = _experiment(pack, [0.5, 0.52, 0.51, 0.49, 0.5, 0.5, 0.53], [1.0] * 7)
    (section,) = advice_sections(experiment, None, Options())
    assert section.table.iloc[0]["Verdict"] == "contradicted here"
    assert any("THP kept: p99 latency higher" in flag.text for flag in section.warnings)


def test_a_claim_naming_a_missing_cell_is_not_resolved():
    from hugebench.report import Options

    pack = pack_mod.load_pack("redis")
    experiment = _experiment(pack, [], [1.0] * 7)
    (section,) = advice_sections(experiment, None, Options())
    assert section.table.iloc[0]["Verdict"] == "not resolved"
    assert "no runs of the claimed cell" in section.table.iloc[0]["Why"]


def test_no_difference_holds_only_on_a_narrow_interval():
    from hugebench.report import Options

    pack = pack_mod.load_pack("redis")
    steady = [1.0, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0]
    experiment = _experiment(pack, steady, steady)
    (section,) = advice_sections(experiment, None, Options())
    no_difference = section.table[section.table["Says"] == "1"]
    assert list(no_difference["Verdict"]) == [HOLDS, HOLDS]  # rps equal, p99 within 2%
    wild = [0.3, 3.0, 0.5, 2.0, 1.0, 0.4, 2.5]
    (section,) = advice_sections(_experiment(pack, steady, steady, wild), None, Options())
    p99 = section.table[(section.table["Says"] == "1") & (section.table["Metric"] == "p99_ms")]
    assert p99.iloc[0]["Verdict"] == "not resolved"
    assert "too wide to call it no difference" in p99.iloc[0]["Why"]
