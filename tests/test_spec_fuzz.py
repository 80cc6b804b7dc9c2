"""Fuzzing the experiment-file reader: whatever the file holds, `plan` ends with a result or a HugebenchError.

Documents are built over the real keys (top level, workload parameters, kernel knobs, allocator entries) with
hostile scalars, then dumped as YAML and sometimes spliced with raw YAML syntax (anchors, aliases, tags,
merge keys, brackets); raw text and raw bytes are tried too. Each example must finish in seconds: a hang or
an unbounded expansion fails the test through an alarm instead of stalling CI.
"""

from __future__ import annotations

import contextlib
import signal
from datetime import timedelta
from unittest import mock

import yaml
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hugebench import plan as plan_mod
from hugebench import spec as spec_mod
from hugebench import workloads
from hugebench.allocators import BUILTIN
from hugebench.cli import main
from hugebench.errors import HugebenchError

EXAMPLE_SECONDS = 10  # one example may take this long before it counts as a hang
FUZZ = settings(max_examples=1300, deadline=timedelta(seconds=3), database=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

PARAMS = sorted({p for w in workloads.WORKLOADS.values() for p in w.params})
KNOBS = ["thp", "thp.enabled", "thp.defrag", "thp.khugepaged.max_ptes_none", "thp.mthp.64kB", "hugetlb.2MB",
         "hugetlb.", "thp.x/../y"]
WEIRD = ["10M", "1k", "1000", "64Ki", "4GiB", "1.5G", "infK", "nan", "-inf", "1e400", "1e3k", "0x10", "-5", "",
         " ", "yes", "no", "off", "on", "~", "null", ".", "..", "../x", "a/b", "x\x00y", "\t", "\u202e", "é",
         "never", "always", "madvise", "flat", "node", "zipf", "auto", "grouped", "interleaved",
         "/nonexistent/lib.so", "/bin/sh", "/", "lib.so", "9" * 30, *BUILTIN, *workloads.WORKLOADS]

safe_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.integers(-3, 40),
    st.floats(allow_nan=True, allow_infinity=True), st.sampled_from(WEIRD), safe_text)
names = st.one_of(st.sampled_from(["name", "workload", "path", "env", "base", "compact", "drop_caches",
                                   "allocator", *spec_mod._TOP_KEYS, *PARAMS, *KNOBS]), safe_text)
values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(names, inner, max_size=4), max_leaves=8)
axis_values = st.lists(st.one_of(scalars, st.sampled_from(WEIRD)), min_size=0, max_size=4) | values
cells = st.dictionaries(st.sampled_from(["allocator", "thp", "keys", *PARAMS]), scalars, max_size=3)
allocator_entry = st.one_of(
    values, st.fixed_dictionaries({}, optional={"path": st.sampled_from(WEIRD) | values,
                                                "base": st.sampled_from(WEIRD) | values,
                                                "env": st.dictionaries(safe_text | st.sampled_from(["A", "1"]),
                                                                       scalars, max_size=3) | values,
                                                "description": scalars}))
top_values = {
    "name": st.one_of(st.just("t"), st.just("tlb-1.x"), st.sampled_from(WEIRD) | scalars),
    "workload": st.one_of(st.sampled_from(list(workloads.WORKLOADS)), st.sampled_from(list(workloads.WORKLOADS)),
                          scalars),
    "description": values,
    "repetitions": st.integers(-2, 30) | scalars,
    "warmup": st.integers(-1, 5) | scalars,
    "seed": scalars,
    "timeout": scalars,
    "params": st.dictionaries(st.sampled_from(PARAMS) | names, scalars | values, max_size=4) | values,
    "axes": st.dictionaries(st.sampled_from(["allocator", *KNOBS, *PARAMS]) | names, axis_values, max_size=3)
    | values,
    "exclude": st.lists(cells | values, max_size=3) | values,
    "baseline": cells | values,
    "allocators": st.dictionaries(st.sampled_from(["mine", "glibc", "x y"]) | names, allocator_entry,
                                  max_size=2) | values,
    "system": st.dictionaries(st.sampled_from(KNOBS) | names, scalars, max_size=3) | values,
    "perf": st.sampled_from(["auto", "off", False, ["cycles"], {"c": "cycles"}]) | values,
    "counters": st.sampled_from(["auto", "off"]) | values,
    "order": st.sampled_from(["interleaved", "grouped"]) | scalars,
    "condition_memory": st.sampled_from([True, False, {"compact": True}]) | values,
}
documents = st.fixed_dictionaries(
    {"name": top_values["name"], "workload": top_values["workload"]},
    optional={k: v for k, v in top_values.items() if k not in ("name", "workload")})
