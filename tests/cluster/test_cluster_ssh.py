"""`hugebench sweep --cluster ssh://...` for real: Dask's SSHCluster through real OpenSSH servers.

Two "hosts" on this machine: an `sshd` (Debian's openssh-server) on 127.0.0.1 and another on 127.0.0.2, each
with its own host key and config written by the test, both on one free port. Each names its machine by
the environment it gives its sessions (sshd_config ``SetEnv HUGEBENCH_HOST_NAME=...``, with its own sweep lock
and journal), the way a lab machine names itself by its host name. The client finds the port, the user key
and the known host keys in ``~/.ssh`` of a HOME the test makes, as a user's ssh config would give them. The
sweep switches no kernel knob (no thp axis). Every sshd, and every process their sessions started, is ended
in the test's finally; the test fails if a Dask process outlived the sweep.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cluster_lab import lab_spec, stop_daemons

from hugebench.cluster import certs

pytest.importorskip(
    "distributed", reason="the cluster extra is not installed: pip install '.[cluster]'"
)
pytest.importorskip(
    "asyncssh", reason="the cluster extra is not installed: pip install '.[cluster]'"
)
psutil = pytest.importorskip("psutil")

SSHD = Path("/usr/sbin/sshd")
BIN = Path(sys.executable).parent
HOSTS = {"127.0.0.1": "lab-a", "127.0.0.2": "lab-b"}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_root,
    pytest.mark.skipif(
        not SSHD.exists() or not shutil.which("ssh-keygen"),
        reason="no sshd: apt-get install openssh-server (.ci/setup does)",
    ),
]

SPEC = lab_spec("ssh-lab")

SSHD_CONFIG = """\
Port {port}
ListenAddress {address}
HostKey {tmp}/host-{name}
PidFile {tmp}/sshd-{name}.pid
AuthorizedKeysFile {tmp}/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
UsePAM no
StrictModes no
LogLevel VERBOSE
SetEnv HUGEBENCH_HOST_NAME={name} HUGEBENCH_LOCK={tmp}/{name}.lock HUGEBENCH_JOURNAL={tmp}/{name}.journal.json
"""


def _free_port() -> int:
    """A port free on both loopback addresses."""
    for _ in range(50):
        with socket.socket() as first:
            first.bind(("127.0.0.1", 0))
            port = first.getsockname()[1]
            with socket.socket() as second:
                try:
                    second.bind(("127.0.0.2", port))
                except OSError:
                    continue
        return port
    raise RuntimeError("no port free on both 127.0.0.1 and 127.0.0.2")


def _keygen(path: Path) -> str:
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(path)], check=True, timeout=30
    )
    return Path(f"{path}.pub").read_text().strip()


def _listening(address: str, port: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with socket.socket() as s:
            if s.connect_ex((address, port)) == 0:
                return True
        time.sleep(0.1)
    return False


def _started_by_sessions() -> list:
    """Processes whose environment one of the test's sshd gave them (the Dask scheduler and workers)."""
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get("HUGEBENCH_HOST_NAME") in HOSTS.values():
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


def _end(procs: list) -> None:
    for proc in procs:
        try:
            proc.kill()
        except psutil.NoSuchProcess:
            pass
    psutil.wait_procs(procs, timeout=10)


@pytest.fixture
def lab(tmp_path):
    """Two sshd on 127.0.0.1 and 127.0.0.2; a HOME whose ~/.ssh reaches both. -> (home, tmp)."""
    Path("/run/sshd").mkdir(
        mode=0o755, exist_ok=True
    )  # sshd's privilege separation directory (Debian's)
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True, mode=0o700)
    user_key = _keygen(home / ".ssh" / "id_ed25519")
    (tmp_path / "authorized_keys").write_text(user_key + "\n")
    port = _free_port()
    known, daemons = [], []
    try:
        for address, name in HOSTS.items():
            host_key = _keygen(tmp_path / f"host-{name}")
            known.append(f"[{address}]:{port} {host_key}")
            config = tmp_path / f"sshd-{name}.conf"
            config.write_text(
                SSHD_CONFIG.format(port=port, address=address, tmp=tmp_path, name=name)
            )
            log = open(tmp_path / f"sshd-{name}.log", "ab")
            daemons.append(
                subprocess.Popen(
                    [str(SSHD), "-D", "-e", "-f", str(config)], stdout=log, stderr=subprocess.STDOUT
                )
            )
            assert _listening(address, port), (tmp_path / f"sshd-{name}.log").read_text()
        (home / ".ssh" / "known_hosts").write_text("\n".join(known) + "\n")
        (home / ".ssh" / "config").write_text(
            f"Host {' '.join(HOSTS)}\n  Port {port}\n  User root\n"
        )
        yield home, tmp_path
    finally:
        sessions = [
            c
            for d in daemons
            if psutil.pid_exists(d.pid)
            for c in psutil.Process(d.pid).children(True)
        ]
        stop_daemons(daemons, timeout=10)
        _end(sessions + _started_by_sessions())


def test_a_sweep_through_ssh_runs_on_both_hosts_and_leaves_no_process(lab):
    home, tmp = lab
    spec = tmp / "ssh-lab.yaml"
    spec.write_text(SPEC)
    out = tmp / "results"
    certs.make(tmp / "certs")  # every host finds them at this path (all are this machine)
    env = {**os.environ, "HOME": str(home), "COLUMNS": "200"}
    env.pop("HUGEBENCH_HOST_NAME", None)
    result = subprocess.run(
        [
            str(BIN / "hugebench"),
            "sweep",
            str(spec),
            "--cluster",
            f"ssh://{','.join(HOSTS)}",
            "--workers",
            "2",
            "--certs",
            str(tmp / "certs"),
            "-q",
            "-o",
            str(out),
            "--format",
            "csv",
        ],
        env=env,
        cwd=tmp,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    measured = [r for r in rows if not r["warmup"]]
    assert {r["status"] for r in rows} == {"ok"}, [(r["host"], r["error"]) for r in rows]
    assert sorted(r["host"] for r in measured) == ["lab-a", "lab-a", "lab-b", "lab-b"]
    assert {r["sweep_id"].rsplit(".", 1)[1] for r in rows} == {"lab-a", "lab-b"}
    for name in HOSTS.values():
        (context,) = (out / "sweeps").glob(f"*.{name}.json")
        assert json.loads(context.read_text())["cluster"]["authentication"].startswith("mutual TLS")
        log = (tmp / f"sshd-{name}.log").read_text()
        assert "Accepted publickey for root" in log, (
            log
        )  # the sessions really went through this sshd
    deadline = time.monotonic() + 15
    while _started_by_sessions() and time.monotonic() < deadline:
        time.sleep(0.5)
    left = _started_by_sessions()
    assert not left, f"processes outlived the sweep: {[p.cmdline() for p in left]}"
