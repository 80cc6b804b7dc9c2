"""memory_state (hugebench.system.aging): values, refusal without root, a state that does not hold fails its
run with the reason, buddy state in every row; and, on the real kernel, the fragmenter reaches its level and
is gone afterwards."""

import os
import sys
import textwrap
from pathlib import Path

import pytest

from hugebench import kernel, load
from hugebench.errors import PrivilegeError, SpecError
from hugebench.experiment import parse_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
from hugebench.system import SystemState, aging
from hugebench.system.containment import alive

SPEC = """\
name: aged-tiny
workload: hashlookup
repetitions: 1
timeout: 60
perf: off
params: {keys: 3000, chunks: 4}
axes:
  memory_state: [STATES]
"""


def _sweep(tmp_path, fake, states="fresh"):
    spec = parse_spec(SPEC.replace("STATES", states), "aged-tiny.yaml")
    runs = plan_mod.plan(spec)
    options = SweepOptions(
        out=tmp_path / "res",
        quiet=True,
        journal=tmp_path / "journal.json",
        host=fake.host,
    )
    return runs, run_sweep(spec, runs, options)


def test_values_are_checked_with_file_line_and_key():
    spec = parse_spec(SPEC.replace("STATES", 'fresh, fragmented, "fragmented:25%"'), "a.yaml")
    assert spec.axes["memory_state"] == ("fresh", "fragmented:100%", "fragmented:25%")
    assert {r.memory_state for r in plan_mod.plan(spec)} == {
        "fresh",
        "fragmented:100%",
        "fragmented:25%",
    }
    for bad in ('"fragmented:0%"', "old", "fragmented:50"):
        with pytest.raises(
            SpecError, match=r"a.yaml:8: key 'axes.memory_state.0': memory_state must be fresh"
        ):
            parse_spec(SPEC.replace("STATES", bad), "a.yaml")
    with pytest.raises(SpecError, match="lists a value twice"):
        parse_spec(SPEC.replace("STATES", "fragmented, fragmented:100%"), "a.yaml")
    movable = parse_spec(
        SPEC.replace("STATES", 'fragmented-movable, "fragmented-movable:25%", fragmented'), "a.yaml"
    )
    assert movable.axes["memory_state"] == (
        "fragmented-movable:100%",
        "fragmented-movable:25%",
        "fragmented:100%",
    )
    assert aging.parse("fragmented-movable:25%") == aging.MemoryState(
        "fragmented", 25, movable=True
    )
    with pytest.raises(SpecError, match="or fragmented-movable"):
        parse_spec(SPEC.replace("STATES", '"fragmented-movable:0%"'), "a.yaml")


def test_refused_without_root_before_any_knob(fake_sys, tmp_path, monkeypatch):
    monkeypatch.setattr(aging.os, "geteuid", lambda: 1000)
    with pytest.raises(PrivilegeError, match="memory_state compacts memory .* needs root"):
        _sweep(tmp_path, fake_sys)
    assert fake_sys.writes == [] and not fake_sys.journal_path.exists()
    assert not (tmp_path / "res" / "runs.jsonl").exists()


def test_fresh_compacts_and_records_the_buddy_state(fake_sys, tmp_path):
    runs, result = _sweep(tmp_path, fake_sys, "fresh")
    assert result.statuses == {"ok": 1}
    row = load(tmp_path / "res").iloc[0]
    assert ("proc/sys/vm/compact_memory", "1") in fake_sys.writes
    # the fake buddyinfo: DMA32 2 + 752*2 blocks, Normal 9 + 37*2; DMA is never counted
    assert (
        row["memory.zone.DMA32.free_2mib_blocks"] == 1506
        and row["memory.zone.Normal.free_2mib_blocks"] == 83
    )
    assert row["memory.free_2mib_blocks"] == row["memory.initial_free_2mib_blocks"] == 1589
    assert (
        row["buddy.order10"] == 3 + 752 + 37 and row["knob.vm.compact_unevictable_allowed"] == "1"
    )
    assert "debugfs" in row["memory.unusable_index.reason"]
    # what aging did during the run (the fake kernel's counters stand still)
    assert (
        row["memory.during.thp_fault_fallback"] == 0
        and row["memory.during.khugepaged.full_scans"] == 0
    )


