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
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import math
import os
import re
import tempfile
import warnings
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import HugebenchError, ToolMissingError

SCHEMA_VERSION = 1
RUNS_FILE = "runs.jsonl"
SWEEPS_DIR = "sweeps"
PLOTS_DIR = "plots"
STATUSES = ("ok", "failed", "timeout", "crashed", "oom", "skipped", "disturbed")
REQUIRED_KEYS = ("run_id", "status")
# Context fields written at sweep end, read by the report's overhead footer.
END_FIELDS = ("ended_at", "sweep_wall_s", "worker_wall_s_sum")

_SAFE_SWEEP_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")


class StoreWarning(UserWarning):
    """A results file had a line or file that could not be read; it was skipped."""


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
        with self._writing():
            _atomic_write_json(target, document)
        return target

    def update_context(self, sweep_id: str, **fields: Any) -> dict:
        """Merge ``fields`` into an existing context (e.g. the end fields) atomically; return the result."""
        target = self._context_path(sweep_id)
        if not target.exists():
            raise HugebenchError(f"no context for sweep {sweep_id!r} in {self.path}; write_context() first")
        document = {**_read_json(target), **fields}
        _atomic_write_json(target, document)
        return document

    def append(self, row: Mapping[str, Any]) -> dict:
        """Append one run row durably (flushed and fsynced before returning); return the row as stored."""
        stored = _normalise_row(row)
        line = (json.dumps(stored, allow_nan=False, default=_json_default) + "\n").encode()
        with self._writing():
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.runs_path, os.O_RDWR | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            if _ends_torn(fd):
                line = b"\n" + line  # isolate a torn fragment left by a crash
            os.write(fd, line)
            os.fsync(fd)
        finally:
            os.close(fd)
        return stored

    @contextlib.contextmanager
    def _writing(self) -> Iterator[None]:
        """Turn a directory that cannot be created or written (under a file, read-only) into a clean error."""
        try:
            yield
        except OSError as exc:
            where = f" ({exc.filename})" if exc.filename and str(exc.filename) != str(self.path) else ""
            raise HugebenchError(f"cannot write the results directory {self.path}: {exc.strerror}{where}; "
                                 "choose another with -o DIR") from None

    # -- reading -----------------------------------------------------------------------------------

    def rows(self) -> list[dict]:
        """All readable rows in file order (a torn or corrupt line is skipped with a StoreWarning)."""
        return list(_iter_rows(self.runs_path)) if self.runs_path.exists() else []

    def completed_run_ids(self) -> set[str]:
        """Ids of the runs that finished with status ``ok``: the ones a resumed sweep may skip."""
        return {row["run_id"] for row in self.rows() if row.get("status") == "ok" and "run_id" in row}

    def contexts(self, strict: bool = False) -> dict[str, dict]:
        """Every sweep context, by sweep id, in order of file name.

        An unreadable one is skipped with a StoreWarning, or with ``strict`` raises a HugebenchError: a
        sweep about to add rows must not guess what settings the unreadable one was made with.
        """
        found = {}
        if not self.sweeps_path.is_dir():
            return found
        for file in sorted(self.sweeps_path.glob("*.json")):
            try:
                document = _read_json(file)
                if not isinstance(document, dict):
                    raise ValueError("not a JSON object")
            except (OSError, ValueError) as exc:
                if strict:
                    raise HugebenchError(
                        f"{file} cannot be read ({exc}), so nothing proves the runs stored in {self.path} were "
                        f"made with this experiment's settings; use another directory with -o, or move that "
                        f"results directory away") from None
                warnings.warn(f"{file}: unreadable context skipped ({exc})", StoreWarning, stacklevel=2)
                continue
            found[document.get("sweep_id", file.stem)] = document
        return found

    def _context_path(self, sweep_id: str) -> Path:
        if not isinstance(sweep_id, str) or not _SAFE_SWEEP_ID.match(sweep_id):
            raise HugebenchError(f"sweep id {sweep_id!r} is not a safe file name (letters, digits, . _ -)")
        return self.sweeps_path / f"{sweep_id}.json"


def load(*paths: str | os.PathLike, hosts: bool = True) -> pd.DataFrame:
    """Load results directories or ``runs.jsonl`` files into one DataFrame, one row per run.

    Several sources (sweeps, machines) are concatenated; a ``source`` column names the results
    directory each row came from, a ``host`` column the machine (for a local sweep's rows, from its context:
    ``hosts=False`` leaves them without, for a caller that reads the contexts itself). Unknown columns are kept; a column missing from one source is NaN for
    its rows. Columns whose values are all numbers (or null) are numeric; null is NaN.
    """
    if not paths:
        raise HugebenchError("load() needs at least one results directory or runs.jsonl file")
    frames = [_load_one(_runs_file(p), hosts) for p in paths]
    frame = pd.concat(frames, ignore_index=True, sort=False) if len(frames) > 1 else frames[0]
    return _numeric_columns(frame)


