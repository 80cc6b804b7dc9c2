"""Allocator registry: a name -> the checked ``.so`` to LD_PRELOAD, its environment knobs, and proof it is mapped.

The built-in entries know Debian's packages. Huge-page-aware variants are the same library with its knobs:

* ``jemalloc-thp``: ``MALLOC_CONF=thp:always,metadata_thp:always``
* ``mimalloc-large``: ``MIMALLOC_LARGE_OS_PAGES=1`` — mimalloc 2.0.9 reads this name (its option is
  ``large_os_pages``); ``MIMALLOC_ALLOW_LARGE_OS_PAGES`` is silently ignored by that version.
* ``jemalloc-hpa``: ``MALLOC_CONF=hpa:true`` — jemalloc 5.3's huge-page allocator (the closest packaged
  relative of TCMalloc's Temeraire), verified by ``mallctl("opt.hpa")``. It hugifies a 2 MiB pageslab only
  after the slab has stayed nearly full for ``hpa_hugify_delay_ms`` (10 s by default), so a run shorter than
  that plus a margin shows none of it: :meth:`Allocator.min_duration_s`, enforced on ``duration_s`` when a
  spec is loaded.
* ``glibc-hugetlb``: ``GLIBC_TUNABLES=glibc.malloc.hugetlb=1`` (madvise(MADV_HUGEPAGE) on glibc's heaps;
  it only changes anything when THP ``enabled`` is ``madvise``).

``as-is`` is the program untouched: no allocator preloaded, so whatever malloc the program brings (glibc's, or
one it links, as Debian's redis-server links jemalloc) serves it, and the probe records which one did
(``allocator_served``). ``glibc`` is glibc's malloc *forced*: for a program linked against another allocator
the measured process gets libc itself preloaded so that glibc's malloc wins (hugebench.run.supervisor).

``void`` is not a library: the workload runs its loop against a pre-touched buffer (the alloc-test harness
cost), so it takes no preload. A YAML file adds others (e.g. a Bazel-built Google TCMalloc) by name and path.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from hugebench._util import run_text
from hugebench.errors import SpecError, ToolMissingError
from hugebench.machine.environment import env_name_problem, os_string_problem, probe_library

# Libraries whose presence in a process's maps means "a non-glibc malloc is active".
KNOWN_MALLOC_LIBS = re.compile(
    r"lib(jemalloc|tcmalloc\w*|mimalloc\w*|hoard|tbbmalloc\w*|snmalloc\w*)[.-]"
)

_LIB_DIRS = (
    "/usr/lib/x86_64-linux-gnu",
    "/lib/x86_64-linux-gnu",
    "/usr/lib/aarch64-linux-gnu",
    "/lib/aarch64-linux-gnu",
    "/usr/lib64",
    "/usr/local/lib",
    "/usr/lib",
)


@dataclass(frozen=True)
class Allocator:
    """One allocator as a sweep uses it: what to preload, which environment knobs, which Debian package."""

    name: str
    library: str | None = (
        None  # soname searched in the linker's dirs, or an absolute path; None = glibc
    )
    env: Mapping[str, str] = field(default_factory=dict)
    package: str | None = None
    mode: str = "malloc"  # "void" = harness-only run (no allocator at all); "as-is" = no preload
    description: str = ""
    expect: Mapping[str, object] = field(
        default_factory=dict
    )  # probe_knobs() values the knobs must produce

    def min_duration_s(self) -> float:
        """Shortest run that shows this allocator's steady behaviour (jemalloc's HPA: hugify delay + margin)."""
        return hpa_min_duration_s(self.env)

    def resolve(self) -> Path | None:
        """Absolute, existing path of the library (None for glibc/void); ToolMissingError with the fix otherwise."""
        if self.library is None:
            return None
        path = find_library(self.library)
        if path is None:
            if self.package:
                fix = f"install it: apt-get install {self.package}"
            else:
                fix = "check the path given for it under 'allocators:' in the YAML"
            raise ToolMissingError(
                f"allocator {self.name!r}: library {self.library} not found; {fix}"
            )
        return path

    def environment(self) -> dict[str, str]:
        """Variables the worker's environment gets for this allocator (LD_PRELOAD included)."""
        env = dict(self.env)
        path = self.resolve()
        if path is not None:
            env["LD_PRELOAD"] = str(path)
        return env

    def describe(self) -> dict:
        """Provenance of this allocator: resolved path, package version, knobs."""
        try:
            path = self.resolve()
        except ToolMissingError as exc:
            return {
                "name": self.name,
                "path": None,
                "version": None,
                "env": dict(self.env),
                "error": str(exc),
            }
        return {
            "name": self.name,
            "path": str(path) if path else None,
            "version": library_version(self.package, path),
            "env": dict(self.env),
            "mode": self.mode,
            "expect": dict(self.expect),
        }


