"""Will ``LD_PRELOAD`` take in this program? Answered before the run, from the file alone.

The dynamic loader is what reads ``LD_PRELOAD``, so it is ignored by a program without one (a static or
static-pie ELF: no ``PT_INTERP`` program header), by one the kernel runs in secure-execution mode (the
setuid/setgid bit changes its ids, or it gains file capabilities), and by one built for another ELF class or
machine than ours (the loader refuses our 64-bit libraries). A ``#!`` script is judged by its interpreter,
and ``#!/usr/bin/env NAME`` by NAME on PATH. The probe files (:mod:`.probe`) prove it afterwards; this
module gives the clear error up front.
"""

from __future__ import annotations

import functools
import os
import stat
import struct
import sys
from dataclasses import dataclass

from hugebench.machine.program import resolve

PT_DYNAMIC, PT_INTERP = 2, 3
ET_DYN = 3
PN_XNUM = 0xFFFF
_MAX_SCRIPT_DEPTH = 4  # the kernel follows at most a few interpreters (BINPRM recursion limit)
_SHEBANG_MAX = 256  # the kernel reads the #! line from the first BINPRM_BUF_SIZE bytes


@dataclass(frozen=True)
class ElfInfo:
    """What matters of an ELF file for preloading."""

    bits: int  # 32 or 64
    little_endian: bool
    machine: int  # e_machine (62 = x86-64, 183 = aarch64)
    type: int  # e_type (2 = EXEC, 3 = DYN)
    has_interp: bool  # a PT_INTERP program header: the dynamic loader runs it
    has_dynamic: bool

    @property
    def static_kind(self) -> str | None:
        """'static-pie', 'statically linked' or None (dynamically linked)."""
        if self.has_interp:
            return None
        return "static-pie" if self.type == ET_DYN and self.has_dynamic else "statically linked"


class ElfFormatError(ValueError):
    """The bytes are not a well-formed ELF file."""


def _header_layout(ident: bytes) -> tuple[int, str]:
    if len(ident) < 16 or ident[:4] != b"\x7fELF":
        raise ElfFormatError("no ELF magic")
    if ident[4] not in (1, 2) or ident[5] not in (1, 2):
        raise ElfFormatError(f"bad ELF class {ident[4]} or data encoding {ident[5]}")
    return (32 if ident[4] == 1 else 64), ("<" if ident[5] == 1 else ">")


def read_elf(f) -> ElfInfo:
    """Parse the ELF header and program headers of a binary file object (``struct``, 32/64-bit, LE/BE)."""
    head = f.read(64)
    bits, order = _header_layout(head)
    if bits == 64:
        fmt, shinfo_at = order + "HHIQQQIHHHHHH", 44
    else:
        fmt, shinfo_at = order + "HHIIIIIHHHHHH", 28
    if len(head) < 16 + struct.calcsize(fmt):
        raise ElfFormatError("truncated ELF header")
    e_type, machine, _, _, phoff, shoff, _, _, phentsize, phnum, shentsize, _, _ = (
        struct.unpack_from(fmt, head, 16)
    )
    if phnum == PN_XNUM:  # the real count is in section header 0's sh_info
        f.seek(shoff + shinfo_at)
        (phnum,) = struct.unpack(order + "I", _exactly(f, 4))
    types = set()
    for i in range(phnum):
        f.seek(phoff + i * phentsize)
        (p_type,) = struct.unpack(order + "I", _exactly(f, 4))
        types.add(p_type)
    return ElfInfo(bits, order == "<", machine, e_type, PT_INTERP in types, PT_DYNAMIC in types)


def _exactly(f, n: int) -> bytes:
    data = f.read(n)
    if len(data) != n:
        raise ElfFormatError("program headers run past the end of the file")
    return data


def _resolve(
    program: str, path_env: str | None, cwd: str | None = None
) -> tuple[str | None, str | None]:
    """(absolute path, None) or (None, why it cannot be run): the one lookup of :mod:`.program`."""
    return resolve(program, path_env, cwd)


def _secure_execution(path: str, st: os.stat_result) -> str | None:
    """Why the kernel would run ``path`` in secure-execution mode (the loader then ignores LD_PRELOAD)."""
    try:
        nosuid = bool(os.statvfs(path).f_flag & os.ST_NOSUID)
    except OSError:
        nosuid = False
    if not nosuid:
        if st.st_mode & stat.S_ISUID and st.st_uid != os.getuid():
            return f"{path} is setuid (owner uid {st.st_uid}): the loader ignores LD_PRELOAD in setuid programs"
        if st.st_mode & stat.S_ISGID and st.st_gid != os.getgid():
            return f"{path} is setgid (group gid {st.st_gid}): the loader ignores LD_PRELOAD in setgid programs"
    if os.geteuid() != 0 and _has_file_capabilities(path):
        return f"{path} has file capabilities (getcap {path}): the loader ignores LD_PRELOAD in it"
    return None


def _has_file_capabilities(path: str) -> bool:
    try:
        return bool(os.getxattr(path, "security.capability"))
    except (OSError, AttributeError):
        return False


@functools.cache
def _own_platform() -> tuple[int, int] | None:
    """(ELF class bits, e_machine) of this Python: the platform our preload libraries are built for."""
    try:
        with open(os.path.realpath(sys.executable), "rb") as f:
            info = read_elf(f)
    except (OSError, ElfFormatError):
        return None
    return info.bits, info.machine


def _why_elf(path: str, info: ElfInfo) -> str | None:
    if info.static_kind:
        return f"{path} is {info.static_kind}: it has no dynamic loader to read LD_PRELOAD"
    own = _own_platform()
    if own is not None and own != (info.bits, info.machine):
        return (
            f"{path} is a {info.bits}-bit ELF for machine {info.machine}, but the preload libraries are "
            f"{own[0]}-bit for machine {own[1]}: its loader cannot load them"
        )
    return None


