"""Every error of an experiment file at once: checks that do not depend on each other run one after the
other, each error kept (with its file, line and key), and the file is refused with all of them together.

What belongs here: gathering the SpecErrors of independent checks and raising them as one. A check whose
input had an error is not run (its complaint would only repeat the first one): the callers in ``validation``
decide that. Whole-product checks that need a complete spec still stop at their first error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hugebench.errors import SpecError

MAX_SHOWN = 20  # errors listed; more are counted


class Collected:
    """The errors found so far in one file (``source``)."""

    def __init__(self, source: str):
        self.source = source
        self.errors: list[SpecError] = []

    def add(self, error: SpecError) -> None:
        self.errors.append(error)

    def take(self, check: Callable[..., Any], *args, default: Any = None) -> Any:
        """``check(*args)``, or ``default`` with its SpecError kept (any other error propagates)."""
        try:
            return check(*args)
        except SpecError as exc:
            self.add(exc)
            return default

    def raise_any(self) -> None:
        """Refuse the file if anything was found: one error as itself, several as one SpecError listing each
        on its own line."""
        if len(self.errors) == 1:
            raise self.errors[0]
        if self.errors:
            lines = [str(e) for e in self.errors[:MAX_SHOWN]]
            more = len(self.errors) - len(lines)
            tail = [f"... and {more} more"] if more else []
            raise SpecError(
                f"{self.source}: {len(self.errors)} errors:\n" + "\n".join(lines + tail)
            )
