"""Issue 26 §3: a broken results store never hangs a reader, never exhausts its memory, never shows a traceback.

Each class of breakage is built in tmp_path from the committed sample store. Cases that hung or read without end
before the fix (a FIFO, a link to /dev/zero) run the CLI in a subprocess with a timeout, so a regression fails
the test instead of blocking the suite. The reader under test is ``hugebench.store`` (:func:`read_rows`,
:func:`read_context`, :func:`open_store_file`, :func:`parse_json`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench import store
from hugebench.cli import main
from hugebench.errors import HugebenchError
from hugebench.report import load_results
from hugebench.store import ResultStore, StoreWarning, load

DATA = TESTS / "data"
SAMPLE, SAMPLE_B = DATA / "sample_results", DATA / "sample_results_b"
HUGEBENCH = [sys.executable, "-m", "hugebench.cli"]
EXPERIMENT = "name: tlb-sample\nworkload: hashlookup\nperf: off\nparams: {keys: 100}\n"


def _store(tmp_path: Path, runs: str | None = "copy") -> Path:
    """A copy of the sample store's contexts, and its runs file unless ``runs`` is None."""
    out = tmp_path / "res"
    shutil.copytree(SAMPLE / "sweeps", out / "sweeps")
    if runs == "copy":
        shutil.copy(SAMPLE / "runs.jsonl", out / "runs.jsonl")
    return out


