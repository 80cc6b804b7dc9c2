"""The results directory: one append-only file of run rows plus one context file per sweep.

Layout of a results directory::

    <results>/
        runs.jsonl              one JSON object per line, one line per run (finished or failed)
        sweeps/<sweep_id>.json  the context of one sweep (machine, spec, axes, baseline, metrics, timing)
        plots/                  figures written by ``hugebench.report.figures.save`` (not read back)

``runs.jsonl`` rows (schema_version 1) are flat: nested dicts given to :meth:`ResultStore.append` are
flattened with ``.`` (``{"smaps": {"Rss": 1}}`` -> ``smaps.Rss``). Every row carries

- ``schema_version`` (int), ``run_id`` (content hash of the run), ``cell_id`` (hash of the run without its
  repetition), ``sweep_id``, ``experiment``, ``workload``, ``repetition`` (-1 for a warm-up run),
  ``order_index``, optionally ``warmup`` (true rows are never used in statistics);
- ``status``: one of :data:`STATUSES`; ``error`` and ``stderr_tail`` (null on success);
- ``started_at`` (ISO 8601) and ``wall_s`` (wall time of the worker process);
- the cell's axis values under their plain names (``allocator``, ``thp``, ``keys``, ``threads`` ...);
- metrics (``ns_per_lookup``, ``phase.lookup.s``, ``peak_rss_bytes``, ``minflt``, ``smaps.AnonHugePages``,
  ``hp_coverage``, ``perf.cycles``, ``pmu.stlb_misses``, ``knob.thp.enabled`` ...). A measurement that could
  not be taken is null, with a string column ``<col>.reason`` beside it (e.g. ``"not supported"``).

Each row is written with one ``write`` and then flushed and fsynced, so a crash loses at most the run in
flight. A torn last line left by a crash is skipped with a :class:`StoreWarning` on load, and the next append
starts on a fresh line so that the torn fragment never swallows a good row.

``sweeps/<sweep_id>.json`` holds: ``schema_version``, ``sweep_id``, ``experiment``, ``workload``,
``hugebench_version``, ``machine`` (machine provenance), ``spec`` (the experiment spec as a dict), ``axes``
(list of axis column names), ``baseline`` (dict axis -> value), ``primary_metric`` (the metric ratios are
computed on), optionally ``metrics`` (list of ``{"column", "label", "fmt", "scale"}`` report descriptors),
``started_at``, and, written at sweep end by :meth:`ResultStore.update_context`, ``ended_at``,
``sweep_wall_s`` (wall time of the whole sweep) and ``worker_wall_s_sum`` (sum of the workers' ``wall_s``).
Other keys are kept as they are. Context files are replaced atomically (write to a temporary file, fsync,
rename), so a reader sees the old or the new file, never half of one.

Readers ignore columns they do not know and tolerate missing ones: a row written by a newer hugebench
still loads, and so does an old row lacking a newer metric.

Reading is bounded whatever the directory holds (a broken disk, a hand edit, a hostile copy): every file is
opened by :func:`open_store_file`, which refuses what is not a regular file (a FIFO would block forever, a link
to ``/dev/zero`` would never end, a directory cannot be read) with a :class:`HugebenchError` naming it; JSON is
parsed by :func:`parse_json`, which refuses nesting deeper than :data:`MAX_JSON_DEPTH` and integers of more than
:data:`MAX_INT_DIGITS` digits; no line longer than :data:`MAX_LINE_BYTES` is held (these live in
:mod:`hugebench.store.files` and are re-exported here). :func:`read_rows` is THE reader of a runs file
(``ResultStore.rows``, :func:`load`, the report, ``plan -o`` and a resuming sweep all go through it): a line that
cannot be a row (bad JSON, too long, too deep, not an object, a field of :data:`ROW_TYPES` of the wrong type) is
skipped, and a row stored twice (same ``run_id``, as after concatenating a file with itself) is counted once;
each with one :class:`StoreWarning` per file that counts them. :func:`read_context` reads a context file and
checks the types of the fields readers use; :func:`drop_unusable_cells` leaves out rows whose cell columns hold
a list or an object. Readers of the broken-store kind: ``read_rows(path)`` -> list of dicts (StoreWarnings for
what was skipped), ``read_context(path)`` -> dict, both HugebenchError for a file that cannot be read at all.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import warnings
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from hugebench import knob_catalogue
from hugebench.columns import SCHEMA_VERSION
from hugebench.errors import HugebenchError, ToolMissingError, UnsafePathError
from hugebench.knob_catalogue import THP_ENABLED
from hugebench.safefs import SafeDir
from hugebench.store import columnar
from hugebench.store.files import (  # noqa: F401
    MAX_CONTEXT_BYTES,
    MAX_INT_DIGITS,
    MAX_JSON_DEPTH,
    MAX_LINE_BYTES,
    ROW_TYPES,
    StoreWarning,
    bounded_lines,
    context_problem,
    open_store_file,
    parse_json,
    parse_row,
    read_context,
    row_identity,
    row_problem,
)
from hugebench.store.follow import RowFollower
from hugebench.store.rows import STATUSES, append_line, json_default, normalise_row, plain  # noqa: F401

RUNS_FILE = "runs.jsonl"
SWEEPS_DIR = "sweeps"
PLOTS_DIR = "plots"
# Context fields written at sweep end, read by the report's overhead footer.
END_FIELDS = ("ended_at", "sweep_wall_s", "worker_wall_s_sum")

_SAFE_SWEEP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class ResultStore:
    """A results directory: append run rows, write and update sweep contexts, read them back."""

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self.runs_path = self.path / RUNS_FILE
        self.sweeps_path = self.path / SWEEPS_DIR

    def __repr__(self) -> str:
        return f"ResultStore({str(self.path)!r})"

    # -- writing -----------------------------------------------------------------------------------

    def write_context(self, sweep_id: str, context: Mapping[str, Any]) -> Path:
        """Write (or replace) the context file of ``sweep_id`` atomically; return its path."""
        document = {"schema_version": SCHEMA_VERSION, **dict(context), "sweep_id": sweep_id}
        target = self._context_path(sweep_id)
        self._write_json(target, document)
        return target

    def update_context(self, sweep_id: str, **fields: Any) -> dict:
        """Merge ``fields`` into an existing context (e.g. the end fields) atomically; return the result."""
        target = self._context_path(sweep_id)
        if not target.exists():
            raise HugebenchError(
                f"no context for sweep {sweep_id!r} in {self.path}; write_context() first"
            )
        document = {**read_context(target), **fields}
        self._write_json(target, document)
        return document

    def _write_json(self, target: Path, document: Mapping[str, Any]) -> None:
        """A context file replaced whole, in ``sweeps/`` reached and made without following a link."""
        data = json.dumps(plain(document), indent=2, default=json_default, allow_nan=False) + "\n"
        with self._writing(), SafeDir.open(self.path, create=True) as top:
            with top.subdir(SWEEPS_DIR, create=True) as sweeps:
                sweeps.write_atomic(target.name, data)

    def append(self, row: Mapping[str, Any]) -> dict:
        """Append one run row durably (flushed and fsynced before returning); return the row as stored.

        The line goes out in one ``write``; if the disk is full (or any write fails) the file is cut back to
        its previous size, so no torn row is left, and a HugebenchError says what happened.
        """
        stored = normalise_row(row)
        line = (json.dumps(stored, allow_nan=False, default=json_default) + "\n").encode()
        with self._writing(), SafeDir.open(self.path, create=True) as directory:
            fd = directory.append(RUNS_FILE, 0o644, readable=True)
        try:
            with self._writing():
                append_line(fd, line)
        finally:
            os.close(fd)
        return stored

    def check_writable(self) -> None:
        """Refuse now, before a sweep touches the machine, what a later write would refuse: the directory
        (made if missing), and a runs.jsonl or plots/ that is a link, another user's file or not what it
        should be (hugebench.safefs). Nothing is created but the directory."""
        with self._writing(), SafeDir.open(self.path, create=True) as directory:
            if os.path.lexists(self.runs_path):
                os.close(directory.append(RUNS_FILE))
            for name in (SWEEPS_DIR, PLOTS_DIR):
                if os.path.lexists(self.path / name):
                    directory.subdir(name).close()

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a directory that cannot be created or written (under a file, read-only) into a clean error."""
        try:
            yield
        except UnsafePathError as exc:
            raise UnsafePathError(
                f"cannot write the results directory {self.path}: {exc}; choose another with -o DIR"
            ) from None
        except OSError as exc:
            where = (
                f" ({exc.filename})" if exc.filename and str(exc.filename) != str(self.path) else ""
            )
            raise HugebenchError(
                f"cannot write the results directory {self.path}: {exc.strerror}{where}; "
                "choose another with -o DIR"
            ) from None

    # -- reading -----------------------------------------------------------------------------------

    def rows(self) -> list[dict]:
        """All readable rows in file order (see :func:`read_rows`; [] when there is no runs file yet)."""
        return read_rows(self.runs_path) if _exists(self.runs_path) else []

    def follow(self) -> RowFollower:
        """:meth:`rows` for a sweep that is writing them: each call reads only the lines added since the
        last (what a schedule asks after every block)."""
        return RowFollower(self.runs_path)

    def completed_run_ids(self) -> set[str]:
        """Ids of the runs that finished with status ``ok``: the ones a resumed sweep may skip."""
        return {
            row["run_id"] for row in self.rows() if row.get("status") == "ok" and "run_id" in row
        }

    def contexts(self, strict: bool = False) -> dict[str, dict]:
        """Every sweep context, by sweep id, in order of file name.

        An unreadable one is skipped with a StoreWarning, or with ``strict`` raises a HugebenchError: a
        sweep about to add rows must not guess what settings the unreadable one was made with.
        """
        found: dict[str, dict] = {}
        if not self.sweeps_path.is_dir():
            return found
        for file in sorted(self.sweeps_path.glob("*.json")):
            try:
                document = read_context(file)
            except HugebenchError as exc:
                if strict:
                    raise HugebenchError(
                        f"{exc}; so nothing proves the runs stored in {self.path} were made with this "
                        f"experiment's settings; use another directory with -o, or move that results directory "
                        f"away"
                    ) from None
                warnings.warn(f"{exc}; context skipped", StoreWarning, stacklevel=2)
                continue
            found[document.get("sweep_id") or file.stem] = document
        return found

    def _context_path(self, sweep_id: str) -> Path:
        if not isinstance(sweep_id, str) or not _SAFE_SWEEP_ID.match(sweep_id):
            raise HugebenchError(
                f"sweep id {sweep_id!r} is not a safe file name (letters, digits, . _ -)"
            )
        return self.sweeps_path / f"{sweep_id}.json"


