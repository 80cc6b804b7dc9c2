"""Names a user chooses never touch a column hugebench owns (issue 26, section 1).

A command's own parameters (axes are columns under their plain names, every parameter is a ``{name}``
field) and its metric's ``name`` used to pass ``plan`` as ``status``, ``run_id``, ``allocator``, ``tmp``:
the measured row was then refused by the store, run identity rewritten (resume re-ran and duplicated
rows), successful runs stored as failed, ``{tmp}`` silently replaced. They are refused at load, with the
file, line, key and the reserved names; and the row itself cannot have its identity replaced.
"""

from __future__ import annotations

import json
import textwrap

import pytest

from hugebench import columns, load
from hugebench.errors import SpecError
from hugebench.experiment import load_spec, parse_spec
from hugebench.run.rows import base_row
from hugebench.run.rows import reply_fields as _read_reply
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

HEAD = "name: t\nworkload: command\nperf: off\n"


def _error(body: str) -> str:
    with pytest.raises(SpecError) as info:
        parse_spec(HEAD + textwrap.dedent(body), "exp.yaml")
    return str(info.value)


@pytest.mark.parametrize(
    "name",
    [
        "status",
        "run_id",
        "cell_id",
        "sweep_id",
        "experiment",
        "allocator",
        "error",
        "wall_s",
        "utime_s",
        "hp_coverage",
        "window_s",
        "host",
    ],
)
def test_a_metric_named_like_a_column_of_hugebench_is_refused(name):
    msg = _error(f"params: {{argv: [/bin/true], metric: {{regex: '([0-9]+)', name: {name}}}}}\n")
    assert (
        msg.startswith("exp.yaml:4: key 'params.metric': ")
        and f"{name!r}" in msg
        and "Reserved: " in msg
    )


def test_a_json_metric_named_by_its_key_is_checked_too():
    assert "'status'" in _error("params: {argv: [/bin/true], metric: {json: status}}\n")


@pytest.mark.parametrize(
    "name", ["perf.cycles", "knob.x", "param.n", "smaps.Rss", "x.reason", "thp.enabled"]
)
def test_a_metric_under_a_prefix_of_hugebench_is_refused(name):
    msg = _error(f"params: {{argv: [/bin/true], metric: {{regex: '([0-9]+)', name: {name}}}}}\n")
    assert "key 'params.metric'" in msg and ("prefix" in msg or ".reason" in msg)


@pytest.mark.parametrize(
    "name",
    [
        "status",
        "run_id",
        "cell_id",
        "experiment",
        "workload",
        "repetition",
        "warmup",
        "sweep_id",
        "started_at",
        "source",
    ],
)
def test_an_axis_named_like_a_column_of_hugebench_is_refused(name):
    msg = _error(f"params: {{argv: [/bin/true, '{{{name}}}']}}\naxes: {{{name}: [a, b]}}\n")
    assert msg.startswith(f"exp.yaml:5: key 'axes.{name}': ") and "choose another name" in msg


@pytest.mark.parametrize("name", ["tmp", "python"])
def test_a_parameter_named_like_a_field_of_hugebench_is_refused(name):
    msg = _error(f"params:\n  argv: [/bin/echo, '{{{name}}}']\n  {name}: mine\n")
    assert msg.startswith(f"exp.yaml:6: key 'params.{name}': ") and "Reserved: tmp, python" in msg


@pytest.mark.parametrize("name", ["status", "run_id", "source"])
def test_a_fixed_parameter_is_only_param_dot_its_name_so_any_other_name_is_fine(name):
    spec = parse_spec(
        HEAD + f"params:\n  argv: [/bin/echo, '{{{name}}}']\n  {name}: mine\n", "exp.yaml"
    )
    row = base_row(plan_mod.plan(spec)[0], "sweep-1")
    assert row[f"param.{name}"] == "mine" and row.get(name) != "mine"


def test_a_metric_named_like_a_parameter_is_refused():
    msg = _error(
        "params: {argv: [/bin/echo, '{n}'], metric: {regex: '([0-9]+)', name: n}}\naxes: {n: [1, 2]}\n"
    )
    assert "key 'params.metric'" in msg and "also a parameter" in msg