HPA_DEFAULT_DELAY_MS = 10_000  # jemalloc 5.3's opt.hpa_hugify_delay_ms
HPA_MARGIN_S = 2.0  # after the delay: a purge/hugify pass runs on the next allocator call (no background thread)


def hpa_min_duration_s(env: Mapping[str, str]) -> float:
    """Seconds a run needs under MALLOC_CONF with hpa:true (0 without it): hugify delay + margin."""
    conf = dict(item.split(":", 1) for item in env.get("MALLOC_CONF", "").split(",") if ":" in item)
    if conf.get("hpa") != "true":
        return 0.0
    return int(conf.get("hpa_hugify_delay_ms", HPA_DEFAULT_DELAY_MS)) / 1000 + HPA_MARGIN_S


def _builtin() -> dict[str, Allocator]:
    jemalloc, tcmalloc, mimalloc = (
        "libjemalloc.so.2",
        "libtcmalloc_minimal.so.4",
        "libmimalloc.so.2",
    )
    entries = [
        Allocator(
            "as-is",
            mode="as-is",
            description="the program untouched: no preload, the malloc it brings (glibc's or one it links)",
        ),
        Allocator("glibc", description="glibc ptmalloc (forced over a linked allocator)"),
        Allocator(
            "glibc-hugetlb",
            env={"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"},
            description="glibc with MADV_HUGEPAGE on its heaps",
        ),
        Allocator("jemalloc", jemalloc, package="libjemalloc2"),
        Allocator(
            "jemalloc-thp",
            jemalloc,
            env={"MALLOC_CONF": "thp:always,metadata_thp:always"},
            package="libjemalloc2",
            description="jemalloc asking THP for its extents and metadata",
            expect={"jemalloc.opt.thp": "always", "jemalloc.opt.metadata_thp": "always"},
        ),
        Allocator(
            "jemalloc-hpa",
            jemalloc,
            env={"MALLOC_CONF": "hpa:true"},
            package="libjemalloc2",
            description="jemalloc 5.3's huge-page allocator (HPA), hugify delay 10 s",
            expect={"jemalloc.opt.hpa": True},
        ),
        Allocator(
            "tcmalloc",
            tcmalloc,
            package="libtcmalloc-minimal4",
            description="gperftools TCMalloc (not the huge-page-aware Google TCMalloc)",
        ),
        Allocator("mimalloc", mimalloc, package="libmimalloc2.0"),
        Allocator(
            "mimalloc-large",
            mimalloc,
            env={"MIMALLOC_LARGE_OS_PAGES": "1"},
            package="libmimalloc2.0",
            description="mimalloc with large (2 MiB) OS pages",
            expect={"mimalloc.large_os_pages": True},
        ),
        Allocator("void", mode="void", description="no allocator: the harness cost of alloc-test"),
    ]
    return {a.name: a for a in entries}


BUILTIN: dict[str, Allocator] = _builtin()


def registry(user: Mapping[str, Mapping] | None = None) -> dict[str, Allocator]:
    """Built-in allocators plus user-defined ones from a YAML ``allocators:`` section.

    A user entry is ``{path: /abs/lib.so, env: {VAR: value}}``, or ``{base: jemalloc, env: {...}}`` to give
    a built-in library other knobs.
    """
    table = dict(BUILTIN)
    for name, entry in (user or {}).items():
        if name in BUILTIN:
            raise SpecError(
                f"allocator {name!r} is a built-in allocator; give yours another name "
                f"(e.g. {name}-custom), or use {{base: {name}, env: ...}} under a new name"
            )
        table[name] = user_allocator(name, entry)
    return table