def load(
    *paths: str | os.PathLike, hosts: bool = True, columns: Sequence[str] | None = None
) -> pd.DataFrame:
    """Load results directories or ``runs.jsonl`` files into one DataFrame, one row per run.

    Several sources (sweeps, machines) are concatenated; a ``source`` column names the results
    directory each row came from, a ``host`` column the machine (for a local sweep's rows, from its context:
    ``hosts=False`` leaves them without, for a caller that reads the contexts itself). Unknown columns are kept; a column missing from one source is NaN for
    its rows. Columns whose values are all numbers (or null) are numeric; null is NaN. An axis is a column under
    the name the YAML gave it too (``thp`` beside ``thp.enabled``, so ``groupby("thp")`` works);
    ``started_at`` is a timestamp (UTC). ``columns``: only these (and ``source``, ``host``), read from the
    store's columnar form (:mod:`hugebench.store.columnar`, kept up to date here) without the others.
    """
    if not paths:
        raise HugebenchError("load() needs at least one results directory or runs.jsonl file")
    if isinstance(columns, str):
        columns = [columns]
    frames = [_load_one(_runs_file(p), hosts, columns) for p in paths]
    frame = pd.concat(frames, ignore_index=True, sort=False) if len(frames) > 1 else frames[0]
    return _shaped(_numeric_columns(frame))


