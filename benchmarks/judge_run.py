"""The judge benchmark's side effects, apart from its flow (benchmarks/judge.py): who runs what (root, or
an unprivileged user through setpriv), the shell commands of as-is and deployed (a server started in
hyperfine's --prepare), checking a deploy took (its preloads mapped, its knobs read back), hyperfine's runs,
and the machine-wide knobs journaled and put back.
"""

from __future__ import annotations

import json
import os
import pwd
import re
import shlex
import signal
import subprocess
import sys
import sysconfig
from contextlib import contextmanager
from pathlib import Path

import judge_lib as lib
import judge_panel as panel

SYSTEM_PYTHON = "/usr/bin/python3"


class Who:
    """Who runs try and hyperfine: root as is, or a user through setpriv with a clean environment."""

    def __init__(self, name: str, base: Path):
        self.name = name
        self.root = name == "root"
        info = pwd.getpwnam(name)
        self.uid, self.gid = info.pw_uid, info.pw_gid
        self.home = base / "home-user"
        if not self.root:
            self.home.mkdir()
        self.env = {
            "PATH": "/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin",
            "HOME": os.environ.get("HOME", "/root") if self.root else str(self.home),
            "LANG": "C.UTF-8",
        }
        if os.environ.get("PYTHONPATH"):
            self.env["PYTHONPATH"] = os.environ["PYTHONPATH"]
        self.own(self.home)

    def hugebench(self, command: str) -> list[str]:
        """How this user starts hugebench: ``command``, unless the user may not execute the Python behind it
        (a virtualenv built from a Python under root's home); then the system's Python with the
        virtualenv's packages on PYTHONPATH (the workers then run with the same Python)."""
        if getattr(self, "_start", None):
            return self._start
        if self.root or _can_exec(self, _interpreter(command)):
            self._start = [command]
            return self._start
        site = sysconfig.get_paths()["purelib"]
        self.env["PYTHONPATH"] = ":".join(p for p in (self.env.get("PYTHONPATH"), site) if p)
        main = "import sys; sys.argv[0] = 'hugebench'; from hugebench.cli import main; main()"
        self._start = [SYSTEM_PYTHON, "-c", main]
        return self._start

    @property
    def label(self) -> str:
        return "root" if self.root else f"user {self.name}"

    def wrap(self, argv: list[str]) -> list[str]:
        if self.root:
            return argv
        return [
            "setpriv",
            f"--reuid={self.uid}",
            f"--regid={self.gid}",
            "--clear-groups",
            "--",
            *argv,
        ]

    def own(self, path: Path) -> None:
        if self.root:
            return
        for p in [path, *path.rglob("*")]:
            os.lchown(p, self.uid, self.gid)


def _interpreter(command: str) -> str:
    """The interpreter a console script starts (its #! line), else the command itself."""
    with open(command, "rb") as f:
        first = f.readline(4096)
    return first[2:].decode().split()[0] if first.startswith(b"#!") else command


def _can_exec(who: Who, path: str) -> bool:
    """``path`` runs as ``who`` from a process of its own (not only from setpriv's exec)."""
    probe = ["sh", "-c", 'exec "$0" -c pass', path]
    return run(probe, who, Path("/"), 30)[0] == 0


