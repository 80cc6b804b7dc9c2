"""Cluster sweeps on a real Dask scheduler and real `hugebench worker` processes on loopback (``cluster_lab.Lab``:
one fake machine per worker; the client is the real `hugebench sweep --cluster` in its own process)."""

from __future__ import annotations

import json
import signal
from pathlib import Path

import pytest
from click.testing import CliRunner

pytest.importorskip(
    "distributed", reason="the cluster extra is not installed: pip install '.[cluster]'"
)

from cluster_lab import Lab
from cluster_lab import wait_for as _wait_for
from conftest import FakeKernel

from hugebench.cli import main
from hugebench.kernel import Host
from hugebench.store import ResultStore, load

THP_ENABLED = "sys/kernel/mm/transparent_hugepage/enabled"

SPEC = """
name: lab
workload: hashlookup
repetitions: {reps}
timeout: 60
perf: off
counters: off
params: {{keys: 2000, lookups: 20000}}
axes:
  allocator: {allocators}
  thp: [always, never]
baseline: {{allocator: glibc, thp: never}}
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """Machines lab-a (`hugebench worker`) and lab-b (a plain Dask worker with machine=1, which lacks jemalloc)
    on one scheduler, shared by the tests of this module."""
    lab = Lab(tmp_path_factory.mktemp("lab"))
    try:
        lab.worker("lab-a")
        lab.worker("lab-b", hidden=("libjemalloc",), plain=True)  # adopted by the client
        lab.wait_for_hosts("lab-a", "lab-b")
        yield lab
    finally:
        killed = lab.close()
    assert not killed, f"did not stop on SIGTERM: {killed}"
    for host in lab.machines:  # stopped workers leave their machines as found
        assert not lab.journal(host).exists(), host


@pytest.fixture(autouse=True)
def _no_test_lock(monkeypatch):
    """Workers and clients get their locks and journals from their flags, never from this test's env."""
    monkeypatch.delenv("HUGEBENCH_LOCK", raising=False)
    monkeypatch.delenv("HUGEBENCH_JOURNAL", raising=False)


def _spec(tmp_path, reps=1, allocators=("glibc",)) -> Path:
    path = tmp_path / "lab.yaml"
    path.write_text(SPEC.format(reps=reps, allocators=json.dumps(list(allocators))))
    return path


def _rows(out: Path) -> list[dict]:
    return ResultStore(out).rows()


def test_a_sweep_runs_on_both_machines_with_a_host_axis(lab, tmp_path):
    before = {h: lab.machine(h).files() for h in ("lab-a", "lab-b")}
    out = tmp_path / "res"
    code, log = lab.sweep(_spec(tmp_path, allocators=("glibc", "jemalloc")), out, "--workers", "2")
    assert code == 0, log
    rows = _rows(out)
    assert (
        len(rows) == 8 and len({r["run_id"] for r in rows}) == 8
    )  # 4 cells x 2 machines, each once
    by = {(r["host"], r["allocator"], r["thp.enabled"]): r for r in rows}
    assert {h for h, _, _ in by} == {"lab-a", "lab-b"}
    assert all(
        r["status"] == "ok" for r in rows if r["host"] == "lab-a" or r["allocator"] == "glibc"
    ), log
    for thp in ("always", "never"):
        failed = by[("lab-b", "jemalloc", thp)]
        assert failed["status"] == "failed" and "libjemalloc.so.2 not found" in failed["error"]
        assert "not on this machine" in failed["error"]
    ok = by[("lab-a", "glibc", "always")]
    assert ok["knob.thp.enabled"] == "always" and ok["sweep_id"].endswith(".lab-a")
    # per-machine provenance, host as an axis, one frame with a host column
    contexts = ResultStore(out).contexts()
    assert sorted(c["cluster_host"] for c in contexts.values()) == ["lab-a", "lab-b"]
    assert all(c["axes"][-1] == "host" and c["machine"] for c in contexts.values())
    frame = load(out)
    assert set(frame["host"]) == {"lab-a", "lab-b"}
    assert "host" in log.splitlines()[0]  # the report has a host column
    # each machine was put back as it was, and its journal is gone
    for host in ("lab-a", "lab-b"):
        assert lab.machine(host).files() == before[host]
        assert not lab.journal(host).exists()


