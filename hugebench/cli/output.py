"""What every report-printing command shares: ``--format`` (any exporter), the hyperfine-style
``--export-json/--export-csv/--export-markdown FILE`` options, and one function that prints a report and
writes the exports. Formats come from :mod:`hugebench.report.exporters`; nothing here knows one."""

from __future__ import annotations

from pathlib import Path

import click

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
            type=click.Path(dir_okay=False, path_type=Path),
            default=None,
            metavar="FILE",
            help=f"also write the report as {fmt} to FILE",
        )(command)
    return command


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

    for fmt, path in exports.items():
        if not path.parent.is_dir():
            raise HugebenchError(
                f"--export-{fmt} {path}: its directory {path.parent} does not exist"
            )
        try:
            write_atomic(path, export(built, fmt))
        except OSError as exc:
            raise HugebenchError(
                f"--export-{fmt} {path}: cannot write it: {exc.strerror or exc}"
            ) from None
        click.echo(f"{fmt}: {path}", err=err)


def emit(built, fmt: str, exports: dict[str, Path] | None = None) -> None:
    """Print ``built`` in ``fmt`` (a terminal's width and colours for rich) and write the exports."""
    from hugebench.report import terminal
    from hugebench.report.exporters import TEXT_FORMATS, export, exporter

    fits = getattr(
        exporter(fmt), "FITS_TERMINAL", False
    )  # drawn to the terminal's width, in colour
    width, color = terminal() if fits else (None, False)
    text = export(built, fmt, width, color)
    click.echo(text, color=color or None, nl=fmt in TEXT_FORMATS)  # a block's text ends without one
    write_exports(built, exports or {})


def count(n: int, word: str) -> str:
    """'1 section', '2 sections'."""
    return f"{n} {word}{'' if n == 1 else 's'}"
