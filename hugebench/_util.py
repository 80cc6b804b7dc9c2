"""Small helpers shared across modules."""

from __future__ import annotations

import os
import shutil
import subprocess


def run_text(argv: list[str], timeout: float = 30) -> str | None:
    """stdout of a command run in the C locale, or None if it is missing, fails or times out."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
            env={**os.environ, "LC_ALL": "C"},
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def printable(value: object, limit: int | None = 120, *, lines: bool = False) -> str:
    """``value`` as text safe to print on a terminal, whoever wrote it: THE escape of everything hugebench
    prints that it did not write itself (a store's values, a program's name, an error quoting user input).
    Control and format characters (ESC, so no ``ESC]0;title BEL`` or ``ESC[2J`` reaches the terminal; C1;
    bidirectional overrides; line separators; newlines unless ``lines``) are escaped as ``\\xNN``,
    ``\\uNNNN`` or ``\\UNNNNNNNN``; ``lines``: newlines and tabs kept (a report's text). At most ``limit``
    characters (``...`` after a longer one; None: no bound)."""
    text = str(value)
    if limit is not None and len(text) > limit + 1:
        text = text[: limit + 1]
    if lines:
        shown = "\n".join("\t".join(map(_escaped, line.split("\t"))) for line in text.split("\n"))
    else:
        shown = _escaped(text)
    if limit is None:
        return shown
    return shown[:limit] + "..." if len(str(value)) > limit or len(shown) > limit else shown


def _escaped(text: str) -> str:
    if text.isprintable():  # the common case, at C speed
        return text
    return "".join(c if c.isprintable() else _escape(c) for c in text)


def _escape(char: str) -> str:
    code = ord(char)
    return (
        f"\\x{code:02x}"
        if code < 0x100
        else f"\\u{code:04x}"
        if code < 0x10000
        else f"\\U{code:08x}"
    )


def open_regular(path, what: str = "file", *, safe: bool = False):
    """``path`` opened for binary reading, or OSError/ValueError if it is not a regular file.

    Opened with O_NONBLOCK so that a FIFO (which would block ``open`` until a writer comes) or a device returns
    at once, then refused by ``fstat`` unless it is a regular file: a FIFO, a socket, ``/dev/zero`` (an endless
    read) or a directory never reaches ``read``. A symbolic link is followed to what it names; with ``safe``
    only one of root's or ours (:func:`hugebench.safefs.open_reading`, an UnsafePathError otherwise). The
    caller turns the exception into its own error naming the file (``str(exc)`` says what is wrong).
    """
    import stat

    if safe:
        from hugebench.safefs import open_reading

        fd = open_reading(path)
    else:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | getattr(os, "O_NOCTTY", 0))
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise ValueError(
                f"not a regular file but {_file_kind(mode)}; only a plain file is read as a {what}"
            )
        os.set_blocking(fd, True)
        return open(fd, "rb", closefd=True)
    except BaseException:
        os.close(fd)
        raise


def _file_kind(mode: int) -> str:
    import stat

    kinds = (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO (named pipe)"),
        (stat.S_ISSOCK, "a socket"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
    )
    return next((name for test, name in kinds if test(mode)), "not a file")


def write_atomic(path, data: bytes | str, mode: int = 0o644) -> None:
    """Write ``data`` to ``path`` so that a reader sees the old file or the whole new one, never a part: a
    temporary file beside it, fsync, rename over it, fsync of the directory; the directory is reached and
    made without following another user's link (:func:`hugebench.safefs.write_atomic`). The one atomic
    writer (a sweep's context, the kernel journal, a run's reply, a containment record, the probe cache,
    the HTML page)."""
    from hugebench.safefs import write_atomic as safe_write

    safe_write(path, data, mode)


def write_json_atomic(path, document, **dumps) -> None:
    """``document`` as JSON (``json.dumps`` keyword arguments in ``dumps``), written by :func:`write_atomic`."""
    import json

    write_atomic(path, json.dumps(document, **dumps) + "\n")