# Knob axes stored under their canonical name, by the shorthand an experiment file may use for them.
AXIS_SHORTHANDS = {"thp": knob_catalogue.canonical("thp")}


def _shaped(frame: pd.DataFrame) -> pd.DataFrame:
    """The columns a person looks for: each knob axis under its shorthand too, times as timestamps, versions
    as integers. (Integer measurements keep float: NaN marks a failed run's, and statistics want floats.)"""
    for short, canonical in AXIS_SHORTHANDS.items():
        if canonical in frame.columns:
            frame[short] = (
                frame[short].fillna(frame[canonical])
                if short in frame.columns
                else frame[canonical]
            )
    for column in [
        c for c in frame.columns if str(c).endswith("version")
    ]:  # 209, not 209.0 (rows without: <NA>)
        values = frame[column]
        if (
            pd.api.types.is_float_dtype(values)
            and values.notna().any()
            and (values.dropna() % 1 == 0).all()
        ):
            frame[column] = values.astype("Int64")
    if "started_at" in frame.columns and not pd.api.types.is_datetime64_any_dtype(
        frame["started_at"]
    ):
        frame["started_at"] = pd.to_datetime(
            frame["started_at"], utc=True, errors="coerce", format="ISO8601"
        )
    return frame


def load_contexts(*paths: str | os.PathLike) -> dict[str, dict]:
    """The sweep contexts of the given results directories (or of the directories of runs files)."""
    merged: dict[str, dict] = {}
    for path in paths:
        store = ResultStore(_runs_file(path).parent)
        for sweep_id, context in store.contexts().items():
            merged[sweep_id] = {**context, "source": str(store.path)}
    return merged


