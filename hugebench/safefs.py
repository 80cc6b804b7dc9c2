"""Files and directories a root process creates where users choose: never through a link someone planted.

hugebench runs as root and writes into directories users name (``-o``, ``--html``, a command's ``stdout:``),
which other users may own or share (``/tmp``). Everything it creates, appends or replaces there goes through
this module, which works relative to directory descriptors it opened and checked itself:

- :meth:`SafeDir.open` walks a path one component at a time (``openat`` with ``O_NOFOLLOW|O_DIRECTORY``),
  creating what is missing when asked (each directory it makes is checked to be its own once opened). A
  symbolic link on the way is followed only when root or we own it (``/home -> /data/home``); one owned by
  another user is refused: its owner could point root's writes anywhere (``fs.protected_symlinks`` may be 0);
- :meth:`SafeDir.subdir` enters (or makes) one directory below, never through a link;
- :meth:`SafeDir.append` and :meth:`SafeDir.truncate` open a file with ``O_NOFOLLOW|O_NONBLOCK`` (no FIFO
  blocks) and go on only with a regular file that we own and that has one link (a hard link to
  ``/etc/shadow`` is refused before a byte is written or cut);
- :meth:`SafeDir.write_atomic` and :meth:`SafeDir.replacing` write a new temporary file (``O_EXCL``) and
  rename it over the name: whatever the name was (a link, another user's file) is replaced, never written
  through. Libraries (matplotlib) are handed the temporary file object, never a path;
- :func:`open_reading` opens a file for reading the same way (a results store's files: a link another user
  planted could name a file only root may read, whose rows a report would copy into the open).

A refusal is an :class:`~hugebench.errors.UnsafePathError` naming the path and why (a symbolic link owned by
uid N, a FIFO, a file with two links). A directory may belong to another user (a user's own results
directory under ``sudo``): what its owner can change is what is in it, and nothing here writes through it.
How much is read is not this module's job (``hugebench.store.files`` bounds it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import stat
from collections import deque
from collections.abc import Iterator
from pathlib import Path

from hugebench.errors import UnsafePathError

# The identity files are checked against is this process's own, taken from the os module as it was imported:
# a test that pretends to be another user (monkeypatching os.geteuid for hugebench's privilege decisions)
# does not change who owns the files this process creates.
_euid = os.geteuid

MAX_LINKS = 40  # symbolic links followed in one path, as the kernel allows (ELOOP)
_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS = os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC | os.O_NOCTTY


def _kind(mode: int) -> str:
    kinds = (
        (stat.S_ISLNK, "a symbolic link"),
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "a regular file")


def _trusted(uid: int) -> bool:
    return uid in (0, _euid())


class SafeDir:
    """An open directory, reached without following another user's link: create, append and replace files
    in it by name. Use as a context manager (the descriptor is closed at the end)."""

    def __init__(self, fd: int, path: str):
        self.fd, self.path = fd, path

    def __enter__(self) -> SafeDir:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    @classmethod
    def open(cls, path: str | os.PathLike, *, create: bool = False, mode: int = 0o755) -> SafeDir:
        """``path`` (relative to the working directory, ``..`` taken lexically) as a directory, its missing
        components made (``mode``) when ``create``; UnsafePathError on another user's link on the way or on
        a component that is not a directory, FileNotFoundError (``create`` off) when one is missing."""
        shown = os.path.abspath(os.fspath(path))
        fd = _walk(
            os.open("/", _DIR_FLAGS), deque(p for p in shown.split("/") if p), create, mode, shown
        )
        return cls(fd, shown)

    def subdir(self, name: str, *, create: bool = False, mode: int = 0o755) -> SafeDir:
        """The directory ``name`` in this one (made when ``create``), never reached through a link."""
        fd = _enter(self.fd, name, create, mode, os.path.join(self.path, name), follow=False)
        return SafeDir(fd, os.path.join(self.path, name))

    def append(self, name: str, mode: int = 0o644, *, readable: bool = False) -> int:
        """A descriptor appending to ``name`` (created ``mode`` if missing); ``readable``: opened read-write."""
        access = os.O_RDWR if readable else os.O_WRONLY
        return self._open_own(name, access | os.O_APPEND | os.O_CREAT, mode)

    def truncate(self, name: str, mode: int = 0o644) -> int:
        """A read-write descriptor on ``name`` from its start: created ``mode``, or our own file emptied
        (after the checks, so that a file that is refused is not cut)."""
        fd = self._open_own(name, os.O_RDWR | os.O_CREAT, mode)
        os.ftruncate(fd, 0)
        return fd

    def _open_own(self, name: str, flags: int, mode: int) -> int:
        where = os.path.join(self.path, name)
        try:
            fd = os.open(name, flags | _FILE_FLAGS, mode, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.EWOULDBLOCK):
                raise _refusal(self.fd, name, where) from None
            raise
        try:
            info = os.fstat(fd)
            why = (
                f"it is {_kind(info.st_mode)}"
                if not stat.S_ISREG(info.st_mode)
                else f"it is owned by uid {info.st_uid}, not by uid {_euid()} that writes it"
                if info.st_uid != _euid()
                else f"it has {info.st_nlink} hard links (it is also another file)"
                if info.st_nlink != 1
                else None
            )
            if why:
                raise UnsafePathError(f"{where}: refused, {why}; remove it or choose another place")
            os.set_blocking(fd, True)
        except BaseException:
            os.close(fd)
            raise
        return fd

    def write_atomic(self, name: str, data: bytes | str, mode: int = 0o644) -> None:
        """``name`` replaced whole by ``data`` (a reader sees the old file or the new one, never a part)."""
        with self.replacing(name, mode) as handle:
            handle.write(data.encode() if isinstance(data, str) else data)

    @contextlib.contextmanager
    def replacing(self, name: str, mode: int = 0o644) -> Iterator:
        """A new temporary file (binary, ``mode``) that is renamed over ``name`` when the block ends
        without an exception (fsynced, then the directory), removed when it raises. What is at ``name``
        must be missing or our own regular file: a link, another user's file or a device is refused (the
        rename would never write through it, but neither may it silently take another's name)."""
        self._check_replaceable(name)
        temporary = f".{name}.{secrets.token_hex(6)}.tmp"
        fd = os.open(
            temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS, mode, dir_fd=self.fd
        )
        try:
            os.fchmod(fd, mode)  # the umask took bits off: what we write is meant to be read
            with os.fdopen(fd, "wb") as handle:
                yield handle
                handle.flush()
                os.fsync(handle.fileno())
            os.replace(temporary, name, src_dir_fd=self.fd, dst_dir_fd=self.fd)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(temporary, dir_fd=self.fd)
            raise
        with contextlib.suppress(OSError):  # some filesystems refuse a directory fsync
            os.fsync(self.fd)

    def check_private(self, what: str, fix: str = "") -> SafeDir:
        """This directory, when root or we own it and no one else may write to it (no group or other write
        bit, sticky or not); else UnsafePathError naming it as ``what`` (and how to ``fix`` it)."""
        info = os.fstat(self.fd)
        problem = (
            f"it is owned by uid {info.st_uid}"
            if not _trusted(info.st_uid)
            else f"it is writable by others (mode {stat.filemode(info.st_mode)})"
            if info.st_mode & 0o022
            else None
        )
        if problem:
            raise UnsafePathError(
                f"{self.path}: refused as {what}: {problem}; it must be a directory of root's or uid "
                f"{_euid()}'s that no one else can write{': ' + fix if fix else ''}"
            )
        return self

    def read_trusted(self, name: str, limit: int = 1 << 20) -> tuple[bytes, os.stat_result]:
        """The bytes (at most ``limit``) of the file ``name`` and its status, opened without following a
        link: a regular file that root or we own and that no one else may write, else UnsafePathError;
        FileNotFoundError when it is missing. For state hugebench acts on as root (a journal, keys)."""
        where = os.path.join(self.path, name)
        try:
            fd = os.open(name, os.O_RDONLY | _FILE_FLAGS, dir_fd=self.fd)
        except OSError as exc:
            if exc.errno in (errno.ELOOP, errno.ENXIO, errno.EWOULDBLOCK):
                raise _refusal(self.fd, name, where) from None
            raise
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(fd)
            why = (
                f"it is {_kind(info.st_mode)}"
                if not stat.S_ISREG(info.st_mode)
                else f"it is owned by uid {info.st_uid}, not by root or uid {_euid()}"
                if not _trusted(info.st_uid)
                else f"it is writable by others (mode {stat.filemode(info.st_mode)})"
                if info.st_mode & 0o022
                else None
            )
            if why:
                raise UnsafePathError(f"{where}: refused, {why}")
            return handle.read(limit), info

    def _check_replaceable(self, name: str) -> None:
        try:
            info = os.stat(name, dir_fd=self.fd, follow_symlinks=False)
        except FileNotFoundError:
            return
        where = os.path.join(self.path, name)
        if stat.S_ISLNK(info.st_mode):
            raise _refusal(self.fd, name, where)
        if not stat.S_ISREG(info.st_mode):
            raise UnsafePathError(f"{where}: refused, it is {_kind(info.st_mode)}")
        if info.st_uid != _euid():
            raise UnsafePathError(
                f"{where}: refused, it is owned by uid {info.st_uid}, not by uid {_euid()} "
                "that would replace it; remove it or choose another place"
            )


