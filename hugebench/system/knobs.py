"""Every huge-page kernel knob as a small object: parse, read, and a write that is verified by reading back.

All I/O goes through the `Host`'s writer (`hugebench.kernel.Host.io`) so tests can point knobs at a fake /sys
tree that behaves like the kernel (or misbehaves on purpose). The host is a parameter; nothing here assumes the
real /sys or /proc.
"""

from __future__ import annotations

import difflib
import errno
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

from hugebench import kernel
from hugebench import knob_catalogue as catalogue
from hugebench.errors import PrivilegeError, SystemStateError
from hugebench.kernel import reporting as page_reporting
from hugebench.kernel.host import LOCAL, Host, SysfsIO
from hugebench.knob_catalogue import DEFAULT_POOL, REPORTING_ORDER

UINT_MAX = catalogue.UINT_MAX
POOL_MEMORY_SHARE = (
    0.9  # a hugetlb pool may take at most this share of MemAvailable (+ its current pages)
)

ALIASES = catalogue.ALIASES  # short names (thp, hugetlb), declared in hugebench.knob_catalogue
# Free page reporting's smallest reported block (hugebench.kernel.reporting): 9 reports free 2 MiB blocks to
# the host, which takes them back; one above the largest buddy order (11 on x86-64) reports nothing. This
# kernel (6.18) takes 0..11 and refuses 12 with EINVAL; a kernel that caps it at its largest order cannot hold
# reporting off, and says so when 11 is written.
REPORTING_KNOB = catalogue.BY_NAME[REPORTING_ORDER].name


class UnknownKnobError(SystemStateError):
    """A knob name that this kernel does not have (or that hugebench does not know)."""


class KnobValueError(SystemStateError):
    """A value outside what the knob allows; raised before anything is written."""


class HugetlbShortfall(SystemStateError):
    """The kernel gave fewer (or more) persistent huge pages than asked; the pool now holds `got`."""

    def __init__(self, name: str, path: Path, asked: int, got: int):
        self.name, self.path, self.asked, self.got = name, path, asked, got
        self.readback: dict[str, str] = {}  # every knob as read back after the writes (SystemState)
        super().__init__(
            f"{name}: asked the kernel for {asked} huge pages in {path}, it gave {got} "
            f"(too little free memory, or too fragmented: compact memory first, or ask for fewer)"
        )


