"""Which file a command runs: its ``argv[0]`` resolved once, the way ``execvp`` would, on the user's PATH.

The user's PATH is the one of the ``hugebench`` invocation (or the ``PATH`` the experiment's ``env`` sets).
Nothing later may look the name up again: ``perf stat`` puts its own directories (``/usr/lib/perf-core``,
``/usr/bin``) at the front of its child's PATH, so a lookup made under perf finds Debian's ``python3``
instead of the user's venv/pyenv/``/usr/local`` one. The spec resolves a literal ``argv[0]`` at load
(:func:`hugebench.workloads.command.checks.prepare`), the runner resolves one that depends on a run's values when the
run starts; both call :func:`resolve`, the ELF checks look at the file it returns, and the runner executes
exactly that file (and gives the program the user's PATH back under perf).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping


def user_path(env: Mapping | None = None) -> str:
    """The PATH a program is looked up on: ``env``'s PATH (an experiment's own), else ours, else the
    default (``os.defpath``, as execvp uses when PATH is unset)."""
    if env and isinstance(env.get("PATH"), str):
        return env["PATH"]
    return os.environ.get("PATH", os.defpath)


def _runnable(path: str) -> bool:
    try:
        st = os.stat(path)
    except OSError:
        return False
    return stat.S_ISREG(st.st_mode) and os.access(path, os.X_OK)


def resolve(
    program: str, path_env: str | None = None, cwd: str | None = None
) -> tuple[str | None, str | None]:
    """(absolute path, None) of the file ``execvp(program)`` runs from ``cwd``, or (None, why not).

    A name with a ``/`` is a path (relative to ``cwd``); a bare name is searched in ``path_env`` (default:
    :func:`user_path`), an empty or relative entry counting from ``cwd`` as it would for the program.
    """
    cwd = cwd or os.getcwd()
    program = str(program)
    if not program:
        return None, "the program name is empty"
    if "/" in program:
        path = os.path.normpath(os.path.join(cwd, program))
        if _runnable(path):
            return path, None
        if not os.path.exists(path):
            return None, f"{program} does not exist"
        if os.path.isdir(path):
            return None, f"{program} is a directory"
        return None, f"{program} is not executable (chmod +x {program})"
    path_env = user_path() if path_env is None else path_env
    for directory in path_env.split(os.pathsep):
        candidate = os.path.normpath(os.path.join(cwd, directory or ".", program))
        if _runnable(candidate):
            return candidate, None
    return None, f"{program} is not found on PATH"
