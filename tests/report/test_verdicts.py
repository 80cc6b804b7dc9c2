"""Expected vs observed: the `expected:` schema refused with file:line:key, and every verdict on synthetic rows."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from paths import ROOT

from hugebench.errors import SpecError
from hugebench.experiment import load_spec, parse_spec
from hugebench.report.verdicts import (
    CONTRADICTED,
    DIRECTION,
    MAGNITUDE,
    NOT_RESOLVED,
    claim_verdicts,
    ratio_verdict,
    render_verdicts,
    value_verdict,
)
from hugebench.stats import Ratio

BASE = """\
name: t
workload: hashlookup
params: {keys: 1000}
axes:
  allocator: [glibc, jemalloc]
  thp: [never, always]
"""


def _claims(text: str):
    return parse_spec(
        BASE + "expected:\n  source: a paper\n  claims:\n" + text, "t.yaml"
    ).expected.to_dict()


def test_claims_are_normalised_to_cells_and_ratios():
    expected = _claims(
        "    - {cell: {allocator: jemalloc, thp: always}, vs: {allocator: glibc, thp: never},"
        " value: 81, vs_value: 105}\n"
        "    - {cell: {allocator: glibc, thp: never}, value: 105, metric: chunk_ns_p10}\n"
    )
    first, second = expected["claims"]
    assert expected["metric"] == "ns_per_lookup" and expected["source"] == "a paper"
    assert first["cell"] == {"allocator": "jemalloc", "thp.enabled": "always"}
    assert first["ratio"] == pytest.approx(81 / 105) and first["vs"]["thp.enabled"] == "never"
    assert second["vs"] is None and second["ratio"] is None and second["metric"] == "chunk_ns_p10"


@pytest.mark.parametrize(
    "claim, where, what",
    [
        (
            "{cell: {allocator: tcmalloc, thp: never}, value: 3}",
            "expected.claims.0.cell.allocator",
            "not on the axis",
        ),
        ("{cell: {allocator: glibc}, value: 3}", "expected.claims.0.cell", "matches 2 cells"),
        (
            "{cell: {allocator: glibc, thp: never, keys: 3}, value: 3}",
            "expected.claims.0.cell.keys",
            "is not an axis",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, value: 3, metric: nope}",
            "expected.claims.0.metric",
            "no metric 'nope'",
        ),
        ("{cell: {allocator: glibc, thp: never}, ratio: 2}", "expected.claims.0", "without 'vs'"),
        (
            "{cell: {allocator: glibc, thp: never}, vs: {allocator: glibc, thp: always}, value: 2}",
            "expected.claims.0",
            "either 'ratio'",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, vs: {allocator: glibc, thp: never}, ratio: 2}",
            "expected.claims.0.vs",
            "same cell",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, vs: {allocator: glibc, thp: always}, ratio: 0}",
            "expected.claims.0.ratio",
            "positive number",
        ),
        (
            "{cell: {allocator: glibc, thp: never}, value: 3, color: red}",
            "expected.claims.0.color",
            "unknown key",
        ),
    ],
)
def test_bad_claims_are_refused_with_file_line_key(claim, where, what):
    with pytest.raises(SpecError) as err:
        _claims(f"    - {claim}\n")
    assert (
        err.value.args[0].startswith("t.yaml:")
        and f"key '{where}'" in str(err.value)
        and what in str(err.value)
    )


def test_expected_needs_a_source_and_claims():
    with pytest.raises(SpecError, match=r"t.yaml:7: key 'expected.source'"):
        parse_spec(
            BASE + "expected:\n  claims: [{cell: {allocator: glibc, thp: never}, value: 3}]\n",
            "t.yaml",
        )
    with pytest.raises(SpecError, match=r"key 'expected.claims': must be a non-empty list"):
        parse_spec(BASE + "expected: {source: x, claims: []}\n", "t.yaml")
    with pytest.raises(SpecError, match=r"matches no cell"):
        parse_spec(
            BASE + "exclude: [{allocator: glibc, thp: never}]\nexpected: {source: x, claims: "
            "[{cell: {allocator: glibc, thp: never}, value: 3}]}\n",
            "t.yaml",
        )


@pytest.mark.parametrize("name", ["article", "faults", "alloc"])
def test_shipped_experiments_carry_claims(name):
    expected = load_spec(ROOT / "experiments" / f"{name}.yaml").expected.to_dict()
    assert expected["source"] and expected["claims"]
    # each claim carries a published number, or (a claim kind added later) a published direction
    assert all(
        c["ratio"] or c["value"] or c.get("direction") in ("lower", "higher")
        for c in expected["claims"]
    )


# -- verdicts on synthetic rows ---------------------------------------------------------------------


def _rows(cells: dict, n: int = 8, status: str = "ok") -> pd.DataFrame:
    """Rows of cells allocator -> centre value, paired by repetition, each within 1% of its centre (seeded)."""
    rng = np.random.default_rng(7)
    records = []
    for allocator, centre in cells.items():
        for rep in range(n):
            records.append(
                {
                    "allocator": allocator,
                    "thp.enabled": "never",
                    "sweep_id": "s",
                    "repetition": rep,
                    "status": status if allocator == "bad" else "ok",
                    "warmup": False,
                    "ns_per_lookup": centre * (1 + rng.uniform(-0.01, 0.01)),
                }
            )
    return pd.DataFrame.from_records(records)


def _claim(published=None, value=None, cell="jemalloc", vs="glibc"):
    claim = {
        "cell": {"allocator": cell, "thp.enabled": "never"},
        "metric": "ns_per_lookup",
        "value": value,
        "vs": {"allocator": vs, "thp.enabled": "never"} if published else None,
        "ratio": published,
    }
    return {"source": "a paper", "metric": "ns_per_lookup", "claims": [claim]}


@pytest.mark.parametrize(
    "published, verdict",
    [
        (0.8, MAGNITUDE),  # measured 0.8 [~0.79, ~0.81]
        (0.5, DIRECTION),  # same side of 1, bigger effect published
        (0.95, DIRECTION),  # same side, smaller effect published
        (1.3, CONTRADICTED),  # published slower, measured faster
        (1.0, CONTRADICTED),  # "no difference" published, a clear one measured
    ],
)
def test_ratio_verdicts(published, verdict):
    table = claim_verdicts(_rows({"glibc": 100, "jemalloc": 80}), _claim(published))
    row = table.iloc[0]
    assert row["verdict"] == verdict and row["n"] == 8 and row["kind"] == "ratio"
    assert row["ci_lo"] < 0.8 < row["ci_hi"] and row["measured"].startswith(("0.79", "0.80"))


def test_ratio_not_resolved_when_the_ci_spans_one_or_runs_are_few():
    noisy = _rows({"glibc": 100, "jemalloc": 100})
    noisy.loc[noisy["allocator"] == "jemalloc", "ns_per_lookup"] *= np.tile([0.7, 1.3], 4)
    row = claim_verdicts(noisy, _claim(0.8)).iloc[0]
    assert row["verdict"] == NOT_RESOLVED and "contains 1" in row["why"]
    assert (
        claim_verdicts(noisy, _claim(1.0)).iloc[0]["verdict"] == MAGNITUDE
    )  # "no difference" holds
    few = claim_verdicts(_rows({"glibc": 100, "jemalloc": 80}, n=3), _claim(0.8)).iloc[0]
    assert few["verdict"] == NOT_RESOLVED and "n=3" in few["why"]


def test_missing_or_failed_cells_are_not_resolved():
    rows = _rows({"glibc": 100, "bad": 90}, status="failed")
    missing = claim_verdicts(rows, _claim(0.8, cell="jemalloc")).iloc[0]
    failed = claim_verdicts(rows, _claim(0.8, cell="bad")).iloc[0]
    failed_value = claim_verdicts(rows, _claim(value=90, cell="bad")).iloc[0]
    assert missing["verdict"] == failed["verdict"] == failed_value["verdict"] == NOT_RESOLVED
    assert "no runs of the claimed cell" in missing["why"] and "no successful run" in failed["why"]


@pytest.mark.parametrize(
    "value, n, verdict", [(80, 8, MAGNITUDE), (60, 8, CONTRADICTED), (80, 4, NOT_RESOLVED)]
)
def test_value_verdicts(value, n, verdict):
    row = claim_verdicts(_rows({"jemalloc": 80}, n=n), _claim(value=value)).iloc[0]
    assert row["verdict"] == verdict and row["kind"] == "value" and row["published"] == f"{value:g}"
    if verdict == CONTRADICTED:
        assert "x the published value" in row["why"] and row["why"].startswith("measured 1.3")


def test_verdict_functions_on_their_own():
    assert ratio_verdict(0.8, Ratio(0.8, np.nan, np.nan, True, 1))[0] == NOT_RESOLVED
    assert ratio_verdict(2.0, Ratio(1.9, 1.5, 2.5, True, 6))[0] == MAGNITUDE
    assert ratio_verdict(3.0, Ratio(1.9, 1.5, 2.5, True, 6))[0] == DIRECTION
    assert ratio_verdict(0.5, Ratio(1.9, 1.5, 2.5, True, 6))[0] == CONTRADICTED
    assert value_verdict(5, 0, np.nan, np.nan, np.nan)[0] == NOT_RESOLVED
    assert value_verdict(5, 1, 5.0, np.nan, np.nan)[0] == NOT_RESOLVED


def test_rendered_table_names_sources_and_verdicts():
    table = claim_verdicts(_rows({"glibc": 100, "jemalloc": 80}), _claim(0.8))
    table.attrs.update(title="t: expected vs observed", level=0.95)
    text = render_verdicts(table, "markdown")
    assert (
        "### t: expected vs observed" in text
        and "| allocator=jemalloc thp.enabled=never vs allocator=glibc [1]" in text
    )
    assert MAGNITUDE in text and "[1] a paper" in text
    assert "magnitude within the CI" in render_verdicts(table, "rich")