SYNTAX = ["&a ", "*a", "&b [*a, *a, *a]", "!!int ", "!!float ", "!!bool ", "!!timestamp ", "!!binary ",
          "!!set ", "!!python/object ", "<<: *a\n", "<<: ", "? ", "[", "]", "{", "}", ": ", "- ", "\n  ",
          "\t", "'", '"', "#", "%YAML 1.1\n", "---\n", "...\n", "\\", "|\n", ">-\n", "\x00", "\ufeff"]


@st.composite
def yaml_texts(draw):
    """A YAML dump of a generated document, with a few bits of raw YAML syntax spliced in at random."""
    text = yaml.safe_dump(draw(documents), allow_unicode=draw(st.booleans()),
                          default_flow_style=draw(st.sampled_from([None, True, False])))
    for _ in range(draw(st.sampled_from([0, 0, 1, 1, 2, 3]))):
        at = draw(st.integers(0, len(text)))
        text = text[:at] + draw(st.sampled_from(SYNTAX)) + text[at:]
    return text


@contextlib.contextmanager
def _time_limit(seconds: int):
    def hang(signum, frame):
        raise AssertionError(f"plan took more than {seconds} s: it hangs or expands without bound")

    previous = signal.signal(signal.SIGALRM, hang)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _plan_file(path) -> None:
    """load + plan + summary, as `hugebench plan` does; only HugebenchError may come out."""
    with _time_limit(EXAMPLE_SECONDS), mock.patch.object(spec_mod, "MAX_RUNS", 5000), \
            mock.patch.object(plan_mod, "MAX_RUNS", 5000):  # keep each example fast; the bound is what counts
        try:
            spec = spec_mod.load_spec(path)
            plan_mod.summary(plan_mod.plan(spec))
        except HugebenchError as exc:
            assert "\n" not in str(exc), f"a multi-line error: {exc}"


@FUZZ
@given(text=yaml_texts())
def test_generated_documents_plan_or_fail_cleanly(text, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "exp.yaml"
    path.write_text(text, encoding="utf-8", errors="surrogatepass")
    _plan_file(path)


@settings(FUZZ, max_examples=500)
@given(data=st.binary(max_size=300) | st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")))
def test_raw_bytes_plan_or_fail_cleanly(data, tmp_path_factory):
    path = tmp_path_factory.mktemp("fuzz") / "exp.yaml"
    path.write_bytes(data)
    _plan_file(path)


@settings(FUZZ, max_examples=200)
@given(text=yaml_texts())
def test_plan_command_never_shows_a_traceback(text, tmp_path_factory):
    folder = tmp_path_factory.mktemp("fuzzcli")
    (folder / "exp.yaml").write_text(text, encoding="utf-8", errors="surrogatepass")
    with _time_limit(EXAMPLE_SECONDS), mock.patch.object(spec_mod, "MAX_RUNS", 5000), \
            mock.patch.object(plan_mod, "MAX_RUNS", 5000):
        result = CliRunner().invoke(main, ["plan", str(folder / "exp.yaml"), "--runs", "-o", str(folder / "r")])
    assert result.exit_code in (0, 2, 4), result.output
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exception
    if result.exit_code:
        assert result.output.startswith("hugebench: error: ") and result.output.count("\n") == 1, result.output
