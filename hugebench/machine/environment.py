"""The one place that builds a worker's environment: a whitelist of the parent's variables plus the
allocator's (``LD_PRELOAD`` and its knobs).

Nothing else of the parent's environment reaches a worker: a stray ``LD_PRELOAD`` or ``MALLOC_CONF`` of
the user's shell would otherwise change the allocator under test without a trace in the results.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from hugebench.errors import ToolMissingError

# Variables a worker inherits; everything else (notably LD_PRELOAD and allocator knobs of the parent's own
# environment) is dropped so that only what the run asks for is in force. LD_LIBRARY_PATH stays: a
# user-built allocator may need it.
ENV_WHITELIST = (
    "PATH",
    "LD_LIBRARY_PATH",
    "HOME",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "PYTHONPATH",
    "VIRTUAL_ENV",
    "USER",
    "LOGNAME",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
)


# One argument or one NAME=value string of execve(2) is at most MAX_ARG_STRLEN bytes with its NUL (32 pages);
# all of them together at most ARG_MAX (a quarter of the stack limit), of which the environment we pass on
# takes its share.
MAX_ARG_STRLEN = 32 * os.sysconf("SC_PAGE_SIZE")
_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def env_name_problem(name) -> str | None:
    """Why ``name`` cannot be the name of an environment variable we set, or None."""
    if not isinstance(name, str) or not _ENV_NAME.fullmatch(name):
        return f"{name!r} is not an environment variable name (letters, digits and _, not starting with a digit)"
    return None


def os_string_problem(text: str) -> str | None:
    """Why ``text`` cannot be an argument or an environment value of a program, or None: execve takes
    NUL-terminated bytes (a NUL cuts it; a lone surrogate has no UTF-8 bytes), each below MAX_ARG_STRLEN."""
    if "\0" in text:
        return "holds a NUL character, which cannot be passed to a program"
    try:
        size = len(text.encode())
    except UnicodeEncodeError:
        return "holds a lone surrogate (\\udXXX), which is not text a program can be given"
    if size >= MAX_ARG_STRLEN:
        return (
            f"is {size} bytes long, over the kernel's limit of {MAX_ARG_STRLEN - 1} bytes for one argument "
            "or variable (MAX_ARG_STRLEN): pass it in a file"
        )
    return None


def arg_space_problem(strings: Sequence[str]) -> str | None:
    """Why ``strings`` (a program's arguments and added NAME=value strings) do not fit execve(2) beside the
    environment a program inherits from us, or None."""
    limit = os.sysconf("SC_ARG_MAX")
    inherited = sum(len(k) + len(v) + 2 for k, v in os.environ.items())
    need = sum(len(s.encode(errors="replace")) + 1 for s in strings)
    if need + inherited + 65536 > limit:
        return (
            f"needs {need} bytes of arguments and variables; with the {inherited} of the environment the "
            f"kernel allows {limit} in all (ARG_MAX): pass the data in a file"
        )
    return None


def worker_environment(
    alloc_env: Mapping[str, str], base: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The worker's environment: the whitelisted part of ``base`` (default: ours) plus ``alloc_env``
    (from ``Allocator.environment()``)."""
    base = os.environ if base is None else base
    env = {k: v for k, v in base.items() if k in ENV_WHITELIST or k.startswith("LC_")}
    env.update(alloc_env)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env["LC_ALL"] = "C"  # perf prints numbers in the locale; `-x,` output must stay parseable
    return env


def launcher() -> str:
    """The hb-exec launcher installed beside _core (see csrc/tools/hb_exec.cpp)."""
    path = Path(__file__).resolve().parents[1] / "hb-exec"
    if not os.access(path, os.X_OK):
        raise ToolMissingError(
            f"{path} is missing: reinstall hugebench (pip install .) to build its launcher"
        )
    return str(path)


PROBE_LIBRARY = "libhbprobe.so"


def probe_library() -> str:
    """Path of ``libhbprobe.so`` installed beside the package (built from csrc/preload/hb_probe.cpp); what it
    reports is read by hugebench.machine.mallocprobe."""
    path = Path(__file__).resolve().parents[1] / PROBE_LIBRARY
    if not path.is_file():
        raise ToolMissingError(
            f"{path} is missing: reinstall hugebench (pip install .) to build its probe library"
        )
    return str(path)


def launch_argv(
    command: Sequence[str], alloc_env: Mapping[str, str], status_path: str | os.PathLike
) -> list[str]:
    """``hb-exec STATUS NAME=VALUE... -- command``: the allocator's variables are in force in the measured
    process only (perf, when it wraps this, must not run under the allocator under test), and its real exit
    status and rusage land in ``status_path``."""
    return [
        launcher(),
        str(status_path),
        *(f"{k}={v}" for k, v in alloc_env.items()),
        "--",
        *command,
    ]


def measured_environment(
    alloc_env: Mapping[str, str],
    *,
    probe_dir: str | os.PathLike | None = None,
    text_pages: str | None = None,
    text_dir: str | os.PathLike | None = None,
) -> dict[str, str]:
    """The variables of the measured process itself: the allocator's (its library first in LD_PRELOAD, so
    its malloc wins), then hugebench's probe library (which malloc really served it) and its text library
    (the program's text on huge pages, ``text_pages``), each with the directory it reports into."""
    env = dict(alloc_env)
    preload = env.get("LD_PRELOAD", "").split()
    if probe_dir is not None:
        preload.append(probe_library())
        env["HB_PROBE_DIR"] = str(probe_dir)
    if text_pages is not None:
        from hugebench.machine.textpages import text_library

        preload.append(text_library())
        env.update(HB_TEXT_PAGES=text_pages, HB_TEXT_REPORT_DIR=str(text_dir))
    if preload:
        env["LD_PRELOAD"] = " ".join(preload)
    return env
