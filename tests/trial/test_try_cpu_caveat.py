"""--metric cpu on a program that mostly waits (issue 53): a verdict on less than one clock tick of CPU a
run gets a caveat saying so; a program that computes gets none."""

from __future__ import annotations

import os

from hugebench.trial.runs import cpu_too_small

TICK = 1.0 / os.sysconf("SC_CLK_TCK")


def test_a_program_that_only_sleeps_gets_the_caveat():
    said = cpu_too_small([0.0008, 0.0011, 0.0009, float("nan"), None])
    assert said and said.startswith("cpu: as-is used 0.9 ms of CPU a run (median)")
    assert "leave out --metric cpu" in said


def test_a_program_that_computes_gets_none():
    assert cpu_too_small([TICK * 3, TICK * 4, TICK * 5]) is None
    assert cpu_too_small([]) is None
