"""SystemState: the context manager a sweep runs inside. It changes knobs only when asked, journals the
originals before the first write, and puts the saved values back on any exit, SIGTERM and SIGHUP included.
"""

from __future__ import annotations

import logging
import signal
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

from hugebench.errors import SystemStateError
from hugebench.kernel.host import LOCAL, Host
from hugebench.system.journal import (
    RESTORE_HINT,
    JournalRecord,
    check_no_stale_journal,
    check_roots,
    check_state_place,
    default_journal_path,
    read_journal,
    remove_journal,
    restore_saved,
    write_journal,
)
from hugebench.system.knobs import (
    HugetlbShortfall,
    KnobValueError,
    discover_knobs,
    resolve_name,
)
from hugebench.system.memory import condition_memory

log = logging.getLogger(__name__)

TERMINATING_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class Terminated(BaseException):
    """SIGTERM/SIGHUP turned into an exception so `finally` blocks (and knob restore) run.

    A BaseException, like KeyboardInterrupt, so that `except Exception` in a sweep does not swallow it.
    """

    def __init__(self, signum: int):
        self.signum = signum
        self.exit_code = 128 + signum
        super().__init__(f"terminated by {signal.Signals(signum).name}")


def _raise_terminated(signum, frame):
    raise Terminated(signum)