FAKE_FRAGMENTER = textwrap.dedent("""\
    import json, signal
    print(json.dumps({"blocks_pinned": 0, "held_bytes": 0, "stopped": "no free 2 MiB block left to take"}),
          flush=True)
    while True:
        signal.pause()
""")


def test_a_state_that_does_not_hold_fails_the_run_with_the_reason(fake_sys, tmp_path, monkeypatch):
    """The fake buddyinfo keeps its free blocks whatever the fragmenter does: the run fails, says why, and the
    fragmenter is gone; the knob it needed is back as found."""
    monkeypatch.setattr(aging, "HELPER", [sys.executable, "-c", FAKE_FRAGMENTER])
    with open(fake_sys.proc_root / "meminfo", "a") as f:
        f.write("MemAvailable:   20000000 kB\n")
    runs, result = _sweep(tmp_path, fake_sys, "fragmented")
    assert result.statuses == {"failed": 1}
    row = load(tmp_path / "res").iloc[0]
    assert (
        "memory_state fragmented:100% did not hold: 1589 free 2 MiB blocks before the run"
        in row["error"]
    )
    assert (
        "more than the limit of 32" in row["error"] and "no free 2 MiB block left" in row["error"]
    )
    assert row["memory.free_2mib_limit"] == 32 and row["memory.fragmenter_left"] == 0
    assert ("proc/sys/vm/compact_unevictable_allowed", "0") in fake_sys.writes
    assert fake_sys.read("proc/sys/vm/compact_unevictable_allowed") == "1"
    assert (
        fake_sys.read("sys/kernel/mm/transparent_hugepage/defrag")
        .split("[")[1]
        .startswith("madvise")
    )


def test_a_movable_state_leaves_its_pages_unlocked_and_keeps_kcompactd_off_only_while_it_lives(
    fake_sys, tmp_path, monkeypatch
):
    """fragmented-movable: the fragmenter is asked for unlocked pages, compaction of mlocked pages stays as
    found, proactive compaction is off for the run and back as found after."""
    argv_file = tmp_path / "argv"
    fake = FAKE_FRAGMENTER.replace(
        "import json, signal",
        f"import json, signal, sys; open({str(argv_file)!r}, 'w').write(' '.join(sys.argv))",
    )
    monkeypatch.setattr(aging, "HELPER", [sys.executable, "-c", fake])
    with open(fake_sys.proc_root / "meminfo", "a") as f:
        f.write("MemAvailable:   20000000 kB\n")
    runs, result = _sweep(tmp_path, fake_sys, "fragmented-movable")
    row = load(tmp_path / "res").iloc[0]
    assert (
        "memory_state fragmented-movable:100% did not hold" in row["error"]
    )  # the fake buddyinfo stays free
    assert "--movable" in argv_file.read_text().split() and bool(row["memory.movable"])
    assert ("proc/sys/vm/compaction_proactiveness", "0") in fake_sys.writes
    assert ("proc/sys/vm/compact_unevictable_allowed", "0") not in fake_sys.writes
    assert fake_sys.read("proc/sys/vm/compaction_proactiveness") == "20"  # restored as found


def test_not_enough_memory_to_fragment_safely(fake_sys, tmp_path):
    (fake_sys.proc_root / "meminfo").write_text("MemTotal: 2000000 kB\nMemAvailable: 100000 kB\n")
    with SystemState(fake_sys.host, fake_sys.journal_path) as state:
        aged = aging.AgedMemory(
            "fragmented",
            state,
            host=fake_sys.host,
            records=tmp_path / "r",
            reserve_bytes=200 << 20,
        ).enter()
        assert aged.failed.startswith("not enough memory to fragment safely") and aged.proc is None
        aged.close()