def _cli(args: list[str], cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    """The CLI in its own process: a hang is a TimeoutExpired (a failed test), not a stuck suite."""
    return subprocess.run(
        HUGEBENCH + args,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def _commands(res: Path, tmp_path: Path) -> dict[str, list[str]]:
    (tmp_path / "exp.yaml").write_text(EXPERIMENT)
    return {
        "report": ["report", str(res)],
        "report --html": ["report", str(res), "--html", str(tmp_path / "r.html")],
        "compare": ["compare", str(res), str(SAMPLE_B)],
        "plan -o": ["plan", str(tmp_path / "exp.yaml"), "-o", str(res)],
    }


def _load_in_subprocess(res: Path) -> subprocess.CompletedProcess:
    code = (
        "import hugebench, hugebench.errors as e\n"
        f"try:\n    hugebench.load({str(res)!r})\nexcept e.HugebenchError as exc:\n    print('error:', exc)\n"
    )
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_a_runs_file_that_is_not_a_regular_file_is_refused_by_every_reader(tmp_path, kind):
    res = _store(tmp_path, runs=None)
    runs = res / "runs.jsonl"
    {
        "fifo": lambda: os.mkfifo(runs),
        "dev-zero": lambda: runs.symlink_to("/dev/zero"),
        "directory": lambda: runs.mkdir(),
    }[kind]()
    what = {"fifo": "a FIFO", "dev-zero": "a character device", "directory": "a directory"}[kind]
    for name, args in _commands(res, tmp_path).items():
        done = _cli(args, tmp_path)
        assert done.returncode != 0, (name, done.stdout)
        assert "Traceback" not in done.stderr, (name, done.stderr)
        assert f"{runs} cannot be read: not a regular file but {what}" in done.stderr, (
            name,
            done.stderr,
        )
    done = _load_in_subprocess(res)
    assert "Traceback" not in done.stderr and f"error: {runs} cannot be read" in done.stdout


def test_a_resuming_sweep_refuses_a_fifo_store_before_running_anything(tmp_path):
    res = _store(tmp_path, runs=None)
    os.mkfifo(res / "runs.jsonl")
    (tmp_path / "exp.yaml").write_text(EXPERIMENT)
    done = _cli(["sweep", str(tmp_path / "exp.yaml"), "-o", str(res), "-q"], tmp_path)
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert "runs.jsonl cannot be read: not a regular file but a FIFO" in done.stderr


def test_an_experiment_file_that_is_a_fifo_or_dev_zero_is_refused(tmp_path):
    os.mkfifo(tmp_path / "fifo.yaml")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    for name, what in (("fifo.yaml", "a FIFO"), ("zero.yaml", "a character device")):
        done = _cli(["plan", name], tmp_path)
        assert done.returncode == 2 and "Traceback" not in done.stderr
        assert f"cannot read experiment file {name}: not a regular file but {what}" in done.stderr


def _as_nobody(function) -> tuple[int, str]:
    """Run ``function`` in a forked child with the uid of `nobody` (root ignores permission bits); its return
    value (text) comes back through a pipe. Everything it needs is imported before the fork."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read)
        try:
            os.setgid(65534)
            os.setuid(65534)
            text = function()
        except BaseException as exc:  # the test reads it
            text = f"raised {type(exc).__name__}: {exc}"
        os.write(write, text.encode()[:60000])
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        output = pipe.read().decode()
    os.waitpid(pid, 0)
    return output


@pytest.fixture
def shared_dir():
    """A directory `nobody` can walk into (tmp_path's parents are private to root)."""
    if os.geteuid() != 0:
        pytest.skip("needs root to drop privileges to nobody")
    import tempfile

    path = Path(tempfile.mkdtemp(prefix="hb-broken-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path)


def test_an_unreadable_runs_file_and_a_read_only_html_target_are_clean_errors(shared_dir):
    res = shared_dir / "res"
    shutil.copytree(SAMPLE, res)
    for path in [res, *res.rglob("*")]:
        path.chmod(0o755 if path.is_dir() else 0o644)
    (res / "runs.jsonl").chmod(0o000)
    readonly = shared_dir / "ro"
    readonly.mkdir(mode=0o555)
    readonly.chmod(0o555)
    shutil.copy(SAMPLE / "runs.jsonl", shared_dir / "ok.jsonl")
    (shared_dir / "ok.jsonl").chmod(0o644)

    def run(args):
        return lambda: (lambda r: f"exit {r.exit_code}\n{r.output}{r.exception!r}")(
            CliRunner().invoke(main, args)
        )

    unreadable = _as_nobody(run(["report", str(res)]))
    assert unreadable.startswith("exit 1") and "Traceback" not in unreadable
    assert f"{res / 'runs.jsonl'} cannot be read: Permission denied" in unreadable
    (res / "runs.jsonl").chmod(0o644)
    from hugebench.report import Options, build_report
    from hugebench.report.html import render_html, write_html

    page = build_report(load_results(res), Options(figures=False))  # matplotlib stays in the parent
    render_html(page)

    def write():
        try:
            return str(write_html(page, readonly / "r.html"))
        except HugebenchError as exc:
            return f"error: {exc}"

    assert _as_nobody(write) == (
        f"error: cannot write the HTML report to {readonly / 'r.html'}: Permission denied; "
        "choose another file with --html FILE"
    )
    assert not (readonly / "r.html").exists()


def test_the_html_report_onto_a_directory_or_a_full_device_is_a_clean_error(tmp_path):
    for target, why in (
        (tmp_path, f"--html {tmp_path}: cannot write it: it is a directory"),  # refused up front
        (Path("/dev/full"), "cannot write the HTML report to /dev/full: No space left on device"),
    ):
        result = CliRunner().invoke(main, ["report", str(SAMPLE), "--html", str(target)])
        assert result.exit_code == 1 and result.exception.__class__ is SystemExit
        assert why in result.output


# -- lines that cannot be rows ----------------------------------------------------------------------


def _with_lines(tmp_path: Path, *lines: str) -> Path:
    res = _store(tmp_path)
    with open(res / "runs.jsonl", "a") as handle:
        handle.write("".join(line + "\n" for line in lines))
    return res


def _sample_row(**changes) -> str:
    row = json.loads((SAMPLE / "runs.jsonl").read_text().splitlines()[1])
    return json.dumps({**row, **changes})


def test_deep_nesting_and_huge_integers_are_skipped_lines_counted_in_one_warning(tmp_path):
    deep = "[" * 200_000 + "]" * 200_000  # json.loads: RecursionError
    huge = _sample_row(run_id="huge", ns_per_lookup=int("9" * 4000))
    long = _sample_row(run_id="long", stderr_tail="x" * (store.MAX_LINE_BYTES + 10))
    res = _with_lines(
        tmp_path, deep, huge, long, '{"run_id": ["not", "a", "string"], "status": "ok"}'
    )
    with pytest.warns(
        StoreWarning,
        match=r"4 unreadable line\(s\) skipped: corrupt line 56: nested 200000 levels "
        r"deep .*corrupt line 57: an integer of 4000 digits",
    ):
        frame = load(res)
    assert len(frame) == 55 and not {"huge", "long"} & set(frame["run_id"])
    result = CliRunner().invoke(main, ["report", str(res), "--format", "markdown"])
    assert result.exit_code == 0, result.output
    assert (
        "hugebench: warning:" in result.output and "4 unreadable line(s) skipped" in result.output
    )


def test_list_valued_axis_columns_are_skipped_not_a_crash(tmp_path):
    res = _store(tmp_path)
    rows = [json.loads(line) for line in (res / "runs.jsonl").read_text().splitlines()]
    for row in rows[:5]:
        row["allocator"] = [row["allocator"], "x"]
    (res / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    with pytest.warns(
        StoreWarning, match=r"5 row\(s\) skipped: their column\(s\) allocator hold a list"
    ):
        assert len(load(res)) == len(rows) - 5
    for args in (
        ["report", str(res)],
        ["compare", str(res), str(SAMPLE_B)],
        ["report", str(res), "--html", str(tmp_path / "r.html")],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0, (args, result.output)
        assert "5 row(s) skipped" in result.output


@pytest.mark.parametrize(
    "field, value, said",
    [
        ("axes", "allocator", "'axes' must be a list, not str 'allocator'"),
        ("baseline", [1], "'baseline' must be an object"),
        ("spec", {"axes": "thp"}, "'spec.axes' must be an object"),
        ("metrics", [3], "'metrics[0]' must be an object"),
        (
            "metrics",
            [{"column": "ns_per_lookup", "scale": "x"}],
            "'metrics[0].scale' must be a number",
        ),
        ("sweep_wall_s", "long", "'sweep_wall_s' must be a number"),
        ("machine", {"cpu": "x"}, "'machine.cpu' must be an object"),
        (
            "spec",
            {"adaptive": {"metric": 3, "min": 1, "max": 2, "target": 0.1}},
            "'spec.adaptive.metric' must be a string",
        ),
        (
            "spec",
            {"expected": {"claims": [{"ratio": 0.5}]}},
            "'spec.expected.claims[0].cell' is missing",
        ),
    ],
)
def test_context_files_of_the_wrong_types_are_named_and_skipped(tmp_path, field, value, said):
    res = _store(tmp_path)
    context_file = res / "sweeps" / "tlb-sample-0001.json"
    context = json.loads(context_file.read_text())
    context_file.write_text(json.dumps({**context, field: value}))
    with pytest.warns(StoreWarning, match=re.escape(f"{context_file} cannot be read: {said}")):
        assert "tlb-sample-0001" not in ResultStore(res).contexts()
    with pytest.raises(HugebenchError, match=re.escape(said)):
        ResultStore(res).contexts(strict=True)  # a resuming sweep
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreWarning)
        assert len(load(res)) == 55
    for args in (
        ["report", str(res)],
        ["compare", str(res), str(SAMPLE_B)],
        ["compare", str(SAMPLE_B), str(res)],
    ):
        result = CliRunner().invoke(main, args)
        assert not isinstance(result.exception, Exception) or isinstance(
            result.exception, SystemExit
        ), result.output
        assert "Traceback" not in result.output and said in result.output
        assert "no column 'a'" not in result.output


def test_parse_json_bounds():
    assert store.parse_json(b'{"a": [1, 2.5, null], "b": NaN}') == {"a": [1, 2.5, None], "b": None}
    with pytest.raises(ValueError, match="nested 33 levels"):
        store.parse_json("[" * 33 + "]" * 33)
    with pytest.raises(ValueError, match="21 digits"):
        store.parse_json("1" * 21)
    assert store.parse_json(json.dumps(["[{" * 50])) == ["[{" * 50], (
        "brackets inside strings do not nest"
    )


# -- silent pooling ---------------------------------------------------------------------------------


def test_rows_stored_twice_are_counted_once_with_a_warning(tmp_path):
    res = _store(tmp_path)
    original = load(res)
    (res / "runs.jsonl").write_text((SAMPLE / "runs.jsonl").read_text() * 2)
    with pytest.warns(StoreWarning, match=r"55 row\(s\) repeat a run already stored"):
        doubled = load(res)
    assert len(doubled) == len(original)
    assert len(load_results(res).rows) == len(original)
    result = CliRunner().invoke(main, ["report", str(res), "--format", "csv"])
    assert result.exit_code == 0 and "55 row(s) repeat a run" in result.output
    assert (
        CliRunner().invoke(main, ["report", str(SAMPLE), "--format", "csv"]).output in result.output
    )
    page = CliRunner().invoke(main, ["report", str(res), "--html", str(tmp_path / "r.html")])
    assert page.exit_code == 0 and "55 row(s) repeat a run" in (tmp_path / "r.html").read_text(), (
        "said on the page too"
    )


def test_a_failed_run_retried_later_is_history_not_a_duplicate(tmp_path):
    s = ResultStore(tmp_path)
    base = {"run_id": "r1", "sweep_id": "s", "experiment": "e"}
    s.append({**base, "status": "failed", "error": "boom", "started_at": "t1"})
    s.append({**base, "status": "failed", "error": "boom", "started_at": "t2"})
    s.append({**base, "status": "ok", "started_at": "t3"})
    with warnings.catch_warnings():
        warnings.simplefilter("error", StoreWarning)
        assert [r["started_at"] for r in s.rows()] == ["t1", "t2", "t3"]


def test_two_sweeps_with_different_settings_are_reported_apart(tmp_path):
    res = _store(tmp_path)
    rows = [json.loads(line) for line in (res / "runs.jsonl").read_text().splitlines()]
    other = [
        {**r, "sweep_id": "tlb-sample-0002", "run_id": r["run_id"] + "b", "ns_per_lookup": 1e6}
        for r in rows
        if r["experiment"] == "tlb-sample"
    ]
    (res / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows + other))
    context = json.loads((res / "sweeps" / "tlb-sample-0001.json").read_text())
    context["spec_fingerprint"] = "aaaa"
    (res / "sweeps" / "tlb-sample-0001.json").write_text(json.dumps(context))
    changed = {
        **context,
        "sweep_id": "tlb-sample-0002",
        "spec_fingerprint": "bbbb",
        "spec": {**context["spec"], "params": {"keys": 2_000_000}},
    }
    (res / "sweeps" / "tlb-sample-0002.json").write_text(json.dumps(changed))
    with pytest.warns(
        StoreWarning, match="'tlb-sample' holds runs made with 2 different fixed settings"
    ):
        names = [e.name for e in load_results(res).experiments()]
    assert names == [
        "tlb-sample (settings of sweep tlb-sample-0001)",
        "tlb-sample (settings of sweep tlb-sample-0002)",
        "alloc-sample",
    ]
    result = CliRunner().invoke(main, ["report", str(res), "--format", "csv"])
    assert result.exit_code == 0, result.output
    import io

    import pandas as pd

    table = pd.read_csv(io.StringIO(result.output[: result.output.index("hugebench: warning")]))
    first = table[table["experiment"] == "tlb-sample (settings of sweep tlb-sample-0001)"]
    assert first["ns_per_lookup"].max() < 1000, "the other sweep's 1e6 ns was not pooled in"
    assert (
        table[table["experiment"].str.endswith("tlb-sample-0002)")]["ns_per_lookup"].dropna() == 1e6
    ).all()


@pytest.mark.parametrize(
    "changes",
    [
        {"ns_per_lookup": {"a": 1}},  # an object among a metric's numbers
        {"ns_per_lookup": ""},  # a string among them (stats pairs the runs by repetition)
        {"knob.thp.enabled": {"a": 1}},  # a knob read back as an object
        {
            "started_at": [1, 2],
            "status": "failed",
        },  # a failed run's identity with an unhashable start time
        {"thp": None, "ns_per_lookup": float("nan")},  # a bar without its colour axis
        {"wall_s": [1]},  # the overhead line sums worker wall times
    ],
)
def test_stray_values_in_rows_never_crash_a_report(tmp_path, changes):
    """Found by mutating single fields of the sample store's rows (a fuzz run before these fixes)."""
    res = _store(tmp_path)
    rows = [json.loads(line) for line in (res / "runs.jsonl").read_text().splitlines()]
    for row in rows[1:4]:
        row.update(changes)
    (res / "runs.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    for args in (
        ["report", str(res), "--plots"],
        ["report", str(res), "--format", "csv"],
        ["compare", str(res), str(SAMPLE_B)],
        ["report", str(res), "--html", str(tmp_path / "r.html")],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 0 and result.exception is None, (
            args,
            result.output,
            result.exception,
        )


@pytest.mark.parametrize(
    "raw",
    [
        b'{"a": 1, "b": [2.5, {"c": 99999999999999999999}], "d": "123456789012345678901"}',
        b'{"a": -99999999999999999999, "b": true, "c": null, "d": "NaN Infinity 1e999"}',
    ],
)
def test_parse_json_fast_path_reads_what_the_checked_parse_reads(raw):
    """parse_json tries json's C parser alone first; a document without a number the checks act on reads
    the same as with the checks (numbers inside strings are text)."""
    assert store.parse_json(raw) == json.loads(raw)


@pytest.mark.parametrize(
    "raw, problem",
    [(b'{"a": [1, {"b": 100000000000000000000}]}', "21 digits"), (b'{"a": [1e999]}', None)],
)
def test_parse_json_checks_numbers_however_deep(raw, problem):
    if problem:
        with pytest.raises(ValueError, match=problem):
            store.parse_json(raw)
    else:
        assert store.parse_json(raw) == {"a": [None]}
