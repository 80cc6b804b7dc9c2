"""`memory_limit:`: a run's processes capped by its memory cgroup (cgroup v2 memory.max, or a v1 memory cgroup
where memory is a v1 controller, as on this project's hybrid machine), and an OOM kill under it recorded as
the run's result (status oom, "oom-killed under ..."), shown in every report, not a crash.

The real test runs a real program that goes over the limit beside one that stays under it; the v2 path's
files and the refusals are checked on fake trees."""

from __future__ import annotations

import os
import textwrap
from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench import kernel, load
from hugebench.cli import main
from hugebench.errors import SpecError
from hugebench.experiment import load_spec
from hugebench.kernel import Host
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
from hugebench.system import cgroup as cgroups
from hugebench.system import memlimit


def _experiment(tmp_path, limit: str, body: str = "") -> Path:
    path = tmp_path / "limit.yaml"
    path.write_text(
        "name: limit\nworkload: command\nperf: off\ntimeout: 60\n"
        f"memory_limit: {limit}\n" + textwrap.dedent(body)
    )
    return path


def _memory_controller() -> str | None:
    """Why a run's memory cannot be limited here, or None."""
    if os.geteuid() != 0:
        return "needs root (makes a memory cgroup)"
    mounts = kernel.cgroup_mounts()
    v2 = mounts["v2"]
    v2_memory = v2 and "memory" in (kernel.read_optional(Path(v2, "cgroup.controllers")) or "")
    if not v2_memory and "memory" not in mounts["v1"]:
        return "no memory controller (cgroup v2 or v1) on this machine"
    return None


def test_a_program_over_the_limit_is_an_oom_row_in_every_report(tmp_path):
    if why := _memory_controller():
        pytest.skip(why)
    path = _experiment(
        tmp_path,
        "160M",
        """\
        params:
          argv: [python3, -c, "b = bytearray({mib} << 20); print(len(b))"]
        axes:
          mib: [8, 400]
        """,
    )
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    df = load(tmp_path / "res").set_index("mib")
    assert result.statuses == {"ok": 1, "oom": 1}, df.get("error")
    over, under = df.loc[400], df.loc[8]
    knob = over["memory_limit.knob"]
    assert knob in ("memory.max", "memory.limit_in_bytes")
    assert over["error"].startswith(f"oom-killed under {knob}=160 MiB")
    assert over["memory_limit.oom_kills"] >= 1 and over["memory_limit_bytes"] == 160 << 20
    # the program that stayed under it ran as usual, with what the limit's cgroup counted
    assert under["status"] == "ok" and under["memory_limit.oom_kills"] == 0
    assert 0 < under["memory_limit.peak_bytes"] < 160 << 20
    for fmt in ("markdown", "html", "csv"):
        out = CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--format", fmt])
        assert out.exit_code == 0 and "oom-killed under" in out.output, fmt
    # the limit's cgroup is gone with the run
    for group in (Path(kernel.cgroup_mounts()["v1"].get("memory", "/nonexistent")),):
        assert not list(group.rglob(f"*{over['run_id'][:12]}*"))


@pytest.mark.parametrize(
    "value,message",
    [
        ("lots", "is not a size like 256M"),
        ("1M", "must be from 64 MiB"),
        ("[1, 2]", "is not a size"),
        ("true", "is not a size"),
    ],
)
def test_a_bad_limit_is_refused_naming_the_key(tmp_path, value, message):
    path = _experiment(tmp_path, value, "params:\n  argv: [/bin/true]\n")
    with pytest.raises(SpecError) as err:
        load_spec(path)
    assert "memory_limit" in str(err.value) and message in str(err.value)
    assert "limit.yaml" in str(err.value)


def test_sizes_are_binary_as_in_cgroup_files(tmp_path):
    spec = load_spec(_experiment(tmp_path, "1.5G", "params:\n  argv: [/bin/true]\n"))
    assert spec.memory_limit == 3 << 29
    runs = plan_mod.plan(spec)
    assert runs[0].memory_limit == 3 << 29
    # a limit is part of what a cell measures: the same cell without it has another id
    free = tmp_path / "free"
    free.mkdir()
    (free / "limit.yaml").write_text("name: limit\nworkload: command\nperf: off\ntimeout: 60\n")
    (free / "limit.yaml").write_text(
        (free / "limit.yaml").read_text() + "params:\n  argv: [/bin/true]\n"
    )
    assert plan_mod.plan(load_spec(free / "limit.yaml"))[0].cell_id != runs[0].cell_id


def test_on_cgroup_v2_the_limit_is_memory_max_without_swap(tmp_path):
    group = tmp_path / "run"
    group.mkdir()
    for name in ("memory.events", "memory.max", "memory.swap.max", "cgroup.procs"):
        (group / name).write_text("")
    (group / "memory.events").write_text("low 0\nhigh 0\nmax 3\noom 1\noom_kill 1\n")
    (group / "memory.peak").write_text("167772160\n")
    limit, why = memlimit.apply(160 << 20, "run", cgroups.Cgroup(group))
    assert why is None and limit is not None
    assert (group / "memory.max").read_text() == str(160 << 20)
    assert (group / "memory.swap.max").read_text() == "0"
    assert limit.words() == "memory.max=160 MiB" and limit.oom_kills() == 1
    assert limit.columns()["memory_limit.peak_bytes"] == 160 << 20
    limit.remove()  # the run's own v2 cgroup: removed by its containment, not here
    assert group.is_dir()


def test_without_a_memory_controller_it_says_why(tmp_path):
    proc = tmp_path / "proc"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "mountinfo").write_text(
        "41 31 0:38 / /sys/fs/cgroup rw,relatime - cgroup2 cgroup2 rw\n"
    )
    group = tmp_path / "run"
    group.mkdir()  # no memory.events: the hierarchy has no memory controller
    limit, why = memlimit.apply(1 << 30, "run", cgroups.Cgroup(group), Host(proc=proc))
    assert limit is None and "has no memory controller" in why
    assert "no cgroup v1 memory controller" in why


def test_a_limit_that_cannot_be_had_fails_the_run_before_it_starts(tmp_path, monkeypatch):
    monkeypatch.setattr(memlimit, "apply", lambda *a, **k: (None, "no memory controller here"))
    marker = tmp_path / "ran"
    path = _experiment(tmp_path, "256M", f"params:\n  argv: [touch, {marker}]\n")
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    df = load(tmp_path / "res")
    assert result.statuses == {"failed": 1}
    assert df["error"][0] == f"memory_limit {256 << 20} B: no memory controller here"
    assert not marker.exists()  # nothing ran
