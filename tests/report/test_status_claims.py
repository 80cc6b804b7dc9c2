"""Claims about how runs end (`status: oom`): read with file:line:key errors, judged by counting each side's
runs with an exact binomial test (the shrinker pack's reproducer claim). Synthetic rows, no kernel."""

from __future__ import annotations

import pandas as pd
import pytest

from hugebench.errors import SpecError
from hugebench.experiment import parse_spec
from hugebench.report.outcomes import two_sided_p
from hugebench.report.verdicts import CONTRADICTED, DIRECTION, NOT_RESOLVED, claim_verdicts

BASE = """\
name: t
workload: hashlookup
params: {keys: 1000}
axes:
  thp: [never, always]
expected:
  source: a cover letter
  claims:
"""
CLAIM = "    - {cell: {thp: always}, vs: {thp: never}, status: oom}\n"


def _expected(claim: str = CLAIM):
    return parse_spec(BASE + claim, "t.yaml").expected.to_dict()


def _rows(always: list[str], never: list[str]) -> pd.DataFrame:
    return pd.DataFrame(
        [{"thp.enabled": "always", "status": s, "warmup": False} for s in always]
        + [{"thp.enabled": "never", "status": s, "warmup": False} for s in never]
    )


def test_a_status_claim_is_read_without_a_metric():
    (claim,) = _expected()["claims"]
    assert claim["status"] == "oom" and claim["metric"] == "status"
    assert claim["cell"] == {"thp.enabled": "always"} and claim["ratio"] is None


@pytest.mark.parametrize(
    "claim, key, what",
    [
        ("{cell: {thp: always}, vs: {thp: never}, status: oom, ratio: 2}", "ratio", "not a number"),
        ("{cell: {thp: always}, vs: {thp: never}, status: ok}", "status", "must be one of"),
        ("{cell: {thp: always}, vs: {thp: never}, status: eaten}", "status", "must be one of"),
    ],
)
def test_bad_status_claims_are_refused_with_file_line_key(claim, key, what):
    with pytest.raises(SpecError) as err:
        _expected(f"    - {claim}\n")
    assert f"t.yaml:9: key 'expected.claims.0.{key}'" in str(err.value) and what in str(err.value)


def test_the_binomial_test_is_the_sign_test_of_min_runs_for():
    assert two_sided_p(6, 6) == pytest.approx(2 / 64)  # six alike resolve at 95 %
    assert two_sided_p(5, 5) == pytest.approx(2 / 32)  # five do not
    assert two_sided_p(3, 6) == 1.0 and two_sided_p(0, 0) == 1.0


@pytest.mark.parametrize(
    "always, never, verdict, measured",
    [
        (["oom"] * 6, ["ok"] * 6, DIRECTION, "oom in 6/6 vs 0/6"),
        (["oom"] * 4, ["ok"] * 4, NOT_RESOLVED, "oom in 4/4 vs 0/4"),  # too few to resolve
        (["ok"] * 6, ["ok"] * 6, CONTRADICTED, "oom in 0/6 vs 0/6"),  # no OOM without the fix
        (["oom"] * 6, ["oom"] * 6, CONTRADICTED, "oom in 6/6 vs 6/6"),  # the fix did not help
        ([], ["ok"] * 6, NOT_RESOLVED, "oom in 0/0 vs 0/6"),
    ],
)
def test_status_verdicts_count_how_each_side_ended(always, never, verdict, measured):
    (row,) = claim_verdicts(_rows(always, never), _expected()).to_dict("records")
    assert row["verdict"] == verdict and row["measured"] == measured and row["kind"] == "status"


def test_runs_that_ended_otherwise_are_left_out_and_said():
    rows = _rows(["oom"] * 6 + ["timeout"], ["ok"] * 6 + ["skipped"])
    rows.loc[len(rows)] = {"thp.enabled": "always", "status": "oom", "warmup": True}
    (row,) = claim_verdicts(rows, _expected()).to_dict("records")
    assert row["measured"] == "oom in 6/6 vs 0/6" and row["verdict"] == DIRECTION
    assert "left out: 1 timeout" in row["why"]