def user_allocator(name: str, entry: Mapping) -> Allocator:
    """Build one user-defined allocator; SpecError names what is wrong."""
    if not isinstance(entry, Mapping):
        raise SpecError(
            f"allocator {name!r}: must be a mapping {{path: /abs/lib.so, env: {{...}}}} or "
            f"{{base: NAME, env: {{...}}}}, got {entry!r}"
        )
    unknown = set(entry) - {"path", "env", "base", "description"}
    if unknown:
        raise SpecError(
            f"allocator {name!r}: unknown key(s) {', '.join(sorted(map(str, unknown)))}; "
            "allowed: path, base, env, description"
        )
    for key in ("path", "base", "description"):
        if key in entry and not isinstance(entry[key], str):
            raise SpecError(f"allocator {name!r}: {key} must be a string, got {entry[key]!r}")
    env = _user_env(name, entry.get("env") or {})
    if "base" in entry:
        base = BUILTIN.get(entry["base"])
        if base is None:
            raise SpecError(
                f"allocator {name!r}: base {entry['base']!r} is not a built-in allocator; "
                f"known: {', '.join(BUILTIN)}"
            )
        if "path" in entry:
            raise SpecError(f"allocator {name!r}: give 'path' or 'base', not both")
        return Allocator(
            name,
            base.library,
            {**base.env, **env},
            base.package,
            base.mode,
            entry.get("description", f"{base.name} with {env}"),
        )
    if "path" not in entry:
        raise SpecError(
            f"allocator {name!r}: give 'path' (an absolute .so path) or 'base' (a built-in)"
        )
    path = entry["path"]
    if not os.path.isabs(path) or "\0" in path:
        raise SpecError(f"allocator {name!r}: path {path!r} must be absolute")
    if any(c in path for c in PRELOAD_SEPARATORS) or os_string_problem(path):
        raise SpecError(
            f"allocator {name!r}: path {path!r} has a space, a colon or a character a program cannot "
            "be given; LD_PRELOAD splits its list at spaces and colons, so the dynamic linker would "
            "load other files: link or copy the library to a path without them"
        )
    return Allocator(name, path, env, None, "malloc", entry.get("description", ""))


PRELOAD_SEPARATORS = (
    " ",
    ":",
    "\t",
    "\n",
)  # LD_PRELOAD is a list split at spaces and colons (ld.so(8))
# The measured process's variables hugebench sets (hugebench.machine.environment.measured_environment, the command's
# control channel): an allocator's env: must not replace them.
HUGEBENCH_SETS = (
    "LD_PRELOAD",
    "LD_AUDIT",
    "HB_PROBE_DIR",
    "HB_TEXT_PAGES",
    "HB_TEXT_REPORT_DIR",
    "HUGEBENCH_CTL",
    "HUGEBENCH_ACK",
    "HUGEBENCH_RUN",
)  # HUGEBENCH_RUN: the run's containment token


def _user_env(name: str, env) -> dict[str, str]:
    """A user allocator's ``env:``: variable names and plain values the worker's environment can take."""
    if not isinstance(env, Mapping):
        raise SpecError(f"allocator {name!r}: env must be a mapping VARIABLE: value, got {env!r}")
    checked = {}
    for var, value in env.items():
        if env_name_problem(var):
            raise SpecError(f"allocator {name!r}: env: {env_name_problem(var)}")
        if var in HUGEBENCH_SETS:
            raise SpecError(
                f"allocator {name!r}: env {var}: hugebench sets this itself (LD_PRELOAD is the "
                "allocator's path:, then its probe and text libraries); give the library as path:"
            )
        if isinstance(value, bool) or not isinstance(value, (str, int, float)):
            raise SpecError(
                f"allocator {name!r}: env {var} must be a string or a number, got {value!r} "
                "(quote yes/no/on/off/true/false)"
            )
        if os_string_problem(str(value)):
            raise SpecError(f"allocator {name!r}: env {var} {os_string_problem(str(value))}")
        checked[var] = str(value)
    return checked


@functools.cache
def _ldconfig_paths() -> dict[str, str]:
    out = (
        run_text(["ldconfig", "-p"], timeout=10)
        or run_text(["/sbin/ldconfig", "-p"], timeout=10)
        or ""
    )
    table: dict[str, str] = {}
    for line in out.splitlines():
        m = re.match(r"\s*(\S+) \(([^)]*)\) => (\S+)", line)
        if m and "x32" not in m.group(2) and "i386" not in m.group(2):
            table.setdefault(m.group(1), m.group(3))
    return table


def find_library(library: str) -> Path | None:
    """Absolute path of a soname (via ldconfig, then the usual dirs) or of an absolute path, if it exists."""
    if os.path.isabs(library):
        return Path(library) if os.path.isfile(library) else None
    hit = _ldconfig_paths().get(library)
    if hit and os.path.isfile(hit):
        return Path(hit)
    for d in _LIB_DIRS:
        candidate = Path(d) / library
        if candidate.is_file():
            return candidate
    return None


