"""Fuzzing the store readers (issue 26, section 3 and 8): a results directory whose ``runs.jsonl`` and
``sweeps/*.json`` hold random bytes, torn or truncated lines, deeply nested or huge values, rows and contexts
with values of the wrong type, duplicated rows... ``hugebench.load()`` and the report must each end with a
result or a HugebenchError: never another exception, never a hang (an alarm fails an example that takes long).

The starting point is a real store, written by a small sweep on the fake kernel tree.

A crash while a store is read (a frame in hugebench/store.py, or in the report reading what the store gave it:
a context value of the wrong type) makes the test xfail, naming each kind: the store-hardening branch (issue 26,
section 3) fixes those; any other crash, and any hang, fails the test.
"""

from __future__ import annotations

import json
import shutil
import traceback
import warnings
from datetime import timedelta
from pathlib import Path

import pytest
from conftest import FakeKernel
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from time_limit import time_limit

from hugebench import load
from hugebench.errors import HugebenchError
from hugebench.experiment import parse_spec
from hugebench.report import report
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

EXAMPLE_SECONDS = 20
STORE_FUZZ = settings(
    max_examples=150,
    deadline=timedelta(seconds=10),
    database=None,
    report_multiple_bugs=False,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.function_scoped_fixture,
    ],
)
SPEC = """\
name: store
workload: hashlookup
perf: off
counters: off
timeout: 120
repetitions: 2
params: {keys: 2000, chunks: 2}
baseline: {set_kind: flat}
axes: {set_kind: [flat, node]}
expected: {source: a test, claims: [{cell: {set_kind: node}, vs: {set_kind: flat}, ratio: 2}]}
"""


@pytest.fixture(scope="module")
def real_store(tmp_path_factory) -> tuple[list[bytes], dict[str, bytes]]:
    """The lines of runs.jsonl and the context files of a real 4-run sweep."""
    root = tmp_path_factory.mktemp("store")
    kernel = FakeKernel(root / "fake").build()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("HUGEBENCH_LOCK", str(root / "lock"))
        spec = parse_spec(SPEC, str(root / "store.yaml"))
        options = SweepOptions(
            out=root / "res",
            quiet=True,
            journal=root / "journal.json",
            host=kernel.host,
        )
        assert run_sweep(spec, plan_mod.plan(spec), options).statuses == {"ok": 4}
    lines = (root / "res" / "runs.jsonl").read_bytes().splitlines()
    contexts = {p.name: p.read_bytes() for p in (root / "res" / "sweeps").glob("*.json")}
    assert len(lines) == 4 and len(contexts) == 1
    return lines, contexts


HOSTILE = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.just(int("9" * 4000)),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=20),
    st.lists(st.integers(0, 3), max_size=3),
    st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
    st.sampled_from(["all", "", "ok", "failed", "NaN", "<script>x</script>"]),
)


def _nested(depth: int) -> bytes:
    return b"[" * depth + b"]" * depth


def _with_value(document: bytes, draw) -> bytes:
    """A JSON object with one key's value replaced (or a key added) by a hostile value."""
    value = json.loads(document)
    key = draw(st.sampled_from(sorted(value) + ["extra"]))
    value[key] = draw(HOSTILE)
    return json.dumps(value, default=str).encode()


@st.composite
def broken_line(draw, good: list[bytes]) -> bytes:
    line = draw(st.sampled_from(good))
    kind = draw(
        st.sampled_from(
            ["good", "value", "value", "truncated", "bytes", "nested", "scalar", "bigint", "empty"]
        )
    )
    if kind == "value":
        return _with_value(line, draw)
    if kind == "truncated":
        return line[: draw(st.integers(0, len(line)))]
    if kind == "bytes":
        return draw(st.binary(max_size=60)).replace(b"\n", b" ")
    if kind == "nested":
        return _nested(draw(st.sampled_from([50, 900, 5000, 100_000])))
    if kind == "scalar":
        return draw(st.sampled_from([b"[]", b"1", b'"x"', b"null", b"true", b"[{}]"]))
    if kind == "bigint":
        return b'{"run_id": "x", "ns_per_lookup": ' + b"9" * 4000 + b"}"
    return b"" if kind == "empty" else line


