"""An experiment file with several mistakes is refused with all of them at once (issue 43: two typos needed
two runs), each naming the file, its line and the key, before any kernel knob is touched."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.errors import SpecError
from hugebench.experiment import parse_spec

FOUR_MISTAKES = """\
name: typos
workload: hashlookup
repetitons: 3
timeout: -1
params: {keyz: 1000}
axes:
  allocator: [glibc, jemaloc]
  thp: [never, always]
"""
EXPECTED = (  # line, key, what is said
    ("t.yaml:3: key 'repetitons'", "unknown key"),
    ("t.yaml:4: key 'timeout'", "must be a number of seconds"),
    ("t.yaml:5: key 'params.keyz'", "unknown parameter of workload 'hashlookup'"),
    ("t.yaml:7: key 'axes.allocator.1'", "unknown allocator 'jemaloc'"),
)


def test_every_error_of_a_file_at_once():
    with pytest.raises(SpecError) as info:
        parse_spec(FOUR_MISTAKES, "t.yaml")
    lines = str(info.value).splitlines()
    assert lines[0] == "t.yaml: 4 errors:", lines
    for where, what in EXPECTED:
        assert any(line.startswith(where) and what in line for line in lines[1:]), (where, lines)
    assert len(lines) == 5


def test_one_error_reads_as_before():
    with pytest.raises(SpecError) as info:
        parse_spec(
            FOUR_MISTAKES.replace("repetitons", "repetitions")
            .replace("-1", "60")
            .replace("keyz", "keys")
            .replace("jemaloc", "jemalloc")
            .replace("always", "alwas"),
            "t.yaml",
        )
    assert str(info.value).startswith("t.yaml:8: key 'axes.thp.1': THP mode must be one of")
    assert "\n" not in str(info.value)


def test_a_check_that_depends_on_a_bad_key_is_not_run():
    """An unknown workload: its params and axes cannot be judged, so only the workload is named (no
    follow-on complaint about every parameter); other keys are still checked."""
    text = "name: w\nworkload: hashlookp\nparams: {keys: 1000}\nseed: -3\n"
    with pytest.raises(SpecError) as info:
        parse_spec(text, "w.yaml")
    lines = str(info.value).splitlines()
    assert lines[0] == "w.yaml: 2 errors:"
    assert lines[1].startswith("w.yaml:2: key 'workload': unknown workload 'hashlookp'")
    assert lines[2].startswith("w.yaml:4: key 'seed': must be an integer")


def test_a_bad_allocator_definition_is_not_refused_again_on_the_axis():
    text = (
        "name: a\nworkload: hashlookup\nallocators:\n  mine: {base: nosuch}\n"
        "axes:\n  allocator: [glibc, mine]\n"
    )
    with pytest.raises(SpecError) as info:
        parse_spec(text, "a.yaml")
    assert str(info.value).startswith("a.yaml:4: key 'allocators.mine'")
    assert "\n" not in str(info.value)


def test_sweep_and_plan_refuse_with_every_error_and_touch_no_knob(tmp_path, fake_sys):
    path = tmp_path / "t.yaml"
    path.write_text(FOUR_MISTAKES)
    for command in (["plan", str(path)], ["sweep", str(path), "-o", str(tmp_path / "out")]):
        result = CliRunner().invoke(main, command, env={"COLUMNS": "400"})
        assert result.exit_code == 2, result.output
        for where, what in EXPECTED:
            assert where.replace("t.yaml", str(path)) + ": " in result.output, result.output
            assert what in result.output
        assert "Traceback" not in result.output
    assert fake_sys.writes == [] and not (tmp_path / "out").exists()


def test_warmup_on_the_command_line_as_on_try(tmp_path):
    """`sweep --warmup N` / `plan --warmup N` replace the file's warmup: and are checked as it would be,
    a bad value named by the option typed (issue 43)."""
    path = tmp_path / "w.yaml"
    path.write_text("name: w\nworkload: hashlookup\nwarmup: 0\nparams: {keys: 1000}\n")
    from hugebench.experiment import load_spec

    assert load_spec(path, warmup=2).warmup == 2 and load_spec(path).warmup == 0
    planned = CliRunner().invoke(main, ["plan", str(path), "--runs", "--warmup", "1"])
    assert planned.exit_code == 0 and "(+1 warm-up)" in planned.output, planned.output
    bad = CliRunner().invoke(
        main, ["sweep", str(path), "--warmup", "-1", "-o", str(tmp_path / "o")]
    )
    assert bad.exit_code == 2 and "--warmup -1 (for " in bad.output, bad.output
    assert "must be an integer from 0 to" in bad.output and not (tmp_path / "o").exists()
