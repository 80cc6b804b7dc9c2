"""Plan: cartesian product, excludes, deterministic ids and order, interleaving."""

from hugebench.experiment import parse_spec
from hugebench.sweep import plan as plan_mod

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
        block = runs[rep * n : (rep + 1) * n]
        assert {r.repetition for r in block} == {rep}
        assert len({r.cell_id for r in block}) == n
    assert [r.cell_id for r in runs[:n]] != [r.cell_id for r in runs[n : 2 * n]]


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


# -- issue 26 §4: plan refuses what sweep would, fast, and says what cannot fit --------------------------

import os
import time

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.workloads import sets


def _file(tmp_path, body: str):
    path = tmp_path / "kn.yaml"
    path.write_text("name: kn\nworkload: hashlookup\n" + body)
    return path


@pytest.mark.parametrize(
    "body, key, words",
    [
        ("system: {thp.defrag: bogus}\n", "kn.yaml:3: key 'system.thp.defrag'", "choose one of"),
        ("axes:\n  thp.foo: [1]\n", "kn.yaml:4: key 'axes.thp.foo.0'", "unknown kernel knob"),
        ("system: {hugetlb.2MB: 1000000000}\n", "kn.yaml:3: key 'system.hugetlb.2MB'", "at most"),
    ],
)
def test_plan_and_sweep_refuse_the_same_knob_settings_with_file_line_key(
    tmp_path, fake_sys, body, key, words
):
    path = _file(tmp_path, body)
    roots = ["--sys-root", str(fake_sys.sys_root), "--proc-root", str(fake_sys.proc_root)]
    planned = CliRunner().invoke(main, ["plan", str(path), *roots])
    swept = CliRunner().invoke(
        main, ["sweep", str(path), "-o", str(tmp_path / "res"), "-q", *roots]
    )
    for result in (planned, swept):
        assert result.exit_code != 0 and key in result.output and words in result.output, (
            result.output
        )
        assert "Traceback" not in result.output
    assert not fake_sys.writes and not (tmp_path / "res" / "runs.jsonl").exists()


def test_plan_of_keys_far_beyond_memory_is_fast_and_says_it_cannot_run(tmp_path):
    path = _file(tmp_path, "params: {key_max: 100000000}\n")
    started = time.perf_counter()
    result = CliRunner().invoke(main, ["plan", str(path)])
    assert time.perf_counter() - started < 5, "the memory model must not loop over key lengths"
    assert result.exit_code == 0 and "cannot run here: 1 of 1 cells" in result.output, result.output
    assert "more than this machine's memory" in result.output


def test_heap_per_key_in_closed_form_matches_the_sum():
    def summed(low, high):
        lengths = range(low, high + 1)
        return sum(max(32, -(-(n + 9) // 16) * 16) for n in lengths if n > 15) / len(lengths)

    for low in range(1, 40):
        for high in range(low, 120, 7):
            assert sets._heap_per_key(low, high) == pytest.approx(summed(low, high))


def test_plan_lists_the_knobs_a_memory_state_sweep_sets(tmp_path, fake_sys):
    """issue 38: the fragmenter sets THP modes, compact_unevictable_allowed, compaction_proactiveness
    (movable) and percpu_pagelist_high_fraction; plan names each and for how long, and writes nothing."""
    path = tmp_path / "aged.yaml"
    path.write_text(
        "name: a\nworkload: hashlookup\nparams: {keys: 1000}\n"
        "axes: {memory_state: [fresh, fragmented:50%, fragmented-movable]}\n"
    )
    roots = ["--sys-root", str(fake_sys.sys_root), "--proc-root", str(fake_sys.proc_root)]
    result = CliRunner().invoke(main, ["plan", str(path), *roots])
    assert result.exit_code == 0, result.output
    lines = {
        line.split(" = ")[0].strip(): line for line in result.output.splitlines() if " = " in line
    }
    assert "100000 for up to 5 s" in lines["vm.percpu_pagelist_high_fraction"]
    assert "always while the fragmenter" in lines["thp.enabled"]
    assert "never while the fragmenter" in lines["thp.defrag"]
    assert "0 through the run (fragmented:50%)" in lines["vm.compact_unevictable_allowed"]
    assert "0 through the run (fragmented-movable:100%)" in lines["vm.compaction_proactiveness"]
    assert "vm.compact_memory" in result.output and not fake_sys.writes
    fresh = tmp_path / "fresh.yaml"
    fresh.write_text(path.read_text().replace(", fragmented:50%, fragmented-movable", ""))
    only_fresh = CliRunner().invoke(main, ["plan", str(fresh), *roots]).output
    assert "vm.percpu_pagelist_high_fraction" in only_fresh and "thp.enabled =" not in only_fresh


def test_plan_tells_an_unprivileged_user_the_sweep_would_be_refused(
    tmp_path, fake_sys, monkeypatch
):
    """plan says, as the sweep would, that changing THP needs root (issue 43) — and as root it does not."""
    path = tmp_path / "e.yaml"
    path.write_text(
        "name: a\nworkload: hashlookup\nparams: {keys: 1000}\naxes: {thp: [madvise, always]}\n"
    )
    roots = ["--sys-root", str(fake_sys.sys_root), "--proc-root", str(fake_sys.proc_root)]
    as_root = CliRunner().invoke(main, ["plan", str(path), *roots])
    assert as_root.exit_code == 0 and "would be refused" not in as_root.output, as_root.output
    monkeypatch.setattr(os, "geteuid", lambda: 1000)
    result = CliRunner().invoke(main, ["plan", str(path), *roots])
    assert result.exit_code == 0, result.output
    assert "a sweep by this user would be refused:" in result.output
    assert "needs root" in result.output and "thp.enabled" in result.output
    assert not fake_sys.writes
