"""What a `command` experiment must get right before anything runs, and what its report shows first.

Called from the workload's module (``hugebench/workloads/command/__init__.py``) when an experiment file is loaded, so that a
mistake is reported with its file, line and key.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from hugebench.columns import user_name_problem
from hugebench.machine.allocators import HUGEBENCH_SETS
from hugebench.machine.environment import arg_space_problem, env_name_problem, os_string_problem
from hugebench.machine.program import resolve, user_path
from hugebench.workloads.command import template
from hugebench.workloads.command.metric import parse_metric, parse_metrics
from hugebench.workloads.command.soak import parse_duration

# The allocator's variables: a command's own env must not override what the cell asks for.
RESERVED_ENV = (
    "LD_PRELOAD",
    "LD_AUDIT",
    "MALLOC_CONF",
    "GLIBC_TUNABLES",
    "HB_PROBE_DIR",
    "HUGEBENCH_CTL",
    "HUGEBENCH_ACK",
)
RESERVED_PREFIXES = ("MIMALLOC_", "TCMALLOC_", "JE_MALLOC_")
SCALARS = (str, int, float)
DISCARD = "discard"  # stdout: discard sends the program's standard output to /dev/null
TEMPLATED = (
    "argv",
    "setup",
    "env",
    "server",
    "cwd",
    "stdin",
    "stdout",
)  # the parameters whose strings take {fields}


def check_params(params: dict) -> None:
    """ValueError naming the first parameter that is wrong (argv, env, setup, server, metric, {fields}), and
    everything a program could not be given: NUL, lone surrogates, arguments over the kernel's limits."""
    known = set(params)
    _argv("argv", params.get("argv"))
    if params.get("setup") is not None:
        _argv("setup", params["setup"])
    _env(params.get("env") or {})
    server = params.get("server")
    if server is not None:
        _server(server)
        if server.get("soak") and params.get("stdout") not in (None, DISCARD):
            raise ValueError(
                "server.soak runs the driver again and again and reads each run's output: "
                "leave stdout: at its default"
            )
    for metric in parse_metrics(params.get("metric")):
        _metric_name(metric, params)
        if metric.kind == "hdr":
            try:
                template.check(metric.pattern, known)
            except ValueError as exc:
                raise ValueError(f"metric.hdr: {exc}") from None
        if params.get("stdout") == DISCARD and metric.kind in ("json", "driver"):
            raise ValueError(
                f"stdout: discard, but metric.{metric.kind} reads what the program prints on stdout: "
                "give stdout a file, or keep the default"
            )
    for name, values in OPTIONAL.items():
        if name in params and params[name] not in values:
            raise ValueError(f"{name} must be one of {', '.join(values)}; got {params[name]!r}")
    for name in ("stdin", "stdout"):
        if params.get(name) is not None and (
            not isinstance(params[name], str) or not params[name].strip()
        ):
            raise ValueError(
                f"{name} must be a file name{' or discard' if name == 'stdout' else ''}, "
                f"got {params[name]!r}"
            )
    if isinstance(params.get("stdout"), str) and params["stdout"] != DISCARD:
        why = stdout_problem(params["stdout"])
        if why:
            raise ValueError(f"stdout: {why}")
    for name in TEMPLATED:
        try:
            template.check(params.get(name), known)
        except ValueError as exc:
            raise ValueError(f"{name}: {exc}") from None
    for name, value in params.items():
        if name not in ("argv", "setup", "env", "server", "metric") and (
            isinstance(value, bool) or not isinstance(value, SCALARS + (type(None),))
        ):
            raise ValueError(
                f"{name}: a command parameter must be a string or a number, got {value!r}"
            )
    _os_strings(params)


def _env(env) -> None:
    if not isinstance(env, dict):
        raise ValueError("env must be a mapping NAME: value of strings or numbers")
    for name, value in env.items():
        why = env_name_problem(name)
        if why:
            raise ValueError(f"env: {why}")
        if isinstance(value, bool) or not isinstance(value, SCALARS):
            raise ValueError(
                f"env.{name}: must be a string or a number, got {value!r}"
                + (" (quote true/false/yes/no/on/off)" if isinstance(value, bool) else "")
            )
        if name in HUGEBENCH_SETS and name not in RESERVED_ENV:
            raise ValueError(
                f"env.{name}: hugebench sets this itself for every run (the text-pages library's "
                "settings, the run's containment token)"
            )
        if name in RESERVED_ENV or name.startswith(RESERVED_PREFIXES):
            raise ValueError(
                f"env.{name}: the allocator of each cell sets this; define an allocator "
                f"under 'allocators:' instead (e.g. {{base: jemalloc, env: {{{name}: ...}}}})"
            )


