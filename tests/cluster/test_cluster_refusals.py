"""What a cluster command accepted silently or answered with Dask's tracebacks (issue 53), now refused in one
line before anything connects: --insecure-accept-any-client beside tls:// or certificates; plan's
certificates checked as a sweep checks them; certificates expired or of another lab's CA; `cluster certs`
into a directory that holds anything. The worker against a real scheduler: tests/cluster/test_cluster_tls.py."""

from __future__ import annotations

import datetime
import os
import types

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.cluster import certs
from hugebench.errors import HugebenchError, SpecError
from hugebench.experiment.cluster import resolve

pytest.importorskip("cryptography")

BASE = "name: c\nworkload: hashlookup\nparams: {keys: 1000}\n"


def _invoke(*args: str):
    result = CliRunner().invoke(main, list(args))
    assert "Traceback" not in result.output, result.output
    return result


@pytest.mark.parametrize(
    "cluster, certs_dir, says",
    [
        ("tls://127.0.0.1:8786", "certs", "with certs every peer is authenticated"),
        ("tls://127.0.0.1:8786", None, "is tls://, which needs the lab's certificates"),
        ("ssh://h1", "certs", "with certs every peer is authenticated"),
    ],
)
def test_the_insecure_opt_in_beside_tls_or_certificates_is_refused(cluster, certs_dir, says):
    with pytest.raises(SpecError, match="--insecure-accept-any-client: .*" + says):
        resolve({}, cluster, None, None, "c.yaml", certs=certs_dir, insecure=True)


def test_the_worker_refuses_the_insecure_opt_in_with_tls():
    result = _invoke(
        "worker", "tls://127.0.0.1:8786", "--certs", "x", "--insecure-accept-any-client"
    )
    assert (
        result.exit_code == 2
        and "is tls://, where --certs authenticates every peer" in result.output
    )


def test_plan_checks_the_client_certificates_as_a_sweep_does(tmp_path):
    spec = tmp_path / "c.yaml"
    spec.write_text(BASE)
    lab = tmp_path / "lab"
    certs.make(lab)
    address = ["--cluster", "tls://127.0.0.1:8786"]
    missing = _invoke("plan", str(spec), *address, "--certs", str(tmp_path / "nonexistent"))
    assert missing.exit_code == 2 and "ca.pem: No such file or directory" in missing.output
    os.chmod(lab / "client-key.pem", 0o644)
    readable = _invoke("plan", str(spec), *address, "--certs", str(lab))
    assert readable.exit_code == 2 and "client-key.pem can be read by others" in readable.output
    os.chmod(lab / "client-key.pem", 0o600)
    assert _invoke("plan", str(spec), *address, "--certs", str(lab)).exit_code == 0


def _later(days: int):
    """certs' datetime module with the clock ``days`` ahead."""

    class Clock(datetime.datetime):
        @classmethod
        def now(cls, tz=None):
            return datetime.datetime.now(tz) + datetime.timedelta(days=days)

    return types.SimpleNamespace(
        datetime=Clock, timezone=datetime.timezone, timedelta=datetime.timedelta
    )


def test_expired_certificates_are_one_line_before_any_connection(tmp_path, monkeypatch):
    lab = tmp_path / "lab"
    certs.make(lab, days=1)
    certs.valid_and_ours(lab, "worker")
    monkeypatch.setattr(certs, "datetime", _later(3))
    with pytest.raises(HugebenchError, match=r"(ca|worker)\.pem is valid from .* UTC, not now"):
        certs.valid_and_ours(lab, "worker")
    pytest.importorskip("distributed")
    result = _invoke("worker", "tls://127.0.0.1:9", "--certs", str(lab))
    assert result.exit_code == 1 and "not now: make new certificates" in result.output
    assert result.output.count("\n") == 1


def test_another_labs_certificate_is_one_line(tmp_path):
    ours, theirs, mixed = tmp_path / "ours", tmp_path / "theirs", tmp_path / "mixed"
    certs.make(ours)
    certs.make(theirs)
    mixed.mkdir(mode=0o700)
    for source, name in ((ours, "ca.pem"), (theirs, "worker.pem"), (theirs, "worker-key.pem")):
        (mixed / name).write_bytes((source / name).read_bytes())
    os.chmod(mixed / "worker-key.pem", 0o600)
    with pytest.raises(HugebenchError, match="worker.pem is not signed by .*ca.pem"):
        certs.valid_and_ours(mixed, "worker")


def test_cluster_certs_refuses_a_directory_that_holds_anything(tmp_path):
    target = tmp_path / "certs"
    target.mkdir(mode=0o700)
    (target / "notes.txt").write_text("mine")
    result = _invoke("cluster", "certs", str(target))
    assert result.exit_code == 1 and "already holds notes.txt" in result.output
    assert sorted(os.listdir(target)) == ["notes.txt"]
    empty = tmp_path / "empty"
    empty.mkdir(mode=0o700)
    assert _invoke("cluster", "certs", str(empty)).exit_code == 0
