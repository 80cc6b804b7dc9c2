"""The lab's certificates: a cluster sweep's Dask connections authenticated and encrypted with mutual TLS.

Dask's protocol runs whatever a connected peer sends (``Client.run(os.system, ...)``), and a hugebench worker
runs as root, so a worker only serves a scheduler it reaches over ``tls://`` with these certificates: a CA of
the lab's own and a certificate + key per role (scheduler, worker, client), each signed by it. Dask then
refuses any peer, in either direction, that holds no certificate signed by that CA
(``distributed.security.Security`` with ``require_encryption``; its contexts require the peer's
certificate). Whoever holds a role's key can run code on the workers: the keys are written 0600.

- ``make``: ``hugebench cluster certs DIR`` writes the CA (a subject of its own: no two labs' CAs share
  one) and the three pairs (``cryptography``) into a directory it creates (or an empty one its user owns,
  writable by no one else), reached through no link of another user, every file created anew;
- ``security``: the ``Security`` a role uses, from such a directory: the directory and each file root's or
  the user's, writable by no one else, no link of another user on the way, the key readable by its owner
  only (anyone who could change ``ca.pem`` could add a CA of their own and run code as root on the
  worker). The files are read once, checked, and handed to Dask as their contents;
- ``dask_config``: the same as Dask configuration (paths only), for processes Dask starts over ssh.
"""

from __future__ import annotations

import datetime
import os
import secrets
import stat
from pathlib import Path

import click

from hugebench.errors import HugebenchError, UnsafePathError
from hugebench.safefs import SafeDir

ROLES = ("scheduler", "worker", "client")
CA, CA_KEY = "ca.pem", "ca-key.pem"
DEFAULT_DAYS = 825
MAX_PEM_BYTES = 1 << 20
PLACE = "the directory of the lab's certificates and keys (whoever can change them runs code on the workers)"
PLACE_FIX = (
    "chown it to you (or root) and `chmod go-w` it, or make new ones with `hugebench cluster certs`"
)


def cert_name(role: str) -> str:
    return f"{role}.pem"


def key_name(role: str) -> str:
    return f"{role}-key.pem"


# -- making them ----------------------------------------------------------------------------------------


def make(directory, days: int = DEFAULT_DAYS) -> list[Path]:
    """Write a new CA and a certificate + key for each role into ``directory``; return the files written."""
    files = _pems(days)
    with _new_dir(Path(directory)) as target:
        for name, (data, mode) in files.items():
            _create(target.fd, name, data, mode, directory)
    return [Path(directory) / name for name in files]