def test_spread_gives_whole_repetition_blocks_to_identical_machines(lab, tmp_path):
    out = tmp_path / "res"
    # repetitions: auto adds a 4th block (a target no tiny run meets), placed like the others
    code, log = lab.sweep(
        _spec(tmp_path, reps="{auto: {min: 3, max: 4, target: 0.0001}}"),
        out,
        "spread",
        report=False,
    )
    assert code == 0, log
    rows = _rows(out)
    assert len(rows) == 8 and all(r["status"] == "ok" for r in rows), log
    assert sorted({r["repetition"] for r in rows}) == [0, 1, 2, 3]
    hosts_of_block = {
        r["repetition"]: {x["host"] for x in rows if x["repetition"] == r["repetition"]}
        for r in rows
    }
    assert all(
        len(hosts) == 1 for hosts in hosts_of_block.values()
    )  # a block's pairs stay on one machine
    assert set.union(*hosts_of_block.values()) == {"lab-a", "lab-b"}
    assert all(
        r["sweep_id"].endswith("." + r["host"]) for r in rows
    )  # pairs are made within a sweep id
    assert all(
        r["cell_id"] == x["cell_id"]
        for r in rows
        for x in rows
        if r["thp.enabled"] == x["thp.enabled"]
    )
    assert all("host" not in c["axes"] for c in ResultStore(out).contexts().values())


def test_spread_refuses_machines_that_differ(lab, tmp_path):
    cpuinfo = lab.machine("lab-b").proc_root / "cpuinfo"
    text = cpuinfo.read_text()
    cpuinfo.write_text(text.replace("model name\t: ", "model name\t: Other CPU "))
    try:
        code, log = lab.sweep(_spec(tmp_path), tmp_path / "res", "--machines", "spread")
    finally:
        cpuinfo.write_text(text)
    assert code != 0
    assert "machines: spread needs identical machines, but their CPU model differs" in log
    assert "Traceback" not in log and not (tmp_path / "res" / "runs.jsonl").exists()


def test_a_machine_busy_with_another_sweep_fails_its_runs_not_the_sweep(lab, tmp_path):
    from hugebench.system import SweepLock

    with SweepLock(lab.tmp / "lab-a.lock", "a local sweep beside the worker"):
        code, log = lab.sweep(_spec(tmp_path), tmp_path / "res", report=False)
    assert code == 0, log
    rows = _rows(tmp_path / "res")
    assert {r["host"]: r["status"] for r in rows} == {"lab-a": "failed", "lab-b": "ok"}
    busy = next(r for r in rows if r["host"] == "lab-a")
    assert (
        "another sweep is running on this machine" in busy["error"]
        and "a local sweep" in busy["error"]
    )
    assert not lab.journal("lab-a").exists()


def _host_rows(out: Path, host: str) -> list[dict]:
    return [r for r in _rows(out) if r.get("host") == host] if (out / "runs.jsonl").exists() else []