def store_file(path: str | os.PathLike) -> str | None:
    """What file of a results store ``path`` names, in words (its journal, a sweep's context, a part of its
    columnar form), or None: an export (a report, a page, a table) must never replace one of them. A path is
    taken as its directory really is (links and ``..`` resolved), so ``D/sub/../runs.jsonl`` is D's journal."""
    path = Path(path)
    where = Path(os.path.realpath(path.parent)) / path.name
    if where.name == RUNS_FILE:
        return f"{RUNS_FILE} is the name of a results store's journal of runs"
    store = where.parent.parent
    is_store = _exists(store / RUNS_FILE) or (store / SWEEPS_DIR).is_dir()
    if where.parent.name == SWEEPS_DIR and is_store:
        return f"it is in {where.parent}, the sweep contexts of the results store {store}"
    if where.parent.name == columnar.COLUMNAR_DIR and is_store:
        return f"it is in {where.parent}, the columnar form of the results store {store}"
    return None


def export_parquet(frame: pd.DataFrame, path: str | os.PathLike) -> Path:
    """Write a loaded DataFrame as Parquet (typed, compact, fast to reload in a notebook); return the path.

    The store stays JSONL (append-friendly, readable after a crash); Parquet is only an export.
    Object columns mixing types (e.g. numbers and strings) are written as strings.
    """
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        raise ToolMissingError("Parquet export needs pyarrow: pip install pyarrow") from None
    out = frame.copy()
    for column in out.columns[out.dtypes == "object"]:
        kinds = {type(v) for v in out[column] if v is not None and not _is_nan(v)}
        if len(kinds) > 1 or kinds & {list, dict}:
            out[column] = [None if v is None or _is_nan(v) else str(v) for v in out[column]]
    target = Path(path)
    with SafeDir.open(target.parent, create=True) as directory:  # never through a planted link
        with directory.replacing(target.name) as handle:
            out.to_parquet(handle, index=False)
    return target


# -- helpers ---------------------------------------------------------------------------------------


def _runs_file(path: str | os.PathLike) -> Path:
    path = Path(path)
    if path.is_dir():
        return path / RUNS_FILE
    if path.is_file():
        return path
    if _exists(path):
        open_store_file(path, "runs file").close()  # raises, saying what it is instead
    raise HugebenchError(f"{path}: no such results directory or runs file")


def _exists(path: Path) -> bool:
    """True when something (even a broken or looping link) is there: a reader then says what is wrong with it."""
    return os.path.lexists(path)


def _load_one(runs_file: Path, hosts: bool = True, columns=None) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", StoreWarning
        )  # the report reads contexts too, and says so once
        contexts = ResultStore(runs_file.parent).contexts() if hosts or columns else {}
    read = None if columns is None else _columns_read(columns, cell_columns(contexts))
    frame = _rows_frame(runs_file, read) if _exists(runs_file) else None
    if frame is None:
        frame = pd.DataFrame(columns=["run_id", "status"])
    frame["source"] = str(runs_file.parent)
    if hosts and not frame.empty:
        frame = _with_host(frame, contexts)
        frame = drop_unusable_cells(frame, cell_columns(contexts), runs_file)
    if columns is not None:
        kept = [*columns, *AXIS_SHORTHANDS.values(), "source", "host" if hosts else "source"]
        frame = frame[[c for c in dict.fromkeys(kept) if c in frame.columns]]
    return frame