def _pems(days: int) -> dict[str, tuple[bytes, int]]:
    """{file name: (PEM bytes, mode)}: the CA, then each role's certificate and key."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    def name(common: str) -> x509.Name:
        return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, common)])

    def key_pem(key) -> bytes:
        return key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption(),
        )

    now = datetime.datetime.now(datetime.timezone.utc)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    lab = secrets.token_hex(8)  # every lab's CA has a subject of its own: no other CA passes for it
    ca_name = x509.Name(
        [
            x509.NameAttribute(NameOID.COMMON_NAME, f"hugebench lab CA {lab}"),
            x509.NameAttribute(NameOID.ORGANIZATION_NAME, f"hugebench lab {lab}"),
        ]
    )

    def signed(subject, public_key, ca: bool):
        builder = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(ca_name)
            .public_key(public_key)
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(minutes=5))
            .not_valid_after(now + datetime.timedelta(days=days))
            .add_extension(x509.BasicConstraints(ca=ca, path_length=0 if ca else None), True)
        )
        if not ca:
            usages = [ExtendedKeyUsageOID.SERVER_AUTH, ExtendedKeyUsageOID.CLIENT_AUTH]
            builder = builder.add_extension(x509.ExtendedKeyUsage(usages), False)
        return builder.sign(ca_key, hashes.SHA256()).public_bytes(serialization.Encoding.PEM)

    files = {
        CA: (signed(ca_name, ca_key.public_key(), True), 0o644),
        CA_KEY: (key_pem(ca_key), 0o600),
    }
    for role in ROLES:
        key = ec.generate_private_key(ec.SECP256R1())
        subject = name(f"hugebench {role} {lab}")
        files[cert_name(role)] = (signed(subject, key.public_key(), False), 0o644)
        files[key_name(role)] = (key_pem(key), 0o600)
    return files


def _new_dir(path: Path) -> SafeDir:
    """``path`` created 0700, or an existing empty directory this user owns that no one else may write to;
    reached through no link another user owns, and never through a link at its own name."""
    path = Path(os.path.abspath(path))
    try:
        with SafeDir.open(path.parent, create=True) as parent:
            target = parent.subdir(path.name, create=True, mode=0o700)
    except UnsafePathError as exc:
        raise UnsafePathError(f"{exc}; a link there is never followed") from None
    except OSError as exc:
        raise HugebenchError(f"cannot create {path}: {exc.strerror}") from None
    try:
        target.check_private(PLACE, "give a directory of your own")
        taken = sorted(os.listdir(target.fd))
        if taken:
            raise HugebenchError(
                f"{path} already holds {', '.join(taken[:6])}; certificates are never overwritten: "
                "give an empty or new directory"
            )
    except BaseException:
        target.close()
        raise
    return target


def _create(dir_fd: int, name: str, data: bytes, mode: int, directory) -> None:
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        fd = os.open(name, flags, mode, dir_fd=dir_fd)
    except OSError as exc:
        raise HugebenchError(f"cannot create {directory}/{name}: {exc.strerror}") from None
    with os.fdopen(fd, "wb") as handle:
        os.fchmod(handle.fileno(), mode)  # whatever the umask
        handle.write(data)


# -- using them -------------------------------------------------------------------------------------------


def _missing(path: Path, role: str) -> HugebenchError:
    return HugebenchError(
        f"{path}: No such file or directory; make the lab's certificates with `hugebench cluster certs "
        f"DIR` and copy ca.pem, {cert_name(role)} and {key_name(role)} to this machine"
    )


def read_role(directory, role: str) -> tuple[bytes, bytes, bytes]:
    """(CA certificate, this role's certificate, its key) as bytes, each checked: the directory reached
    through no link of another user, root's or ours and writable by no one else; each file a regular one in
    it (no link), root's or ours, writable by no one else, the key readable by its owner only."""
    directory = Path(directory)
    try:
        opened = SafeDir.open(directory)
    except (FileNotFoundError, NotADirectoryError):
        raise _missing(directory / CA, role) from None
    with opened:
        opened.check_private(PLACE, PLACE_FIX)
        found = []
        for name in (CA, cert_name(role), key_name(role)):
            try:
                data, info = opened.read_trusted(name, MAX_PEM_BYTES)
            except FileNotFoundError:
                raise _missing(directory / name, role) from None
            except UnsafePathError as exc:
                raise UnsafePathError(
                    f"{exc}; the lab's certificates and keys must be files of yours (or root's) that no "
                    f"one else can write, in {directory} itself: chown/`chmod go-w` them, or copy them in"
                ) from None
            found.append((data, info))
    key, info = found[2]
    if info.st_mode & 0o077:
        path = directory / key_name(role)
        raise HugebenchError(
            f"{path} can be read by others (mode {stat.filemode(info.st_mode)}): whoever reads it "
            f"can run code on the lab's workers; `chmod 600 {path}`"
        )
    return found[0][0], found[1][0], key


def security(directory, *roles: str):
    """Dask's ``Security`` for ``roles`` (one or more of scheduler, worker, client) from the certificates in
    ``directory`` (``read_role``'s checks), handed to Dask as their contents (what was checked is what is
    used): TLS required, the peer's certificate required and checked against the lab's CA. Checked here (the
    files load), not at the first connection. Several roles: for what starts a scheduler and workers
    itself (dask-jobqueue's ``SLURMCluster(security=...)``)."""
    import ssl

    from distributed.security import Security

    files = {role: read_role(directory, role) for role in roles}
    ca = next(iter(files.values()))[0]

    def text(data: bytes, path: Path) -> str:
        """A PEM file's text (Dask takes text without a line break for a path: never handed one)."""
        pem = data.decode("ascii", errors="replace")
        if "-----BEGIN" not in pem or "\n" not in pem:
            raise HugebenchError(f"{path} is not a PEM file (made by `hugebench cluster certs`)")
        return pem

    where = Path(directory)
    for role in roles:  # the bytes read_role checked, never read again through the path
        valid_and_ours(directory, role, {CA: files[role][0], cert_name(role): files[role][1]})
    sec = Security(
        require_encryption=True,
        tls_ca_file=text(ca, where / CA),
        **{f"tls_{r}_cert": text(cert, where / cert_name(r)) for r, (_, cert, _) in files.items()},
        **{f"tls_{r}_key": text(key, where / key_name(r)) for r, (_, _, key) in files.items()},
    )
    for role in roles:
        try:
            sec.get_connection_args(role)
        except (ssl.SSLError, OSError, ValueError) as exc:
            raise HugebenchError(
                f"the certificates in {directory} do not load for the {role}: {exc}"
            ) from None
    return sec


def valid_and_ours(directory, role: str, data: dict[str, bytes] | None = None) -> None:
    """HugebenchError unless ``role``'s certificate and the CA in ``directory`` are valid now and the
    certificate is signed by that CA (TLS would refuse them at the first connection, with a traceback)."""
    from cryptography import x509
    from cryptography.exceptions import InvalidSignature

    now = datetime.datetime.now(datetime.timezone.utc)
    loaded = {}
    for name in (CA, cert_name(role)):
        path = Path(directory) / name
        try:
            cert = x509.load_pem_x509_certificate(data[name] if data else path.read_bytes())
        except (OSError, ValueError) as exc:
            raise HugebenchError(f"{path}: not a PEM certificate ({exc})") from None
        start, end = (_utc(cert, "not_valid_before"), _utc(cert, "not_valid_after"))
        if not start <= now <= end:
            raise HugebenchError(
                f"{path} is valid from {start:%Y-%m-%d %H:%M} to {end:%Y-%m-%d %H:%M} UTC, not now: "
                "make new certificates with `hugebench cluster certs DIR`"
            )
        loaded[name] = cert
    try:
        loaded[cert_name(role)].verify_directly_issued_by(loaded[CA])
    except (ValueError, TypeError, InvalidSignature):
        raise HugebenchError(
            f"{Path(directory) / cert_name(role)} is not signed by {Path(directory) / CA} (another "
            "lab's CA?): copy the files of one `hugebench cluster certs DIR` together"
        ) from None


def _utc(cert, field: str) -> datetime.datetime:
    """A certificate's date, aware (cryptography 42 has ``<field>_utc``; 41 only the naive one)."""
    aware = getattr(cert, f"{field}_utc", None)
    return aware or getattr(cert, field).replace(tzinfo=datetime.timezone.utc)


def dask_config(directory) -> dict:
    """Dask configuration naming every role's files in ``directory`` (paths, never the keys themselves):
    SSHCluster hands the client's configuration to the scheduler and workers it starts, so each finds its
    certificate at the same path on its own machine."""
    directory = Path(directory).resolve()
    config = {
        "distributed.comm.require-encryption": True,
        "distributed.comm.default-scheme": "tls",
        "distributed.comm.tls.ca-file": str(directory / CA),
    }
    for role in ROLES:
        config[f"distributed.comm.tls.{role}.cert"] = str(directory / cert_name(role))
        config[f"distributed.comm.tls.{role}.key"] = str(directory / key_name(role))
    return config


# -- the command --------------------------------------------------------------------------------------------


@click.group("cluster")
def cluster():
    """The lab's cluster: certificates for its scheduler, workers and clients."""


@cluster.command("certs")
@click.argument("directory", type=click.Path(file_okay=False, path_type=Path))
@click.option(
    "--days",
    type=click.IntRange(1, 36500),
    default=DEFAULT_DAYS,
    show_default=True,
    help="how long the certificates are valid",
)
def certs(directory, days):
    """Make the lab's CA and a certificate + key for the scheduler, the workers and the client in DIRECTORY
    (created 0700; keys 0600; nothing is overwritten)."""
    try:
        import cryptography  # noqa: F401
    except ImportError:
        raise click.ClickException(
            "making certificates needs cryptography: pip install 'hugebench[cluster]'"
        ) from None
    made = make(directory, days)
    click.echo(f"wrote {len(made)} files to {directory}:")
    for path in made:
        click.echo(f"  {path}")
    d = directory
    click.echo(
        f"scheduler machine: {d}/ca.pem, scheduler.pem, scheduler-key.pem -> dask scheduler "
        f"--tls-ca-file {d}/ca.pem --tls-cert {d}/scheduler.pem --tls-key {d}/scheduler-key.pem\n"
        f"each worker machine: ca.pem, worker.pem, worker-key.pem -> sudo hugebench worker "
        f"tls://SCHEDULER:8786 --certs {d}\n"
        f"where sweeps start: ca.pem, client.pem, client-key.pem -> hugebench sweep FILE --cluster "
        f"tls://SCHEDULER:8786 --certs {d}\n"
        f"keep {d}/ca-key.pem off the lab's machines: whoever has it can make certificates the "
        "workers accept"
    )
