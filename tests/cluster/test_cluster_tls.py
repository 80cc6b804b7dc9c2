"""The cluster worker runs as root and Dask runs what a connected peer sends: only holders of a certificate
signed by the lab's CA may connect. Certificates made by `hugebench cluster certs` (keys 0600, never through
a planted link); a real TLS scheduler and `hugebench worker` refuse a client without them, run by the
unprivileged user `nobody` (while the same attack on a tcp:// lab served with --insecure-accept-any-client
writes its file as root: the attack is real); a client with them runs a sweep. A worker refuses a tcp://
scheduler unless the user accepts the risk by name, and bad addresses cleanly."""

from __future__ import annotations

import os
import stat

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.cluster import certs
from hugebench.errors import HugebenchError

pytest.importorskip("distributed")
pytest.importorskip("cryptography")

from cluster_lab import Lab, lab_spec

from hugebench.store import ResultStore


def test_certs_are_made_private_and_signed_by_the_labs_ca(tmp_path):
    from cryptography import x509

    made = certs.make(tmp_path / "c")
    assert stat.S_IMODE((tmp_path / "c").stat().st_mode) == 0o700
    names = {p.name: stat.S_IMODE(p.stat().st_mode) for p in made}
    assert {n for n, mode in names.items() if mode == 0o600} == {
        "ca-key.pem",
        "scheduler-key.pem",
        "worker-key.pem",
        "client-key.pem",
    }
    ca = x509.load_pem_x509_certificate((tmp_path / "c/ca.pem").read_bytes())
    for role in certs.ROLES:
        cert = x509.load_pem_x509_certificate((tmp_path / f"c/{role}.pem").read_bytes())
        cert.verify_directly_issued_by(ca)
        assert not cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    with pytest.raises(HugebenchError, match="never overwritten"):
        certs.make(tmp_path / "c")


def test_making_certs_never_follows_a_planted_link(tmp_path):
    target = tmp_path / "victim"
    target.write_text("precious\n")
    (tmp_path / "d").mkdir(mode=0o700)
    (tmp_path / "d/worker-key.pem").symlink_to(target)
    with pytest.raises(HugebenchError, match="worker-key.pem"):
        certs.make(tmp_path / "d")
    assert target.read_text() == "precious\n" and not (tmp_path / "d/ca.pem").exists()
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "elsewhere")
    with pytest.raises(HugebenchError, match="a link there is never followed"):
        certs.make(tmp_path / "link")
    assert not list((tmp_path / "elsewhere").iterdir())
    (tmp_path / "open").mkdir()
    (tmp_path / "open").chmod(0o777)
    with pytest.raises(HugebenchError, match="writable by others"):
        certs.make(tmp_path / "open")


def test_a_key_others_can_read_is_refused(tmp_path):
    certs.make(tmp_path / "c")
    assert certs.security(tmp_path / "c", "worker").require_encryption
    (tmp_path / "c/worker-key.pem").chmod(0o644)
    with pytest.raises(HugebenchError, match="chmod 600"):
        certs.security(tmp_path / "c", "worker")
    with pytest.raises(HugebenchError, match="ca.pem: No such file"):
        certs.security(tmp_path / "none", "client")


@pytest.mark.parametrize(
    "args, says",
    [
        (["tcp://127.0.0.1:8786"], "refusing to serve tcp://127.0.0.1:8786"),
        (["tls://127.0.0.1:8786"], "needs the lab's certificates: --certs DIR"),
        (["tcp://127.0.0.1:8786", "--certs", "x"], "--certs is for a tls:// scheduler"),
        (["tcp://127.0.0.1:0", "--insecure-accept-any-client"], "port 0 in"),
        (["tls://lab1:99999", "--certs", "x"], "port 99999 in"),
        (["lab1:8786"], "must be an address like tls://lab1:8786"),
    ],
)
def test_the_worker_refuses_what_it_cannot_authenticate_before_starting(args, says):
    result = CliRunner().invoke(main, ["worker", *args])
    assert result.exit_code == 2, result.output
    assert says in result.output and "Traceback" not in result.output


