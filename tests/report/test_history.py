"""`hugebench history`: stores ordered by time, the fingerprint that changed, and the step rule."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from hugebench.cli import main
from hugebench.report import load_results
from hugebench.report.history import history_report
from hugebench.store import ResultStore

JITTER = [0.0, 0.5, -0.5, 0.25, -0.25, 0.1]


def _store(
    path: Path, started: str, label: str, kernel: str, values: dict, spread: dict = {}
) -> Path:
    store = ResultStore(path)
    store.write_context(
        "s",
        {
            "experiment": "e",
            "workload": "hashlookup",
            "axes": ["allocator"],
            "primary_metric": "ns",
            "started_at": started,
            "label": label,
            "machine": {"kernel": {"release": kernel}},
        },
    )
    for rep, jitter in enumerate(JITTER):
        for allocator, value in values.items():
            wide = spread.get(allocator, 0.0) * (rep - 2.5)
            store.append(
                {
                    "run_id": f"{allocator}{rep}",
                    "sweep_id": "s",
                    "experiment": "e",
                    "workload": "hashlookup",
                    "status": "ok",
                    "repetition": rep,
                    "allocator": allocator,
                    "ns": value * (1 + wide) + jitter,
                }
            )
    return path


def test_a_real_step_is_found_and_what_changed_is_named(tmp_path):
    old = _store(
        tmp_path / "old",
        "2026-01-01T00:00:00+00:00",
        "jemalloc 5.3",
        "6.18",
        {"glibc": 100.0, "jemalloc": 80.0},
    )
    new = _store(
        tmp_path / "new",
        "2026-02-01T00:00:00+00:00",
        "jemalloc 5.4",
        "6.18",
        {"glibc": 100.0, "jemalloc": 60.0},
    )
    later = _store(
        tmp_path / "later",
        "2026-03-01T00:00:00+00:00",
        "jemalloc 5.4",
        "6.19",
        {"glibc": 101.0, "jemalloc": 60.0},
        spread={"glibc": 0.3},
    )
    report = history_report([load_results(p) for p in (later, old, new)])  # given out of order
    section = report.sections[0]
    assert [c for c in section.table.columns][1:] == ["1: old", "2: new", "3: later"]
    shown = section.table.set_index("cell")
    assert shown.loc["allocator=jemalloc", "2: new"] == "60.05 (step down x0.750)"
    assert shown.loc["allocator=glibc", "2: new"] == "100"  # no step
    assert (
        "step" not in shown.loc["allocator=glibc", "3: later"]
    )  # an unstable cell is never a step
    assert section.summary == ["1 step(s): allocator=jemalloc: step down x0.750 at " + str(new)]
    changes = report.sections[-1].table
    assert changes.values.tolist() == [
        ["1 -> 2", "label", "jemalloc 5.3", "jemalloc 5.4"],
        ["2 -> 3", "kernel", "6.18", "6.19"],
    ]
    text = (
        CliRunner()
        .invoke(main, ["history", str(old), str(new), str(later), "--format", "markdown"])
        .output
    )
    assert "step down x0.750" in text and "What changed between stores" in text


def test_no_step_without_a_resolved_change(tmp_path):
    a = _store(tmp_path / "a", "2026-01-01T00:00:00+00:00", "x", "6.18", {"glibc": 100.0})
    b = _store(tmp_path / "b", "2026-01-02T00:00:00+00:00", "x", "6.18", {"glibc": 100.2})
    report = history_report([load_results(a), load_results(b)])
    assert report.sections[0].summary == ["0 step(s)."]
    assert report.sections[-1].notes == ["Nothing in the recorded fingerprint changed."]


def test_the_plot_shows_each_cell_over_time_with_its_steps_marked(tmp_path):
    old = _store(
        tmp_path / "old",
        "2026-01-01T00:00:00+00:00",
        "jemalloc 5.3",
        "6.18",
        {"glibc": 100.0, "jemalloc": 80.0},
    )
    new = _store(
        tmp_path / "new",
        "2026-02-01T00:00:00+00:00",
        "jemalloc 5.4",
        "6.18",
        {"glibc": 100.0, "jemalloc": 60.0},
    )
    report = history_report([load_results(new), load_results(old)], figures=True)
    ((name, fig),) = report.sections[0].figures
    ax = fig.axes[0]
    assert name == "history-e" and [t.get_text() for t in ax.get_xticklabels()] == [
        "1: old",
        "2: new",
    ]
    assert {t.get_text() for t in ax.get_legend().get_texts()} == {
        "allocator=glibc",
        "allocator=jemalloc",
        "step down (ratio)",  # the marks are explained in the legend (issue 43)
    }
    assert (
        ax.get_legend().get_bbox_to_anchor().x0 > ax.get_window_extent().x1 - 1
    )  # beside the data
    steps = [
        line for line in ax.get_lines() if line.get_marker() == "v"
    ]  # the step down, where it happened
    assert len(steps) == 1 and steps[0].get_xydata().tolist() == [[1.0, 60.05]]
    assert [t.get_text() for t in ax.texts] == ["x0.750"]
    ran = CliRunner().invoke(
        main, ["history", str(old), str(new), "--plots", "--html", str(tmp_path / "h.html")]
    )
    assert ran.exit_code == 0, ran.output
    assert (new / "plots" / "history-e.png").stat().st_size > 1000  # the newest store's plots/
    assert "<svg" in (tmp_path / "h.html").read_text()


# -- issue 38: nothing useful is an error, not exit 0 ----------------------------------------------------


def _two(tmp_path) -> tuple[Path, Path]:
    values = {"glibc": 100.0, "jemalloc": 80.0}
    return (
        _store(tmp_path / "a", "2026-01-01T00:00:00+00:00", "a", "6.18", values),
        _store(tmp_path / "b", "2026-01-02T00:00:00+00:00", "b", "6.18", values),
    )


def test_a_primary_no_store_has_is_a_clean_error(tmp_path):
    a, b = _two(tmp_path)
    result = CliRunner().invoke(main, ["history", str(a), str(b), "--primary", "nope"])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert result.output.startswith("hugebench: error: --primary 'nope': no such column")
    assert "numeric columns: ns" in result.output
    assert CliRunner().invoke(main, ["history", str(a), str(b), "--primary", "ns"]).exit_code == 0


def test_an_empty_directory_is_a_clean_error(tmp_path):
    a, _ = _two(tmp_path)
    (tmp_path / "empty").mkdir()
    for args in ([str(tmp_path / "empty")], [str(a), str(tmp_path / "empty")]):
        result = CliRunner().invoke(main, ["history", *args])
        assert result.exit_code == 1, result.output
        assert "empty: no runs recorded" in result.output and "Traceback" not in result.output


def test_html_into_a_missing_directory_is_refused_and_creates_nothing(tmp_path):
    a, b = _two(tmp_path)
    target = tmp_path / "nowhere" / "deeper" / "x.html"
    result = CliRunner().invoke(main, ["history", str(a), str(b), "--html", str(target)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert f"the directory {target.parent} does not exist" in result.output
    assert not (tmp_path / "nowhere").exists()
    made = CliRunner().invoke(main, ["history", str(a), str(b), "--html", str(tmp_path / "h.html")])
    assert made.exit_code == 0 and (tmp_path / "h.html").stat().st_size > 1000


def test_a_command_experiment_whose_argv_is_a_list_compares(tmp_path):
    """A try's rows hold param.argv as a list: compare and history key cells without it (was a TypeError)."""
    paths = []
    for name, day in (("a", "01"), ("b", "02")):
        store = ResultStore(tmp_path / name)
        store.write_context(
            "s",
            {"experiment": "e", "workload": "command", "axes": ["allocator"],
             "primary_metric": "wall_s", "started_at": f"2026-01-{day}T00:00:00+00:00"},
        )  # fmt: skip
        for rep in range(3):
            store.append(
                {"run_id": f"r{rep}", "sweep_id": "s", "experiment": "e", "workload": "command",
                 "status": "ok", "repetition": rep, "allocator": "glibc",
                 "param.argv": ["find", ".", "-name", "{}"], "wall_s": 1.0 + rep / 10},
            )  # fmt: skip
        paths.append(str(tmp_path / name))
    for command in (["history", *paths], ["compare", *paths]):
        result = CliRunner().invoke(main, command)
        assert result.exit_code == 0, result.output
        assert "Traceback" not in result.output and "glibc" in result.output
