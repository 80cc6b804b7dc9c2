"""The reference of load()'s columns (issue 30): every column a real small sweep writes is documented, with
its meaning and unit, and every name and prefix hugebench owns has an entry; the manual's page is generated
from the same entries."""

from __future__ import annotations

import textwrap

from hugebench import columns, load
from hugebench.experiment import load_spec
from hugebench.manual.column_reference import reference, undocumented
from hugebench.manual.docgen import expand
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep


def _sweep(tmp_path, name: str, body: str):
    path = tmp_path / f"{name}.yaml"
    path.write_text(f"name: {name}\n" + textwrap.dedent(body))
    spec = load_spec(path)
    out = tmp_path / name
    result = run_sweep(
        spec, plan_mod.plan(spec), SweepOptions(out=out, quiet=True, journal=tmp_path / "j.json")
    )
    return result, load(out)


def test_every_column_of_a_real_small_sweep_is_documented(tmp_path):
    result, df = _sweep(
        tmp_path,
        "tiny",
        """\
        workload: hashlookup
        repetitions: 1
        params: {keys: 20k, lookups: 50k}
        axes:
          allocator: [glibc, jemalloc-thp]
          thp: [never, madvise]
        """,
    )
    assert result.statuses == {"ok": 4}, df.get("error")
    assert len(df.columns) > 150
    assert undocumented(df.columns, extra={"thp"}) == []
    (tmp_path / "p.py").write_text("import json\nprint(json.dumps({'ops': 12.5}))\n")
    result, df = _sweep(
        tmp_path,
        "prog",
        """\
        workload: command
        params:
          argv: ["{python}", p.py, "{level}"]
          metric: {name: ops_per_s, json: ops}
        axes:
          allocator: [glibc]
          level: [1]
        """,
    )
    assert result.statuses == {"ok": 1}, df.get("error")
    assert "tree_peak_rss_bytes" in df.columns and "noise.disturbed" in df.columns
    assert undocumented(df.columns, extra={"level", "ops_per_s"}) == []


def test_every_owned_name_and_prefix_has_an_entry_with_a_unit_and_a_meaning():
    entries = [c for group in reference().values() for c in group]
    assert all(c.unit and len(c.meaning) > 10 for c in entries)
    assert undocumented(columns.OWNED + columns.IDENTITY + columns.STATUS) == []
    for prefix in columns.OWNED_PREFIXES:
        assert any(c.pattern.startswith(prefix) for c in entries), (
            f"no entry for the columns {prefix}*"
        )
    assert undocumented(["no_such_column", "perfx"]) == [
        "no_such_column",
        "perfx",
    ]  # the check can fail


def test_the_manual_page_is_generated_from_the_entries():
    page = expand("<!-- hugebench:columns -->")
    assert (
        "### Identity and status (every row)" in page
        and "| `tree_peak_rss_bytes` | bytes |" in page
    )
    assert (
        "| `ns_per_lookup` | ns |" in page and "&lt;" in page
    )  # placeholders are not read as HTML