def _columns_read(columns: Sequence[str], cells: list[str]) -> list[str]:
    """What load(columns=...) reads: those, the fields that tell a repeated row and a row's machine, the
    cell columns (a row unusable as a cell is left out whatever is asked) and the axes' canonical names."""
    own = ["run_id", "status", "sweep_id", "started_at", "host"]
    return list(dict.fromkeys([*columns, *own, *cells, *AXIS_SHORTHANDS.values()]))


def _rows_frame(runs_file: Path, columns: list[str] | None = None) -> pd.DataFrame | None:
    """The rows of a runs file as one frame (None without rows): the columnar form's parts and the journal
    after them (:func:`hugebench.store.columnar.frames`), each run once."""
    frames, bad, torn = columnar.frames(runs_file, columns)
    if bad:
        warnings.warn(_unreadable(runs_file, bad, torn), StoreWarning, stacklevel=4)
    if not frames:
        return None
    frame = frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True, sort=False)
    several = len(frames) > 1
    del frames[:]
    repeated = _repeated(frame)
    if repeated.any():
        warnings.warn(_repeats(runs_file, int(repeated.sum())), StoreWarning, stacklevel=4)
        frame = frame[~repeated].reset_index(drop=True)
    # A column that is all null in one chunk comes out of concat as object: infer its type again, as one
    # frame built from every row would have (only in a column mixing strings with other values, a null next
    # to a string may read as NaN rather than None: missing either way). copy() joins the chunks' blocks.
    return frame.infer_objects().copy() if several else frame


def _repeated(frame: pd.DataFrame) -> pd.Series:
    """Rows that repeat an earlier one, by :func:`row_identity`'s rule, over the whole frame at once."""
    if "run_id" not in frame.columns:
        return pd.Series(False, index=frame.index)
    status = frame["status"] if "status" in frame.columns else pd.Series(None, index=frame.index)
    ok = (status == "ok").to_numpy()
    keys = pd.DataFrame({"ok": ok, "run_id": frame["run_id"]})
    for column in ("sweep_id", "started_at", "status"):
        values = frame[column].astype(str) if column in frame.columns else "None"
        keys[column] = pd.Series(values, index=frame.index).where(~ok, "")
    return keys.duplicated() & frame["run_id"].notna()


def _with_host(frame: pd.DataFrame, contexts: Mapping[str, dict]) -> pd.DataFrame:
    """Every row names its machine: a cluster sweep's rows carry ``host``; a local sweep's get the host name
    its context recorded (``machine.hostname``), so stores of several machines load into one frame."""
    if frame.empty or "sweep_id" not in frame.columns:
        return frame
    if "host" in frame.columns and frame["host"].notna().all():
        return frame
    recorded = frame["sweep_id"].map(
        {s: (c.get("machine") or {}).get("hostname") for s, c in contexts.items()}
    )
    frame["host"] = frame["host"].fillna(recorded) if "host" in frame.columns else recorded
    return frame


def cell_columns(contexts: Mapping[str, Mapping]) -> list[str]:
    """The columns that name a cell: every sweep's axes, and the allocator and THP mode columns."""
    axes = [a for context in contexts.values() for a in context.get("axes") or []]
    return list(dict.fromkeys(axes + ["allocator", "thp", THP_ENABLED]))


def drop_unusable_cells(frame: pd.DataFrame, columns, source) -> pd.DataFrame:
    """``frame`` without the rows whose cell columns hold a list or an object (no value a cell can be named
    by: grouping would fail); a StoreWarning counts them."""
    present = [c for c in columns if c in frame.columns]
    if frame.empty or not present:
        return frame
    bad = frame[present].apply(lambda column: column.map(_is_container))
    if not bad.to_numpy().any():
        return frame
    rows = bad.any(axis=1)
    named = [c for c in present if bad[c].any()]
    warnings.warn(
        f"{source}: {int(rows.sum())} row(s) skipped: their column(s) {', '.join(named)} hold a list "
        "or an object, not a value that can name a cell",
        StoreWarning,
        stacklevel=3,
    )
    return frame[~rows].reset_index(drop=True)


def _is_container(value: Any) -> bool:
    return isinstance(value, (list, dict, tuple, set))


# -- bounded reading: the one way into a store's files -----------------------------------------------


