"""The store's columnar form: Parquet parts beside the append-only journal, read with bounded memory.

``runs.jsonl`` stays THE store (append-only, readable after a crash, what a resumed sweep reads). Beside it,
``columnar/`` holds the same rows as Parquet (pyarrow), one part per stretch of the journal::

    <results>/columnar/manifest.json                 which journal, which byte ranges, what was skipped
    <results>/columnar/part-<start>-<end>.parquet    the rows of journal bytes [start, end), whole lines

Parts are built incrementally: :func:`frames` reads the parts that still describe the journal and parses only
the journal bytes after the last one; when those hold at least :data:`PART_MIN_BYTES` (or ``build=True``, as at
sweep end) they become new parts of at most :data:`PART_ROWS` rows, so the memory a build needs is one part's,
not the store's. A part stops describing the journal when the journal is another file (device and inode) or
its bytes changed (a hash of the first and last :data:`SAMPLE_BYTES` of each part's range): it and every later
part are then rebuilt from the journal. An append never invalidates anything.

What a part holds is the frame the journal's rows make (``pandas.DataFrame.from_records``), written as it is,
except a column mixing kinds of values (numbers and text, lists, integers beyond 64 bits): its values are
stored as JSON text and decoded on reading (the manifest-independent list is in the part's metadata), so a
load from parts is the load from the journal. Lines that were not rows are remembered by the manifest (line
number and reason) and reported on every load as the journal reader reports them.

Writes go through :mod:`hugebench.safefs` (the directory entered without following a link, each file replaced
atomically); a store that cannot be written (read-only, another user's) is read from the journal and parts
as they are, nothing is written. Parts and manifests are read only when they are regular files owned by root
or by this process's user: a file someone else could have crafted is never handed to the Parquet reader.
Duplicate rows (the same run stored twice) are dropped by :func:`hugebench.store.load` over the whole frame.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pandas as pd

from hugebench.errors import HugebenchError
from hugebench.safefs import SafeDir
from hugebench.store.files import (
    MAX_CONTEXT_BYTES,
    bounded_lines,
    open_store_file,
    parse_json,
    parse_row,
)

COLUMNAR_DIR = "columnar"
MANIFEST = "manifest.json"
MANIFEST_VERSION = 1
PART_ROWS = 2000  # rows in one part: a part is built and read in one piece
PART_MIN_BYTES = 1 << 20  # fewer new journal bytes than this are parsed at each load, not written
SAMPLE_BYTES = 4096
# False: a load never writes parts (only ``build=True`` does); the notebook sets it, to write nothing into a store
BUILD_ON_LOAD = True
_JSON_COLUMNS_KEY = b"hugebench.json_columns"


def frames(
    runs_file: Path, columns: list[str] | None = None, build: bool = False
) -> tuple[list[pd.DataFrame], list[tuple[int, str]], int]:
    """The journal's rows as frames (parts first, then the rows after them), the lines skipped (number,
    reason) and the number of a torn last line (0 if none). ``columns``: only these (those present).
    New journal bytes become parts when there are PART_MIN_BYTES of them or ``build``."""
    journal = os.stat(runs_file)
    directory = runs_file.parent / COLUMNAR_DIR
    parts = _valid_parts(runs_file, journal, _read_manifest(directory))
    try:
        out = [f for part in parts if (f := _read_part(directory, part, columns)) is not None]
    except (
        OSError,
        ValueError,
        HugebenchError,
        ImportError,
    ):  # a part gone or damaged: the journal
        parts, out = [], []
    bad = [(int(n), str(why)) for part in parts for n, why in part["bad"]]
    start = parts[-1]["end"] if parts else 0
    first_line = parts[-1]["first_line"] + parts[-1]["lines"] if parts else 1
    writer = None
    if build or (BUILD_ON_LOAD and journal.st_size - start >= PART_MIN_BYTES):
        writer = _PartWriter(runs_file, journal, parts)
    torn = 0
    for piece in _pieces(runs_file, start, first_line):
        frame = pd.DataFrame.from_records(piece.pop("rows")) if piece["rows"] else None
        if writer is not None and piece["end"] is not None:
            writer.add(piece, frame)
        bad += piece["bad"]
        torn = piece["torn"] or torn
        if frame is not None:
            out.append(frame if columns is None else _narrowed(frame, columns).copy())
    if writer is not None:
        writer.finish()
    return out, bad, torn


def build(runs_file: Path) -> None:
    """Bring the columnar form up to the journal's end now (at sweep end), if the store can be written."""
    if runs_file.is_file():
        frames(runs_file, columns=[], build=True)


# -- the journal, parsed from an offset --------------------------------------------------------------


def _pieces(runs_file: Path, start: int, first_line: int) -> Iterator[dict]:
    """The journal from byte ``start`` (line ``first_line``) in pieces of at most PART_ROWS rows: each
    ``{"start", "end" (None for a piece ending in a torn line), "first_line", "lines", "rows", "bad", "torn"}``."""
    with open_store_file(runs_file, "runs file") as handle:
        handle.seek(start)
        offset, number = start, first_line
        piece = _piece(offset, number)
        for line, too_long in bounded_lines(handle):
            offset = handle.tell()
            piece["lines"] += 1
            if too_long or line.strip():
                row, problem = parse_row(line, too_long)
                if row is None:
                    piece["bad"].append((number, problem))
                else:
                    piece["rows"].append(row)
            if line and not line.endswith(b"\n") and not too_long:
                piece["torn"], piece["end"] = (number if line.strip() else 0), None
                yield piece
                return
            number += 1
            piece["end"] = offset
            if len(piece["rows"]) >= PART_ROWS:
                yield piece
                piece = _piece(offset, number)
        if piece["lines"]:
            yield piece


