"""`hugebench worker` against a scheduler it cannot serve (issue 53): one line, no Dask traceback, in bounded
time — a real TLS scheduler of another lab (its certificates all in order, another CA), and a port that
accepts and never answers (with --death-timeout)."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from conftest import FakeKernel

pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from cluster_lab import Lab

from hugebench.cluster import certs


def _worker(tmp_path, scheduler: str, certs_dir, *extra: str) -> subprocess.CompletedProcess:
    """The real `hugebench worker` on a fake machine (nothing of this one's is touched)."""
    kernel = FakeKernel(tmp_path / "machine").build()
    argv = [str(Path(sys.executable).parent / "hugebench"), "worker", scheduler]
    return subprocess.run(
        [
            *argv,
            "--certs",
            str(certs_dir),
            "--host-name",
            "hbtest-errors",
            "--sys-root",
            str(kernel.sys_root),
            "--proc-root",
            str(kernel.proc_root),
            "--journal",
            str(tmp_path / "j.json"),
            "--lock",
            str(tmp_path / "lock"),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_a_worker_with_another_labs_certificates_is_one_line(tmp_path):
    other = tmp_path / "other"
    certs.make(other)
    lab = Lab(tmp_path)
    try:
        done = _worker(tmp_path, lab.address, other, "--death-timeout", "10")
    finally:
        assert not lab.close()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert last.startswith("hugebench: error: the scheduler at ") and "do not match" in last


def test_a_scheduler_that_never_answers_is_one_line_within_the_death_timeout(tmp_path):
    lab_certs = tmp_path / "lab"
    certs.make(lab_certs)
    mute = socket.socket()
    mute.bind(("127.0.0.1", 0))
    mute.listen(16)
    held: list = []
    stop = threading.Event()

    def accept() -> None:  # takes connections and never says a word
        mute.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(mute.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        port = mute.getsockname()[1]
        done = _worker(tmp_path, f"tls://127.0.0.1:{port}", lab_certs, "--death-timeout", "3")
    finally:
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        mute.close()
    assert done.returncode == 1 and "Traceback" not in done.stderr, done.stderr
    last = done.stderr.strip().splitlines()[-1]
    assert "did not answer within --death-timeout 3 s" in last
