"""The rule that chooses which regions of a program get huge pages (``hugebench exec --select RULE``, the
``selective`` configuration of ``try``): parsed and checked here, handed to ``libhbselect.so`` (built from
csrc/preload/hb_select.cpp) in a normalised form through ``HUGEBENCH_SELECT``.

A rule is a comma-separated list of terms, each selecting a kind of region:

* ``anon>=SIZE``: every anonymous block of SIZE or more that the program maps (``mmap``, ``mremap``) or
  allocates (``malloc``, ``calloc``, ``realloc``, ``posix_memalign``, ...); SIZE like ``64M``, ``1G``,
  ``2097152``; at least 2 MiB (a smaller block cannot hold a huge page);
* ``anon<SIZE``: with ``anon>=``, the blocks below SIZE only (a window of sizes: ``anon>=512M,anon<1G``);
* ``site=OBJECT+0xOFFSET``: every block of 2 MiB or more allocated or mapped from that call site (the return
  address, as ``hugebench where`` names it: the object's file name and the offset in it), up to 8 sites;
* ``heap``: the ``brk`` heap, as it grows.

A region any term selects gets huge pages: ``anon>=64M,heap`` selects both kinds. The normalised form (what
the library reads) gives sizes in bytes, in a fixed order: ``anon>=67108864,anon<1073741824,site=...,heap``.

What belongs here: the rule's grammar and its errors. What does not: applying it (the C library) or
choosing a rule from what ``where`` saw (``hugebench.machine.regions``).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from hugebench.errors import SpecError, ToolMissingError

ENV_VAR = "HUGEBENCH_SELECT"
LIBRARY = "libhbselect.so"
HUGE_PAGE = 2 << 20
MAX_SIZE = 1 << 50
_SIZE = re.compile(r"([0-9]+)([kmgt]?)(?:i?b)?", re.IGNORECASE)
_SHIFT = {"": 0, "k": 10, "m": 20, "g": 30, "t": 40}
_ANON = re.compile(r"anon\s*(>=|<)\s*(\S*)", re.IGNORECASE)
_SITE = re.compile(r"site\s*=\s*(\S*)", re.IGNORECASE)
SITE_FORM = re.compile(r"[A-Za-z0-9._+-]{1,200}\+0x[0-9a-f]{1,16}")
MAX_SITES = 8
GRAMMAR = (
    "terms: anon>=SIZE (at least 2M, like 64M or 1G), anon<SIZE, site=OBJECT+0xOFFSET, heap; "
    "joined by commas"
)


@dataclass(frozen=True)
class Rule:
    """A checked rule: the smallest anonymous block selected (None: none) and whether the heap is."""

    anon_min: int | None = None
    anon_below: int | None = None
    sites: tuple[str, ...] = ()
    heap: bool = False

    def normalised(self) -> str:
        """The form libhbselect.so reads (``anon>=BYTES,anon<BYTES,site=...,heap``)."""
        terms = [f"anon>={self.anon_min}"] if self.anon_min is not None else []
        terms += [f"anon<{self.anon_below}"] if self.anon_below is not None else []
        terms += [f"site={site}" for site in self.sites]
        return ",".join(terms + (["heap"] if self.heap else []))

    def describe(self) -> str:
        """In words: 'anonymous blocks of 64 MiB or more and the heap'."""
        parts = []
        if self.anon_min is not None:
            below = f" and below {size_text(self.anon_below)}" if self.anon_below else ""
            parts.append(f"anonymous blocks of {size_text(self.anon_min)} or more{below}")
        if self.sites:
            parts.append("blocks from " + ", ".join(self.sites))
        return " and ".join(parts + (["the heap"] if self.heap else []))

    def selects(self, name: str, size: int, site: str | None = None) -> bool:
        """Whether a mapping named ``name`` ('' anonymous, '[heap]') of ``size`` bytes, made at ``site``,
        is one this rule selects (as libhbselect.so would, for a block made in one piece)."""
        if name == "[heap]":
            return self.heap
        if name != "":
            return False
        if site is not None and site in self.sites and size >= HUGE_PAGE:
            return True
        return (
            self.anon_min is not None
            and size >= self.anon_min
            and (self.anon_below is None or size < self.anon_below)
        )


def size_text(size: int) -> str:
    """64 MiB for 67108864; bytes when not a whole number of KiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if size >= 1 << shift and size % (1 << shift) == 0:
            return f"{size >> shift} {unit}"
    return f"{size} B"


