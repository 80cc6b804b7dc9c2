"""try's answer is short by default (issue 43): at most 12 lines — the decision, its effect with the interval,
memory, the deploy line(s), a tally of the rest — fitted to 80 and 100 columns; ``--details`` prints every
configuration and caveat; ``--export-json/-csv/-markdown FILE`` write the verdict; the JSON is unchanged."""

from __future__ import annotations

import csv
import json
import sys
import types

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.trial import schedule as schedule_mod
from hugebench.trial import verdict as verdict_mod
from hugebench.trial.render import MAX_LINES, answer
from hugebench.trial.verdict_types import Verdict

PROGRAM = [sys.executable, "-c", "b = bytearray(48 << 20); b[::4096] = b'x' * len(b[::4096])"]


def _rows(values):
    return [
        {
            "cell_id": c,
            "status": "ok",
            "window_s": v,
            "repetition": i,
            "sweep_id": "s",
            "source": "l",
        }
        for c, vs in values.items()
        for i, v in enumerate(vs)
    ]


def _recommending_verdict():
    """A verdict that recommends a confirmed configuration, with a dozen others and a long deploy line."""
    import pandas as pd

    values = {"base": [1.00, 1.01, 0.99, 1.00, 1.02, 0.98] * 3, "b": [0.5, 0.51, 0.49] * 6}
    others = {f"o{i}": [0.9 + i / 100, 0.95, 1.3, 0.7] for i in range(10)}
    rows = pd.DataFrame(_rows({**values, **others}))
    state = schedule_mod.Progress(0.0, 60, stopped=schedule_mod.RESERVE_REACHED, blocks=4)
    state.confirm_from, state.confirm_pairs = 4, 14
    state.leaders, state.confirmed = {"base": ("b", None)}, {"base": "resolved better"}
    cells = {"base": {"allocator": "glibc", "thp": "madvise"}}
    cells["b"] = {"allocator": "jemalloc-thp", "thp": "always"}
    cells.update({f"o{i}": {"allocator": "glibc", "thp": f"never{i}"} for i in range(10)})
    spec = types.SimpleNamespace(
        allocators={}, params={"argv": ["/opt/some/long/path/to/the/program", "--input", "x.dat"]}
    )
    verdict = verdict_mod.build(
        verdict_mod.VerdictInputs(rows, cells, "base", "window_s", "lower", spec, "madvise", state)
    )
    assert verdict.recommend == "best" and verdict.deploy.lines
    return verdict


@pytest.mark.parametrize("width", [80, 100])
def test_the_default_answer_fits_twelve_lines_and_the_width(width):
    verdict = _recommending_verdict()
    plan = ["60 runs in 55 s of a 60 s budget (one run ~0.9 s); selection: 4 blocks, stopped: x"]
    out = answer(verdict, plan, details=False, width=width).splitlines()
    assert len(out) <= MAX_LINES - 1, "\n".join(out)  # the results line follows
    assert all(len(line) <= width for line in out), "\n".join(out)
    assert out[0].startswith("VERDICT: use jemalloc-thp, THP always")
    assert any(line.startswith("  effect on fresh pairs: time 0.") for line in out)
    # one interval (issue 55): the fresh pairs' sequence widened for a deployment, never narrower
    built, ratio = verdict.best.interval, verdict.best.ratio
    assert built.pairs == 14 and ratio.ci_lo <= built.cs_lo <= built.cs_hi <= ratio.ci_hi
    assert not any("expect" in line for line in out)  # no second range to reconcile
    assert any("LD_PRELOAD=" in line for line in out)  # the least invasive deploy line, whole
    assert "Other configurations" not in "\n".join(out)
    full = answer(verdict, plan, details=True, width=width).splitlines()
    assert len(full) > len(out) and "Other configurations (vs as-is):" in full
    assert "the drift between this try's blocks (none seen)" in " ".join(" ".join(full).split())
    assert all(len(line) <= width for line in full), "\n".join(
        line for line in full if len(line) > width
    )
    # a deploy command split to fit is still the same shell words, continued with a backslash
    joined = " ".join(line.strip().rstrip("\\").strip() for line in out if line.startswith("    "))
    assert verdict.deploy.lines[0].shell in joined