@pytest.mark.needs_root
@pytest.mark.needs_thp
def test_the_fragmenter_reaches_its_level_here_and_is_gone_after(tmp_path):
    """A small level keeps it short: 10% of the free 2 MiB blocks pinned, verified, then ended."""
    assert_fragmenter_reaches_its_level(tmp_path, "fragmented:10%")


def assert_fragmenter_reaches_its_level(tmp_path, value: str) -> dict:
    """``value`` entered on the real kernel: its level verified, its pages locked in the fragmenter itself,
    then ended with nothing left behind; its columns."""
    available_before = kernel.mem_available()
    with SystemState(journal_path=tmp_path / "journal.json") as state:
        aged = aging.AgedMemory(value, state, records=tmp_path / "runs").enter()
        assert aged.failed is None, aged.failed
        columns, pid = aged.columns, aged.proc.pid
        assert columns["memory.free_2mib_blocks"] <= columns["memory.free_2mib_limit"]
        assert columns["memory.fragmenter.blocks_pinned"] > 0
        assert columns["memory.fragmenter.peak_rss_bytes"] <= aging.CHUNK_BYTES + columns[
            "memory.fragmenter.held_bytes"
        ] + (64 << 20)
        assert kernel.read_status(pid).get("VmLck") == columns["memory.fragmenter.held_bytes"]
        assert open("/proc/sys/vm/compact_unevictable_allowed").read().strip() == "0"
        assert kernel.thp_modes()["defrag"] != "never" or state.found("thp.defrag") == "never"
        aged.close()
        assert not alive(pid, None) and aged.proc is None and columns["memory.fragmenter_left"] == 0
    assert open("/proc/sys/vm/compact_unevictable_allowed").read().strip() == state.found(
        aging.KNOB
    )
    # what it held came back (others may take a little meanwhile)
    assert kernel.mem_available() > available_before - (256 << 20) - 0.02 * available_before
    assert not list((tmp_path / "runs").glob("*.json"))  # no record left for end_leftovers to find
    return columns


@pytest.mark.needs_root
@pytest.mark.needs_thp
def test_the_movable_kind_reaches_its_level_with_unlocked_pages_and_kcompactd_off_only_while_it_lives(
    tmp_path,
):
    """Both kinds at 10% reach their level; the pinned kind's pages are mlocked (Mlocked grows by them), the
    movable kind's are not; proactive compaction is 0 only while the movable kind lives. (Whether compaction
    then rebuilds blocks from movable pages depends on where they lie: a whole-zone `compact_memory` here
    did not reach them, while its scanners met; what THP faults' compaction does is measured by
    experiments/aged-defrag.yaml, not assumed.)"""
    proactive = "/proc/sys/vm/compaction_proactiveness"
    found = open(proactive).read().strip()
    locked = {}
    for value in ("fragmented:10%", "fragmented-movable:10%"):
        with SystemState(journal_path=tmp_path / f"journal-{len(locked)}.json") as state:
            aged = aging.AgedMemory(value, state, records=tmp_path / "runs").enter()
            assert aged.failed is None, aged.failed
            pinned = aged.columns["memory.fragmenter.blocks_pinned"]
            assert pinned > 0 and aged.columns["memory.movable"] == ("movable" in value)
            assert open(proactive).read().strip() == ("0" if "movable" in value else found)
            # the fragmenter's own locked memory (VmLck), not the machine's Mlocked: another process's
            # mlock or munlock while it works must not move the measure
            held = kernel.read_status(aged.proc.pid).get("VmLck", 0)
            locked[value] = held / (aged.columns["memory.fragmenter.held_bytes"] or 1)
            aged.close()
        assert open(proactive).read().strip() == found
    assert locked["fragmented:10%"] == 1.0, locked  # every page it kept is locked
    assert locked["fragmented-movable:10%"] == 0.0, locked