def test_a_machine_without_a_knob_fails_the_runs_that_need_it(lab, tmp_path):
    knob = lab.machine("lab-b").sys_root / "kernel/mm/transparent_hugepage/khugepaged/defrag"
    text = knob.read_text()
    knob.unlink()  # lab-b's kernel has no khugepaged defrag knob
    try:
        spec = _spec(tmp_path)
        spec.write_text(spec.read_text() + "system: {thp.khugepaged.defrag: 0}\n")
        code, log = lab.sweep(spec, tmp_path / "res", report=False)
    finally:
        knob.write_text(text)
    assert code == 0, log
    rows = _rows(tmp_path / "res")
    assert {(r["host"], r["status"]) for r in rows} == {("lab-a", "ok"), ("lab-b", "failed")}
    assert all(
        "kernel state on this machine" in r["error"] and "khugepaged.defrag" in r["error"]
        for r in rows
        if r["host"] == "lab-b"
    )
    assert {r["knob.thp.khugepaged.defrag"] for r in rows if r["host"] == "lab-a"} == {"0"}
    assert lab.machine("lab-a").read("sys/kernel/mm/transparent_hugepage/khugepaged/defrag") == "1"


def test_a_run_task_carries_its_own_run_not_the_machines_run_list(lab, tmp_path, monkeypatch):
    """Measured on what the client really submits: each run task names its machine's part (sent once per
    machine) and carries one run; before, it carried the part itself, with the machine's whole run list."""
    import distributed
    from distributed.protocol.pickle import dumps

    from hugebench import experiment as spec_mod
    from hugebench.cluster import run_cluster_sweep
    from hugebench.experiment.cluster import resolve
    from hugebench.sweep import plan
    from hugebench.sweep.orchestrator import SweepOptions

    sent, submit = [], distributed.Client.submit
    monkeypatch.setattr(
        distributed.Client,
        "submit",
        lambda self, func, *args, **kw: (
            sent.append((func.__name__, args)),
            submit(self, func, *args, **kw),
        )[1],
    )
    path = _spec(tmp_path, reps=3)
    s = spec_mod.load_spec(path, local=False)
    result = run_cluster_sweep(
        s,
        plan.plan(s),
        SweepOptions(
            out=tmp_path / "res",
            quiet=True,
            spec_source=str(path),
            cluster=resolve(s.cluster, lab.address, None, 2, path, str(lab.certs)),
        ),
    )
    assert result.statuses == {"ok": 12}
    parts = {args[0].runs[0].cell["host"]: args[0] for name, args in sent if name == "hold_part"}
    tasks = [args for name, args in sent if name == "run_task"]
    assert sorted(parts) == ["lab-a", "lab-b"] and len(tasks) == 12
    for ref, run in tasks:
        assert isinstance(ref, distributed.Future) and ref.key.startswith(
            "hb-part-"
        )  # a name, not the part
        before = len(dumps((parts[run.cell["host"]], run)))  # what each task carried until now
        after = len(dumps((ref, run)))
        # the task is its one run and a name (pickle shares the spec between a part's runs, so the part is
        # not 6x one run; what matters is that the task no longer carries the other five)
        assert len(parts[run.cell["host"]].runs) == 6 and after < before, (after, before)
        assert after <= len(dumps(run)) + 300, (after, len(dumps(run)))


