"""What every report-printing command shares: ``--format`` (any exporter), the hyperfine-style
``--export-json/--export-csv/--export-markdown FILE`` options, one function that prints a report and
writes the exports, and :func:`say`, the way a command prints a line. Formats come from
:mod:`hugebench.report.exporters`; nothing here knows one.

Nothing a store, a program or a user wrote reaches the terminal raw: :func:`say` and :func:`emit` pass what
they print through :func:`hugebench._util.printable` (an ``ESC]0;title BEL`` in an allocator's name prints as
``\\x1b]0;title\\x07``); a coloured report's values were escaped by the same function before rich drew them
(:func:`hugebench.report.blocks.section_block`), so only rich's own colours are sequences."""

from __future__ import annotations

import os
from pathlib import Path

import click

from hugebench._util import printable
from hugebench.errors import HugebenchError

# hyperfine's --export-FORMAT files: exporters.FILE_FORMATS, written out so that a command's start does not
# import pandas (tests/report/test_exporters.py keeps the two equal)
FILE_FORMATS = ("json", "csv", "markdown")


class _Formats(click.Choice):
    """The exporters' formats, read when an option is parsed or its help shown (importing the report
    package at start would cost every command pandas' import)."""

    def __init__(self):
        super().__init__(())

    @property
    def choices(self):
        from hugebench.report.exporters import FORMATS

        return FORMATS

    @choices.setter
    def choices(self, value):
        pass


def format_option(command):
    return click.option("--format", "fmt", type=_Formats(), default="rich", help="what to print")(
        command
    )


def export_options(command):
    """``--export-json FILE`` ... (one per file format), collected into ``exports`` {format: path}."""
    for fmt in reversed(FILE_FORMATS):
        command = click.option(
            f"--export-{fmt}",
            f"export_{fmt}",
            type=click.Path(dir_okay=False),
            default=None,
            metavar="FILE",
            callback=_file_name,
            help=f"also write the report as {fmt} to FILE",
        )(command)
    return command


def _file_name(ctx, param, value: str | None) -> Path | None:
    if value is not None and not value.strip():
        raise click.BadParameter("an empty file name; name the file to write")
    return None if value is None else Path(value)


def check_destinations(
    exports: dict[str, Path],
    html: Path | None = None,
    error: type[HugebenchError] = HugebenchError,
    files: dict[str, Path] | None = None,
) -> dict[str, Path]:
    """``exports`` ({format: path}), after refusing now, before any run, what writing them would refuse
    after the work: two exports (or an export and the ``--html`` page) into one file, a file of a results
    store (:func:`hugebench.store.store_file`: an export never replaces a store's journal, context or
    columnar part), a directory that is missing or cannot take the file, a device (``/dev/full``), a link
    or another user's file in its place (:func:`hugebench.safefs.check_replaceable`). ``files``: other
    options' files ({'--json': path}), checked the same way. An ``error`` naming the option and the
    file."""
    from hugebench.safefs import check_replaceable, is_stream
    from hugebench.store import store_file

    named = [(f"--export-{fmt}", Path(path)) for fmt, path in exports.items()]
    named += [] if html is None else [("--html", Path(html))]
    named += [(option, Path(path)) for option, path in (files or {}).items()]
    seen: dict[Path, str] = {}
    for option, path in named:
        where = Path(os.path.realpath(path.parent)) / path.name
        if where in seen:
            raise error(f"{option} {path}: the same file as {seen[where]}; give each its own file")
        seen[where] = f"{option} {path}"
        problem = store_file(path)
        if problem:
            raise error(
                f"{option} {path}: refused, {problem}; an export never replaces a file of a "
                "results store: choose another file"
            )
        if not path.parent.is_dir():
            raise error(
                f"{option} {path}: the directory {path.parent} does not exist; create it first"
            )
        if option == "--html" and is_stream(path):  # the page may go to /dev/stdout or a pipe
            continue
        try:
            check_replaceable(path)
        except (OSError, HugebenchError) as exc:
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
            why = why.removeprefix(f"{os.path.abspath(path)}: ").removeprefix("refused, ")
            raise error(f"{option} {path}: cannot write it: {why}") from None
    return exports


def exports_of(kwargs: dict) -> dict[str, Path]:
    """Pop the --export-FORMAT options out of a command's keyword arguments."""
    return {
        fmt: path for fmt in FILE_FORMATS if (path := kwargs.pop(f"export_{fmt}", None)) is not None
    }


def write_exports(built, exports: dict[str, Path], export=None, err: bool = False) -> None:
    """Each asked-for export of ``built`` (a report, or what ``export(built, fmt)`` turns into text) written
    whole (temp file + rename), or a clean error; the file named on stdout (stderr with ``err``)."""
    from hugebench._util import write_atomic

    if export is None:
        from hugebench.report.exporters import export

    check_destinations(exports)
    for fmt, path in exports.items():
        try:
            write_atomic(path, export(built, fmt))
        except OSError as exc:
            raise HugebenchError(
                f"--export-{fmt} {path}: cannot write it: {exc.strerror or exc}"
            ) from None
        say(f"{fmt}: {path}", err=err)


def emit(built, fmt: str, exports: dict[str, Path] | None = None) -> None:
    """Print ``built`` in ``fmt`` (a terminal's width and colours for rich) and write the exports."""
    from hugebench.report import terminal
    from hugebench.report.exporters import TEXT_FORMATS, export, exporter

    fits = getattr(
        exporter(fmt), "FITS_TERMINAL", False
    )  # drawn to the terminal's width, in colour
    width, color = terminal() if fits else (None, False)
    text = export(built, fmt, width, color)
    click.echo(
        text if color else printable(text, None, lines=True),
        color=color or None,
        nl=fmt in TEXT_FORMATS,  # a block's text ends without one
    )
    write_exports(built, exports or {})


def say(text: str, err: bool = False, nl: bool = True) -> None:
    """Print ``text`` (lines of it) with everything that is not printable escaped: how a command prints
    what holds values it did not write (a failure's reason, a path, a program's name)."""
    click.echo(printable(text, None, lines=True), err=err, nl=nl)


def count(n: int, word: str) -> str:
    """'1 section', '2 sections'."""
    return f"{n} {word}{'' if n == 1 else 's'}"
