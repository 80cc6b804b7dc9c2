"""What a `command` experiment may reach as root (issue 38, hole 6): its ``env:`` is the program's alone (never
perf's or hb-exec's, which run as root), its ``stdout:`` file stays below its cwd and is never written through a
link; and the world-writable sweep lock's holder record is never printed raw (hole 5)."""

from __future__ import annotations

import fcntl
import os
import re
import shutil
import textwrap
from pathlib import Path

import pytest

from hugebench import load
from hugebench.errors import SpecError, SystemStateError
from hugebench.experiment import load_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
from hugebench.system import SweepLock

PERF = "auto" if shutil.which("perf") else "off"


def _experiment(tmp_path: Path, params: str, perf: str = "off") -> Path:
    path = tmp_path / "cmd.yaml"
    path.write_text(f"name: cmd\nworkload: command\nperf: {perf}\n" + textwrap.dedent(params))
    return path


def _sweep(path: Path, tmp_path: Path):
    spec = load_spec(path)
    out = tmp_path / "res"
    result = run_sweep(
        spec, plan_mod.plan(spec), SweepOptions(out=out, quiet=True, journal=tmp_path / "j.json")
    )
    return result, load(out)


def test_the_experiments_env_reaches_the_program_but_not_perf_or_hb_exec(tmp_path):
    """LD_DEBUG_OUTPUT makes ld.so write a file for every process that has it: only the program's appear."""
    debug = tmp_path / "lddebug"
    debug.mkdir()
    path = _experiment(
        tmp_path,
        f"""\
        params:
          argv: [sh, -c, 'echo "mark=$HB_TEST_MARK"']
          env: {{LD_DEBUG: files, LD_DEBUG_OUTPUT: {debug}/ld, HB_TEST_MARK: reached}}
        """,
        perf=PERF,
    )
    result, df = _sweep(path, tmp_path)
    assert result.statuses == {"ok": 1}, df.get("error")
    assert "mark=reached" in df.iloc[0]["stdout_tail"]
    users = set()
    for file in debug.iterdir():
        users |= set(re.findall(r"needed by (\S+)", file.read_text(errors="replace")))
    assert users, "the program ran under the experiment's LD_DEBUG"
    assert not any(re.search(r"(hb-exec|/perf)$", u) for u in users), users
    assert any(u.endswith("sh") for u in users), users


@pytest.mark.parametrize(
    "stdout,why",
    [("../out.txt", "leaves cwd through '..'"), ("/tmp/out.txt", "is an absolute path")],
)
def test_stdout_outside_cwd_is_refused_at_load_with_file_line_and_key(tmp_path, stdout, why):
    path = _experiment(tmp_path, f"params: {{argv: [cat], stdout: {stdout}}}\n")
    with pytest.raises(SpecError, match=rf"cmd\.yaml:\d+.*params\.stdout.*{re.escape(why)}"):
        load_spec(path)


@pytest.mark.skipif(os.geteuid() != 0, reason="planting as another user needs root")
def test_a_stdout_link_planted_by_another_user_is_refused_and_not_written(tmp_path, unprivileged):
    victim = unprivileged.home.parent / f"victim-{unprivileged.home.name}"
    victim.write_text("root's own\n")
    try:
        ran = unprivileged.run(["ln", "-s", str(victim), str(unprivileged.home / "out.txt")])
        assert ran.returncode == 0, ran.stderr
        path = _experiment(
            tmp_path, f"params: {{argv: [echo, hi], cwd: {unprivileged.home}, stdout: out.txt}}\n"
        )
        result, df = _sweep(path, tmp_path)
        assert result.statuses == {"failed": 1}
        error = df.iloc[0]["error"]
        assert "stdout:" in error and "symbolic link owned by uid" in error, error
        assert "Traceback" not in error
        assert victim.read_text() == "root's own\n"
    finally:
        victim.unlink(missing_ok=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="planting as another user needs root")
def test_the_lock_holders_record_is_never_printed_raw(tmp_path, unprivileged):
    """Any user may write the lock file: escape sequences and forged lines in it reach no terminal."""
    shared = unprivileged.home.parent / f"lock-{unprivileged.home.name}"
    shared.mkdir(mode=0o1777)
    shared.chmod(0o1777)
    lock = shared / "hugebench.lock"
    forged = (
        '{"pid": "1\\u001b[2J", "what": "x\\n\\u001b]0;owned\\u0007error: all runs passed'
        + "A" * 500
        + '", "started": "\\u202enow"}'
    )
    try:
        ran = unprivileged.run(["sh", "-c", f"printf '%s' '{forged}' > {lock}"])
        assert ran.returncode == 0, ran.stderr
        holder = os.open(
            lock, os.O_RDONLY
        )  # another open file: its flock conflicts with the sweep's
        fcntl.flock(holder, fcntl.LOCK_EX)
        try:
            with pytest.raises(SystemStateError) as refused:
                with SweepLock(lock, "experiment 'root'"):
                    pass
        finally:
            os.close(holder)
        message = str(refused.value)
        assert not re.search(r"[\x00-\x1f\x7f-\x9f\u202e]", message), repr(message)
        assert (
            f"pid {os.getpid()}," in message
        )  # the holder /proc/locks names, not the file's "1\x1b[2J"
        assert "\\x1b]0;owned\\x07" in message and "A" * 101 not in message
    finally:
        shutil.rmtree(shared, ignore_errors=True)


def test_stdout_below_cwd_and_in_the_runs_own_tmp_are_written(tmp_path):
    (tmp_path / "logs").mkdir()
    for n, stdout in enumerate(("logs/out.txt", "'{tmp}/out.txt'")):
        path = _experiment(
            tmp_path,
            f"params: {{argv: [echo, score 7], stdout: {stdout}, "
            "metric: {regex: 'score ([0-9]+)', name: score, better: higher}}\n",
        )
        (tmp_path / str(n)).mkdir()
        result, df = _sweep(path, tmp_path / str(n))
        assert result.statuses == {"ok": 1}, df.get("error")
        assert df.iloc[0]["score"] == 7
    assert (tmp_path / "logs/out.txt").read_text() == "score 7\n"