class SystemState:
    """Knob changes for one sweep (or one `hugebench system set`, with restore_on_exit=False)."""

    def __init__(
        self,
        host: Host = LOCAL,
        journal_path: str | Path | None = None,
        *,
        purpose: str = "sweep",
        restore_on_exit: bool = True,
    ):
        self.host = host
        self.journal_path = (
            Path(journal_path) if journal_path is not None else default_journal_path()
        )
        self.purpose = purpose
        self.restore_on_exit = restore_on_exit
        self.knobs = discover_knobs(host)
        self.restored: dict[str, tuple[str, str]] = {}
        self.restore_errors: dict[str, str] = {}
        self._record: JournalRecord | None = None
        self._previous_handlers: dict[int, Any] = {}
        self._active = False

    # -- entering and applying -------------------------------------------------------------------

    def __enter__(self) -> SystemState:
        self._record = self._adopt_or_check_journal()
        self._install_handlers()
        self._active = True
        return self

    def _adopt_or_check_journal(self) -> JournalRecord | None:
        # Successive `system set` calls share one journal, so `restore` goes back to before the first.
        if not self.restore_on_exit:
            check_state_place(self.journal_path)
            record = read_journal(self.journal_path)
            if record is not None and record.purpose == "set":
                check_roots(record, self.host, self.journal_path)
                return record
        check_no_stale_journal(self.journal_path)
        return None

    def apply(self, settings: Mapping[str, str | int]) -> dict[str, str]:
        """Write the values that differ (settings first, hugetlb pools last), each verified.

        Returns the read-back value of every knob named. A pool the kernel could not fill raises
        HugetlbShortfall after the other knobs are applied; its `.readback` holds the same dict.
        """
        if not self._active:
            raise RuntimeError("SystemState.apply() outside its `with` block")
        wanted = self._validated(settings)
        shortfalls = []
        for name in sorted(wanted, key=lambda n: self.knobs[n].is_pool):
            knob = self.knobs[name]
            if knob.read() == wanted[name]:
                continue
            self._journal_before_write(name)
            try:
                knob.write(wanted[name])
            except HugetlbShortfall as e:
                shortfalls.append(e)
        readback = {name: self.knobs[name].read() for name in wanted}
        if shortfalls:
            shortfalls[0].readback = readback
            raise shortfalls[0]
        return readback

    def _validated(self, settings: Mapping[str, str | int]) -> dict[str, str]:
        """Every name resolved and every value checked before anything is written."""
        wanted: dict[str, str] = {}
        for name, value in settings.items():
            canonical = resolve_name(name, self.knobs)
            text = self.knobs[canonical].validate(value)
            if wanted.get(canonical, text) != text:
                raise KnobValueError(
                    f"{canonical} given twice with different values: {wanted[canonical]!r}, {text!r}"
                )
            wanted[canonical] = text
        return wanted

    def _journal_before_write(self, name: str) -> None:
        if self._record is None:
            saved = {n: k.read() for n, k in self.knobs.items()}
            self._record = JournalRecord.new(self.purpose, self.host, saved)
        if name not in self._record.saved:  # an adopted journal from before this knob existed
            self._record.saved[name] = self.knobs[name].read()
        if name in self._record.touched:
            return
        self._record = self._record.with_touched(name)
        try:
            write_journal(self.journal_path, self._record)
        except OSError as e:
            raise SystemStateError(
                f"cannot write the restore journal {self.journal_path} ({e.strerror}); nothing was changed. "
                f"Point HUGEBENCH_JOURNAL at a writable file"
            ) from e

    def condition_memory(self, compact: bool = False, drop_caches: bool = False) -> dict:
        """Before a run: drop clean caches and/or compact free memory, for a comparable huge-page supply."""
        return condition_memory(self.host, compact=compact, drop_caches=drop_caches)

    def found(self, name: str) -> str:
        """The value knob ``name`` had before this sweep first wrote it (what restore puts back)."""
        if self._record is not None and name in self._record.saved:
            return self._record.saved[name]
        return self.knobs[name].read()

    def snapshot(self) -> dict[str, str]:
        """The read-back value of every knob, for each result row."""
        values = {}
        for name, knob in self.knobs.items():
            try:
                values[name] = knob.read()
            except (OSError, SystemStateError) as e:
                values[name] = f"<unreadable: {e}>"
        return values

    # -- leaving ---------------------------------------------------------------------------------

    def __exit__(self, exc_type, exc, tb) -> Literal[False]:
        if not self._active:
            return False
        self._active = False
        deferred: list[int] = []
        self._defer_signals(deferred)
        try:
            if self.restore_on_exit:
                self._restore(exc)
        finally:
            self._uninstall_handlers()
        if deferred and exc is None:
            # The signal arrived while we restored; honour it now that the machine is back.
            if deferred[0] == signal.SIGINT:
                raise KeyboardInterrupt
            raise Terminated(deferred[0])
        return False

    def _restore(self, exc: BaseException | None) -> None:
        if self._record is None:
            return  # nothing was ever written
        self.restored, self.restore_errors = restore_saved(
            self.knobs, self._record.saved, self._record.touched
        )
        if not self.restore_errors:
            remove_journal(self.journal_path)
            return
        details = "; ".join(f"{n}: {e}" for n, e in self.restore_errors.items())
        message = f"could not restore kernel knobs ({details}); journal kept at {self.journal_path}; {RESTORE_HINT}"
        if exc is None:
            raise SystemStateError(message)
        # Never hide why the sweep stopped; report the restore failure beside it.
        log.error(message)
        if hasattr(exc, "add_note"):
            exc.add_note(message)

    # -- signals ---------------------------------------------------------------------------------

    @staticmethod
    def _can_handle_signals() -> bool:
        return threading.current_thread() is threading.main_thread()

    def _install_handlers(self) -> None:
        if not self._can_handle_signals():
            return  # only the main thread may; the orchestrator runs there
        for sig in (*TERMINATING_SIGNALS, signal.SIGINT):
            self._previous_handlers.setdefault(sig, signal.getsignal(sig))
        for sig in TERMINATING_SIGNALS:
            signal.signal(sig, _raise_terminated)

    def _defer_signals(self, deferred: list[int]) -> None:
        """While restoring, a signal is only noted: an exception mid-restore would leave knobs half-done."""
        if not self._previous_handlers:
            return
        while True:
            try:
                for sig in self._previous_handlers:
                    signal.signal(sig, lambda signum, frame: deferred.append(signum))
                return
            except (
                Terminated,
                KeyboardInterrupt,
            ) as e:  # landed before we swapped the handler: retry
                deferred.append(getattr(e, "signum", signal.SIGINT))

    def _uninstall_handlers(self) -> None:
        for sig, handler in self._previous_handlers.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self._previous_handlers.clear()