def glibc_path() -> str | None:
    """glibc's libc.so.6: preloaded for 'glibc' cells (glibc forced) of a program linked against another
    allocator, so that glibc's malloc wins there too (the probe library then proves it); 'as-is' preloads
    nothing."""
    path = find_library("libc.so.6")
    return str(path) if path else None


def library_version(package: str | None, path: Path | None) -> str | None:
    """Debian package version when known, else the version in the real file name (libx.so.4.5.10)."""
    version = (
        run_text(["dpkg-query", "-W", "-f", "${Version}", package], timeout=10) if package else None
    )
    if version and version.strip():
        return version.strip()
    if path is not None:
        m = re.search(r"\.so\.([\d.]+)$", os.path.realpath(path))
        if m:
            return m.group(1)
    return None


def mapped_libraries(maps_text: str) -> set[str]:
    """Real paths of the shared objects mapped in a process, from the text of /proc/<pid>/maps."""
    libs = set()
    for line in maps_text.splitlines():
        parts = line.split(maxsplit=5)
        if len(parts) == 6 and ".so" in parts[5]:
            libs.add(os.path.realpath(parts[5].strip()))
    return libs


def verify_mapped(name: str, expected_path: str | None, maps_text: str) -> str:
    """Check the allocator really is the one mapped; return the mapped malloc library ('glibc' if none).

    Raises RuntimeError naming what is mapped instead — the worker turns it into a loud failed run.
    """
    mapped = mapped_libraries(maps_text)
    foreign = sorted(p for p in mapped if KNOWN_MALLOC_LIBS.search(os.path.basename(p)))
    if expected_path is None:
        if foreign:
            raise RuntimeError(
                f"allocator {name!r} expects glibc malloc, but {', '.join(foreign)} "
                "is mapped (LD_PRELOAD leaking from the environment?)"
            )
        return "glibc"
    real = os.path.realpath(expected_path)
    if real not in mapped:
        raise RuntimeError(
            f"allocator {name!r}: {real} is not mapped in the worker "
            f"(mapped malloc libraries: {', '.join(foreign) or 'none'}); LD_PRELOAD did not take"
        )
    others = [p for p in foreign if p != real]
    if others:
        raise RuntimeError(f"allocator {name!r}: {', '.join(others)} is mapped besides {real}")
    return real


def malloc_provider() -> str | None:
    """Real path of the object whose ``malloc`` this process's calls reach (the first in the global search
    order that defines it; a non-PIE executable's canonical PLT stub does not count).

    Being mapped is not enough: a preloaded library that does not define malloc (libz, say) is mapped while
    glibc still serves every allocation. Answered by the probe library (csrc/preload/hb_probe.cpp), the same
    code that answers it inside a program measured by the ``command`` workload.
    """
    import ctypes

    provider = ctypes.CDLL(probe_library()).hb_probe_provider
    provider.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]
    out = ctypes.create_string_buffer(4096)
    if provider(b"malloc", out, len(out)) != 0:
        return None
    return out.value.decode()


# glibc's C library as dladdr/realpath name it: libc.so.6 (glibc >= 2.34), libc-2.NN.so (older, behind the link).
GLIBC_LIBC = re.compile(r"libc(?:\.so\.6|-2\.\d+\.so)")


def is_glibc(provider: object) -> bool:
    """True when ``provider`` (the real path an allocation symbol resolves to) is glibc's C library: the one
    rule both the worker's check and the ``command`` probe's use for a glibc cell."""
    return (
        isinstance(provider, str) and GLIBC_LIBC.fullmatch(os.path.basename(provider)) is not None
    )


_FAMILY = re.compile(r"lib(jemalloc|tcmalloc|mimalloc|hoard|tbbmalloc|snmalloc)")


def served_name(provider: object, exe: object = None) -> str:
    """The allocator that served malloc, in one word, from the real path ``malloc`` resolved to: ``glibc``,
    ``jemalloc``, ``tcmalloc``, ``mimalloc`` ..., ``static in NAME`` when it is the program's own file (an
    allocator linked into the executable), else the library's file name; ``unknown`` when nobody could tell."""
    if not isinstance(provider, str) or not provider:
        return "unknown"
    if is_glibc(provider):
        return "glibc"
    base = os.path.basename(provider)
    family = _FAMILY.match(base)
    if family:
        return family.group(1)
    if isinstance(exe, str) and exe and os.path.realpath(exe) == os.path.realpath(provider):
        return f"static in {base}"
    return base


