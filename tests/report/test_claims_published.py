"""Every published number as a claim: table rows (`values:`), changes, directions and counter columns
(`perf.*` whole run, `pmu.*` timed phase) load or are refused with file:line:key; a counter the machine cannot
count is "not measurable here" with the reason the runs stored; the report lays the claims out as the source's
tables beside ours."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from paths import ROOT
from test_verdicts import BASE as TWO_BY_TWO  # glibc, jemalloc x THP never, always

from hugebench.errors import SpecError
from hugebench.experiment import load_spec, parse_spec
from hugebench.report import report
from hugebench.report.verdicts import (
    CONTRADICTED,
    DIRECTION,
    MAGNITUDE,
    NOT_MEASURABLE,
    NOT_RESOLVED,
    claim_verdicts,
)
from hugebench.store import ResultStore

EXPERIMENTS = ROOT / "experiments"
NO_PMU = "not supported here: KVM guest without vPMU"
BASE = TWO_BY_TWO + "exclude: [{allocator: jemalloc, thp: never}]\n"  # three cells
CLAIMS = """\
expected:
  source: a paper
  claims:
    - {name: "glibc off", cell: {allocator: glibc, thp: never}, values: {perf.cycles: 55.5G, ns_per_lookup: 100}}
    - {name: "jemalloc on", cell: {allocator: jemalloc, thp: always}, values: {perf.cycles: '39.8e9', ns_per_lookup: 81}}
    - {cell: {allocator: jemalloc, thp: always}, vs: {allocator: glibc, thp: never}, change: -18.5}
    - {cell: {allocator: jemalloc, thp: always}, vs: {allocator: glibc, thp: never}, change: -28,
       metric: perf.task_clock}
    - {cell: {allocator: glibc, thp: always}, vs: {allocator: glibc, thp: never}, direction: lower}
  not_judged:
    - {published: "an STLB miss every ~400 cycles", why: "a quotient of two counters"}
