"""The one place that builds a worker's environment: a whitelist of the parent's variables plus the
allocator's (``LD_PRELOAD`` and its knobs).

Nothing else of the parent's environment reaches a worker: a stray ``LD_PRELOAD`` or ``MALLOC_CONF`` of
the user's shell would otherwise change the allocator under test without a trace in the results.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path

from .errors import ToolMissingError

# Variables a worker inherits; everything else (notably LD_PRELOAD and allocator knobs of the parent's own
# environment) is dropped so that only what the run asks for is in force. LD_LIBRARY_PATH stays: a
# user-built allocator may need it.
ENV_WHITELIST = ("PATH", "LD_LIBRARY_PATH", "HOME", "LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "PYTHONPATH",
                 "VIRTUAL_ENV", "USER", "LOGNAME", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def worker_environment(alloc_env: Mapping[str, str], base: Mapping[str, str] | None = None) -> dict[str, str]:
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
    path = Path(__file__).resolve().parent / "hb-exec"
    if not os.access(path, os.X_OK):
        raise ToolMissingError(f"{path} is missing: reinstall hugebench (pip install .) to build its launcher")
    return str(path)


def launch_argv(command: Sequence[str], alloc_env: Mapping[str, str], status_path: str | os.PathLike) -> list[str]:
    """``hb-exec STATUS NAME=VALUE... -- command``: the allocator's variables are in force in the measured
    process only (perf, when it wraps this, must not run under the allocator under test), and its real exit
    status and rusage land in ``status_path``."""
    return [launcher(), str(status_path), *(f"{k}={v}" for k, v in alloc_env.items()), "--", *command]


def measured_environment(alloc_env: Mapping[str, str], *, probe_dir: str | os.PathLike | None = None,
                         text_pages: str | None = None, text_dir: str | os.PathLike | None = None) -> dict[str, str]:
    """The variables of the measured process itself: the allocator's (its library first in LD_PRELOAD, so
    its malloc wins), then hugebench's probe library (which malloc really served it) and its text library
    (the program's text on huge pages, ``text_pages``), each with the directory it reports into."""
    env = dict(alloc_env)
    preload = env.get("LD_PRELOAD", "").split()
    if probe_dir is not None:
        from .command.probe import probe_library

        preload.append(probe_library())
        env["HB_PROBE_DIR"] = str(probe_dir)
    if text_pages is not None:
        from .text import text_library

        preload.append(text_library())
        env.update(HB_TEXT_PAGES=text_pages, HB_TEXT_REPORT_DIR=str(text_dir))
    if preload:
        env["LD_PRELOAD"] = " ".join(preload)
    return env