def _size(text: str, term: str) -> int:
    match = _SIZE.fullmatch(text)
    if not match or len(text) > 24:
        raise SpecError(
            f"--select: {term!r}: {text!r} is not a size (a whole number with K, M, G or T: 64M, 1G)"
        )
    size = int(match.group(1)) << _SHIFT[match.group(2).lower()]
    if size < HUGE_PAGE:
        raise SpecError(
            f"--select: {term!r}: {size_text(size) if size else '0'} is below 2 MiB, the size of one "
            "huge page: a smaller block cannot hold one; give anon>=2M or more"
        )
    if size > MAX_SIZE:
        raise SpecError(f"--select: {term!r}: {text} is larger than any machine's memory")
    return size


def parse(text: str) -> Rule:
    """A rule from its text; SpecError naming the bad term and the grammar otherwise."""
    if not isinstance(text, str) or not text.strip():
        raise SpecError(f"--select: the rule is empty; {GRAMMAR}")
    anon: dict[str, int] = {}
    sites: list[str] = []
    heap = False
    for raw in text.split(","):
        term = raw.strip()
        if not term:
            raise SpecError(f"--select: {text!r} has an empty term (two commas or a trailing one)")
        bound, site = _ANON.fullmatch(term), _SITE.fullmatch(term)
        if term.lower() == "heap":
            if heap:
                raise SpecError(f"--select: {text!r} names heap twice")
            heap = True
        elif bound:
            if bound.group(1) in anon:
                raise SpecError(f"--select: {text[:80]!r} has two anon{bound.group(1)} terms")
            anon[bound.group(1)] = _size(bound.group(2), term)
        elif site:
            sites.append(_site(site.group(1), term, len(sites)))
        else:
            raise SpecError(f"--select: unknown term {term[:40]!r} in {text[:80]!r}; {GRAMMAR}")
    if "<" in anon and anon["<"] <= anon.get(">=", HUGE_PAGE):
        raise SpecError(
            f"--select: {text[:80]!r}: anon<{size_text(anon['<'])} leaves no size "
            f"(blocks start at {size_text(anon.get('>=', HUGE_PAGE))})"
        )
    low = anon.get(">=", HUGE_PAGE if "<" in anon else None)
    return Rule(low, anon.get("<"), tuple(dict.fromkeys(sites)), heap)


def _site(value: str, term: str, count: int) -> str:
    if not SITE_FORM.fullmatch(value):
        raise SpecError(
            f"--select: {term[:80]!r}: a site is OBJECT+0xOFFSET as `hugebench where` prints it "
            "(the file name of the object and a hex offset in it), like site=myprog+0x1139"
        )
    if count >= MAX_SITES:
        raise SpecError(f"--select: more than {MAX_SITES} site= terms")
    return value


def library() -> str:
    """Path of ``libhbselect.so`` installed beside the package (built from csrc/preload/hb_select.cpp)."""
    path = Path(__file__).resolve().parents[1] / LIBRARY
    if not path.is_file():
        raise ToolMissingError(
            f"{path} is missing: reinstall hugebench (pip install .) to build its select library"
        )
    return str(path)


def deploy_environment(rule: Rule, env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The variables that deploy ``rule``: libhbselect first in LD_PRELOAD (before any preload already in
    ``env``, so that its malloc wrapper calls that one's malloc) and the normalised rule."""
    before = (env or {}).get("LD_PRELOAD", "")
    preload = " ".join(p for p in (library(), before) if p)
    return {"LD_PRELOAD": preload, ENV_VAR: rule.normalised()}


def deploy_line(rule: Rule, argv: Sequence[str], env: Mapping[str, str] | None = None) -> str:
    """The shell line that runs ``argv`` with ``rule`` deployed, as a user would type it."""
    variables = deploy_environment(rule, env)
    return " ".join(
        [*(f"{k}={shlex.quote(v)}" for k, v in variables.items()), *map(shlex.quote, argv)]
    )