def test_a_real_try_prints_the_short_answer_and_writes_its_exports(tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    files = {fmt: tmp_path / f"v.{fmt}" for fmt in ("json", "csv", "md")}
    result = CliRunner().invoke(
        main,
        [
            "try", "--regime", "back-to-back", "--budget", "25s", "--allocators", "glibc", "--thp", "madvise", "--thp", "never", "--no-mthp",
            "-o", str(tmp_path / "out"), "--export-json", str(files["json"]),
            "--export-csv", str(files["csv"]), "--export-markdown", str(files["md"]), "--", *PROGRAM,
        ],
        catch_exceptions=False,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    out = result.stdout.splitlines()
    assert out[0].startswith("json: ") and out[2].startswith("markdown: ")  # the files written
    answer_lines = out[3:]
    assert len(answer_lines) <= MAX_LINES and answer_lines[0].startswith("VERDICT: "), result.stdout
    assert any(line.startswith("results: ") for line in answer_lines[-3:]), result.stdout
    assert all(len(line) <= 80 for line in result.stdout.splitlines()), result.stdout
    verdict = json.loads(files["json"].read_text())
    assert {"best", "baseline", "others", "recommend", "caveats", "runs"} <= set(verdict)
    with files["csv"].open() as f:
        table = list(csv.DictReader(f))
    assert table[0]["role"] == "as-is" and len(table) == 1 + bool(verdict["best"]) + len(
        verdict["others"]
    )
    assert table[0]["runs"] == str(verdict["baseline"]["runs"])
    assert "| configuration | role |" in files["md"].read_text()
    for width in (
        80,
        100,
    ):  # the same verdict, short (as printed at that width) and in full, fits too
        typed = Verdict.from_dict(verdict)
        brief = answer(typed, verdict["plan"], details=False, width=width).splitlines()
        assert len(brief) < MAX_LINES and all(len(line) <= width for line in brief), brief
        full = answer(typed, verdict["plan"], details=True, width=width)
        assert all(len(line) <= width for line in full.splitlines()), full


def test_an_export_into_a_missing_directory_is_refused_before_any_run(tmp_path):
    result = CliRunner().invoke(
        main,
        [
            "try",
            "--export-csv",
            str(tmp_path / "no" / "v.csv"),
            "-o",
            str(tmp_path / "o"),
            "--",
            *PROGRAM,
        ],
    )
    assert (
        result.exit_code == 2
        and "--export-csv" in result.output
        and "does not exist" in result.output
    )
    assert not (tmp_path / "o").exists() and "Traceback" not in result.output


def test_the_unstable_tally_counts_configurations_not_caveat_lines():
    """The caveats name three unstable configurations and list the rest on one line; the short answer's
    'unstable (N)' is the number of unstable configurations (issue 43)."""
    from hugebench.trial.render import _tally, unstable_count

    def config(name, unstable):
        return types.SimpleNamespace(
            name=name,
            kind="same",
            dropped=None,
            unstable="2 of 6 runs outliers" if unstable else None,
        )

    others = [config(f"o{i}", i < 4) for i in range(6)]
    verdict = types.SimpleNamespace(baseline=config("as-is", True), best=others[0], others=others)
    verdict.caveats = verdict_mod._unstable_caveats([verdict.baseline, *others[:4]])
    assert len(verdict.caveats) == 4  # three named, the other two on one line
    assert unstable_count(verdict) == 5  # as-is and o0..o3, o0 (the best) once
    assert "unstable (5)" in _tally(verdict)


@pytest.mark.parametrize("width", [80, 100])
def test_long_names_keep_the_short_answer_short(width):
    """A configuration's long name is shortened in its middle (marked ...) and a deploy command that cannot
    fit is replaced by the line saying where it is whole; --details keeps both whole (issue 43)."""
    import pandas as pd

    rows = pd.DataFrame(_rows({"base": [1.00, 1.01, 0.99] * 6, "b": [0.5, 0.51, 0.49] * 6}))
    state = schedule_mod.Progress(0.0, 60, stopped=schedule_mod.RESERVE_REACHED, blocks=4)
    state.confirm_from, state.confirm_pairs = 4, 14
    state.leaders, state.confirmed = {"base": ("b", None)}, {"base": "resolved better"}
    mine = "jemalloc-" + "with-a-very-long-configuration-name-" * 3 + "x"
    cells = {
        "base": {"allocator": "glibc", "thp": "madvise"},
        "b": {"allocator": mine, "thp": "always"},
    }
    argv = ["/opt/" + "a-long-directory/" * 8 + "program", "--input", "/data/" + "x" * 120]
    spec = types.SimpleNamespace(
        allocators={mine: {"base": "jemalloc", "env": {"MALLOC_CONF": "thp:always," * 8}}},
        params={"argv": argv},
    )
    verdict = verdict_mod.build(
        verdict_mod.VerdictInputs(rows, cells, "base", "window_s", "lower", spec, "madvise", state)
    )
    plan = ["40 runs in 55 s of a 60 s budget (one run ~0.9 s); selection: 4 blocks"]
    out = answer(verdict, plan, details=False, width=width).splitlines()
    assert len(out) <= MAX_LINES - 1 and all(len(line) <= width for line in out), "\n".join(out)
    assert out[0].startswith("VERDICT: use jemalloc-with-a-very-long-") and "..." in out[0]
    assert "the command is too long for this answer" in " ".join(out)
    full = answer(verdict, plan, details=True, width=width)
    assert "".join(verdict.best.name.split()) in "".join(full.split())  # wrapped, whole
    assert argv[0] in full


def test_a_verdict_has_one_interval_and_it_holds_the_confidence_sequence():
    """Issue 55: one interval per verdict, not a CI and an "expected range" to reconcile. The best's ratio
    carries it (the JSON's ``best.ratio.ci_lo/ci_hi``); ``best.interval`` says how it was built; no
    "expected" key, no "thin" caveat (a recommendation's one interval excludes 1, or it is none)."""
    verdict = _recommending_verdict()
    data = verdict.to_dict()
    best = data["best"]
    assert "expected" not in best and set(best["interval"]) == {"cs_lo", "cs_hi", "pairs", "drift"}
    assert best["ratio"]["ci_hi"] < 1 and best["ratio"]["ci_lo"] <= best["interval"]["cs_lo"]
    assert not any(c.startswith("thin") for c in verdict.caveats)
    out = answer(verdict, [], details=True, width=None).splitlines()
    head = next(line for line in out if line.startswith("VERDICT:"))
    assert head.count("[95% CI") == 1 and not any("expect" in line for line in out)
    assert any(
        line.startswith("  its interval: the fresh pairs' 95% confidence sequence") for line in out
    )


@pytest.mark.parametrize("reserve", [1, 2, 3])
def test_a_results_line_wrapped_over_several_lines_counts_against_the_twelve(reserve):
    """A long results directory wraps its line (CI's pytest paths did, 13 lines in all): the short form
    leaves that many lines for it."""
    verdict = _recommending_verdict()
    plan = ["60 runs in 55 s of a 60 s budget (one run ~0.9 s); selection: 4 blocks, stopped: x"]
    out = answer(verdict, plan, details=False, width=80, reserve=reserve).splitlines()
    assert len(out) + reserve <= MAX_LINES, "\n".join(out)
    assert out[0].startswith("VERDICT: use ") and out[-1].startswith("more: ")