@dataclass(frozen=True)
class Knob:
    """One kernel file. kind: 'choice' (bracketed list), 'int' (bounded integer) or 'pool' (hugetlb pages)."""

    name: str
    root: Path
    rel: str
    kind: str
    minimum: int = 0
    maximum: int | None = None
    host: Host = LOCAL  # the machine: its writer, and (pools) where /proc/meminfo is
    page_kb: int = 0  # pools: the huge page size, which bounds the pool by the machine's memory
    least_nonzero: int = 0  # int knobs: values between 0 and this are refused (0 itself is allowed)
    named: tuple = ()  # int knobs: (word, value) a file may give instead of the number ('off' -> '11')

    @property
    def path(self) -> Path:
        return self.root / self.rel

    @property
    def is_pool(self) -> bool:
        return self.kind == "pool"

    def _io(self) -> SysfsIO:
        return self.host.io

    def reading(self) -> kernel.Reading:
        text = self._io().read_text(self.path)
        try:
            reading = kernel.parse_choice(text)
        except ValueError as e:
            raise SystemStateError(f"cannot parse {self.path}: {e}") from None
        if self.kind != "choice":
            reading = kernel.Reading(str(int(reading.value)))
        return reading

    def read(self) -> str:
        return self.reading().value

    def choices(self) -> tuple[str, ...]:
        return self.reading().choices if self.kind == "choice" else ()

    def allowed(self) -> str:
        """Human description of the accepted values, for messages and `system show`."""
        if self.kind == "choice":
            return " ".join(self.choices())
        top = "" if self.maximum is None else str(self.maximum)
        words = "".join(f", or {word} ({value})" for word, value in self.named)
        if self.least_nonzero > 1 and self.minimum == 0:
            return f"0 or {self.least_nonzero}..{top}{words}"
        return f"{self.minimum}..{top}{words}"

    def validate(self, value: str | int) -> str:
        """Normalise `value` or raise KnobValueError listing what is accepted. Writes nothing."""
        text = str(value).strip()
        if self.kind == "choice":
            choices = self.choices()
            if text not in choices:
                raise KnobValueError(
                    f"{self.name}={text!r} is not accepted by {self.path}; choose one of: {', '.join(choices)}"
                )
            return text
        text = dict(self.named).get(text, text)
        try:
            number = int(text)
        except ValueError:
            raise KnobValueError(
                f"{self.name}={text!r}: {self.path} takes an integer ({self.allowed()})"
            ) from None
        if (
            number < self.minimum
            or (self.maximum is not None and number > self.maximum)
            or 0 < number < self.least_nonzero
        ):
            raise KnobValueError(
                f"{self.name}={_shown(number)} is out of range for {self.path} ({self.allowed()})"
            )
        if self.is_pool:
            self._check_pool_fits(number)
        return str(number)

    def _check_pool_fits(self, pages: int) -> None:
        """Refuse a pool the machine cannot give without running out of memory (the kernel would try)."""
        meminfo = kernel.read_meminfo(self.host)
        free = meminfo.get("MemAvailable", meminfo.get("MemTotal"))
        if not free or not self.page_kb:
            return
        page = self.page_kb * 1024
        held = int(self.read()) * page  # what the pool holds now comes back when it is resized
        most = int((free + held) * POOL_MEMORY_SHARE) // page
        if pages > most:
            asked = (
                f"{pages * page / 2**30:,.1f} GiB of huge pages"
                if pages < 2**60
                else "more memory than any machine has"
            )
            raise KnobValueError(
                f"{self.name}={_shown(pages)} would reserve {asked}; this machine "
                f"can give at most {most} ({most * page / 2**30:,.1f} GiB: {POOL_MEMORY_SHARE:.0%} of its "
                f"available memory plus what the pool holds now)"
            )

    def write(self, value: str | int) -> str:
        """Write, then read back. Returns the read-back value; raises if the kernel did not take it."""
        wanted = self.validate(value)
        try:
            self._io().write_text(self.path, wanted + "\n")
        except OSError as e:
            raise self._write_error(wanted, e) from e
        got = self.read()
        if got == wanted:
            return got
        if self.is_pool:
            raise HugetlbShortfall(self.name, self.path, int(wanted), int(got))
        raise SystemStateError(
            f"the kernel ignored {wanted!r} written to {self.path}: it still reads {got!r}"
        )

    def _write_error(self, wanted: str, e: OSError) -> SystemStateError | PrivilegeError:
        if e.errno in (errno.EACCES, errno.EPERM):
            return PrivilegeError(
                f"writing {wanted!r} to {self.path} needs root: run hugebench with sudo, or "
                f"`echo {wanted} | sudo tee {self.path}`"
            )
        if e.errno == errno.EROFS:
            return SystemStateError(
                f"{self.path} is read-only here (a container?); cannot set {wanted!r}"
            )
        return SystemStateError(
            f"the kernel refused {wanted!r} written to {self.path}: {e.strerror}"
        )


def _thp_specs(host: Host, pmd_ptes: int) -> list[tuple[str, str, str, int, int | None]]:
    """(name, path relative to the /sys root, kind, min, max) for every THP knob in the catalogue, mTHP sizes
    included (which files exist is the caller's test)."""
    decls = [d for d in catalogue.DECLARED if d.family in ("thp", "khugepaged")]
    decls += [catalogue.mthp_decl(size_kb) for size_kb in kernel.mthp_sizes_kb(host)]
    decls += [catalogue.mthp_shmem_decl(kb) for kb in kernel.mthp_shmem_sizes_kb(host)]
    return [(d.name, d.path, d.kind, d.minimum, _top(d, pmd_ptes)) for d in decls]