def test_ordinary_names_still_load():
    spec = parse_spec(
        HEAD + "params: {argv: [/bin/echo, '{n}', '{label}'], label: x, "
        "metric: {regex: '([0-9]+)', name: rps}}\naxes: {n: [1, 2]}\n",
        "exp.yaml",
    )
    assert spec.axes == {"n": (1, 2)} and spec.params["label"] == "x"


def test_user_name_problem_is_one_rule():
    assert columns.user_name_problem("rps") is None
    assert columns.user_name_problem("lookups_per_s") is None
    for name in columns.IDENTITY + columns.STATUS + columns.TEMPLATE_FIELDS:
        assert columns.user_name_problem(name), name


# -- the row itself: identity and status are never a user's value -----------------------------------------


def _run(cell):
    spec = parse_spec("name: t\nworkload: hashlookup\naxes: {keys: [1000]}\n", "exp.yaml")
    run = plan_mod.plan(spec)[0]
    import dataclasses

    return dataclasses.replace(run, cell={**run.cell, **cell})


def test_a_cell_value_cannot_replace_the_row_s_identity():
    row = base_row(_run({}), "sweep-1")
    assert row["keys"] == 1000 and row["status"] == "ok"
    with pytest.raises(ValueError, match="'run_id' would replace"):
        base_row(_run({"run_id": "mine"}), "sweep-1")
    with pytest.raises(ValueError, match="'status' would replace"):
        base_row(_run({"status": "failed"}), "sweep-1")


def test_a_reply_that_would_rewrite_status_or_identity_is_a_failed_row(tmp_path):
    reply = tmp_path / "reply.json"
    for column in ("status", "run_id", "cell_id", "error"):
        reply.write_text(json.dumps({"status": "ok", "row": {"ns_per_lookup": 5.0, column: 1.5}}))
        fields = _read_reply(reply, {"exit_code": 0})
        assert (
            fields["status"] == "failed"
            and column in fields["error"]
            and "ns_per_lookup" not in fields
        )
    reply.write_text(json.dumps({"status": "ok", "row": {"ns_per_lookup": 5.0}}))
    assert _read_reply(reply, {"exit_code": 0}) == {"ns_per_lookup": 5.0}


# -- the list is complete: every plain column of a real command row is reserved ------------------------


def test_every_column_of_a_command_row_is_reserved_or_the_user_s(tmp_path):
    (tmp_path / "prog.py").write_text(
        "import os, sys\nassert sys.argv[2] == '7' and os.environ['HB_TEST_NUMBER'] == '5'\n"
        "print('{\"rate\": %s}' % sys.argv[1])\n"
    )
    path = tmp_path / "names.yaml"
    path.write_text(
        HEAD
        + textwrap.dedent("""\
        timeout: 30
        params:
          argv: ["{python}", prog.py, "{n}", 7]
          env: {HB_TEST_NUMBER: 5}
          sample_interval: 0.05
          metric: {json: rate, better: higher}
        axes: {n: [3]}
        """)
    )
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    df = load(tmp_path / "res")
    assert result.statuses == {"ok": 1}, df.get("error")
    assert df["rate"].iloc[0] == 3 and df["n"].iloc[0] == 3
    users = {"n", "rate"}
    stray = [
        c
        for c in df.columns
        if c not in users
        and c not in columns.RESERVED
        and not c.startswith(columns.OWNED_PREFIXES)
        and not c.endswith(columns.REASON_SUFFIX)
    ]
    assert not stray, (
        f"columns hugebench writes but does not reserve (add them to hugebench/columns.py): {stray}"
    )


def test_a_measurement_named_like_an_axis_never_relabels_the_cell(tmp_path):
    """hashlookup reports how many lookups it did; an axis ``lookups: [0, 500]`` (0: one per key) keeps its
    planned value in the row, and the measured count stands beside it as ``result.lookups``."""
    path = tmp_path / "lookups.yaml"
    path.write_text(
        "name: lookups\nworkload: hashlookup\nperf: off\ncounters: off\n"
        "params: {keys: 1000}\naxes: {lookups: [0, 500]}\n"
    )
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    df = load(tmp_path / "res").sort_values("lookups")
    assert result.statuses == {"ok": 2}, df.get("error")
    assert df["lookups"].tolist() == [0, 500]  # the cells, as planned
    assert df["result.lookups"].iloc[0] == 1000  # what the run did for "0: one per key"
    assert df["result.lookups"].isna().iloc[1]  # equal to the axis value: nothing to keep apart
