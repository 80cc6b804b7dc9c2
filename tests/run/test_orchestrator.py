"""The sweep engine end to end: real tiny runs, failures as rows, resume, and the environment a worker gets."""

import stat

import pytest

from hugebench import load
from hugebench.experiment import parse_spec
from hugebench.machine.environment import worker_environment
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

TINY = """\
name: tiny
workload: hashlookup
repetitions: 2
timeout: 60
perf: off
params: {keys: 3000, chunks: 4}
axes:
  allocator: [glibc, jemalloc]
  set_kind: [flat, node]
"""


def _options(tmp_path, **kw):
    return SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "journal.json", **kw)


def _sweep(text, tmp_path, **kw):
    spec = parse_spec(text, "tiny.yaml")
    runs = plan_mod.plan(spec)
    return spec, runs, run_sweep(spec, runs, _options(tmp_path, **kw))


def _needs_jemalloc():
    from hugebench.machine.allocators import find_library

    if find_library("libjemalloc.so.2") is None:
        pytest.skip("libjemalloc2 not installed")


def test_tiny_real_sweep_rows(tmp_path):
    _needs_jemalloc()
    _, runs, result = _sweep(TINY, tmp_path)
    assert result.statuses == {"ok": len(runs)} == {"ok": 8}
    df = load(tmp_path / "res")
    assert len(df) == 8 and df["run_id"].is_unique
    assert (df["found"] == 3000).all() and (df["lookups"] == 3000).all()
    assert (df["ns_per_lookup"] > 0).all() and (df["peak_rss_bytes"] > 0).all()
    je = df[df["allocator"] == "jemalloc"]["allocator_mapped"]
    assert je.str.contains("libjemalloc").all()
    assert (df[df["allocator"] == "glibc"]["allocator_mapped"] == "glibc").all()
    assert "knob.thp.enabled" in df.columns and df["smaps.Rss"].gt(0).all()


def _fake_python(tmp_path, body: str) -> str:
    path = tmp_path / "fake-python"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


@pytest.mark.parametrize(
    "body,status,error",
    [
        ("kill -SEGV $$", "crashed", "signal SIGSEGV"),
        ("exec sleep 30", "timeout", "timeout of 1 s"),
        ("echo boom >&2; exit 1", "failed", "exited with code 1"),
    ],
)
def test_worker_failures_become_rows(tmp_path, body, status, error):
    text = TINY.replace("timeout: 60", "timeout: 1").replace("[glibc, jemalloc]", "[glibc]")
    _, runs, result = _sweep(text, tmp_path, python=_fake_python(tmp_path, body))
    assert result.statuses == {status: len(runs)}
    df = load(tmp_path / "res")
    assert (df["status"] == status).all() and df["error"].str.contains(error).all()
    if status == "failed":
        assert df["stderr_tail"].str.contains("boom").all()


def test_interrupted_sweep_resumes_without_duplicates(tmp_path):
    text = TINY.replace("[glibc, jemalloc]", "[glibc]")

    def stop_after_three(run, row, done, total):
        if done == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        _sweep(text, tmp_path, progress=stop_after_three)
    assert len(load(tmp_path / "res")) == 3
    _, runs, result = _sweep(text, tmp_path)
    assert result.skipped_done == 3 and result.rows_written == len(runs) - 3
    df = load(tmp_path / "res")
    assert len(df) == len(runs) and df["run_id"].is_unique


def test_changed_fixed_settings_refused(tmp_path):
    text = TINY.replace("[glibc, jemalloc]", "[glibc]").replace("repetitions: 2", "repetitions: 1")
    _sweep(text, tmp_path)
    from hugebench.errors import SpecError

    with pytest.raises(SpecError, match="different fixed settings"):
        _sweep(text.replace("keys: 3000", "keys: 4000"), tmp_path)


def test_memory_preflight_skips_cells_that_cannot_fit(tmp_path):
    text = TINY.replace("[glibc, jemalloc]", "[glibc]").replace("keys: 3000", "keys: 100G")
    text = text.replace("set_kind: [flat, node]", "set_kind: [flat]").replace(
        "repetitions: 2", "repetitions: 1"
    )
    _, _, result = _sweep(text, tmp_path)
    df = load(tmp_path / "res")
    assert result.statuses == {"skipped": 1} and "GiB" in df["error"].iloc[0]


def test_worker_environment_drops_parent_allocator_settings():
    base = {
        "PATH": "/bin",
        "LD_PRELOAD": "/evil.so",
        "MALLOC_CONF": "x",
        "HOME": "/root",
        "LC_ALL": "C",
    }
    env = worker_environment({"LD_PRELOAD": "/lib/je.so"}, base)
    assert env["LD_PRELOAD"] == "/lib/je.so" and "MALLOC_CONF" not in env
    assert env["PATH"] == "/bin" and env["LC_ALL"] == "C"


def _one_counted_run(tmp_path):
    """One 200k-key glibc run with perf stat and in-process counters; its row."""
    text = TINY.replace("perf: off", "perf: auto").replace("[glibc, jemalloc]", "[glibc]")
    text = text.replace("keys: 3000", "keys: 200000").replace(
        "set_kind: [flat, node]", "set_kind: [flat]"
    )
    _sweep(text.replace("repetitions: 2", "repetitions: 1"), tmp_path)
    return load(tmp_path / "res").iloc[0]


@pytest.mark.needs_perf
def test_phase_counters_exclude_setup(tmp_path):
    """In-process counters cover only the lookups; perf stat covers the whole worker (startup, key generation)."""
    row = _one_counted_run(tmp_path)
    assert row["pmu.task_clock"] > 0 and row["perf.task_clock"] > 0
    assert row["pmu.task_clock"] < 0.5 * row["perf.task_clock"]
    assert row["pmu.page_faults"] < 0.05 * row["perf.page_faults"]
    # The phase recorder agrees: the lookup phase faults far less than key generation and insertion.
    assert row["phase.lookup.minflt"] < 0.05 * (
        row["phase.generate.minflt"] + row["phase.insert.minflt"]
    )


@pytest.mark.needs_perf
@pytest.mark.needs_pmu
def test_hardware_counters_on_a_machine_with_a_pmu(tmp_path):
    """Where the PMU counts, cycles appear for the timed phase and the whole process, phase < process."""
    row = _one_counted_run(tmp_path)
    assert (
        row["pmu.cycles"] > 0
        and row["pmu.instructions"] > 0
        and row["perf.cycles"] > row["pmu.cycles"]
    )
    assert row["cycles_per_op"] > 0
    for label in (
        "dtlb_load_misses",
        "stlb_misses",
    ):  # a value, or why not — never both, never neither
        assert (row[f"pmu.{label}"] > 0) != bool(row.get(f"pmu.{label}.reason"))