def load_contexts(*paths: str | os.PathLike) -> dict[str, dict]:
    """The sweep contexts of the given results directories (or of the directories of runs files)."""
    merged: dict[str, dict] = {}
    for path in paths:
        store = ResultStore(_runs_file(path).parent)
        for sweep_id, context in store.contexts().items():
            merged[sweep_id] = {**context, "source": str(store.path)}
    return merged


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
    for column in out.columns[out.dtypes == object]:
        kinds = {type(v) for v in out[column] if v is not None and not _is_nan(v)}
        if len(kinds) > 1 or kinds & {list, dict}:
            out[column] = [None if v is None or _is_nan(v) else str(v) for v in out[column]]
    target = Path(path)
    out.to_parquet(target, index=False)
    return target


# -- helpers ---------------------------------------------------------------------------------------


def _runs_file(path: str | os.PathLike) -> Path:
    path = Path(path)
    if path.is_dir():
        return path / RUNS_FILE
    if path.is_file():
        return path
    raise HugebenchError(f"{path}: no such results directory or runs file")


def _load_one(runs_file: Path, hosts: bool = True) -> pd.DataFrame:
    rows = list(_iter_rows(runs_file)) if runs_file.exists() else []
    frame = pd.DataFrame.from_records(rows) if rows else pd.DataFrame(columns=["run_id", "status"])
    frame["source"] = str(runs_file.parent)
    return _with_host(frame, runs_file.parent) if hosts else frame


def _with_host(frame: pd.DataFrame, directory: Path) -> pd.DataFrame:
    """Every row names its machine: a cluster sweep's rows carry ``host``; a local sweep's get the host name
    its context recorded (``machine.hostname``), so stores of several machines load into one frame."""
    if frame.empty or "sweep_id" not in frame.columns:
        return frame
    if "host" in frame.columns and frame["host"].notna().all():
        return frame
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", StoreWarning)  # the report reads contexts too, and says so once
        contexts = ResultStore(directory).contexts()
    recorded = frame["sweep_id"].map({s: (c.get("machine") or {}).get("hostname") for s, c in contexts.items()})
    frame["host"] = frame["host"].fillna(recorded) if "host" in frame.columns else recorded
    return frame


def _iter_rows(runs_file: Path) -> Iterator[dict]:
    with open(runs_file, "rb") as handle:
        lines = handle.read().split(b"\n")
    last = max((i for i, line in enumerate(lines) if line.strip()), default=-1)
    for number, line in enumerate(lines):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
            if not isinstance(row, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            what = "torn last line (a crash mid-write?)" if number == last else f"corrupt line {number + 1}"
            warnings.warn(f"{runs_file}: {what} skipped: {exc}", StoreWarning, stacklevel=3)
            continue
        yield row


def _numeric_columns(frame: pd.DataFrame) -> pd.DataFrame:
    for column in frame.columns[frame.dtypes == object]:
        values = frame[column]
        present = values[values.notna()]
        if present.empty:
            frame[column] = values.astype(float)
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in present):
            frame[column] = pd.to_numeric(values)
    return frame


def _normalise_row(row: Mapping[str, Any]) -> dict:
    if not isinstance(row, Mapping):
        raise TypeError(f"a run row must be a mapping, got {type(row).__name__}")
    flat = {"schema_version": SCHEMA_VERSION, **_flatten(row)}
    missing = [key for key in REQUIRED_KEYS if key not in flat]
    if missing:
        raise ValueError(f"run row lacks {', '.join(missing)}: {sorted(flat)}")
    if flat["status"] not in STATUSES:
        raise ValueError(f"run status {flat['status']!r} is not one of {', '.join(STATUSES)}")
    return {key: _plain(value) for key, value in flat.items()}


def _flatten(mapping: Mapping[str, Any], prefix: str = "") -> dict:
    flat = {}
    for key, value in mapping.items():
        name = f"{prefix}{key}"
        if isinstance(value, Mapping):
            flat.update(_flatten(value, name + "."))
        else:
            flat[name] = value
    return flat


def _plain(value: Any) -> Any:
    """JSON has no NaN: a missing measurement is stored as null (also inside lists and dicts)."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, Mapping):
        return {key: _plain(v) for key, v in value.items()}
    return value


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return _plain(value)
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, (set, frozenset)):
        return sorted(value, key=str)
    if isinstance(value, Path):
        return str(value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _plain(dataclasses.asdict(value))
    raise TypeError(f"{type(value).__name__} is not JSON serializable: {value!r}")


def _ends_torn(fd: int) -> bool:
    size = os.fstat(fd).st_size
    return size > 0 and os.pread(fd, 1, size - 1) != b"\n"


def _read_json(path: Path) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def _atomic_write_json(target: Path, document: Mapping[str, Any]) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(_plain(document), indent=2, sort_keys=False, default=_json_default, allow_nan=False)
    fd, temporary = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o644)  # mkstemp makes 0600; results are meant to be shared and read
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is; some filesystems refuse a dir fsync.
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def measured_wall_times(path: str | os.PathLike) -> dict[str, float]:
    """cell id -> median worker wall seconds of the successful runs stored under ``path`` ({} if none)."""
    if not Path(path, RUNS_FILE).exists():
        return {}
    df = load(path)
    if df.empty or "wall_s" not in df.columns:
        return {}
    ok = df[df["status"] == "ok"]
    return ok.groupby("cell_id")["wall_s"].median().to_dict()
