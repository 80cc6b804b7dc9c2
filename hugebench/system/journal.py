"""Crash journal: the original knob values, on disk before the first write, so a sweep killed with -9
can still be undone by `hugebench system restore`.

Format (JSON): format, pid, pid_start (clock ticks, to tell a reused pid), started, purpose ('sweep' or
'set'), sys_root, proc_root (the host's roots), saved {name: original value}, touched [names in
first-write order].
"""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

from hugebench._util import write_json_atomic
from hugebench.errors import HugebenchError, SystemStateError
from hugebench.kernel import process_start_ticks
from hugebench.kernel.host import Host
from hugebench.system.knobs import Knob, discover_knobs

JOURNAL_FORMAT = 1
RESTORE_HINT = "run `hugebench system restore` (as root)"


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
    """Atomic: write a temp file, fsync, rename over the journal, fsync the directory."""
    payload = {"format": JOURNAL_FORMAT, **dataclasses.asdict(record)}
    payload["touched"] = list(record.touched)
    write_json_atomic(path, payload, indent=1, sort_keys=True)


def read_journal(path: str | Path) -> JournalRecord | None:
    """The journal at `path`, or None when there is none."""
    path = Path(path)
    try:
        payload = json.loads(path.read_text(encoding="utf-8"))
        if payload.pop("format") != JOURNAL_FORMAT:
            raise ValueError("unknown journal format")
        payload["touched"] = tuple(payload["touched"])
        return JournalRecord(**payload)
    except FileNotFoundError:
        return None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise SystemStateError(
            f"journal {path} is unreadable ({e}); check the knobs with `hugebench system show`, "
            f"fix them by hand, then delete the file"
        ) from None


def check_no_stale_journal(journal_path: str | Path | None = None) -> None:
    """Refuse to start when a journal says kernel knobs are (or may be) changed by someone else."""
    path = Path(journal_path) if journal_path is not None else default_journal_path()
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
    """Undo what a journal records on ``host`` (None: the host at the journal's roots, ``Host.at``). The
    journal is deleted on success.

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
    knobs = discover_knobs(host or Host.at(record.sys_root, record.proc_root))
    restored, errors = restore_saved(knobs, record.saved, record.touched)
    if errors:
        details = "; ".join(f"{n}: {e}" for n, e in errors.items())
        raise SystemStateError(f"could not restore every knob ({details}); journal kept at {path}")
    path.unlink(missing_ok=True)
    return {
        "journal": str(path),
        "found": True,
        "owner": record.describe_owner(),
        "purpose": record.purpose,
        "restored": {n: {"from": was, "to": now} for n, (was, now) in restored.items()},
        "unchanged": [n for n in record.touched if n not in restored],
    }
