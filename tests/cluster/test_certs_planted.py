"""The lab's certificates are what stands between a network and root on every worker (issue 53): a
certificates directory another user (``nobody``) could change — a CA appended to ca.pem, a key it owns, a
directory others may write — is refused by name before the worker starts; `cluster certs` never writes
through another user's link, never into a directory that is not empty, and gives every CA a subject of
its own."""

from __future__ import annotations

import os
import shutil
import textwrap

import pytest
from click.testing import CliRunner
from conftest import refused_once

from hugebench.cli import main
from hugebench.cluster import certs
from hugebench.errors import HugebenchError

pytest.importorskip("distributed")
pytest.importorskip("cryptography")


@pytest.fixture
def lab(unprivileged):
    """Certificates root made where nobody can reach them (nobody may not read the keys: it may only try
    to change what it is let to)."""
    if not unprivileged.dropping:
        pytest.skip("needs root, to plant files as another user")
    base = unprivileged.home.parent / f"{unprivileged.home.name}-lab"
    base.mkdir(mode=0o755)
    certs.make(base / "certs")
    (base / "certs").chmod(0o755)  # nobody may enter it (as a shared lab directory would let it)
    yield base / "certs"
    shutil.rmtree(base, ignore_errors=True)


def _worker_refuses(directory, *says: str) -> str:
    result = CliRunner().invoke(main, ["worker", "tls://127.0.0.1:8786", "--certs", str(directory)])
    return refused_once(result, *says)


def test_a_ca_nobody_appended_to_ca_pem_is_refused(lab, unprivileged):
    (lab / "ca.pem").chmod(0o666)  # a careless mode: anyone may append to it
    other = unprivileged.home / "mine"
    code = textwrap.dedent(f"""\
        from hugebench.cluster import certs
        certs.make({str(other)!r})
        with open({str(other / "ca.pem")!r}) as mine, open({str(lab / "ca.pem")!r}, "a") as theirs:
            theirs.write(mine.read())
    """)
    done = unprivileged.python_code(code)
    assert done.returncode == 0, done.stderr
    with pytest.raises(HugebenchError, match="ca.pem: refused, it is writable by others"):
        certs.security(lab, "worker")
    _worker_refuses(lab, f"{lab}/ca.pem", "writable by others", "chmod go-w")


def test_a_key_nobody_owns_is_refused_even_when_private(lab, unprivileged):
    key = lab / "worker-key.pem"
    os.chown(key, unprivileged.uid, unprivileged.gid)
    assert key.stat().st_mode & 0o777 == 0o600
    _worker_refuses(lab, str(key), f"owned by uid {unprivileged.uid}")


def test_a_directory_others_may_write_or_another_user_owns_is_refused(lab, unprivileged):
    lab.chmod(0o775)
    _worker_refuses(lab, str(lab), "writable by others (mode drwxrwxr-x)")
    lab.chmod(0o700)
    os.chown(lab, unprivileged.uid, unprivileged.gid)
    _worker_refuses(lab, str(lab), f"owned by uid {unprivileged.uid}")


def test_a_link_nobody_planted_for_a_certificate_is_refused(lab, unprivileged):
    os.chown(lab, unprivileged.uid, unprivileged.gid)
    os.chmod(lab, 0o755)
    done = unprivileged.python_code(
        f"import os; os.rename({str(lab / 'ca.pem')!r}, {str(lab / 'old.pem')!r}); "
        f"os.symlink({str(lab / 'old.pem')!r}, {str(lab / 'ca.pem')!r})"
    )
    assert done.returncode == 0, done.stderr
    os.chown(lab, 0, 0)
    _worker_refuses(lab, "ca.pem", "symbolic link owned by uid")


def test_cluster_certs_through_nobodys_link_writes_nothing(unprivileged):
    if not unprivileged.dropping:
        pytest.skip("needs root, to plant files as another user")
    sticky = unprivileged.home.parent / f"{unprivileged.home.name}-sticky"
    sticky.mkdir()
    sticky.chmod(0o1777)
    try:
        theirs = unprivileged.home / "theirs"
        done = unprivileged.python_code(
            f"import os; os.mkdir({str(theirs)!r}); os.symlink({str(theirs)!r}, {str(sticky / 'lab')!r})"
        )
        assert done.returncode == 0, done.stderr
        result = CliRunner().invoke(main, ["cluster", "certs", str(sticky / "lab/certs")])
        assert result.exit_code not in (0, None), result.output
        assert "Traceback" not in result.output, result.output
        assert "symbolic link owned by uid" in result.output and "lab" in result.output
        assert not list(theirs.iterdir()), "certificates were written into nobody's directory"
    finally:
        shutil.rmtree(sticky, ignore_errors=True)


def test_cluster_certs_refuses_a_directory_that_is_not_empty(tmp_path):
    (tmp_path / "c").mkdir(mode=0o700)
    (tmp_path / "c/notes.txt").write_text("mine\n")
    result = CliRunner().invoke(main, ["cluster", "certs", str(tmp_path / "c")])
    assert result.exit_code not in (0, None) and "Traceback" not in result.output
    assert "already holds notes.txt" in result.output and "empty or new directory" in result.output
    assert os.listdir(tmp_path / "c") == ["notes.txt"]


def test_every_ca_has_a_subject_of_its_own(tmp_path):
    from cryptography import x509

    subjects = set()
    for name in ("a", "b"):
        certs.make(tmp_path / name)
        ca = x509.load_pem_x509_certificate((tmp_path / name / "ca.pem").read_bytes())
        assert ca.subject == ca.issuer
        subjects.add(ca.subject.rfc4514_string())
    assert len(subjects) == 2