def _os_strings(params: dict) -> None:
    """Every string a program gets (its arguments, variables, directory, and the parameters substituted
    into them) can be passed by execve(2): no NUL, no lone surrogate, each and all within the kernel's limits."""
    for name, value in params.items():
        for path, text in _leaves(value, name):
            why = os_string_problem(text)
            if why:
                raise ValueError(f"{path}: {why}")
    for name in ("argv", "setup"):
        argv = params.get(name) or []
        strings = [str(a) for a in argv] + [
            f"{k}={v}" for k, v in (params.get("env") or {}).items()
        ]
        why = arg_space_problem(strings)
        if why:
            raise ValueError(f"{name}: {why}")


def _leaves(value, path: str):
    if isinstance(value, (str, int, float)) and not isinstance(value, bool):
        yield path, str(value)
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}.{i}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(key, f"{path}.{key}") if isinstance(key, str) else ()
            yield from _leaves(item, f"{path}.{key}")


# Parameters of the command workload that are not declared (a declared one's default would enter every
# cell's id, changing the ids of every stored command run): name -> its values, the first the default.
OPTIONAL = {
    # where the probe library (which malloc served, each process's THP mode) is preloaded: in every run, or
    # only in warm-up runs, so that the timed runs are the program as deployed (hugebench try)
    "probe": ("every", "untimed"),
}


# Keys of an experiment file that are not parameters: under params, one of them is misplaced.
_ELSEWHERE = {
    "timeout": "a top-level key",
    "repetitions": "a top-level key",
    "warmup": "a top-level key",
    "perf": "a top-level key",
    "counters": "a top-level key",
    "system": "a top-level key",
    "text_pages": "an axis (axes: {text_pages: [thp]})",
    "memory_state": "an axis (axes: {memory_state: [fresh, fragmented]})",
    "allocator": "an axis (axes: {allocator: [...]})",
    "thp": "an axis or a system knob (axes: {thp: [never, always]})",
}


def check_unused(params: dict, declared) -> None:
    """A parameter of the user's own takes effect only as a {field}: one that no field uses changes nothing
    but the cell's id, which is a misplaced or misspelt key (``windw: markers``, ``timeout`` under params).
    ``declared``: the command workload's own parameter names (after :func:`check_params`)."""
    import difflib

    used = set().union(*(template.fields(params.get(n)) for n in TEMPLATED))
    for name in params:
        if name in declared or name in used:
            continue
        if name in _ELSEWHERE:
            raise ValueError(
                f"{name}: is {_ELSEWHERE[name]}, not a parameter: move it out of params"
            )
        close = difflib.get_close_matches(name, list(declared), n=1)
        hint = f" (did you mean {close[0]}?)" if close else ""
        raise ValueError(
            f"{name}: no {{{name}}} field uses this parameter of your own, so it would change "
            f"nothing{hint}; parameters of the command workload: {', '.join(declared)}"
        )


def prepare(params: dict, base_dir: Path) -> dict:
    """``cwd`` relative to the experiment file becomes absolute (runs happen in a temporary directory), the
    program (and a server's load driver) is resolved to the file it names, once, on the user's PATH (see
    :mod:`.program`), and the measured program must be one LD_PRELOAD takes effect in (refused now, not
    measured wrongly)."""
    cwd = params.get("cwd") or "."
    if "{" not in cwd:
        cwd = os.path.normpath(base_dir / cwd)
        if not Path(cwd).is_dir():
            raise ValueError(f"cwd {cwd} is not a directory")
    prepared = {**params, **as_text(params), "cwd": cwd}
    for where in ("argv", "server.argv"):
        _resolve_in(prepared, where)
    _streams(prepared)
    check_program(prepared)
    return prepared


def stdout_problem(value: str) -> str | None:
    """Why ``value`` cannot be a ``stdout:`` file, or None: it must be a file name below ``cwd`` (no
    absolute path, no ``..``), which the run creates there without following a link (hugebench.safefs)."""
    if value.startswith("/"):
        return (
            f"{value!r} is an absolute path; give a file name relative to cwd (the program's "
            "directory), where it is created without following a link"
        )
    if ".." in value.split("/"):
        return f"{value!r} leaves cwd through '..'; give a file name inside cwd"
    return None