def run(argv, who: Who, cwd: Path, timeout: float, log: Path | None = None) -> tuple[int, str, str]:
    """Run argv as ``who`` in its own session; on timeout its whole group is ended."""
    proc = subprocess.Popen(
        who.wrap(argv),
        cwd=cwd,
        env=who.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        err += f"\njudge: timed out after {timeout:.0f} s"
        proc.returncode = -9
    if log is not None:
        log.write_text(err)
    return proc.returncode, out, err


def commands(prog, deploy: lib.Deploy, work: Path, tmp: Path, thp_off: Path, quick: bool) -> dict:
    """The shell commands of each side: 'A' as-is (untouched), 'B' deployed; for a server the timed command
    is the load driver and the server starts in hyperfine's --prepare (the deploy applies to the server)."""
    base = shlex.join(panel.argv_of(prog, work, tmp, quick))
    if prog.stdin:
        base += f" < {shlex.quote(str(work / prog.stdin))}"
    penv = " ".join(f"{k}={shlex.quote(v)}" for k, v in prog.env.items())
    change = " ".join(
        p for p in (deploy.prefix(), shlex.quote(str(thp_off)) if deploy.thp_off else "") if p
    )
    if not prog.server:
        return {
            side: (" ".join(p for p in (penv, extra, base) if p), None, None)
            for side, extra in (("A", ""), ("B", change))
        }
    kind, _, ready = prog.ready.partition(":")
    if kind != "path":
        raise lib.DeployNotUnderstood(
            f"the judge starts servers with --ready path: only, not {prog.ready}"
        )
    ready = ready.replace("{tmp}", str(tmp))
    server = " ".join(shlex.quote(a.replace("{tmp}", str(tmp))) for a in shlex.split(prog.server))
    out = {}
    for side, extra in (("A", ""), ("B", change)):
        script = tmp / f"serve-{side}.sh"
        line = " ".join(p for p in (penv, extra, server) if p)
        script.write_text(_serve(tmp, ready, line))
        out[side] = (" ".join(p for p in (penv, base) if p), f"sh {shlex.quote(str(script))}", line)
    return out


def with_idle(sides: dict, idle_s: float) -> dict:
    """The sides timed in the cold regime try measured (cold:Ns): N seconds of idle before each run, in
    hyperfine's --prepare (after a server's start, so the idle falls just before the timed command)."""
    if not idle_s:
        return sides
    sleep = f"sleep {idle_s:g}"
    return {s: (c, f"{p}; {sleep}" if p else sleep, v) for s, (c, p, v) in sides.items()}


def _serve(tmp: Path, ready: str, command: str) -> str:
    """hyperfine's --prepare for a server: end the previous one, start this one, wait until it is ready."""
    pid, ready_q = shlex.quote(str(tmp / "server.pid")), shlex.quote(ready)
    return (
        f'if [ -f {pid} ]; then p=$(cat {pid}); kill "$p" 2>/dev/null; '
        f'while kill -0 "$p" 2>/dev/null; do sleep 0.02; done; fi\n'
        f"rm -f {ready_q} {pid}\n"
        f"{command} > {shlex.quote(str(tmp / 'server.log'))} 2>&1 &\n"
        f"echo $! > {pid}\n"
        f"i=0; while [ ! -e {ready_q} ]; do i=$((i+1)); "
        f'[ $i -gt 1500 ] && {{ echo "server not ready in 30 s" >&2; exit 1; }}; sleep 0.02; done\n'
    )


def stop_server(tmp: Path, who: Who) -> None:
    """End the server the last --prepare started, as the user who started it (by the pid it recorded)."""
    pid = shlex.quote(str(tmp / "server.pid"))
    script = (
        f'if [ -f {pid} ]; then p=$(cat {pid}); kill "$p" 2>/dev/null; i=0; '
        f'while kill -0 "$p" 2>/dev/null && [ $i -lt 500 ]; do i=$((i+1)); sleep 0.02; done; '
        f'kill -9 "$p" 2>/dev/null; rm -f {pid}; fi'
    )
    run(["sh", "-c", script], who, tmp, 30)


def check_preload(deploy: lib.Deploy, who: Who) -> None:
    """Every library the deploy preloads is mapped in a process started with its environment (the dynamic
    loader only warns and runs on when a preload fails: the judge would time as-is twice)."""
    libs = [p for p in re.split(r"[: ]", deploy.env.get("LD_PRELOAD", "")) if p]
    if not libs:
        return
    env = [f"{k}={v}" for k, v in deploy.env.items()]
    rc, maps, err = run(["env", *env, "cat", "/proc/self/maps"], who, Path("/"), 30)
    missing = [p for p in libs if os.path.realpath(p) not in maps]
    if rc != 0 or missing:
        raise RuntimeError(
            f"deploy's LD_PRELOAD did not load {missing or libs}: {err.strip()[:200]}"
        )


def hyperfine(
    cmd: str, prepare: str | None, who: Who, cwd: Path, json_out: Path, runs: int
) -> dict:
    argv = [
        "hyperfine",
        "--runs",
        str(runs),
        "--style",
        "basic",
        "--shell",
        "sh",
        "--export-json",
        str(json_out),
    ]
    if prepare:
        argv += ["--prepare", prepare]
    rc, _, err = run([*argv, cmd], who, cwd, 120 + 120 * runs)
    if rc != 0:
        tail = [line for line in err.strip().splitlines() if line.strip()][-2:]
        raise RuntimeError(f"hyperfine exited {rc} on {cmd!r}: {' / '.join(tail)[:300]}")
    fd = os.open(json_out, os.O_RDONLY | os.O_NOFOLLOW)
    with os.fdopen(fd) as f:
        result = json.load(f)["results"][0]
    return {"times": result["times"], "user": result["user"], "system": result["system"]}


@contextmanager
def machine_wide(writes: tuple, journal: Path):
    """Yield set(side): side 'B' writes the deployed values, 'A' the values found. Every knob goes back to
    the value found in the finally (the journal on disk says what to restore if the judge itself dies)."""
    if not writes:
        yield lambda side: None
        return
    found = {w.path: _current(w.path) for w in writes}
    journal.write_text(json.dumps({"restore": found, "pid": os.getpid()}))
    old = signal.signal(signal.SIGTERM, lambda *_: sys.exit("judge: terminated; restoring knobs"))

    def set_side(side: str) -> None:
        for w in writes:
            want = w.value if side == "B" else found[w.path]
            _write(w.path, want)
            if _current(w.path) != want:
                raise RuntimeError(f"wrote {want!r} to {w.path} but it reads {_current(w.path)!r}")

    try:
        yield set_side
    finally:
        for path, value in found.items():
            _write(path, value)
        signal.signal(signal.SIGTERM, old)
        bad = {p: _current(p) for p, v in found.items() if _current(p) != v}
        if bad:
            print(f"judge: COULD NOT RESTORE {bad} (journal {journal})", file=sys.stderr)
        else:
            journal.unlink()


def _current(path: str) -> str:
    text = Path(path).read_text().strip()
    if "[" in text:
        return text[text.index("[") + 1 : text.index("]")]
    return text


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


# One CPU of work at normal priority, as another job on a lab machine: a Python loop, nothing else.
LOAD_LOOP = "while True:\n    pass\n"
PR_SET_PDEATHSIG = 1


def _die_with_the_judge() -> None:  # runs in the child before exec: killed if the judge dies first
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)


@contextmanager
def background_load(busy: bool):
    """The "busy" condition (issue 55): one CPU of work at normal priority for as long as the block runs
    (try and the judge's rounds both), ended reliably: its own process group killed in a ``finally``, and
    ``PR_SET_PDEATHSIG`` so that it dies with the judge even if the judge is killed. Yields its pid (None
    when ``busy`` is false: the quiet condition)."""
    if not busy:
        yield None
        return
    proc = subprocess.Popen(
        [sys.executable, "-c", LOAD_LOOP],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
        preexec_fn=_die_with_the_judge,
    )
    try:
        yield proc.pid
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait(timeout=30)
