"""Issue 26 §5 and §7 "failure reasons": write errors are clean and lose nothing, output escapes what users
wrote, a host is never an option, and every report says why runs failed."""

from __future__ import annotations

import errno
import io
import os
import resource
import shutil
import signal
import warnings
from types import SimpleNamespace

import pandas as pd
import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench.cli import _print_failures, main
from hugebench.errors import HugebenchError, SpecError
from hugebench.experiment.cluster import resolve
from hugebench.report import report
from hugebench.report.rendering import markdown_text
from hugebench.store import ResultStore, StoreWarning
from hugebench.sweep.orchestrator import SweepOptions, SweepResult, record_runs

DATA = TESTS / "data"
SAMPLE, SAMPLE_B = DATA / "sample_results", DATA / "sample_results_b"
MIMALLOC_REASON = "failed: allocator check: libmimalloc.so.2 not mapped in the worker"
TIMEOUT_REASON = "timeout: worker exceeded 60 s timeout"


def _row(run_id: str, **extra) -> dict:
    return {"run_id": run_id, "status": "ok", "sweep_id": "s", "experiment": "e", **extra}


# -- a full disk never leaves a torn row ------------------------------------------------------------


def test_a_full_disk_cuts_the_row_back_and_raises_a_clean_error(tmp_path):
    """RLIMIT_FSIZE makes the kernel write only part of the row (as a full disk does), in a forked child."""
    store = ResultStore(tmp_path)
    store.append(_row("first"))
    before = store.runs_path.read_bytes()
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (len(before) + 100, len(before) + 100))
        try:
            store.append(_row("second", stderr_tail="x" * 5000))
            said = "appended"
        except HugebenchError as exc:
            said = f"error: {exc}"
        except BaseException as exc:
            said = f"raw {type(exc).__name__}: {exc}"
        os.write(write, said.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        said = pipe.read().decode()
    os.waitpid(pid, 0)
    assert said.startswith(f"error: cannot write the results directory {tmp_path}: only 100 of "), (
        said
    )
    assert store.runs_path.read_bytes() == before, "no torn row is left"
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        assert [r["run_id"] for r in store.rows()] == ["first"]


def test_a_write_error_of_the_row_is_the_error_shown_not_the_context_update_after_it(
    tmp_path, monkeypatch
):
    store = ResultStore(tmp_path)
    store.write_context("s", {"experiment": "e"})

    # the disk fills as the row goes out (a runs.jsonl linked to /dev/full is refused before any write)
    def disk_full(fd, line):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr("hugebench.store.append_line", disk_full)

    def failing_update(*args, **kwargs):
        raise HugebenchError("cannot write the context (disk full)")

    monkeypatch.setattr(store, "update_context", failing_update)
    run = SimpleNamespace(run_id="r1")
    with pytest.warns(
        StoreWarning, match="the end of sweep s was not recorded: cannot write the context"
    ):
        with pytest.raises(HugebenchError, match="No space left on device"):
            record_runs(
                store,
                [[run]],
                set(),
                lambda todo: ((r, _row(r.run_id)) for r in todo),
                SweepOptions(out=tmp_path, quiet=True),
                SweepResult("s", tmp_path),
                1,
            )


# -- report options and output -----------------------------------------------------------------------


@pytest.mark.parametrize(
    "column, problem",
    [
        ("allocator", "not a numeric column (its values are like 'glibc')"),
        ("nosuch", "no such column"),
    ],
)
def test_primary_must_be_a_numeric_column(column, problem):
    for args in (
        ["report", str(SAMPLE), "--primary", column],
        ["compare", str(SAMPLE), str(SAMPLE_B), "--primary", column],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 1 and isinstance(result.exception, SystemExit), result.output
        assert f"--primary {column!r}: {problem} in {SAMPLE}; numeric columns: " in result.output
        assert "ns_per_lookup" in result.output and "repetition," not in result.output


def test_markdown_escapes_what_users_wrote(tmp_path):
    store = ResultStore(tmp_path)
    store.write_context(
        "s", {"experiment": "<b>exp</b>", "axes": ["allocator"], "primary_metric": "ns"}
    )
    for i, name in enumerate(
        ["<script>alert(1)</script>", "*bold* `code` [x](javascript:y) ~~s~~ | _i_"]
    ):
        store.append(
            _row(f"r{i}", allocator=name, ns=10.0 + i, experiment="<b>exp</b>", error=None)
        )
    store.append(
        _row(
            "r9",
            allocator="evil",
            status="failed",
            experiment="<b>exp</b>",
            error="<img src=x onerror=alert(1)>",
        )
    )
    text = report(tmp_path, "markdown")
    assert "<script>" not in text and "<img" not in text and "<b>" not in text
    assert "&lt;script>alert(1)&lt;/script>" in text and "### &lt;b>exp&lt;/b>" in text
    assert r"\*bold\* \`code\` [x\](javascript:y) \~\~s\~\~ \| \_i\_" in text
    assert "&lt;img src=x onerror=alert(1)>" in text, "the failure reason is shown, escaped"


def test_markdown_leaves_the_reports_own_text_alone():
    assert (
        markdown_text("n<6") == "n<6" and markdown_text("91.9 [90.1, 93.0]") == "91.9 [90.1, 93.0]"
    )
    assert markdown_text("ns_per_lookup") == "ns_per_lookup" and markdown_text("-1.5") == "-1.5"
    assert (
        markdown_text("# title", block=True) == r"\# title"
        and markdown_text("1. x", block=True) == r"1\. x"
    )


# -- a host name is never an option ------------------------------------------------------------------


@pytest.mark.parametrize(
    "flag",
    [
        "ssh://-oProxyCommand=touch${IFS}/tmp/pwned",
        "ssh://lab1,-oProxyCommand=x",
        "ssh://-lab1",
        "tcp://-oProxyCommand=x:8786",
        "ssh://lab 1",
    ],
)
def test_a_cluster_host_that_looks_like_an_option_is_refused(flag):
    with pytest.raises(SpecError, match="e.yaml: --cluster: must be"):
        resolve({}, flag, None, None, "e.yaml")


def test_usual_cluster_hosts_still_pass():
    config = resolve(
        {},
        "ssh://lab1,user@lab2.example.org:2222,10.0.0.7,[fe80::1]",
        None,
        None,
        "e.yaml",
        certs="c",
    )
    assert config.ssh == ("lab1", "user@lab2.example.org:2222", "10.0.0.7", "[fe80::1]")
    assert (
        resolve({}, "tls://10.0.0.7:8786", None, None, "e.yaml", "c").scheduler
        == "tls://10.0.0.7:8786"
    )


def test_the_sweep_refuses_an_option_as_host_before_anything_runs(tmp_path):
    (tmp_path / "e.yaml").write_text(
        "name: e\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\n"
    )
    result = CliRunner().invoke(
        main,
        [
            "sweep",
            str(tmp_path / "e.yaml"),
            "-o",
            str(tmp_path / "r"),
            "--cluster",
            "ssh://-oProxyCommand=sh",
        ],
    )
    assert result.exit_code == 2 and isinstance(result.exception, SystemExit), result.output
    assert "--cluster: must be a non-empty list of host names" in result.output
    assert "'-oProxyCommand=sh'" in result.output and not (tmp_path / "r").exists()


# -- failure reasons in every report -----------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["rich", "markdown"])
def test_text_reports_say_why_runs_failed(fmt):
    text = report(SAMPLE, fmt)
    assert (
        f"6 run(s) failed in 1 cell(s): {MIMALLOC_REASON} — allocator=mimalloc, thp=never" in text
    )
    assert (
        f"1 run(s) failed in 1 cell(s): {TIMEOUT_REASON} — allocator=mimalloc, thp=always" in text
    )


def test_csv_and_html_reports_say_why_runs_failed(tmp_path):
    table = pd.read_csv(io.StringIO(report(SAMPLE, "csv")))
    cell = table[(table["allocator"] == "mimalloc") & (table["thp"] == "never")]
    assert cell["failures"].iloc[0] == f"{MIMALLOC_REASON} (x6)"
    result = CliRunner().invoke(main, ["report", str(SAMPLE), "--html", str(tmp_path / "r.html")])
    assert result.exit_code == 0, result.output
    page = (tmp_path / "r.html").read_text()
    assert MIMALLOC_REASON in page and TIMEOUT_REASON in page


def test_compare_says_why_runs_failed_on_each_side():
    result = CliRunner().invoke(main, ["compare", str(SAMPLE), str(SAMPLE_B)])
    assert result.exit_code == 0, result.output
    assert f"A: 6 run(s) failed in 1 cell(s): {MIMALLOC_REASON}" in result.output
    csv = (
        CliRunner().invoke(main, ["compare", str(SAMPLE), str(SAMPLE_B), "--format", "csv"]).output
    )
    assert "a.failures" in csv.splitlines()[0]


def test_a_cell_where_every_run_failed_says_so_instead_of_not_recorded(tmp_path):
    store = ResultStore(tmp_path)
    store.write_context("s", {"axes": ["allocator"], "primary_metric": "ns", "experiment": "e"})
    for i in range(3):
        store.append(
            _row(f"r{i}", allocator="glibc", status="crashed", error="crashed: SIGSEGV\nstack...")
        )
    text = report(tmp_path, "markdown")
    assert "n/a, no run succeeded" in text and "not recorded in these runs" not in text
    assert "3 run(s) failed in 1 cell(s): crashed: SIGSEGV — allocator=glibc" in text


def test_many_reasons_are_grouped_and_capped(tmp_path):
    store = ResultStore(tmp_path)
    store.write_context("s", {"axes": ["allocator"], "primary_metric": "ns", "experiment": "e"})
    for i in range(30):
        store.append(
            _row(
                f"r{i}",
                allocator=f"a{i % 3}",
                status="failed",
                error="same" if i < 20 else f"distinct {i}",
            )
        )
    text = report(tmp_path, "markdown")
    assert (
        "20 run(s) failed in 3 cell(s): failed: same — allocator=a0; allocator=a1; allocator=a2"
        in text
    )
    assert "3 more failed run(s) with 3 other reason(s)" in text


def test_the_sweep_summary_lists_the_failure_reasons(tmp_path, capsys):
    shutil.copytree(SAMPLE, tmp_path / "res")
    _print_failures(tmp_path / "res", "tlb-sample-0001")
    out = capsys.readouterr().out
    assert (
        f"failed: 6 run(s): {MIMALLOC_REASON}" in out
        and f"failed: 1 run(s): {TIMEOUT_REASON}" in out
    )
