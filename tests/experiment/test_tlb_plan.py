"""experiments/tlb.yaml, the headline sweep: under two hours here by hashlookup's time model, with every axis
of the article kept (issue 31). The model itself is checked against real runs in docs/results.md."""

from __future__ import annotations

from paths import ROOT

from hugebench.experiment import load_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.estimate import estimate
from hugebench.workloads import get

EXPERIMENTS = ROOT / "experiments"


def test_tlb_sweep_plans_at_most_two_hours_over_the_articles_axes():
    runs = plan_mod.plan(load_spec(EXPERIMENTS / "tlb.yaml"))
    planned = estimate(runs)
    assert planned.from_model == len(runs) and planned.seconds is not None
    assert planned.seconds <= 2 * 3600, f"{planned.seconds / 3600:.2f} h"
    cells = {(r.allocator, r.cell["thp.enabled"], r.params["keys"]) for r in runs}
    assert {keys for *_, keys in cells} == {10_000_000, 30_000_000, 60_000_000}
    assert len(cells) == 7 * 3 * 3  # every allocator x THP mode x size
    assert all(r.params["lookups"] == 10_000_000 for r in runs)  # all keys at 10M, a sample beyond
    assert all(r.params["teardown"] == "exit" for r in runs)  # the set left to each worker's exit
    assert {r.repetition for r in runs} == set(
        range(4)
    )  # the most that fit; a 95% verdict needs -r 6


def test_time_model_charges_the_sample_not_every_key():
    workload = get("hashlookup")
    params = {name: p.default for name, p in workload.params.items()} | {"keys": 60_000_000}
    every_key = workload.time_estimate(params)
    sampled = workload.time_estimate(params | {"lookups": 10_000_000})
    assert sampled < every_key
    # Both still build the whole set: the saving is the lookups and shuffling of the 50M keys not sampled.
    assert every_key - sampled < 0.5 * every_key


def test_time_model_charges_exit_less_than_freeing_the_set():
    workload = get("hashlookup")
    params = {name: p.default for name, p in workload.params.items()} | {"keys": 60_000_000}
    assert params["teardown"] == "free"  # in-process callers free what they built
    freed = workload.time_estimate(params)
    left = workload.time_estimate(params | {"teardown": "exit"})
    assert 0 < freed - left < 0.25 * freed  # the set is still built; only its destruction is saved