def _streams(params: dict) -> None:
    """``stdin`` and ``stdout`` files made absolute from ``cwd``; stdin must be a readable file (unless
    ``setup`` may write it) and stdout's directory must exist. A {field} is checked when the run starts."""
    cwd = params.get("cwd") or "."
    for name in ("stdin", "stdout"):
        value = params.get(name)
        if value is None or value == DISCARD or "{" in value or "{" in cwd:
            continue
        path = os.path.normpath(os.path.join(cwd, value))
        params[name] = path
        if (
            name == "stdin"
            and not params.get("setup")
            and (os.path.isdir(path) or not os.access(path, os.R_OK))
        ):
            raise ValueError(f"stdin: {path} is not a readable file")
        if name == "stdout" and (os.path.isdir(path) or not os.path.isdir(os.path.dirname(path))):
            raise ValueError(
                f"stdout: {path} is a directory"
                if os.path.isdir(path)
                else f"stdout: the directory of {path} does not exist"
            )


def _resolve_in(params: dict, where: str) -> None:
    """Replace the program name at ``where`` (argv, server.argv) by its absolute path, when it can be known
    now: not a {field}, and not a file that ``setup`` may build. Not found: ValueError naming the PATH."""
    holder = params.get("server") if where == "server.argv" else params
    if not isinstance(holder, dict) or not holder.get("argv"):
        return
    argv = holder["argv"]
    program, cwd = str(argv[0]), params.get("cwd") or "."
    if "{" in program or "{" in cwd:
        return  # depends on a run's values: the runner resolves it when the run starts
    path, why = resolve(program, user_path(params.get("env") or {}), cwd)
    if path is None:
        if params.get("setup"):
            return  # setup may build it; the runner resolves it after setup
        raise ValueError(
            f"{where}: {why}"
            + (f" (PATH={user_path(params.get('env') or {})})" if "/" not in program else "")
        )
    new_argv = [path, *argv[1:]]
    if where == "server.argv":
        params["server"] = {**holder, "argv": new_argv}
    else:
        params["argv"] = new_argv


def as_text(params: dict) -> dict:
    """argv, setup, the server's argv and env values with every number as its text (``[sleep, 1]`` runs
    ``sleep 1``), as a ``{field}`` is substituted: a program is given strings, whatever YAML read."""
    out: dict[str, Any] = {}
    for name in ("argv", "setup"):
        if isinstance(params.get(name), list):
            out[name] = [a if isinstance(a, str) else str(a) for a in params[name]]
    if isinstance(params.get("env"), dict):
        out["env"] = {k: v if isinstance(v, str) else str(v) for k, v in params["env"].items()}
    server = params.get("server")
    if isinstance(server, dict) and isinstance(server.get("argv"), list):
        out["server"] = {
            **server,
            "argv": [a if isinstance(a, str) else str(a) for a in server["argv"]],
        }
    return out


def measured_argv(params: dict) -> list:
    """The argv of the measured process: the server's when there is one, else the program's."""
    server = params.get("server")
    return server["argv"] if server else params["argv"]


def check_program(params: dict) -> None:
    """ValueError when the measured program cannot be run under a preloaded allocator: missing, not
    executable, static, setuid... A program that ``setup`` may build is only checked when it exists."""
    from hugebench.machine.elf import why_preload_cannot_take

    program, cwd = str(measured_argv(params)[0]), params.get("cwd") or "."
    if "{" in program or "{" in cwd:
        return  # depends on an axis value or the run's directory: checked when the run starts
    if "/" in program and not os.path.isabs(program):
        program = os.path.join(cwd, program)
    why = why_preload_cannot_take(program, user_path(params.get("env") or {}), cwd)
    if why and not (params.get("setup") and not os.path.exists(program)):
        where = "server.argv" if params.get("server") else "argv"
        raise ValueError(f"{where}: {why}")


def coverage_metrics(params: dict) -> tuple:
    """The report's huge-page coverage columns, each labelled by when it was measured: a program timed to its
    end is judged by its time-weighted coverage (``hp_coverage``, see run.measured._coverage_columns), a marked
    window or a server by the coverage at the window's end."""
    peak = ("sampled.peak.coverage", "HP cov. (peak)", ".0%")
    if params.get("window", "process") == "process" and not params.get("server"):
        return (
            ("hp_coverage", "HP cov. (time-wtd)", ".0%"),
            peak,
            ("hp_coverage_exit", "HP cov. (at exit)", ".0%"),
        )
    return (
        ("hp_coverage", "HP cov. (window end)", ".0%"),
        ("hp_coverage_tw", "HP cov. (time-wtd)", ".0%"),
        peak,
    )