def _top(decl: catalogue.KnobDecl, pmd_ptes: int) -> int | None:
    """A declaration's maximum on this machine (``PTES``: base pages per PMD huge page, less one)."""
    if decl.maximum == catalogue.PTES:
        return pmd_ptes - 1
    return decl.maximum if isinstance(decl.maximum, int) else None


def _pmd_ptes(host: Host) -> int:
    """Base pages per PMD huge page (512 on x86-64), which bounds khugepaged's max_ptes_* knobs."""
    pmd_size = kernel.hpage_pmd_size(host) or 2 * 1024 * 1024
    return max(1, pmd_size // os.sysconf("SC_PAGE_SIZE"))


def _hugetlb_knobs(host: Host) -> list[Knob]:
    """The catalogue's hugetlb pools this kernel has. /proc/sys/vm/nr_hugepages is the pool of the *default*
    huge page size: hugetlb.2MB uses it only when that size is 2 MiB, else the per-size sysfs file."""
    knobs = []
    for d in catalogue.DECLARED:
        if d.family != "hugetlb":
            continue
        root, rel = host.sys, d.path
        if d.page_kb == 2048 and Path(host.proc, DEFAULT_POOL).exists():
            if kernel.default_hugepage_kb(host) in (2048, None):
                root, rel = host.proc, DEFAULT_POOL
        if Path(root, rel).exists():
            knobs.append(Knob(d.name, root, rel, "pool", host=host, page_kb=d.page_kb))
    return knobs


def discover_knobs(host: Host = LOCAL) -> dict[str, Knob]:
    """Every huge-page knob this kernel has, by name (see ALIASES for short names), written by ``host.io``."""
    knobs = {}
    for name, rel, kind, lo, hi in _thp_specs(host, _pmd_ptes(host)):
        if (host.sys / rel).exists():
            knobs[name] = Knob(name, host.sys, rel, kind, lo, hi, host)
    for knob in _hugetlb_knobs(host):
        knobs[knob.name] = knob
    for d in catalogue.DECLARED:
        if d.family == "vm" and (host.proc / d.path).exists():
            top = _top(d, _pmd_ptes(host))
            knobs[d.name] = Knob(
                d.name,
                host.proc,
                d.path,
                d.kind,
                d.minimum,
                top,
                host,
                least_nonzero=d.least_nonzero,
            )
    if (host.sys / page_reporting.ORDER_FILE).exists():
        top = page_reporting.buddy_orders(host) or 11
        knobs[REPORTING_KNOB] = Knob(
            REPORTING_KNOB,
            host.sys,
            page_reporting.ORDER_FILE,
            "int",
            0,
            top,
            host,
            named=(("off", str(top)),),  # above the largest order: nothing is reported
        )
    return knobs


def resolve_name(name: str, known: Iterable[str] | Mapping[str, Knob] | None = None) -> str:
    """Canonical knob name for `name` (aliases allowed); an unknown name lists the known ones."""
    if known is None:
        known = discover_knobs()
    known = list(known)
    canonical = catalogue.canonical(name)
    if canonical in known:
        return canonical
    close = difflib.get_close_matches(canonical, known, n=3)
    hint = f" (did you mean {', '.join(close)}?)" if close else ""
    raise UnknownKnobError(
        f"unknown kernel knob {name!r}{hint}; this kernel has: {', '.join(known)}; "
        f"aliases: {', '.join(f'{a}={c}' for a, c in ALIASES.items())}"
    )


def _shown(number: int) -> str:
    """A knob value as an error shows it: a 400-digit number by its size, not its digits."""
    text = str(number)
    return text if len(text) <= 24 else f"{text[:20]}... ({len(text.lstrip('-'))} digits)"
