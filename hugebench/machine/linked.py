"""Which allocator a program brings of its own, read from its ELF file before anything runs.

``try`` measures a program as-is (nothing preloaded) and, only when the program brings another malloc than
glibc's, also "glibc forced over the linked X" (libc preloaded so that glibc's malloc wins). The program
brings one when a shared object it needs (``DT_NEEDED``, followed through the libraries' own needs, as the
loader's search finds them) is a known malloc library (Debian's redis-server needs ``libjemalloc.so.2``), or
when the executable itself defines and exports ``malloc`` (an allocator linked statically into it). What
really served malloc is proved in the run by the probe library; this is only the decision what to offer.
pyelftools reads the files.
"""

from __future__ import annotations

import os

from hugebench.machine.allocators import KNOWN_MALLOC_LIBS, find_library, served_name

MAX_OBJECTS = 200  # shared objects followed before giving up (a real program needs a few dozen)


def _elf(path: str):
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        f = open(path, "rb")
    except OSError:
        return None, None
    try:
        return f, ELFFile(f)
    except (ELFError, OSError, ValueError):
        f.close()
        return None, None


def _read(path: str, symbols: bool = True) -> tuple[list[str], list[str], bool]:
    """(DT_NEEDED names, DT_RUNPATH/DT_RPATH dirs, defines and exports malloc) of one ELF file; without
    ``symbols`` the symbol table is not read and the third is False (a library's exports decide nothing,
    and reading libc's ~3 000 symbols took ~0.3 s of every try's start)."""
    f, elf = _elf(path)
    if elf is None:
        return [], [], False
    try:
        needed, paths, exports = [], [], False
        dynamic = elf.get_section_by_name(".dynamic")
        if dynamic is not None and hasattr(dynamic, "iter_tags"):
            for tag in dynamic.iter_tags():
                if tag.entry.d_tag == "DT_NEEDED":
                    needed.append(tag.needed)
                elif tag.entry.d_tag in ("DT_RUNPATH", "DT_RPATH"):
                    where = os.path.dirname(path)
                    raw = str(getattr(tag, "runpath", None) or getattr(tag, "rpath", ""))
                    paths += [d.replace("$ORIGIN", where) for d in raw.split(":") if d]
        dynsym = elf.get_section_by_name(".dynsym") if symbols else None
        if dynsym is not None and hasattr(dynsym, "get_symbol_by_name"):
            for sym in dynsym.get_symbol_by_name("malloc") or []:
                exports = exports or sym["st_shndx"] != "SHN_UNDEF"
        return needed, paths, exports
    except Exception:  # a malformed file: pyelftools raises many kinds; it offers nothing then
        return [], [], False
    finally:
        f.close()


def _find(name: str, dirs: list[str]) -> str | None:
    for d in dirs:
        candidate = os.path.join(d, name)
        if os.path.isfile(candidate):
            return candidate
    found = find_library(name)
    return str(found) if found else None


def linked_allocator(program: str | None) -> str | None:
    """The allocator ``program`` (an absolute path) brings besides glibc's malloc, in one word ('jemalloc',
    'tcmalloc', 'static in NAME'), or None: it brings none, or it is not an ELF file we can read (a script is
    judged as it runs, by the probe)."""
    if not program or not os.path.isfile(program):
        return None
    needed, dirs, exports = _read(program)
    if exports:
        return served_name(os.path.realpath(program), program)
    seen: set[str] = set()
    queue = [(n, dirs) for n in needed]
    while queue and len(seen) < MAX_OBJECTS:
        name, search = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        if KNOWN_MALLOC_LIBS.search(name):
            return served_name(name)
        path = _find(name, search)
        if path is None:
            continue
        more, more_dirs, _ = _read(path, symbols=False)
        queue += [(n, more_dirs) for n in more if n not in seen]
    return None
