"""Crash journal: the original knob values, on disk before the first write, so a sweep killed with -9
can still be undone by `hugebench system restore`.

Format (JSON): format, pid, pid_start (clock ticks, to tell a reused pid), started, purpose ('sweep' or
'set'), sys_root, proc_root (the host's roots), saved {name: original value}, touched [names in
first-write order].

The journal and its run records (``<stem>-runs/``, hugebench.system.containment) are root's state: they say
which knobs root writes and which processes it ends. They live in a directory that root (or the user running
hugebench) owns and no one else can write (``state_dir`` refuses any other, naming it), are opened without
following a link, and what a journal names is checked before it is acted on: every name in the knob
catalogue, and its roots those of the machine the command acts on (the real ``/sys`` and ``/proc``, or the
roots the command itself was given), never roots the file chooses.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from hugebench import knob_catalogue as catalogue
from hugebench.errors import HugebenchError, SystemStateError, UnsafePathError
from hugebench.kernel import process_start_ticks
from hugebench.kernel.host import Host
from hugebench.safefs import SafeDir
from hugebench.system.knobs import Knob, discover_knobs

JOURNAL_FORMAT = 1
RESTORE_HINT = "run `hugebench system restore` (as root)"
MAX_STATE_BYTES = 1 << 20  # a journal or run record is a few KiB: more is not one of ours
STATE_PLACE = (
    "the directory of hugebench's journal and run records (they tell root which knobs to write "
    "and which processes to end)"
)
STATE_FIX = "point --journal (or HUGEBENCH_JOURNAL) into one, e.g. /var/lib/hugebench/journal.json"


def state_dir(directory: str | os.PathLike, *, create: bool = False) -> SafeDir | None:
    """``directory`` (a journal's, or its run records') opened without following another user's link and
    checked to be root's or ours and writable by no one else (UnsafePathError otherwise, naming it); None
    when it is missing and not ``create``."""
    try:
        opened = SafeDir.open(directory, create=create)
    except FileNotFoundError:
        return None
    except NotADirectoryError:
        raise UnsafePathError(
            f"{directory}: refused as {STATE_PLACE}: it is not a directory"
        ) from None
    except OSError as exc:
        raise SystemStateError(
            f"{directory}: cannot be opened as {STATE_PLACE} ({exc.strerror}); {STATE_FIX}"
        ) from None
    try:
        return opened.check_private(STATE_PLACE, STATE_FIX)
    except BaseException:
        opened.close()
        raise


def records_path(journal: str | os.PathLike | None = None) -> Path:
    """Where a sweep's runs are recorded: ``<journal stem>-runs/`` beside the journal (``$HUGEBENCH_JOURNAL``
    or the default), so the sweep and ``system restore`` given the same journal find the same runs."""
    journal = Path(journal) if journal else default_journal_path()
    return journal.parent / f"{journal.stem}-runs"


def records_dir(records: str | os.PathLike, *, create: bool = False) -> SafeDir | None:
    """The run records' directory, it and the journal's directory checked as ``state_dir`` does; None when
    missing and not ``create``."""
    records = Path(records)
    parent = state_dir(records.parent, create=create)
    if parent is None:
        return None
    with parent:
        try:
            opened = parent.subdir(records.name, create=create)
        except FileNotFoundError:
            return None
    try:
        return opened.check_private(STATE_PLACE, STATE_FIX)
    except BaseException:
        opened.close()
        raise


def check_state_place(journal: str | os.PathLike) -> None:
    """Refuse (UnsafePathError, naming the path) a journal whose directory, or run records' directory,
    another user could write: called before a command touches anything."""
    for opened in (state_dir(Path(journal).parent), records_dir(records_path(journal))):
        if opened is not None:
            opened.close()


def read_state_file(directory: SafeDir, name: str) -> bytes | None:
    """The bytes of ``name`` in a checked state directory (None when missing), opened without following a
    link and only when root or we own it and no one else may write it (UnsafePathError otherwise)."""
    try:
        data, _ = directory.read_trusted(name, MAX_STATE_BYTES)
    except FileNotFoundError:
        return None
    return data


def default_journal_path(euid: int | None = None) -> Path:
    """$HUGEBENCH_JOURNAL, else /var/lib/hugebench/journal.json for root, else ~/.cache/hugebench/journal.json."""
    if os.environ.get("HUGEBENCH_JOURNAL"):
        return Path(os.environ["HUGEBENCH_JOURNAL"])
    if (os.geteuid() if euid is None else euid) == 0:
        return Path("/var/lib/hugebench/journal.json")
    cache = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(cache, "hugebench", "journal.json")


def journal_path(override: str | Path | None = None) -> Path:
    """`override` when given (a CLI option), else default_journal_path()."""
    return Path(override) if override else default_journal_path()


@dataclass(frozen=True)
class JournalRecord:
    pid: int
    pid_start: int | None
    started: str
    purpose: str
    sys_root: str
    proc_root: str
    saved: dict[str, str] = field(default_factory=dict)
    touched: tuple[str, ...] = ()

    @classmethod
    def new(cls, purpose: str, host: Host, saved: dict[str, str]) -> JournalRecord:
        pid = os.getpid()
        started = datetime.now().astimezone().isoformat(timespec="seconds")
        return cls(
            pid,
            process_start_ticks(pid),
            started,
            purpose,
            str(host.sys),
            str(host.proc),
            dict(saved),
        )

    def with_touched(self, name: str) -> JournalRecord:
        return (
            self
            if name in self.touched
            else dataclasses.replace(self, touched=(*self.touched, name))
        )

    def owner_alive(self) -> bool:
        try:
            os.kill(self.pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            pass  # exists, owned by someone else
        start = process_start_ticks(self.pid)
        return self.pid_start is None or start is None or start == self.pid_start

    def describe_owner(self) -> str:
        return f"pid {self.pid}, started {self.started}"


def write_journal(path: str | Path, record: JournalRecord) -> None:
    """Atomic, in the journal's checked directory (made when missing): a temporary file, fsynced, renamed
    over the journal, never written through what is at its name."""
    path = Path(path)
    payload = {"format": JOURNAL_FORMAT, **dataclasses.asdict(record)}
    payload["touched"] = list(record.touched)
    text = json.dumps(payload, indent=1, sort_keys=True) + "\n"
    directory = state_dir(path.parent, create=True)
    assert directory is not None  # made when missing
    with directory:
        directory.write_atomic(path.name, text)


def remove_journal(path: str | Path) -> None:
    """Delete the journal (its knobs are back), by name in its checked directory."""
    path = Path(path)
    directory = state_dir(path.parent)
    if directory is None:
        return
    with directory, contextlib.suppress(FileNotFoundError):
        os.unlink(path.name, dir_fd=directory.fd)


def read_journal(path: str | Path) -> JournalRecord | None:
    """The journal at `path`, or None when there is none; UnsafePathError when it is somewhere another
    user could have written it, SystemStateError when it is not a journal of ours."""
    path = Path(path)
    try:
        directory = state_dir(path.parent)
        if directory is None:
            return None
        with directory:
            data = read_state_file(directory, path.name)
        return None if data is None else _record(json.loads(data))
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemStateError(
            f"journal {path} is unreadable ({e}); check the knobs with `hugebench system show`, "
            f"fix them by hand, then delete the file"
        ) from None


def _record(payload) -> JournalRecord:
    """A journal's JSON as a record, every field of the type it must have and every knob in the catalogue
    (ValueError naming what is wrong)."""
    if not isinstance(payload, dict) or payload.pop("format", None) != JOURNAL_FORMAT:
        raise ValueError("unknown journal format")
    names = {f.name for f in dataclasses.fields(JournalRecord)}
    if set(payload) != names:
        raise ValueError(f"fields {sorted(set(payload) ^ names)} wrong")
    saved, touched = payload["saved"], payload["touched"]
    checks = {
        "pid": isinstance(payload["pid"], int) and payload["pid"] > 0,
        "pid_start": payload["pid_start"] is None or isinstance(payload["pid_start"], int),
        "purpose": payload["purpose"] in ("sweep", "set"),
        "started, sys_root, proc_root": all(
            isinstance(payload[k], str) for k in ("started", "sys_root", "proc_root")
        ),
        "saved": isinstance(saved, dict)
        and all(isinstance(k, str) and isinstance(v, str) for k, v in saved.items()),
        "touched": isinstance(touched, list) and all(name in saved for name in touched),
    }
    wrong = [key for key, ok in checks.items() if not ok]
    if wrong:
        raise ValueError(f"{', '.join(wrong)} not as hugebench writes them")
    unknown = [name for name in saved if catalogue.declaration(name) is None]
    if unknown:
        raise ValueError(f"{', '.join(unknown[:5])} not in hugebench's knob catalogue")
    payload["touched"] = tuple(touched)
    return JournalRecord(**payload)


def check_roots(record: JournalRecord, host: Host, path: str | Path) -> None:
    """Refuse a journal whose roots are not those of ``host``, the machine the command acts on: a journal
    never chooses where root writes (a forged one could name a tree of links to any file)."""
    same = all(
        os.path.abspath(recorded) == os.path.abspath(acting)
        for recorded, acting in ((record.sys_root, host.sys), (record.proc_root, host.proc))
    )
    if not same:
        raise SystemStateError(
            f"journal {path} is for the knobs under {record.sys_root} and {record.proc_root}, not under "
            f"{host.sys} and {host.proc} where this command acts; refused (a journal never chooses where "
            "root writes): give that tree with --sys-root/--proc-root if it is yours, or delete the file"
        )


def _kernel_paths(knobs: dict[str, Knob], names) -> dict[str, str]:
    """{name: why} for each knob whose file is not the kernel's own under its root: reached through a link
    (the knob paths of the catalogue have none)."""
    wrong = {}
    for name in names:
        knob = knobs.get(name)
        if knob is None:
            continue
        expected = os.path.join(os.path.realpath(knob.root), knob.rel)
        if os.path.realpath(knob.path) != expected:
            wrong[name] = f"{knob.path} leads elsewhere through a link: refused"
    return wrong


def check_no_stale_journal(journal_path: str | Path | None = None) -> None:
    """Refuse to start when a journal says kernel knobs are (or may be) changed by someone else."""
    path = Path(journal_path) if journal_path is not None else default_journal_path()
    check_state_place(path)
    record = read_journal(path)
    if record is None:
        return
    changed = ", ".join(record.touched) or "none yet"
    if record.purpose == "set":
        raise SystemStateError(
            f"`hugebench system set` ({record.describe_owner()}) left kernel knobs changed ({changed}); "
            f"{RESTORE_HINT} first, or put those settings in the sweep file. Journal: {path}"
        )
    if record.owner_alive():
        raise SystemStateError(
            f"another sweep ({record.describe_owner()}) is running and has changed kernel knobs ({changed}); "
            f"wait for it, or stop it with `kill {record.pid}` (it restores them on SIGTERM). Journal: {path}"
        )
    raise SystemStateError(
        f"a previous sweep ({record.describe_owner()}) left kernel knobs changed ({changed}); "
        f"{RESTORE_HINT}. Journal: {path}"
    )


def _restore_order(
    knobs: dict[str, Knob], saved: dict[str, str], current: dict[str, str], touched
) -> list[str]:
    """Last touched first; settings before pools; pools that shrink (free memory) before pools that grow."""
    lifo = [n for n in reversed(touched) if n in current]
    settings = [n for n in lifo if not knobs[n].is_pool]
    shrinking = [n for n in lifo if knobs[n].is_pool and int(current[n]) > int(saved[n])]
    growing = [n for n in lifo if knobs[n].is_pool and n not in shrinking]
    return settings + shrinking + growing


def restore_saved(knobs: dict[str, Knob], saved: dict[str, str], touched) -> tuple[dict, dict]:
    """Put every touched knob back to its saved value. Returns ({name: (was, now)}, {name: error})."""
    restored: dict[str, tuple[str, str]] = {}
    errors: dict[str, str] = {}
    current: dict[str, str] = {}
    for name in touched:
        try:
            current[name] = knobs[name].read()
        except KeyError:
            errors[name] = "this kernel no longer has that knob"
        except (OSError, HugebenchError) as e:
            errors[name] = str(e)
    for name in _restore_order(knobs, saved, current, touched):
        if current[name] == saved[name]:
            continue
        try:
            knobs[name].write(saved[name])
            restored[name] = (current[name], saved[name])
        except (OSError, HugebenchError) as e:
            errors[name] = str(e)
    return restored, errors


def restore_from_journal(
    journal_path: str | Path | None = None,
    host: Host | None = None,
    force: bool = False,
) -> dict:
    """Undo what a journal records on ``host`` (None: this machine, ``Host.at()``), which must be the machine
    the journal was written for (``check_roots``). The journal is deleted on success.

    Returns {journal, found, owner, purpose, restored: {name: {from, to}}, unchanged: [names]}.
    """
    path = Path(journal_path) if journal_path is not None else default_journal_path()
    record = read_journal(path)
    if record is None:
        return {
            "journal": str(path),
            "found": False,
            "owner": None,
            "purpose": None,
            "restored": {},
            "unchanged": [],
        }
    if (
        record.purpose == "sweep"
        and record.owner_alive()
        and record.pid != os.getpid()
        and not force
    ):
        raise SystemStateError(
            f"the sweep that wrote {path} ({record.describe_owner()}) is still running and will restore "
            f"the knobs itself; stop it with `kill {record.pid}`, or pass --force"
        )
    host = host or Host.at()
    check_roots(record, host, path)
    knobs = discover_knobs(host)
    linked = _kernel_paths(knobs, record.touched)
    if linked:
        details = "; ".join(f"{n}: {e}" for n, e in linked.items())
        raise SystemStateError(f"journal {path} not restored: {details}")
    restored, errors = restore_saved(knobs, record.saved, record.touched)
    if errors:
        details = "; ".join(f"{n}: {e}" for n, e in errors.items())
        raise SystemStateError(f"could not restore every knob ({details}); journal kept at {path}")
    remove_journal(path)
    return {
        "journal": str(path),
        "found": True,
        "owner": record.describe_owner(),
        "purpose": record.purpose,
        "restored": {n: {"from": was, "to": now} for n, (was, now) in restored.items()},
        "unchanged": [n for n in record.touched if n not in restored],
    }
