"""The experiment file a try writes: checked before it is written, its refusals in the options typed.

What belongs here: turning try's experiment (a mapping, :func:`.matrix.experiment`) into YAML text, loading
and planning that text the way ``hugebench sweep`` will (so a try is refused before anything is written or
run), saying each refusal in the option the user typed (``--env``, ``--budget``, the program's arguments)
rather than in a line of a file the user never wrote, and writing the file into the ``-o`` directory.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml

from hugebench.errors import HugebenchError, SpecError

SOURCE = "hugebench try"

# A key of the experiment file -> the option of try that gave it (longest key first wins).
_OPTIONS = (
    ("params.server.ready", "--ready"),
    ("params.server", "--server"),
    ("params.argv", "the program's arguments (after --)"),
    ("params.env", "--env"),
    ("params.cwd", "--cwd"),
    ("params.stdin", "--stdin"),
    ("params.metric", "--metric, --driver or --guard"),
    ("params.window", "--window"),
    ("timeout", "--budget"),
    ("warmup", "--warmup"),
    ("allocators", "--allocator"),
    ("axes.allocator", "--allocators"),
    ("axes.thp", "--thp"),
    ("axes.memory_state", "--aged-level"),
    ("name", "the program's name"),
)
_WHERE = re.compile(rf"^{re.escape(SOURCE)}(?::\d+)?: key '([^']*)': (.*)$", re.S)


def text(data: dict, header: str) -> str:
    """The experiment file's text: a comment saying what it is, then the YAML."""
    comment = "".join(f"# {line}\n" for line in header.splitlines())
    return comment + yaml.safe_dump(data, sort_keys=False)


def checked(data: dict, header: str):
    """(spec, runs) of the file try is about to write, loaded and planned as ``hugebench sweep`` will;
    a SpecError names the option typed."""
    from hugebench import experiment as spec_mod
    from hugebench.sweep import plan as plan_mod

    try:
        spec = spec_mod.parse_spec(text(data, header), SOURCE)
        return spec, plan_mod.plan(spec, 1)
    except SpecError as exc:
        raise SpecError(in_options(str(exc))) from None


def in_options(message: str) -> str:
    """A spec error about try's generated file, said in the option typed: '--env: ...'."""
    m = _WHERE.match(message)
    if not m:
        return message.replace(f"{SOURCE}: ", "", 1)
    key, problem = m.groups()
    option = next(
        (opt for prefix, opt in _OPTIONS if key == prefix or key.startswith(prefix + ".")),
        None,
    )
    return f"{option}: {problem}" if option else f"try ({key}): {problem}"


def write(data: dict, path: Path, header: str) -> Path:
    """Write the experiment file atomically into ``-o``; a directory that cannot take it is a clean error."""
    from hugebench._util import write_atomic

    out = path.parent
    if out.exists() and not out.is_dir():
        raise HugebenchError(f"-o {out}: not a directory; give a results directory")
    try:
        write_atomic(path, text(data, header))
    except OSError as exc:
        raise HugebenchError(
            f"-o {out}: cannot write {path.name} there: {exc.strerror or exc}; "
            "give a directory you can write"
        ) from None
    return path
