"""Safe as root (issue 38): a writer into a directory a user chose never follows a link another user planted.

Each test gives a directory to an unprivileged user (``nobody``), lets that user plant a link (or a file) in it
exactly as an attacker would, then has root (the test) do what a sweep or a report does there: the write is
refused with a clean HugebenchError naming the path and why, and the file the link points at (root's own,
beside it) is untouched, nothing is created where it points. The lock holder's record, the ``stdout:`` key and
the experiment's ``env:`` have tests of their own below.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest
from paths import TESTS

from hugebench.errors import HugebenchError, UnsafePathError
from hugebench.report.figures import save
from hugebench.safefs import SafeDir, open_below, write_atomic
from hugebench.store import ResultStore

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="planting as another user needs root to drop privileges"
)
ROW = {"run_id": "r1", "status": "ok"}
SECRET = b"root's own file\n"


@pytest.fixture
def shared(unprivileged):
    """(results dir owned by nobody, a root-owned victim file, an empty root-owned directory elsewhere,
    a function that runs a shell line as nobody)."""
    results = unprivileged.owned_dir(unprivileged.home / "results")
    victim = unprivileged.home.parent / f"victim-{unprivileged.home.name}"
    victim.write_bytes(SECRET)
    elsewhere = unprivileged.home.parent / f"elsewhere-{unprivileged.home.name}"
    elsewhere.mkdir()

    def as_nobody(line: str) -> None:
        ran = unprivileged.run(["sh", "-ec", line])
        assert ran.returncode == 0, ran.stderr

    yield results, victim, elsewhere, as_nobody
    victim.unlink(missing_ok=True)
    for leftover in elsewhere.iterdir():
        leftover.unlink()
    elsewhere.rmdir()


def _untouched(victim: Path, elsewhere: Path) -> None:
    assert victim.read_bytes() == SECRET
    assert list(elsewhere.iterdir()) == []


def test_a_planted_runs_file_link_is_refused_not_appended_through(shared):
    results, victim, elsewhere, as_nobody = shared
    as_nobody(f"ln -s {victim} {results}/runs.jsonl")
    store = ResultStore(results)
    with pytest.raises(UnsafePathError, match=r"runs\.jsonl.*symbolic link owned by uid \d+"):
        store.append(ROW)
    with pytest.raises(UnsafePathError, match=r"runs\.jsonl.*symbolic link"):
        store.check_writable()  # what a sweep asks before it touches a knob
    _untouched(victim, elsewhere)


def test_another_users_runs_file_or_fifo_is_refused_without_blocking(shared):
    results, victim, elsewhere, as_nobody = shared
    as_nobody(f"echo '{{}}' > {results}/runs.jsonl")
    with pytest.raises(UnsafePathError, match=r"owned by uid \d+, not by uid 0"):
        ResultStore(results).append(ROW)
    as_nobody(f"rm {results}/runs.jsonl && mkfifo {results}/runs.jsonl")
    with pytest.raises(UnsafePathError, match="a FIFO"):
        ResultStore(results).append(ROW)
    _untouched(victim, elsewhere)


def test_a_planted_plot_link_is_not_truncated_through(shared):
    from matplotlib.figure import Figure

    results, victim, elsewhere, as_nobody = shared
    as_nobody(f"mkdir {results}/plots && ln -s {victim} {results}/plots/fig.png")
    fig = Figure()
    fig.subplots().plot([1, 2], [3, 4])
    with pytest.raises(HugebenchError, match=r"fig\.png.*symbolic link owned by uid"):
        save(fig, results, "fig")
    _untouched(victim, elsewhere)
    assert not list((results / "plots").glob(".*.tmp")), "no temporary file is left"


@pytest.mark.parametrize("name", ["sweeps", "plots"])
def test_a_directory_redirect_inside_the_results_is_refused(shared, name):
    from matplotlib.figure import Figure

    results, victim, elsewhere, as_nobody = shared
    as_nobody(f"ln -s {elsewhere} {results}/{name}")
    store = ResultStore(results)
    with pytest.raises(HugebenchError, match=rf"{name}.*symbolic link owned by uid"):
        store.check_writable()
    with pytest.raises(HugebenchError, match=rf"{name}.*symbolic link owned by uid"):
        if name == "sweeps":
            store.write_context("s-1", {"experiment": "e"})
        else:
            save(Figure(), results, "fig")
    _untouched(victim, elsewhere)


def test_a_link_on_the_way_to_the_results_directory_is_refused(shared, unprivileged):
    """``-o /tmp/x/results`` with /tmp/x -> /elsewhere planted: root creates nothing there."""
    results, victim, elsewhere, as_nobody = shared
    as_nobody(f"ln -s {elsewhere} {unprivileged.home}/x")
    store = ResultStore(unprivileged.home / "x" / "results")
    for write in (store.check_writable, lambda: store.append(ROW)):
        with pytest.raises(UnsafePathError, match=r"'x' is a symbolic link owned by uid \d+"):
            write()
    _untouched(victim, elsewhere)


def test_roots_own_links_are_followed_and_a_clean_store_is_written(shared, tmp_path):
    """The rules refuse other users' links only: a path through a link root owns works, and a results
    directory another user owns (with nothing planted) is written as before."""
    results, victim, elsewhere, _ = shared
    (tmp_path / "real").mkdir()
    (tmp_path / "via").symlink_to(tmp_path / "real")
    ResultStore(tmp_path / "via" / "res").append(ROW)
    assert json.loads((tmp_path / "real/res/runs.jsonl").read_text())["run_id"] == "r1"
    store = ResultStore(results)
    store.check_writable()
    store.write_context("s-1", {"experiment": "e"})
    store.append(ROW)
    assert [r["run_id"] for r in store.rows()] == ["r1"]
    assert (results / "runs.jsonl").stat().st_uid == 0


def test_the_html_report_replaces_nothing_it_should_not(shared, unprivileged):
    from click.testing import CliRunner

    from hugebench.cli import main

    results, victim, elsewhere, as_nobody = shared
    sample = TESTS / "data" / "sample_results"
    as_nobody(f"ln -s {victim} {unprivileged.home}/report.html")
    result = CliRunner().invoke(
        main, ["report", str(sample), "--html", f"{unprivileged.home}/report.html"]
    )
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert "symbolic link owned by uid" in result.output, result.output
    _untouched(victim, elsewhere)


def test_safe_dir_units(tmp_path):
    """The module's own rules, as root alone: a file with two links is not appended to, a device is not
    replaced, a temporary file never stays behind, '..' never leaves the base."""
    (tmp_path / "a").write_text("x")
    os.link(tmp_path / "a", tmp_path / "b")
    with SafeDir.open(tmp_path) as d:
        with pytest.raises(UnsafePathError, match="2 hard links"):
            d.append("b")
        assert (tmp_path / "a").read_text() == "x"
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(UnsafePathError, match="a FIFO"):
        write_atomic(tmp_path / "fifo", "data")
    assert stat.S_ISFIFO((tmp_path / "fifo").lstat().st_mode)
    with pytest.raises(UnsafePathError, match="not a file name below"):
        open_below(tmp_path, "../escape")
    write_atomic(tmp_path / "new" / "f.json", "{}")
    assert (tmp_path / "new/f.json").read_text() == "{}"
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["f.json"]