def test_the_report_says_how_much_of_the_fresh_gain_survives():
    import pandas as pd

    from hugebench.report.aging import aging_sections
    from hugebench.report.model import Options
    from hugebench.report.results import Experiment

    cells = [
        ("glibc", "never", "fresh", 100.0, 0.0),
        ("glibc", "never", "fragmented:100%", 100.0, 0.0),
        ("glibc", "always", "fresh", 80.0, 0.9),
        ("glibc", "always", "fragmented:100%", 95.0, 0.2),
    ]
    rows = pd.DataFrame(
        [
            {
                "allocator": a,
                "thp.enabled": t,
                "memory_state": m,
                "ns_per_lookup": v + d,
                "hp_coverage": c,
                "status": "ok",
                "warmup": False,
            }
            for a, t, m, v, c in cells
            for d in (-1.0, 1.0)
        ]
    )
    context = {
        "axes": ["allocator", "thp.enabled", "memory_state"],
        "primary_metric": "ns_per_lookup",
        "primary_better": "lower",
        "baseline": {"allocator": "glibc", "thp.enabled": "never"},
    }
    [section] = aging_sections(Experiment("aged", rows, context), None, Options())
    [row] = section.data.to_dict("records")
    assert row["gain_fresh"] == pytest.approx(0.25) and row["gain_aged"] == pytest.approx(
        100 / 95 - 1
    )
    assert row["kept"] == pytest.approx((100 / 95 - 1) / 0.25)
    assert "keeps 21% of its fresh gain on a fragmented:100% machine" in section.summary[0]
    assert "coverage 90% -> 20%" in section.summary[0]
    assert (
        aging_sections(
            Experiment("x", rows[rows.memory_state == "fresh"], context), None, Options()
        )
        == []
    )


def test_try_aged_puts_every_configuration_in_both_states(monkeypatch):
    from hugebench.trial import matrix

    request = matrix.Request(argv=("true",), aged=True, only=("glibc",), thp=())
    if aging.why_not_here() is None:
        mx = matrix.build(request)
        assert [c["memory_state"] for c in mx.cells[:2]] == ["fresh", "fragmented:100%"]
        assert mx.baseline == {**mx.cells[0]} and len(mx.cells) % 2 == 0
        data = matrix.experiment(request, mx, "try-true", 10.0)
        assert data["axes"]["memory_state"] == ["fresh", "fragmented:100%"]
        assert matrix.describe(mx.cells[1], mx.thp_found).endswith(", fragmented memory")
    monkeypatch.setattr(aging.os, "geteuid", lambda: 1000)
    with pytest.raises(PrivilegeError, match="--aged: memory_state compacts memory"):
        matrix.build(request)


def test_a_fragmenter_left_by_a_killed_sweep_is_ended_by_the_next(tmp_path):
    """The sweep is killed before it could end its fragmenter (here: a stand-in sleeping in a process of its
    own, without the real one's PDEATHSIG): its record names it, and end_leftovers ends it."""
    import subprocess

    from hugebench.system.containment import end_leftovers

    code = textwrap.dedent(f"""\
        import subprocess, sys, os
        from hugebench.system.containment import RunContainer
        box = RunContainer("fragmenter-test", {str(tmp_path / "runs")!r}, use_cgroup=False)
        helper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"], start_new_session=True,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                  env={{**os.environ, **box.env()}})
        box.add(helper.pid)
        print(helper.pid, flush=True)
        os._exit(0)  # killed: nothing closes the container
    """)
    pid = int(
        subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
    )
    assert alive(pid, None)
    ended = end_leftovers(tmp_path / "runs")
    assert [e["killed"] for e in ended] == [1] and not alive(pid, None)


def test_plan_prices_making_each_memory_state():
    from hugebench.sweep.estimate import estimate

    plain = plan_mod.plan(
        parse_spec(SPEC.replace("memory_state: [STATES]", "set_kind: [flat]"), "a.yaml")
    )
    aged = plan_mod.plan(parse_spec(SPEC.replace("STATES", "fresh, fragmented:50%"), "a.yaml"))
    extra = estimate(aged).seconds - 2 * estimate(plain).seconds
    assert extra == pytest.approx(
        2 * aging.FRESH_SECONDS + aging.FRAGMENT_SECONDS_AT_100 / 2 + aging.SETTLE_S
    )


