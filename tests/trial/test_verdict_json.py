"""The try verdict is a typed value (issue 39) whose JSON (``try --json``, ``--export-json``; read by
benchmarks/judge.py and users) is byte for byte what the verdict gave while it was a dict, and which reads
back from that JSON to the same value.

tests/data/try_verdicts.json holds ``export(verdict, "json")`` of each scenario of ``verdict_scenarios``,
computed on main at 893293f (the dict verdict) with the session's composition written as dict updates, as
``session`` did them; since then, on purpose: the confirmed best's ``expected`` (issue 40) was added, then
replaced by its one interval (issue 55: ``best.ratio``'s ends are the interval, ``best.interval`` how it was
built, ``cpu_ratio`` beside wall time), each configuration's first run became a warm-up left out of the pairs
(``n`` one fewer), and ``likely``, ``warmups``, ``answered_s`` and ``leaning`` were added; the rest unchanged."""

from __future__ import annotations

import json

import pytest
from paths import DATA
from verdict_scenarios import SCENARIOS

from hugebench.trial.export import export
from hugebench.trial.verdict_types import Verdict

BEFORE = json.loads((DATA / "try_verdicts.json").read_text())


def test_every_scenario_has_its_json():
    assert set(BEFORE) == set(SCENARIOS)


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_the_json_is_the_dict_verdicts_byte_for_byte(name):
    assert export(SCENARIOS[name](), "json") == BEFORE[name]


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_a_verdict_reads_back_from_its_json_to_the_same_json(name):
    verdict = SCENARIOS[name]()
    again = Verdict.from_dict(json.loads(export(verdict, "json")))
    assert export(again, "json") == BEFORE[name]
    assert again.recommend == verdict.recommend and again.others == verdict.others