# Last in the module: it kills the shared lab's worker for lab-a (and leaves a new one in its place).
def test_a_killed_worker_and_a_killed_client_lose_and_duplicate_nothing(lab, tmp_path, monkeypatch):
    original = lab.machine("lab-a").files()
    worker_a = lab.workers["lab-a"]
    out, spec = tmp_path / "res", _spec(tmp_path, reps=3)
    client = lab.sweep(spec, out, wait=False, report=False)

    # Machine A dies with SIGKILL mid-sweep, its knobs changed and its journal on disk.
    _wait_for(lambda: _host_rows(out, "lab-a"), "a first row from lab-a")
    worker_a.send_signal(signal.SIGKILL)
    worker_a.wait(timeout=10)
    assert lab.journal("lab-a").exists()
    assert lab.machine("lab-a").files() != original
    done_before = len(_host_rows(out, "lab-a"))
    assert done_before < 6

    # `hugebench system restore` puts machine A back exactly as it was.
    monkeypatch.setattr(Host, "at", FakeKernel(lab.machine("lab-a").root).host_at())
    kernel = lab.machine("lab-a")
    restored = CliRunner().invoke(
        main,
        [
            "system",
            "--sys-root",
            str(kernel.sys_root),
            "--proc-root",
            str(kernel.proc_root),
            "--journal",
            str(lab.journal("lab-a")),
            "restore",
        ],
    )
    assert restored.exit_code == 0, restored.output
    assert "restored thp.enabled" in restored.output
    assert lab.machine("lab-a").files() == original and not lab.journal("lab-a").exists()

    # A's runs were re-queued: a new worker for machine A picks them up while the client waits.
    lab.worker("lab-a")
    _wait_for(lambda: len(_host_rows(out, "lab-a")) > done_before, "lab-a's re-queued runs")

    # The client dies with SIGKILL mid-sweep; running the same command again finishes the sweep.
    if client.poll() is None:
        client.send_signal(signal.SIGKILL)
        client.wait(timeout=10)
    code, log = lab.sweep(spec, out, report=False)
    assert code == 0, log
    rows = _rows(out)
    ok = [r["run_id"] for r in rows if r["status"] == "ok"]
    assert len(ok) == 12 and len(set(ok)) == 12, (
        log
    )  # 2 cells x 3 repetitions x 2 machines, each once
    assert {r["host"] for r in rows} == {"lab-a", "lab-b"}

    # A worker stopped with SIGTERM mid-sweep ends its part: machine A is restored, no journal is left.
    client = lab.sweep(_spec(tmp_path, reps=3), tmp_path / "res2", wait=False, report=False)
    _wait_for(
        lambda: _host_rows(tmp_path / "res2", "lab-a") and lab.journal("lab-a").exists(),
        "lab-a mid-sweep",
    )
    lab.workers["lab-a"].send_signal(signal.SIGTERM)
    assert lab.workers["lab-a"].wait(timeout=30) == 0
    assert lab.machine("lab-a").files() == original and not lab.journal("lab-a").exists()
    client.send_signal(signal.SIGKILL)
    client.wait(timeout=10)


def test_a_second_worker_for_a_machine_is_refused_when_it_registers(lab, tmp_path):
    """lab-a has its `hugebench worker`; a plain Dask worker that is lab-a too (a second SLURM job on one node,
    say) is refused when it joins: it takes no runs and says why, and every run of lab-a succeeds."""
    if lab.workers["lab-a"].poll() is not None:  # stopped by an earlier test
        lab.worker("lab-a")
    lab.wait_for_hosts("lab-a", "lab-b")
    first = lab.workers["lab-a"]
    second = lab.worker("lab-a", plain=True, name="lab-a-again")
    lab.workers["lab-a"] = first
    try:
        lab.wait_for_hosts("lab-a", "lab-a-again")
        code, log = lab.sweep(_spec(tmp_path, reps=2), tmp_path / "res", report=False)
        assert code == 0, log
        rows = _rows(tmp_path / "res")
        assert (
            sorted((r["host"], r["status"]) for r in rows)
            == [("lab-a", "ok")] * 4 + [("lab-b", "ok")] * 4
        ), [r["error"] for r in rows]
        text = _wait_for(
            lambda: (
                "refused: machine lab-a already has a hugebench worker"
                in (lab.tmp / "worker-lab-a.log").read_text()
                and (lab.tmp / "worker-lab-a.log").read_text()
            ),
            "the refusal in the second worker's log",
            timeout=20,
        )
        assert "(lab-a at tls://" in text
    finally:
        second.send_signal(signal.SIGTERM)
        second.wait(timeout=20)
    # a second `hugebench worker` for lab-a does not start at all: exit 1 with the reason
    third = lab.worker("lab-a")
    lab.workers["lab-a"] = first
    assert third.wait(timeout=60) == 1
    assert (
        "hugebench: error: refused: machine lab-a already has a hugebench worker"
        in (lab.tmp / "worker-lab-a.log").read_text()
    )
    assert first.poll() is None  # the machine's own worker goes on
