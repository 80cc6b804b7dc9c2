"""Plan: cartesian product, excludes, deterministic ids and order, interleaving."""

from hugebench import plan as plan_mod
from hugebench.spec import parse_spec

SPEC = """\
name: p
workload: hashlookup
repetitions: 3
seed: 7
axes:
  allocator: [glibc, jemalloc, mimalloc]
  thp: [never, always]
  keys: [1000, 2000]
exclude: [{allocator: mimalloc, keys: 2000}]
"""


def test_cells_and_excludes():
    spec = parse_spec(SPEC)
    cells = plan_mod.cells(spec)
    assert len(cells) == 3 * 2 * 2 - 2
    assert not any(c["allocator"] == "mimalloc" and c["keys"] == 2000 for c in cells)


def test_same_spec_same_runs_and_ids():
    a, b = plan_mod.plan(parse_spec(SPEC)), plan_mod.plan(parse_spec(SPEC))
    assert [r.run_id for r in a] == [r.run_id for r in b]
    assert len({r.run_id for r in a}) == len(a) == 10 * 3


def test_seed_changes_order_not_cells():
    a = plan_mod.plan(parse_spec(SPEC))
    b = plan_mod.plan(parse_spec(SPEC.replace("seed: 7", "seed: 8")))
    assert [r.cell_id for r in a] != [r.cell_id for r in b]
    assert sorted(r.cell_id for r in a) == sorted(r.cell_id for r in b)


def test_interleaved_blocks_hold_each_cell_once():
    runs = plan_mod.plan(parse_spec(SPEC))
    n = 10
    for rep in range(3):
        block = runs[rep * n:(rep + 1) * n]
        assert {r.repetition for r in block} == {rep}
        assert len({r.cell_id for r in block}) == n
    assert [r.cell_id for r in runs[:n]] != [r.cell_id for r in runs[n:2 * n]]


def test_params_and_knobs_land_in_the_right_place():
    run = plan_mod.plan(parse_spec(SPEC))[0]
    assert set(run.system) == {"thp.enabled"}
    assert run.params["keys"] in (1000, 2000) and run.params["set_kind"] == "flat"
    assert run.cell["allocator"] == run.allocator


def test_grouped_order_flips_knobs_less():
    inter = plan_mod.summary(plan_mod.plan(parse_spec(SPEC)))
    grouped = plan_mod.summary(plan_mod.plan(parse_spec(SPEC + "order: grouped\n")))
    assert grouped["knob_changes"] <= 2 * 3 - 1 < inter["knob_changes"]


def test_warmup_runs_come_first_and_are_marked():
    runs = plan_mod.plan(parse_spec(SPEC + "warmup: 1\n"))
    assert all(r.warmup for r in runs[:10]) and not any(r.warmup for r in runs[10:])
    assert len({r.run_id for r in runs}) == len(runs)