def other_metrics(params: dict) -> tuple:
    """The report columns of the metrics recorded beside the judged one (column, label, format)."""
    # a rate reads well in SI (67k); a latency in ms as its digits (0.583, not 583m)
    return tuple(
        (m.column, m.column, "si" if m.better == "higher" else ".4g")
        for m in parse_metrics(params.get("metric"))[1:]
    )


def guarded(params: dict) -> tuple[tuple[str, str], ...]:
    """(column, better) of each metric beside the judged one: the ones ``try`` guards."""
    return tuple((m.column, m.better) for m in parse_metrics(params.get("metric"))[1:])


def primary(params: dict) -> tuple[str, str, str, str]:
    """(column, label, format, better) of the metric a command run is scored by."""
    metric = parse_metric(params.get("metric"))
    return metric.column, metric.label, ".3f" if metric.kind == "wall" else "si", metric.better


def _argv(name: str, value) -> None:
    if isinstance(value, list) and any(isinstance(a, bool) for a in value):
        raise ValueError(
            f"{name} holds a boolean (YAML reads unquoted true/false/yes/no/on/off as one): "
            f'quote it, e.g. ["true"] or give the path /bin/true'
        )
    if not isinstance(value, list) or not value or not all(isinstance(a, SCALARS) for a in value):
        raise ValueError(
            f"{name} must be a non-empty list of strings (a number is taken as its text): the program "
            f"and its arguments, never run through a shell (write [sh, -c, '...'] for one); got {value!r}"
        )


def _regex(name: str, pattern) -> None:
    import re

    if not isinstance(pattern, str) or not pattern:
        raise ValueError(f"{name} must be a regular expression, got {pattern!r}")
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{name} {pattern!r} is not a regular expression: {exc}") from None


def _metric_name(metric, params: dict) -> None:
    """The metric's column is a name the user chose: never one of hugebench's, nor a parameter's (an axis
    of that parameter is a column of the same name)."""
    if metric.kind == "wall":
        return
    why = user_name_problem(metric.column) or (
        f"{metric.column!r} is also a parameter (an axis column of that name); choose another metric name"
        if metric.column in params
        else None
    )
    if why:
        raise ValueError(f"metric: name {why}")


def _server(server) -> None:
    if not isinstance(server, dict) or set(server) - {
        "argv",
        "ready",
        "ready_timeout",
        "warmup",
        "soak",
    }:
        raise ValueError(
            "server must be {argv: [...], ready: {path: ...} | {port: N} | {log: regex}, "
            "ready_timeout: seconds, warmup: N, soak: DURATION}"
        )
    if "soak" in server:
        try:
            parse_duration(server["soak"])
        except ValueError as exc:
            raise ValueError(f"server.soak: {exc}") from None
    warmup = server.get("warmup", 0)
    if isinstance(warmup, bool) or not isinstance(warmup, int) or not 0 <= warmup <= 100:
        raise ValueError(
            f"server.warmup must be how many times the load driver runs, unmeasured, before the "
            f"measured run (0 to 100); got {warmup!r}"
        )
    _argv("server.argv", server.get("argv"))
    ready = server.get("ready", {})  # given, it names exactly one condition ({} says none)
    if (
        not isinstance(ready, dict)
        or len(ready) != int("ready" in server)
        or set(ready) - {"path", "port", "log"}
    ):
        raise ValueError(
            "server.ready must be one of {path: FILE}, {port: N} (on 127.0.0.1) or {log: REGEX}"
        )
    if "log" in ready:
        _regex("server.ready.log", ready["log"])
    if "port" in ready and (
        isinstance(ready["port"], bool)
        or not (isinstance(ready["port"], int) and 0 < ready["port"] < 65536)
    ):
        raise ValueError(f"server.ready.port must be a TCP port number, got {ready['port']!r}")
    timeout = server.get("ready_timeout", 60)
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or not 0 < timeout < 3600:
        raise ValueError(f"server.ready_timeout must be seconds (0 < t < 3600), got {timeout!r}")