def test_a_sweep_over_an_ssh_host_that_does_not_resolve_is_one_clean_error(tmp_path):
    path = tmp_path / "e.yaml"
    path.write_text(lab_spec("e"))
    argv = ["sweep", str(path), "-o", str(tmp_path / "r"), "--insecure-accept-any-client"]
    result = CliRunner().invoke(main, [*argv, "--cluster", "ssh://no-such-host.invalid"])
    assert result.exit_code == 1, result.output
    assert "could not start the Dask cluster over ssh on no-such-host.invalid" in result.output
    assert isinstance(result.exception, SystemExit)


ATTACK = """
import asyncio, sys
from distributed import Client
from distributed.core import rpc
from distributed.security import Security

scheduler, worker, marker = {scheduler!r}, {worker!r}, {marker!r}
foreign = Security.temporary()  # TLS, but a certificate the lab's CA did not sign

def write(path):
    with open(path, "w") as f:
        f.write("ran")

attempts = [(scheduler, None), (scheduler.replace("tls://", "tcp://"), None), (scheduler, foreign)]
for address, security in attempts:
    try:
        with Client(address, timeout=5, security=security) as client:
            client.run(write, marker)
            print("RAN", address)
    except Exception as exc:
        print("REFUSED", address, type(exc).__name__)

async def worker_directly():
    for address, security in [(worker, foreign), (worker.replace("tls://", "tcp://"), None)]:
        args = security.get_connection_args("client") if security else {{}}
        try:
            async with rpc(address, timeout=5, connection_args=args) as w:
                print("ANSWERED", address, list(await w.identity()))
        except Exception as exc:
            print("REFUSED", address, type(exc).__name__)

asyncio.run(worker_directly())
"""


def _attack(unprivileged, lab: Lab, marker) -> str:
    with lab.client() as client:
        (worker,) = client.scheduler_info()["workers"]
    code = ATTACK.format(scheduler=lab.address, worker=worker, marker=str(marker))
    done = unprivileged.python_code(code, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_client_without_the_labs_certificate_cannot_run_code_on_the_worker(
    tmp_path, unprivileged
):
    marker = unprivileged.home / "written-by-the-worker"
    lab = Lab(tmp_path)
    try:
        lab.worker("lab-a")
        lab.wait_for_hosts("lab-a")
        said = _attack(unprivileged, lab, marker)
        assert said.count("REFUSED") == 5 and "RAN" not in said and "ANSWERED" not in said, said
        assert not marker.exists()
        spec = tmp_path / "lab.yaml"  # the lab's own client, with its certificate, runs a sweep
        spec.write_text(lab_spec("tls"))
        code, log = lab.sweep(spec, tmp_path / "res")
        assert code == 0, log
        rows = ResultStore(tmp_path / "res").rows()
        assert [r["status"] for r in rows] == ["ok", "ok"] and {r["host"] for r in rows} == {
            "lab-a"
        }
    finally:
        assert not lab.close()
    assert not marker.exists()


def test_the_same_attack_on_a_worker_serving_tcp_runs_as_root(tmp_path, unprivileged):
    """What --insecure-accept-any-client accepts: the unprivileged user's function runs as root."""
    if not unprivileged.dropping:
        pytest.skip("needs root to show code running as root")
    marker = unprivileged.home / "written-by-the-worker"
    (tmp_path / "tcp").mkdir()
    lab = Lab(tmp_path / "tcp", tls=False)
    try:
        lab.worker("lab-a")
        lab.wait_for_hosts("lab-a")
        said = _attack(unprivileged, lab, marker)
        assert f"RAN {lab.address}" in said, said
    finally:
        assert not lab.close()
    assert marker.stat().st_uid == 0 and marker.stat().st_uid != unprivileged.uid
    log = (tmp_path / "tcp/worker-lab-a.log").read_text()
    assert "WARNING: serving tcp://" in log and "--insecure-accept-any-client" in log


def test_cluster_certs_command_writes_and_says_where_each_file_goes(tmp_path):
    result = CliRunner().invoke(main, ["cluster", "certs", str(tmp_path / "c"), "--days", "30"])
    assert result.exit_code == 0, result.output
    assert "sudo hugebench worker tls://SCHEDULER:8786 --certs" in result.output
    assert sorted(os.listdir(tmp_path / "c")) == sorted(
        ["ca.pem", "ca-key.pem"] + [f"{r}{s}" for r in certs.ROLES for s in (".pem", "-key.pem")]
    )