def read_rows(runs_file: str | os.PathLike) -> list[dict]:
    """THE reader of a runs file: its rows in file order, each run once.

    A line that cannot be a row (torn by a crash, not JSON, over :data:`MAX_LINE_BYTES`, too deep, a huge
    integer, not an object, a field of :data:`ROW_TYPES` of the wrong type) is skipped, and a row stored
    twice is kept once: an ``ok`` row of a run_id that already has one, or any row identical in run_id,
    sweep, start time and status to an earlier one (a failed run retried later is history and stays). One
    :class:`StoreWarning` per kind says how many. A file that cannot be opened as a regular file is a
    HugebenchError (see :func:`open_store_file`).
    """
    return list(iter_rows(runs_file))


def iter_rows(runs_file: str | os.PathLike) -> Iterator[dict]:
    """:func:`read_rows` one row at a time (its warnings come when the file has been read to its end)."""
    runs_file = Path(runs_file)
    seen, repeated = set(), 0
    for row in _iter_rows(runs_file):
        key = row_identity(row)
        if key is not None and key in seen:
            repeated += 1
            continue
        seen.add(key)
        yield row
    if repeated:
        warnings.warn(_repeats(runs_file, repeated), StoreWarning, stacklevel=3)


def _repeats(runs_file: Path, repeated: int) -> str:
    return (
        f"{runs_file}: {repeated} row(s) repeat a run already stored (same run_id); each run is "
        "counted once (was the file concatenated with itself?)"
    )


def _iter_rows(runs_file: Path) -> Iterator[dict]:
    """Rows of a runs file, read a bounded line at a time; bad lines skipped with one counting StoreWarning."""
    bad: list[tuple[int, str]] = []
    torn = 0  # number of a last line without its newline: a crash mid-write
    with open_store_file(runs_file, "runs file") as handle:
        for number, (line, too_long) in enumerate(bounded_lines(handle), start=1):
            if not too_long and not line.strip():
                continue
            torn = number if line and not line.endswith(b"\n") else 0
            row, problem = parse_row(line, too_long)
            if row is None:  # parse_row says why (the fallback is never used)
                bad.append((number, problem or "not a row"))
            else:
                yield row
    if bad:
        warnings.warn(_unreadable(runs_file, bad, torn), StoreWarning, stacklevel=3)


def _unreadable(runs_file: Path, bad: list[tuple[int, str]], torn: int) -> str:
    what = [
        f"{'torn last line (a crash mid-write?)' if n == torn else f'corrupt line {n}'}: {why}"
        for n, why in bad
    ]
    shown = "; ".join(what[:3]) + (f"; and {len(what) - 3} more" if len(what) > 3 else "")
    return f"{runs_file}: {len(bad)} unreadable line(s) skipped: {shown}"


def _numeric_columns(frame: pd.DataFrame) -> pd.DataFrame:
    """Columns of numbers (and nulls) become numeric. A list or an object among a column's numbers is no
    measurement (no statistic can use it): it reads as null, counted in a StoreWarning."""
    nulled = {}
    for column in frame.columns[frame.dtypes == "object"]:
        values = frame[column]
        present = values[values.notna()]
        if present.empty:
            frame[column] = values.astype(float)
            continue
        numbers, containers = present.map(_is_number), present.map(_is_container)
        if numbers.any() and containers.any():
            nulled[column] = int(containers.sum())
            frame[column] = values.where(~values.index.isin(containers.index[containers]), None)
            numbers = numbers[~containers]
        if numbers.all():
            frame[column] = pd.to_numeric(frame[column])
    if nulled:
        warnings.warn(
            f"{len(nulled)} column(s) hold a list or an object among numbers, read as missing: "
            + ", ".join(f"{c} ({n} value(s))" for c, n in list(nulled.items())[:8]),
            StoreWarning,
            stacklevel=3,
        )
    return frame


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def measured_wall_times(path: str | os.PathLike) -> dict[str, float]:
    """cell id -> median worker wall seconds of the successful runs stored under ``path`` ({} if none)."""
    if not _exists(Path(path, RUNS_FILE)):
        return {}
    df = load(path)
    if df.empty or "wall_s" not in df.columns:
        return {}
    ok = df[df["status"] == "ok"]
    return ok.groupby("cell_id")["wall_s"].median().to_dict()