@st.composite
def broken_context(draw, good: bytes) -> bytes:
    kind = draw(
        st.sampled_from(
            ["good", "value", "value", "value", "truncated", "bytes", "nested", "scalar"]
        )
    )
    if kind == "value":
        document = good
        for _ in range(draw(st.integers(1, 3))):
            document = _with_value(document, draw)
        return document
    if kind == "truncated":
        return good[: draw(st.integers(0, len(good)))]
    if kind == "bytes":
        return draw(st.binary(max_size=100))
    if kind == "nested":
        return _nested(draw(st.sampled_from([900, 100_000])))
    if kind == "scalar":
        return draw(st.sampled_from([b"[]", b"1", b'"all"', b"null"]))
    return good


def _is_object(line: bytes) -> bool:
    try:
        return isinstance(json.loads(line), dict)
    except (ValueError, RecursionError):
        return False


def _time_limit(seconds: int):
    return time_limit(seconds, "reading the store (it hangs)")


def _read(directory: Path, store_crashes: list[str], typed_damage: bool) -> None:
    """load() and the report, as a user runs them: a result or a HugebenchError, nothing else. A crash inside
    the store reader is recorded in ``store_crashes`` (see the module's docstring), and so is one in the report
    when ``typed_damage`` (a context or row holds a value of the wrong type); any other one is raised."""
    with _time_limit(EXAMPLE_SECONDS), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for read in (lambda: load(directory), lambda: report(directory, fmt="markdown")):
            try:
                read()
            except HugebenchError:
                pass
            except Exception as exc:
                frames = [
                    f
                    for f in traceback.extract_tb(exc.__traceback__)
                    if "/hugebench/" in f.filename
                ]
                innermost = frames[-1].filename if frames else ""
                if not (
                    innermost.endswith("hugebench/store.py")
                    or "hugebench/report/" in innermost
                    and typed_damage
                ):
                    raise
                where = f"{frames[-1].filename.split('/hugebench/')[-1]}:{frames[-1].lineno}"
                store_crashes.append(f"{type(exc).__name__} at {where}")
                return


def test_broken_stores_load_and_report_or_fail_cleanly(real_store, tmp_path_factory):
    lines, contexts = real_store
    [(context_name, context)] = contexts.items()

    store_crashes: list[str] = []

    @STORE_FUZZ
    @given(data=st.data())
    def check(data):
        directory = tmp_path_factory.mktemp("broken")
        runs = data.draw(st.lists(broken_line(lines), min_size=0, max_size=8), label="runs.jsonl")
        (directory / "runs.jsonl").write_bytes(
            b"\n".join(runs) + data.draw(st.sampled_from([b"\n", b""]))
        )
        (directory / "sweeps").mkdir()
        written = [data.draw(broken_context(context), label="context")]
        if data.draw(st.booleans(), label="a second context"):
            written.append(data.draw(broken_context(context)))
        for name, text in zip((context_name, "other.json"), written):
            (directory / "sweeps" / name).write_bytes(text)
        typed_damage = any(text != context for text in written) or any(
            line not in lines and _is_object(line) for line in runs
        )
        try:
            _read(directory, store_crashes, typed_damage)
        finally:
            shutil.rmtree(directory, ignore_errors=True)

    check()
    if store_crashes:
        kinds = sorted(set(store_crashes))
        pytest.xfail(
            f"fixed by the store-hardening branch: the store reader crashed in {len(store_crashes)} "
            f"examples: {'; '.join(kinds[:5])}"
        )


def test_the_real_store_reads_cleanly(real_store, tmp_path):
    """The fuzz's starting point is a store both readers take without a word."""
    lines, contexts = real_store
    (tmp_path / "runs.jsonl").write_bytes(b"\n".join(lines) + b"\n")
    (tmp_path / "sweeps").mkdir()
    for name, text in contexts.items():
        (tmp_path / "sweeps" / name).write_bytes(text)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(load(tmp_path)) == 4
        assert "store" in report(tmp_path, fmt="markdown")