def _walk(fd: int, parts: deque, create: bool, mode: int, shown: str) -> int:
    """Descend from ``fd`` through ``parts``; returns the last directory's descriptor (``fd`` is consumed:
    closed on the way, or on an error)."""
    followed = 0
    try:
        while parts:
            name = parts.popleft()
            if name in ("", "."):
                continue
            try:
                nfd = _enter(fd, name, create, mode, shown, follow=True)
            except _Link as link:
                followed += 1
                if followed > MAX_LINKS:
                    raise UnsafePathError(
                        f"{shown}: more than {MAX_LINKS} symbolic links"
                    ) from None
                parts.extendleft(reversed(link.target.split("/")))
                if link.target.startswith("/"):
                    os.close(fd)
                    fd = -1
                    fd = os.open("/", _DIR_FLAGS)
                continue
            os.close(fd)
            fd = nfd
    except BaseException:
        if fd >= 0:
            os.close(fd)
        raise
    return fd


class _Link(Exception):
    """A symbolic link that may be followed (root or we own it), with its target."""

    def __init__(self, target: str):
        self.target = target


def _enter(fd: int, name: str, create: bool, mode: int, shown: str, follow: bool) -> int:
    """The directory ``name`` under ``fd`` (made when missing and ``create``); raises _Link for a link we may
    follow (``follow``), UnsafePathError for anything else that is not a directory."""
    for _ in range(3):  # a directory made and removed under us between mkdir and open: try again
        try:
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        except FileNotFoundError:
            if not create:
                raise FileNotFoundError(errno.ENOENT, "no such directory", shown) from None
        except OSError as exc:
            if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
                raise
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if not stat.S_ISLNK(info.st_mode):  # a plain file on the way: an ordinary error
                raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), shown) from None
            if follow and _trusted(info.st_uid):
                raise _Link(os.readlink(name, dir_fd=fd)) from None
            raise _refusal(fd, name, shown) from None
        with contextlib.suppress(FileExistsError):
            os.mkdir(name, mode, dir_fd=fd)
            made = os.open(name, _DIR_FLAGS, dir_fd=fd)
            if os.fstat(made).st_uid != _euid():
                os.close(made)
                raise UnsafePathError(
                    f"{shown}: the directory made there was replaced by another user's"
                )
            return made
    raise UnsafePathError(f"{shown}: the directory {name!r} keeps changing under us")