def _piece(start: int, first_line: int) -> dict:
    return {
        "start": start,
        "end": start,
        "first_line": first_line,
        "lines": 0,
        "rows": [],
        "bad": [],
        "torn": 0,
    }


# -- parts: written, checked, read -------------------------------------------------------------------


class _PartWriter:
    """Writes pieces of the journal as parts, then the manifest; on the first failure (a read-only store,
    another user's directory, a full disk) it stops, writes nothing more, and the load goes on from memory."""

    def __init__(self, runs_file: Path, journal, parts: list[dict]):
        self.runs_file, self.journal, self.parts = runs_file, journal, list(parts)
        self.where: SafeDir | None = None
        try:
            with SafeDir.open(runs_file.parent) as top:
                self.where = top.subdir(COLUMNAR_DIR, create=True)
        except (OSError, HugebenchError):
            self.where = None

    def add(self, piece: dict, frame: pd.DataFrame | None) -> None:
        if self.where is None:
            return
        name = f"part-{piece['start']}-{piece['end']}.parquet"
        try:
            if frame is not None:
                with self.where.replacing(name) as handle:
                    _write_table(frame, handle)
        except (OSError, HugebenchError, ValueError, ImportError):
            self._stop()
            return
        self.parts.append(
            {
                "name": name if frame is not None else None,
                **{k: piece[k] for k in ("start", "end", "first_line", "lines", "bad")},
                "sample": _sample(self.runs_file, piece["start"], piece["end"]),
            }
        )

    def finish(self) -> None:
        if self.where is None:
            return
        document = {
            "version": MANIFEST_VERSION,
            "journal": [self.journal.st_dev, self.journal.st_ino],
            "parts": self.parts,
        }
        with contextlib.suppress(OSError, HugebenchError):
            self.where.write_atomic(MANIFEST, json.dumps(document) + "\n")
        self._stop()

    def _stop(self) -> None:
        if self.where is not None:
            self.where.close()
            self.where = None


def _write_table(frame: pd.DataFrame, handle) -> None:
    import pyarrow.parquet as pq

    pq.write_table(_encoded(frame), handle)


def _encoded(frame: pd.DataFrame):
    """``frame`` as a pyarrow table; a column mixing kinds of values stored as JSON text (listed in the
    table's metadata)."""
    import pyarrow as pa

    frame, mixed = frame.copy(deep=False), []
    for column in frame.columns[frame.dtypes == "object"]:
        values = frame[column]
        kinds = {type(v) for v in values if v is not None and v == v}
        if kinds <= {str} or kinds == {bool}:
            continue
        frame[column] = [None if v is None or v != v else json.dumps(v) for v in values]
        mixed.append(column)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    metadata = {**(table.schema.metadata or {}), _JSON_COLUMNS_KEY: json.dumps(mixed).encode()}
    return table.replace_schema_metadata(metadata)


def _read_part(directory: Path, part: dict, columns: list[str] | None) -> pd.DataFrame | None:
    if part.get("name") is None:
        return None
    import pyarrow.parquet as pq

    with _trusted_file(directory / part["name"]) as handle:
        parquet = pq.ParquetFile(handle)
        names = parquet.schema_arrow.names
        wanted = names if columns is None else [c for c in columns if c in names]
        table = parquet.read(columns=wanted, use_pandas_metadata=True)
    metadata = table.schema.metadata or {}
    frame = table.to_pandas()
    del table
    for column in json.loads(metadata.get(_JSON_COLUMNS_KEY, b"[]")):
        if column in frame.columns:
            frame[column] = [parse_json(v) if isinstance(v, str) else None for v in frame[column]]
    return frame


def _read_manifest(directory: Path) -> dict | None:
    try:
        with _trusted_file(directory / MANIFEST) as handle:
            document = json.loads(handle.read(MAX_CONTEXT_BYTES))
    except (OSError, ValueError, HugebenchError):
        return None
    if not isinstance(document, dict) or document.get("version") != MANIFEST_VERSION:
        return None
    return document


def _valid_parts(runs_file: Path, journal, manifest: dict | None) -> list[dict]:
    """The manifest's parts that still describe the journal, in order, up to the first that does not."""
    if not manifest or manifest.get("journal") != [journal.st_dev, journal.st_ino]:
        return []
    valid, expected = [], 0
    try:
        for part in manifest.get("parts") or []:
            if part["start"] != expected or part["end"] > journal.st_size:
                break
            if part["sample"] != _sample(runs_file, part["start"], part["end"]):
                break
            valid.append(part)
            expected = part["end"]
    except (KeyError, TypeError):
        return []
    return valid


def _sample(runs_file: Path, start: int, end: int) -> str:
    """A hash of the first and last SAMPLE_BYTES of journal bytes [start, end)."""
    digest = hashlib.blake2b(f"{start}-{end}".encode(), digest_size=16)
    with open_store_file(runs_file, "runs file") as handle:
        handle.seek(start)
        digest.update(handle.read(min(SAMPLE_BYTES, end - start)))
        handle.seek(max(start, end - SAMPLE_BYTES))
        digest.update(handle.read(end - max(start, end - SAMPLE_BYTES)))
    return digest.hexdigest()


@contextlib.contextmanager
def _trusted_file(path: Path) -> Iterator[Any]:
    """``path`` open for reading when it is a regular file owned by root or by us (else OSError)."""
    with open_store_file(path, "columnar file") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid not in (0, os.geteuid()):
            raise OSError(f"{path}: not ours")
        yield handle


def _narrowed(frame: pd.DataFrame, columns: list[str] | None) -> pd.DataFrame:
    return frame if columns is None else frame[[c for c in columns if c in frame.columns]]