@pytest.mark.needs_root
@pytest.mark.needs_thp
def test_try_aged_end_to_end_gives_each_memory_state_its_own_verdict(tmp_path, thp_found_madvise):
    """`hugebench try --aged` on a real program: every run in the state it asked for (verified in its row),
    one verdict per state against as-is in that state, with its own run count; nothing left behind."""
    import json

    from click.testing import CliRunner

    from hugebench.cli import main
    from hugebench.store import load
    from hugebench.trial.render import answer
    from hugebench.trial.verdict_types import Verdict

    knobs = {
        p: open(p).read()
        for p in (
            "/sys/kernel/mm/transparent_hugepage/enabled",
            "/sys/kernel/mm/transparent_hugepage/defrag",
            "/proc/sys/vm/compact_unevictable_allowed",
        )
    }
    program = [sys.executable, "-c", "b = bytearray(96 << 20); b[::4096] = b'x' * len(b[::4096])"]
    out = tmp_path / "out"
    result = CliRunner().invoke(
        main,
        [
            "try",
            "--json",
            "--no-mthp",  # the mTHP size sets are not what this test is about
            "--aged",
            "--aged-level",
            "5%",
            "--budget",
            "60s",  # one verdict per state is what is checked, not its resolution
            "--allocators",
            "glibc",
            "--thp",
            "madvise",
            "--thp",
            "always",
            "-o",
            str(out),
            "--",
            *program,
        ],
        catch_exceptions=False,
    )
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout.strip().splitlines()[-1])
    states = verdict["by_memory_state"]
    assert list(states) == ["fresh", "fragmented:5%"]
    rows = load(out, hosts=False)
    for memory, each in states.items():
        mine = rows[rows["cell_id"].isin(each["cells"])]
        assert (mine["memory_state"] == memory).all() and each["runs"] == len(mine) > 0
        assert each["baseline"]["cell"] == {
            "allocator": "as-is",  # the program untouched (issue 40)
            "thp": "madvise",
            "memory_state": memory,
        }
        assert each["baseline"]["runs"] >= 1 and mine["memory.free_2mib_blocks"].notna().all()
    assert sum(each["runs"] for each in states.values()) == len(rows) == verdict["runs"]
    aged = rows[(rows["memory_state"] == "fragmented:5%") & (rows["status"] == "ok")]
    assert len(aged) and (aged["memory.free_2mib_blocks"] <= aged["memory.free_2mib_limit"]).all()
    text = answer(Verdict.from_dict(verdict), verdict["plan"])
    assert (
        text.count(verdict["plan"][0]) == 1
        and "== on a fragmented machine (memory_state fragmented:5%;" in text
    )
    # none of this test's descendants is a fragmenter (another session's may run on this machine)
    mine = [Path(f"/proc/{pid}/cmdline") for pid in kernel.process_tree(os.getpid())]
    assert not [c for c in mine if b"hugebench.system.fragmenter" in _read_bytes(c)]
    assert {p: open(p).read() for p in knobs} == knobs


@pytest.mark.needs_root
@pytest.mark.needs_thp
def test_both_kinds_reach_their_level_beside_a_background_load_the_test_starts(tmp_path):
    """A CPU-busy process that allocates, faults and frees 64 MiB in a loop runs the whole time (issue 38:
    test_aging failed beside other work): the pinned and the movable kind each reach 10%, verified."""
    from background_load import background_load, cpu_ticks

    with background_load(workers=1, mib=64) as pids:
        ticks = cpu_ticks(pids[0])
        for value in ("fragmented:10%", "fragmented-movable:10%"):
            with SystemState(journal_path=tmp_path / f"journal-{value[-3:]}.json") as state:
                aged = aging.AgedMemory(value, state, records=tmp_path / "runs").enter()
                assert aged.failed is None, aged.failed
                assert (
                    aged.columns["memory.free_2mib_blocks"]
                    <= aged.columns["memory.free_2mib_limit"]
                )
                aged.close()
        assert cpu_ticks(pids[0]) > ticks  # the load ran beside it


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError:
        return b""  # gone meanwhile
