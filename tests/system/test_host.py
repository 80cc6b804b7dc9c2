"""The host value (hugebench.kernel.Host): the /proc and /sys roots and the knob writer, built once and passed
as a unit; what crosses to a cluster worker pickles with it."""

from __future__ import annotations

import pickle
from pathlib import Path

from hugebench.kernel import LOCAL, FileIO, Host
from hugebench.system import SystemState, discover_knobs


def test_the_local_host_is_this_machine_with_plain_file_io():
    assert (LOCAL.proc, LOCAL.sys) == (Path("/proc"), Path("/sys"))
    assert isinstance(LOCAL.io, FileIO)
    built = Host.at()
    assert built == LOCAL and isinstance(built.io, FileIO)
    assert Host.at("/x/sys", "/x/proc") == Host(Path("/x/proc"), Path("/x/sys"))


def test_a_host_pickles_with_its_writer():
    host = Host.at("/x/sys", "/x/proc")
    back = pickle.loads(pickle.dumps(host))
    assert back == host and isinstance(back.io, FileIO)


def test_knobs_are_written_through_the_hosts_writer(fake_sys, tmp_path):
    knob = discover_knobs(fake_sys.host)["thp.enabled"]
    assert knob.path == fake_sys.sys_root / "kernel/mm/transparent_hugepage/enabled"
    knob.write("always")
    assert fake_sys.writes == [("sys/kernel/mm/transparent_hugepage/enabled", "always")]
    assert fake_sys.read("sys/kernel/mm/transparent_hugepage/enabled") == "[always] madvise never"
    with SystemState(fake_sys.host, tmp_path / "journal.json") as state:
        state.apply({"thp.defrag": "never"})
        assert fake_sys.writes[-1] == ("sys/kernel/mm/transparent_hugepage/defrag", "never")
    assert fake_sys.writes[-1] == (
        "sys/kernel/mm/transparent_hugepage/defrag",
        "madvise",
    )  # restored
    # the same roots with another writer: equal as a host (the writer is not part of its identity), and
    # the fake kernel no longer sees the writes
    plain = fake_sys.host.with_io(FileIO())
    assert plain == fake_sys.host and plain.io is not fake_sys


def test_entry_points_build_their_host_with_host_at(fake_sys):
    """fake_sys makes Host.at (what the CLI, a cluster worker and a journal's restore call) write through
    the fake kernel: the one seam, instead of a module-global writer."""
    host = Host.at(fake_sys.sys_root, fake_sys.proc_root)
    assert host == fake_sys.host and host.io is fake_sys