def _shebang_target(line: bytes, path_env: str | None) -> str:
    """The program a ``#!`` line really runs: its interpreter, or NAME for ``#!/usr/bin/env [-S] NAME``."""
    words = line[2:].decode("utf-8", "surrogateescape").split()
    if not words:
        return ""
    interpreter, args = words[0], words[1:]
    if os.path.basename(interpreter) == "env":
        names = [w for w in args if not w.startswith("-") and "=" not in w]
        if names:
            return names[0]
    return interpreter


def _why_file(path: str, path_env: str | None, depth: int) -> str | None:
    st = os.stat(path)
    reason = _secure_execution(path, st)
    if reason:
        return reason
    try:
        with open(path, "rb") as f:
            head = f.read(_SHEBANG_MAX)
            if head.startswith(b"\x7fELF"):
                f.seek(0)
                return _why_elf(path, read_elf(f))
    except ElfFormatError as exc:
        return f"{path} is not a well-formed ELF file ({exc})"
    except OSError:
        return None  # execute-only: we cannot tell; the probe files will
    if not head.startswith(b"#!"):
        return f"{path} is neither an ELF executable nor a #! script"
    if depth >= _MAX_SCRIPT_DEPTH:
        return f"{path}: #! interpreters nest more than {_MAX_SCRIPT_DEPTH} deep"
    target = _shebang_target(head.split(b"\n", 1)[0], path_env)
    if not target:
        return f"{path} has an empty #! line"
    return _why(target, path_env, depth + 1, script=path)


def _why(
    program: str,
    path_env: str | None,
    depth: int,
    script: str | None = None,
    cwd: str | None = None,
) -> str | None:
    path, reason = _resolve(program, path_env, cwd)
    if path is not None:
        reason = _why_file(path, path_env, depth)
    if reason and script:
        return f"{script} runs {program}, and {reason}"
    return reason


def why_preload_cannot_take(
    program: str, path_env: str | None = None, cwd: str | None = None
) -> str | None:
    """Why ``LD_PRELOAD`` would not take effect in ``program``, or None when it would.

    ``program`` is resolved like ``execvp`` does (:func:`.program.resolve`), on ``path_env`` (default: our
    PATH) from ``cwd``; pass the resolved absolute path to judge exactly the file that will run. Reasons: not found
    or not executable; setuid/setgid to other ids or with file capabilities (secure execution); statically
    linked (static-pie included); another ELF class or machine; for a ``#!`` script, any of these of its
    interpreter.
    """
    return _why(program, path_env, depth=0, cwd=cwd)


MALLOC_SYMBOLS = ("malloc", "free")  # what a library preloaded as the allocator must define
_MAX_SYMBOLS = 1_000_000  # a hostile symbol count stops the scan, not the machine


def why_not_allocator(path: str) -> str | None:
    """Why the file at ``path`` cannot be preloaded as a malloc library, or None when it can: an ELF
    shared object of our class and machine whose dynamic symbol table defines ``malloc`` and ``free``
    (the loader binds the program's calls to the first object that defines them). Read with pyelftools;
    nothing of the file is loaded or run."""
    from elftools.common.exceptions import ELFError
    from elftools.elf.elffile import ELFFile

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)  # a FIFO must not block us
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return f"{path} is not a regular file"
            if f.read(4) != b"\x7fELF":
                return f"{path} is not an ELF shared object (no ELF magic)"
            f.seek(0)
            info = read_elf(f)
            if info.type != ET_DYN:
                return f"{path} is an ELF executable, not a shared object (.so) to preload"
            why = _why_platform(path, info)
            if why:
                return why
            defined = _defined_dynamic(ELFFile(f), set(MALLOC_SYMBOLS))
    except OSError as exc:
        return f"{path}: cannot read it ({exc.strerror or exc})"
    except (ElfFormatError, ELFError, ValueError, KeyError, IndexError, struct.error) as exc:
        return f"{path} is not a well-formed ELF file ({str(exc)[:120] or type(exc).__name__})"
    missing = [name for name in MALLOC_SYMBOLS if name not in defined]
    if missing:
        return (
            f"{path} defines no {' and no '.join(missing)} in its dynamic symbol table: preloaded, "
            "it would not replace the program's allocator (is it a malloc library?)"
        )
    return None


def _why_platform(path: str, info: ElfInfo) -> str | None:
    own = _own_platform()
    if own is not None and own != (info.bits, info.machine):
        return (
            f"{path} is a {info.bits}-bit ELF for machine {info.machine}, but our programs are "
            f"{own[0]}-bit for machine {own[1]}: the loader cannot preload it"
        )
    return None


def _defined_dynamic(elf, wanted: set[str]) -> set[str]:
    """The names of ``wanted`` that ``elf`` defines (functions, not undefined imports) for the loader:
    from the .dynsym section, or the dynamic segment where the section headers were stripped."""
    tables = [s for s in elf.iter_sections() if s["sh_type"] == "SHT_DYNSYM"]
    if not tables:
        tables = [s for s in elf.iter_segments() if s["p_type"] == "PT_DYNAMIC"]
    found: set[str] = set()
    for table in tables:
        for i, symbol in enumerate(table.iter_symbols()):
            if i >= _MAX_SYMBOLS or found == wanted:
                break
            if (
                symbol.name in wanted
                and symbol["st_shndx"] != "SHN_UNDEF"
                and symbol["st_info"]["type"] in ("STT_FUNC", "STT_GNU_IFUNC")
                and symbol["st_info"]["bind"] in ("STB_GLOBAL", "STB_WEAK")
            ):
                found.add(symbol.name)
    return found
