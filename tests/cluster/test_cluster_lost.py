"""A machine that dies mid-sweep, with real Dask workers (``cluster_lab.Lab``) running the toy workload: its
worker is killed with SIGKILL while a run of it is in flight. With ``spread`` its unfinished block goes to the
other machine after ``lost_after``; with ``each`` its runs are failed rows "machine X lost at T" in every report.
Either way the sweep ends, and no process of the dead machine outlives it."""

from __future__ import annotations

import signal
import subprocess
from pathlib import Path

import pytest

pytest.importorskip(
    "distributed", reason="the cluster extra is not installed: pip install '.[cluster]'"
)

from cluster_lab import BIN, Lab, wait_for

from hugebench.store import ResultStore

SPEC = """
name: lost
workload: toy
repetitions: {reps}
timeout: 60
perf: off
counters: off
params: {{items: 3000000}}
axes:
  thp: [always, never]
cluster: {{scheduler: "{address}", certs: "{certs}", machines: {machines}, lost_after: 2}}
"""


@pytest.fixture(autouse=True)
def _no_test_lock(monkeypatch):
    monkeypatch.delenv("HUGEBENCH_LOCK", raising=False)
    monkeypatch.delenv("HUGEBENCH_JOURNAL", raising=False)


@pytest.fixture
def lab(tmp_path):
    """Machines lab-a and lab-b (`hugebench worker`s), new for each test: one of them is killed."""
    lab = Lab(tmp_path)
    try:
        lab.worker("lab-a")
        lab.worker("lab-b")
        lab.wait_for_hosts("lab-a", "lab-b")
        yield lab
    finally:
        killed = lab.close()
    assert not killed, f"did not stop on SIGTERM: {killed}"


def _descendants(pid: int) -> set[int]:
    """Every live process below ``pid`` (from /proc's parent ids)."""
    parents = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in parents.get(todo.pop(), []):
            found.add(child)
            todo.append(child)
    return found


def _alive(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            alive.add(pid)
    return alive


def _host_rows(out: Path, host: str) -> list[dict]:
    return (
        [r for r in ResultStore(out).rows() if r.get("host") == host]
        if (out / "runs.jsonl").exists()
        else []
    )


def _kill_mid_run(lab: Lab, host: str, out: Path) -> set[int]:
    """SIGKILL ``host``'s worker after its first row, while a run of it is in flight; its processes then."""
    worker = lab.workers[host]
    wait_for(lambda: _host_rows(out, host), f"a first row from {host}")
    children = wait_for(lambda: _descendants(worker.pid), f"a run in flight on {host}", timeout=30)
    worker.send_signal(signal.SIGKILL)
    worker.wait(timeout=10)
    return children


def _sweep(lab: Lab, tmp_path: Path, machines: str, reps: int) -> tuple[Path, subprocess.Popen]:
    spec = tmp_path / "lost.yaml"
    spec.write_text(SPEC.format(reps=reps, address=lab.address, certs=lab.certs, machines=machines))
    out = tmp_path / "res"
    return out, lab.sweep(spec, out, machines, wait=False, report=False)  # waits for 2 machines


def test_each_reports_a_dead_machines_runs_as_lost_and_ends(lab, tmp_path):
    out, client = _sweep(lab, tmp_path, "each", reps=3)
    children = _kill_mid_run(lab, "lab-a", out)
    assert client.wait(timeout=90) == 0, (
        lab.tmp / "client.log"
    ).read_text()  # the sweep ends: no endless wait
    rows = ResultStore(out).rows()
    assert (
        len(rows) == 12 and len({r["run_id"] for r in rows}) == 12
    )  # 2 cells x 3 reps x 2 machines, once each
    assert all(r["status"] == "ok" for r in rows if r["host"] == "lab-b")
    lost = [r for r in rows if r["host"] == "lab-a" and r["status"] != "ok"]
    assert lost and all(
        r["status"] == "failed"
        and r["error"].startswith("machine lab-a lost at ")
        and "within 2 s" in r["error"]
        and r["sweep_id"].endswith(".lab-a")
        for r in lost
    )
    assert any(r["status"] == "ok" for r in rows if r["host"] == "lab-a")  # what it finished stays
    context = next(c for c in ResultStore(out).contexts().values() if c["cluster_host"] == "lab-a")
    assert context["cluster_lost"] == lost[0]["error"].split("; run `hugebench system restore`")[0]
    assert not _alive(children), "a process of the killed machine outlived the sweep"
    for fmt in ("markdown", "csv", "rich"):  # the reason is in every report
        shown = subprocess.run(
            [str(BIN / "hugebench"), "report", str(out), "--format", fmt],
            capture_output=True,
            text=True,
            timeout=120,
            env={"COLUMNS": "400", "PATH": str(BIN)},
        )
        assert shown.returncode == 0, shown.stderr
        assert "machine lab-a lost at" in shown.stdout, (fmt, shown.stdout[-2000:])
    page = subprocess.run(
        [str(BIN / "hugebench"), "report", str(out), "--html", str(tmp_path / "r.html")],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": str(BIN)},
    )
    assert page.returncode == 0 and "machine lab-a lost at" in (tmp_path / "r.html").read_text(), (
        page.stderr
    )


def test_spread_gives_a_dead_machines_block_to_another_machine(lab, tmp_path):
    out, client = _sweep(lab, tmp_path, "spread", reps=4)
    children = _kill_mid_run(lab, "lab-a", out)
    assert client.wait(timeout=90) == 0, (lab.tmp / "client.log").read_text()
    rows = ResultStore(out).rows()
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == len(rows) == 8 and len({r["run_id"] for r in ok}) == 8, [
        r.get("error") for r in rows
    ]
    assert "cluster_lost" in next(
        c for c in ResultStore(out).contexts().values() if c["cluster_host"] == "lab-a"
    )
    on_a = {r["repetition"] for r in ok if r["host"] == "lab-a"}
    assert on_a and len(on_a) < 4  # lab-a did some, lab-b the rest ...
    # ... including what was left of the block lab-a held when it died (pairs stay within a sweep id)
    assert all(r["sweep_id"].endswith("." + r["host"]) for r in ok)
    assert {r["host"] for r in ok} == {"lab-a", "lab-b"}
    assert not _alive(children), "a process of the killed machine outlived the sweep"