"""


def _expected(text: str = CLAIMS, base: str = BASE):
    return parse_spec(base + text, "t.yaml").expected.to_dict()


# -- the claim model ----------------------------------------------------------------------------------


def test_a_table_row_is_one_claim_per_column_with_its_span():
    claims = _expected()["claims"]
    assert [(c["name"], c["metric"]) for c in claims[:4]] == [
        ("glibc off", "perf.cycles"),
        ("glibc off", "ns_per_lookup"),
        ("jemalloc on", "perf.cycles"),
        ("jemalloc on", "ns_per_lookup"),
    ]
    assert (
        claims[0]["value"] == 55.5e9 and claims[2]["value"] == 39.8e9 and claims[3]["value"] == 81
    )
    assert (
        claims[0]["scope"].startswith("whole run") and claims[0]["quantity"] == "cycles (whole run)"
    )
    assert (
        claims[1]["scope"].startswith("timed phase 'lookup'")
        and claims[1]["quantity"] == "Latency ns"
    )
    assert all(c["vs"] is None and c["ratio"] is None for c in claims[:4])


def test_changes_and_directions_against_another_cell():
    change, cpu, direction = _expected()["claims"][4:]
    assert (
        change["ratio"] == pytest.approx(0.815)
        and change["change"] == -18.5
        and change["metric"] == "ns_per_lookup"
    )
    assert cpu["metric"] == "perf.task_clock" and cpu["quantity"] == "CPU time (whole run)"
    assert direction["direction"] == "lower" and direction["ratio"] is None
    assert _expected()["not_judged"] == (
        {"published": "an STLB miss every ~400 cycles", "why": "a quotient of two counters"},
    )


def _claim_line(line: str, extra: str = "") -> str:
    return f"expected:\n  source: a paper\n  claims:\n    - {line}\n{extra}"


@pytest.mark.parametrize(
    "line, where, what",
    [
        (
            "{cell: {allocator: glibc, thp: never}, values: {nope: 3}}",
            "expected.claims.0.values.nope",
            "no metric 'nope'",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, values: {ns_per_lookup: -3}}",
            "expected.claims.0.values.ns_per_lookup",
            "positive number",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, values: {ns_per_lookup: 55.5X}}",
            "expected.claims.0.values.ns_per_lookup",
            "'55.5X'",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, values: {}}",
            "expected.claims.0.values",
            "non-empty mapping",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, values: {ns_per_lookup: 3}, metric: ns_per_lookup}",
            "expected.claims.0.metric",
            "each key of 'values' is a column",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, vs: {allocator: glibc, thp: always}, change: -100}",
            "expected.claims.0.change",
            "above -100",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, vs: {allocator: glibc, thp: always}, direction: sideways}",
            "expected.claims.0.direction",
            "lower or higher",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, vs: {allocator: glibc, thp: always}, change: 5, ratio: 1.05}",
            "expected.claims.0",
            "'change' (percent)",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, direction: lower}",
            "expected.claims.0",
            "without 'vs'",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, value: 3, metric: perf.nope}",
            "expected.claims.0.metric",
            "perf.<label> (whole run)",
        ),
    ],
)
def test_bad_claims_are_refused_with_file_line_key(line, where, what):
    with pytest.raises(SpecError) as err:
        _expected(_claim_line(line))
    message = str(err.value)
    assert message.startswith("t.yaml:11: ") and f"key '{where}'" in message and what in message


def test_a_counter_the_experiment_never_records_is_refused():
    with pytest.raises(
        SpecError,
        match=r"t.yaml:12: key 'expected.claims.0.metric': this experiment sets perf: "
        r"off, so no run records perf.cycles",
    ):
        _expected(
            _claim_line("{cell: {allocator: glibc, thp: never}, value: 3, metric: perf.cycles}"),
            BASE + "perf: off\n",
        )


@pytest.mark.parametrize(
    "item, where",
    [
        ("{published: x}", "expected.not_judged.0.why"),
        ("{published: x, why: y, colour: red}", "expected.not_judged.0.colour"),
        ("just text", "expected.not_judged.0"),
    ],
)
def test_bad_not_judged_items_are_refused(item, where):
    text = _claim_line(
        "{cell: {allocator: glibc, thp: never}, value: 3}", f"  not_judged:\n    - {item}\n"
    )
    with pytest.raises(SpecError, match=rf"t.yaml:13: key '{where}'"):
        _expected(text)


@pytest.mark.parametrize("name", ["article", "alloc", "alloc-ithare", "code", "fleet", "faults"])
def test_every_experiment_with_a_seed_carries_its_numbers(name):
    expected = load_spec(EXPERIMENTS / f"{name}.yaml").expected.to_dict()
    assert expected["source"] and expected["claims"]
    assert all(c["scope"] and c["quantity"] for c in expected["claims"])


def test_article_carries_its_whole_table_and_its_stated_ratios():
    claims = load_spec(EXPERIMENTS / "article.yaml").expected.claims
    table = {
        (c["cell"]["allocator"], c["cell"]["thp.enabled"], c["cell"]["keys"], c["metric"]): c[
            "value"
        ]
        for c in claims
        if c["vs"] is None
    }
    assert len(table) == 27  # 3 sizes x 3 configurations x (cycles, STLB misses, latency)
    assert table[("glibc", "always", 30_000_000, "ns_per_lookup")] == 93
    assert table[("jemalloc-thp", "always", 60_000_000, "perf.stlb_misses")] == 27.5e6
    assert table[("glibc", "never", 10_000_000, "perf.cycles")] == 55.5e9
    stated = {
        (c["cell"]["keys"], c["vs"]["thp.enabled"], c["metric"]): c["change"]
        for c in claims
        if c["change"] is not None
    }
    assert stated == {
        (10_000_000, "never", "ns_per_lookup"): -23,
        (10_000_000, "never", "perf.task_clock"): -28,
        (30_000_000, "never", "ns_per_lookup"): -33,
        (30_000_000, "never", "perf.task_clock"): -32,
        (60_000_000, "never", "ns_per_lookup"): -36,
        (60_000_000, "never", "perf.task_clock"): -38,
        (60_000_000, "always", "ns_per_lookup"): -11,
        (60_000_000, "always", "perf.task_clock"): -22,
    }


# -- verdicts -----------------------------------------------------------------------------------------


def _rows(centres: dict, n: int = 8, cycles: dict | None = None) -> pd.DataFrame:
    """Runs of cells (allocator, thp) -> latency centre, paired by repetition, each within 1% (seeded);
    ``cycles`` (cell -> centre) gives a counted perf.cycles column, else it is null with the no-PMU reason."""
    rng = np.random.default_rng(11)
    records = []
    for (allocator, thp), centre in centres.items():
        for rep in range(n):
            jitter = 1 + rng.uniform(-0.01, 0.01)
            counted = cycles.get((allocator, thp)) if cycles else None
            records.append(
                {
                    "allocator": allocator,
                    "thp.enabled": thp,
                    "sweep_id": "s",
                    "repetition": rep,
                    "status": "ok",
                    "warmup": False,
                    "ns_per_lookup": centre * jitter,
                    "perf.task_clock": 1e9 * centre / 100 * jitter,
                    "perf.cycles": None if counted is None else counted * jitter,
                    "perf.cycles.reason": None if counted else NO_PMU,
                }
            )
    return pd.DataFrame.from_records(records)


CENTRES = {("glibc", "never"): 100, ("glibc", "always"): 90, ("jemalloc", "always"): 81}


def test_counters_the_machine_cannot_count_are_not_measurable_with_the_reason():
    table = claim_verdicts(_rows(CENTRES), _expected())
    by = {(c, m): row for c, m, (_, row) in zip(table["claim"], table["metric"], table.iterrows())}
    cycles = by[("glibc off", "perf.cycles")]
    assert cycles["verdict"] == NOT_MEASURABLE and cycles["why"] == f"perf.cycles: {NO_PMU}"
    assert cycles["measured"] == "n/a" and cycles["published"] == "55.5G"
    assert by[("glibc off", "ns_per_lookup")]["verdict"] == MAGNITUDE
    assert by[("jemalloc on", "ns_per_lookup")]["verdict"] == MAGNITUDE


def test_a_column_no_run_recorded_is_not_measurable():
    rows = _rows(CENTRES).drop(columns=["perf.cycles", "perf.cycles.reason"])
    row = claim_verdicts(rows, _expected()).iloc[0]
    assert (
        row["verdict"] == NOT_MEASURABLE and row["why"] == "no successful run recorded perf.cycles"
    )


def test_counted_counters_are_judged_like_any_column():
    cycles = {("glibc", "never"): 55.5e9, ("jemalloc", "always"): 30e9}
    table = claim_verdicts(_rows(CENTRES, cycles=cycles), _expected())
    assert list(table["verdict"][:3]) == [MAGNITUDE, MAGNITUDE, CONTRADICTED]


def test_change_and_direction_verdicts():
    table = claim_verdicts(_rows(CENTRES), _expected())
    change, cpu, direction = (table.iloc[i] for i in (4, 5, 6))
    assert change["verdict"] == MAGNITUDE and change["published"] == "\u221218.5% (0.815)"
    assert (
        cpu["verdict"] == DIRECTION and cpu["metric"] == "perf.task_clock"
    )  # -18% measured, -28% published
    assert direction["verdict"] == DIRECTION and direction["published"] == "< 1 (lower)"
    higher = claim_verdicts(_rows({**CENTRES, ("glibc", "always"): 120}), _expected())
    assert higher.iloc[6]["verdict"] == CONTRADICTED
    same = claim_verdicts(_rows({**CENTRES, ("glibc", "always"): 100}, n=8), _expected())
    assert same.iloc[6]["verdict"] in (NOT_RESOLVED, DIRECTION, CONTRADICTED)
    few = claim_verdicts(_rows(CENTRES, n=3), _expected())
    assert few.iloc[6]["verdict"] == NOT_RESOLVED and "n=3" in few.iloc[6]["why"]


# -- the side-by-side report ------------------------------------------------------------------------


def _store(tmp_path, rows: pd.DataFrame) -> Path:
    spec = parse_spec(BASE + CLAIMS, "t.yaml")
    store = ResultStore(tmp_path / "r")
    store.write_context(
        "s",
        {
            "experiment": "t",
            "workload": "hashlookup",
            "spec": spec.to_dict(),
            "axes": list(spec.axes),
            "baseline": {},
            "primary_metric": "ns_per_lookup",
        },
    )
    for i, row in enumerate(rows.to_dict("records")):
        row = {k: (None if isinstance(v, float) and math.isnan(v) else v) for k, v in row.items()}
        store.append(
            {
                **row,
                "run_id": f"r{i}",
                "cell_id": f"{row['allocator']}-{row['thp.enabled']}",
                "experiment": "t",
                "workload": "hashlookup",
                "order_index": i,
            }
        )
    return store.path


def _section(text: str, title: str) -> str:
    start = text.index(f"### t: {title}")
    end = text.find("\n### ", start + 1)
    return text[start : end if end > 0 else None]


def test_report_lays_the_claims_out_as_the_published_tables(tmp_path):
    text = report(_store(tmp_path, _rows(CENTRES)), fmt="markdown")
    values = _section(text, "published values beside ours")
    header = values.splitlines()[2]
    assert header == (
        "| Allocator | THP | cycles (whole run): published | cycles (whole run): here [95% CI] | "
        "cycles (whole run): verdict | Latency ns: published | Latency ns: here [95% CI] | "
        "Latency ns: verdict |"
    )
    glibc, jemalloc = values.splitlines()[4:6]
    assert glibc.startswith(
        "| glibc | never | 55.5G | n/a | not measurable here | 100 | 99.3 [99.2, 100.1]"
    ) and glibc.endswith("| magnitude within the CI |")
    assert jemalloc.startswith("| jemalloc | always | 39.8G | n/a | not measurable here | 81 | ")
    assert f"not measurable here: perf.cycles: {NO_PMU}" in values
    assert "cycles (whole run) = perf.cycles (whole run: perf stat" in values
    ratios = _section(text, "published ratios beside ours")
    assert (
        "| Allocator | THP | vs | Latency ns: published |" in ratios
        and "CPU time (whole run): verdict" in ratios
    )
    assert "| jemalloc | always | vs glibc / never | \u221218.5% (0.815) | 0.81" in ratios
    assert (
        "| glibc | always | vs never | < 1 (lower) | 0.9" in ratios
        and "| direction holds |" in ratios
    )
    assert (
        "Published, not judged here: an STLB miss every \\~400 cycles: a quotient of two counters"
        in ratios
    )
    assert "### t: expected vs observed" in text  # the claim-by-claim list with each why follows


def test_report_judges_the_counters_where_a_pmu_counted_them(tmp_path):
    cycles = {cell: 55.5e9 * centre / 100 for cell, centre in CENTRES.items()}
    values = _section(
        report(_store(tmp_path, _rows(CENTRES, cycles=cycles)), fmt="markdown"),
        "published values beside ours",
    )
    assert "not measurable here" not in values
    assert values.splitlines()[4].startswith(
        "| glibc | never | 55.5G | 55.1G [55G, 55.6G] | magnitude within the CI"
    )


@pytest.mark.parametrize(
    "line, where, what",
    [
        (
            "{cell: {allocator: glibc, thp: never}, value: 3, metric: [a, b]}",
            "expected.claims.0.metric",
            "must be a column name",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, values: {3: 4}}",
            "expected.claims.0.values",
            r"a mapping key \('3'\) is not a string",
        ),
    ],
)
def test_a_column_that_is_no_name_is_refused(line, where, what):
    with pytest.raises(SpecError, match=rf"t.yaml:11: key '{where}': {what}"):
        _expected(_claim_line(line))
