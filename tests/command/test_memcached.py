"""A second Debian server, started by the test: memcached under memcaslap (libmemcached-tools' memaslap,
named `memaslap` as a driver), once per allocator: its throughput read by the driver preset, the allocator
proven in the server's process, and nothing left running."""

from __future__ import annotations

import shutil
import socket
import subprocess
import textwrap

import pytest

from hugebench import load
from hugebench.experiment import load_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep

pytestmark = pytest.mark.skipif(
    shutil.which("memcached") is None or shutil.which("memcaslap") is None,
    reason="memcached/memcaslap not installed (apt-get install memcached libmemcached-tools)",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.needs_root
def test_memcached_under_memcaslap_per_allocator(tmp_path):
    port = _free_port()
    path = tmp_path / "mc.yaml"
    path.write_text(
        "name: mc\nworkload: command\nperf: off\ntimeout: 60\n"
        + textwrap.dedent(
            f"""\
            params:
              server:
                # memcached refuses to run as root unless told which user to be
                argv: [memcached, -p, "{port}", -l, 127.0.0.1, -U, "0", -m, "64", -t, "2", -u, nobody]
                ready: {{port: {port}}}
                warmup: 1
              argv: [memcaslap, -s, "127.0.0.1:{port}", -T, "2", -c, "8", -x, "20000"]
              metric: {{driver: memaslap}}
            axes:
              allocator: [glibc, jemalloc]
            """
        )
    )
    spec = load_spec(path)
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    df = load(tmp_path / "res").set_index("allocator")
    assert result.statuses == {"ok": 2}, df.get("error")
    assert (df["tps"] > 1000).all()
    assert (df["server_warmup_runs"] == 1).all()
    assert df.loc["jemalloc", "allocator_malloc_from"].count("libjemalloc") >= 1
    assert "libc.so" in df.loc["glibc", "allocator_malloc_from"]
    assert df["program_path"].str.endswith("memcached").all()
    left = subprocess.run(["pgrep", "-f", f"memcached -p {port}"], capture_output=True)
    assert left.returncode == 1, left.stdout  # no server left running