def _refusal(fd: int, name: str, shown: str) -> UnsafePathError:
    """Why ``name`` in ``fd`` is refused: a link owned by uid N, or not a directory/regular file."""
    try:
        info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    except OSError as exc:
        return UnsafePathError(f"{shown}: cannot be used: {exc.strerror}")
    if stat.S_ISLNK(info.st_mode):
        return UnsafePathError(
            f"{shown}: refused, {name!r} is a symbolic link owned by uid {info.st_uid}; hugebench, running "
            f"as uid {_euid()}, never follows a link another user could have planted (to make it write "
            "or read a file of its choosing): remove it, or give the real path"
        )
    return UnsafePathError(f"{shown}: refused, {name!r} is {_kind(info.st_mode)}")


def open_reading(path: str | os.PathLike) -> int:
    """A read-only descriptor on the file ``path`` (``O_NONBLOCK``: a FIFO answers at once; the caller checks
    what it is), reached as the writers reach theirs: each directory on the way, and the file itself, without
    following a symbolic link another user owns (root's or ours are followed: ``/home -> /data/home``). A
    regular file with several hard links is refused unless its owner also owns the directory it was found in
    (another user's hard link to a file only root may read). UnsafePathError for a refusal; OSError (the path
    as its filename) for a missing or unreadable file."""
    shown = os.path.abspath(os.fspath(path))
    parent, name = os.path.split(shown)
    fd = _walk(os.open("/", _DIR_FLAGS), deque(p for p in parent.split("/") if p), False, 0, shown)
    try:
        for _ in range(MAX_LINKS + 1):
            if not name or name in (".", ".."):
                raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), shown)
            try:
                found = os.open(name, os.O_RDONLY | _FILE_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno != errno.ELOOP:
                    raise OSError(exc.errno, exc.strerror, shown) from None
                beyond, name = _through_link(fd, name, shown)
                os.close(fd)
                fd = beyond
                continue
            try:
                _check_read(found, fd, shown)
            except BaseException:
                os.close(found)
                raise
            return found
        raise UnsafePathError(f"{shown}: more than {MAX_LINKS} symbolic links")
    finally:
        os.close(fd)


def _through_link(fd: int, name: str, shown: str) -> tuple[int, str]:
    """(a new descriptor on the directory, the name) that the link ``name`` in ``fd`` leads to, when root or
    we own the link; UnsafePathError for another user's link."""
    info = os.stat(name, dir_fd=fd, follow_symlinks=False)
    if not stat.S_ISLNK(info.st_mode) or not _trusted(info.st_uid):
        raise _refusal(fd, name, shown)
    head, leaf = os.path.split(os.readlink(name, dir_fd=fd))
    start = os.open("/", _DIR_FLAGS) if head.startswith("/") else os.dup(fd)
    return _walk(start, deque(p for p in head.split("/") if p), False, 0, shown), leaf


def _check_read(found: int, directory: int, shown: str) -> None:
    """Refuse a hard link, in someone's directory, to a file of another owner (a file with one link, or
    with several all in its owner's tree, as ``cp -al`` makes, is read)."""
    info, where = os.fstat(found), os.fstat(directory)
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and info.st_uid != where.st_uid:
        raise UnsafePathError(
            f"{shown}: refused, it has {info.st_nlink} hard links and belongs to uid {info.st_uid}, "
            f"not to uid {where.st_uid} who owns its directory (it could be another user's link to a file "
            "only its owner may read): copy it, or give its real path"
        )


def check_replaceable(path: str | os.PathLike) -> None:
    """Refuse now what :func:`write_atomic` would refuse after the work (an export named before a sweep):
    a directory that is missing, reached through another user's link or cannot take a new file (read-only,
    full of inodes, not ours to write), and a name that is a link, a directory, a device (``/dev/full``) or
    another user's file. A temporary file is made there and removed; nothing else is written."""
    path = Path(path)
    with SafeDir.open(path.parent) as directory:
        directory._check_replaceable(path.name)
        temporary = f".{path.name}.{secrets.token_hex(6)}.tmp"
        os.close(
            os.open(
                temporary,
                os.O_WRONLY | os.O_CREAT | os.O_EXCL | _FILE_FLAGS,
                0o600,
                dir_fd=directory.fd,
            )
        )
        os.unlink(temporary, dir_fd=directory.fd)


def write_atomic(path: str | os.PathLike, data: bytes | str, mode: int = 0o644) -> None:
    """``path`` replaced whole by ``data``, its directory (made when missing) reached safely."""
    path = Path(path)
    with SafeDir.open(path.parent, create=True) as directory:
        directory.write_atomic(path.name, data, mode)


def open_below(base: str | os.PathLike, relative: str, mode: int = 0o644) -> int:
    """A read-write descriptor on the file ``relative`` below the directory ``base`` (a program's
    ``stdout:`` below its cwd), created or emptied: every directory between entered without following a
    link, none of them ``..``; the directories must exist."""
    *dirs, name = [p for p in relative.split("/") if p not in ("", ".")] or [""]
    if not name or ".." in dirs + [name]:
        raise UnsafePathError(f"{relative!r}: not a file name below {base} (no '..', not empty)")
    with contextlib.ExitStack() as stack:
        here = stack.enter_context(SafeDir.open(base))
        for part in dirs:
            here = stack.enter_context(here.subdir(part))
        return here.truncate(name, mode)


def is_stream(path: str | os.PathLike) -> bool:
    """True when ``path`` names a pipe or a character device (``/dev/stdout``, a terminal, ``/dev/full``)
    reached through no link another user owns, and root, we or (a terminal) anyone owns it: written to as it
    is, where a file would be replaced. Another user's FIFO (it could hold us forever) is not one."""
    path = Path(path)
    try:
        SafeDir.open(path.parent).close()
        link = path.lstat()
        target = path.stat()
    except (OSError, UnsafePathError):
        return False
    if stat.S_ISLNK(link.st_mode) and not _trusted(link.st_uid):
        return False
    if not (stat.S_ISFIFO(target.st_mode) or stat.S_ISCHR(target.st_mode)):
        return False
    return _trusted(target.st_uid) or stat.S_ISCHR(target.st_mode) and _is_tty(path)


def _is_tty(path: Path) -> bool:
    try:
        fd = os.open(path, os.O_WRONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return False
    try:
        return os.isatty(fd)
    finally:
        os.close(fd)