def verify_malloc(name: str, expected_path: str | None, provider: str | None) -> str:
    """Check that malloc resolves into the requested library (glibc's libc for glibc); return where it does."""
    if provider is None:
        raise RuntimeError(
            f"allocator {name!r}: cannot tell which library malloc resolves to (dladdr failed)"
        )
    if expected_path is None:
        if not is_glibc(provider):
            raise RuntimeError(
                f"allocator {name!r} expects glibc malloc, but malloc resolves to {provider}"
            )
        return provider
    if provider != os.path.realpath(expected_path):
        raise RuntimeError(
            f"allocator {name!r}: malloc resolves to {provider}, not to {expected_path} "
            "(the library is mapped but does not provide malloc: is it an allocator?)"
        )
    return provider


def probe_knobs() -> dict[str, object]:
    """Ask the malloc mapped in THIS process what its knobs are set to (jemalloc mallctl, mimalloc options).

    Proves that e.g. MALLOC_CONF or MIMALLOC_LARGE_OS_PAGES was read, not just set. Empty for glibc.
    """
    import ctypes

    me = ctypes.CDLL(None)
    found: dict[str, object] = {}
    if hasattr(me, "mallctl"):
        for opt in ("opt.thp", "opt.metadata_thp"):
            value, size = ctypes.c_char_p(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_char_p))
            if (
                me.mallctl(opt.encode(), ctypes.byref(value), ctypes.byref(size), None, 0) == 0
                and value.value
            ):
                found[f"jemalloc.{opt}"] = value.value.decode()
        flag, size = ctypes.c_bool(), ctypes.c_size_t(ctypes.sizeof(ctypes.c_bool))
        if me.mallctl(b"opt.hpa", ctypes.byref(flag), ctypes.byref(size), None, 0) == 0:
            found["jemalloc.opt.hpa"] = bool(flag.value)
            delay, size = ctypes.c_uint64(), ctypes.c_size_t(8)
            if (
                flag.value
                and me.mallctl(
                    b"opt.hpa_hugify_delay_ms", ctypes.byref(delay), ctypes.byref(size), None, 0
                )
                == 0
            ):
                found["jemalloc.opt.hpa_hugify_delay_ms"] = delay.value
    if hasattr(me, "mi_option_is_enabled") and hasattr(me, "mi_version"):
        version = me.mi_version()
        found["mimalloc.version"] = version
        if 200 <= version < 300:  # mi_option_large_os_pages is option 6 throughout mimalloc 2.x
            found["mimalloc.large_os_pages"] = bool(me.mi_option_is_enabled(6))
    return found


def check_expected(
    allocator_name: str, expect: Mapping[str, object], probed: Mapping[str, object]
) -> None:
    """RuntimeError naming each knob the allocator did not take up (e.g. an env name this version ignores)."""
    wrong = [
        f"{k} is {probed.get(k, 'unknown')!r}, expected {v!r}"
        for k, v in expect.items()
        if probed.get(k) != v
    ]
    if wrong:
        raise RuntimeError(
            f"allocator {allocator_name!r}: its knobs did not take effect: {'; '.join(wrong)}"
        )


def check_all(names, table: Mapping[str, Allocator]) -> dict[str, dict]:
    """Resolve every named allocator before a sweep: unknown names and missing libraries fail here, all at once."""
    problems, described = [], {}
    for name in names:
        if name not in table:
            problems.append(
                f"unknown allocator {name!r}; known: {', '.join(table)} "
                "(add others under 'allocators:' with a path)"
            )
            continue
        try:
            table[name].resolve()
        except ToolMissingError as exc:
            problems.append(str(exc))
            continue
        described[name] = table[name].describe()
    if problems:
        raise ToolMissingError("\n".join(problems))
    return described


def doctor_rows() -> list[tuple[str, bool, str, str]]:
    """(name, found, detail, fix) for each built-in allocator, for ``hugebench doctor``."""
    rows = []
    for alloc in BUILTIN.values():
        if alloc.library is None:
            rows.append((alloc.name, True, alloc.description or "built in", ""))
            continue
        info = alloc.describe()
        if info.get("path"):
            rows.append(
                (alloc.name, True, f"{info['path']} ({info['version'] or 'version unknown'})", "")
            )
        else:
            rows.append(
                (alloc.name, False, "library not found", f"apt-get install {alloc.package}")
            )
    return rows
