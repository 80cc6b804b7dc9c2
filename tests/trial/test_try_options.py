"""`hugebench try`'s options (issue 38): the program's arguments are passed as typed (`find . -exec cmd {} ;`),
only `{tmp}` and `{python}` keep their documented meaning; every refusal names the option typed, not a line of
a generated experiment.yaml, and leaves nothing behind; options that do nothing alone are refused; an `-o`
that cannot hold results is a clean error."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.trial import matrix as matrix_mod
from hugebench.trial import options
from hugebench.trial.matrix import Matrix, Request
from hugebench.workloads.command import template

CELLS = [{"allocator": "glibc", "thp": "always"}, {"allocator": "glibc", "thp": "never"}]
FIELDS = {"tmp": "/run/T", "python": "/usr/bin/python3"}


def _as_run(request: Request) -> dict:
    """The params a run of try's experiment gets: the file checked as sweep loads it, then substituted."""
    mx = Matrix(CELLS, CELLS[0], "always")
    spec, runs = options.checked(matrix_mod.experiment(request, mx, "t", 60.0), "header")
    # one timed run per configuration, and its untimed warm-up run (the probe's only run, issue 55)
    assert sorted(bool(r.warmup) for r in runs) == [False, False, True, True]
    assert spec.params["probe"] == "untimed"
    return {k: template.substitute(v, FIELDS) for k, v in spec.params.items()}


def test_the_program_arguments_are_taken_literally():
    typed = ("find", ".", "-exec", "cmd", "{}", ";", "{x}", "}{", "{{y}}", "{0:>4}", "{a.b}")
    argv = _as_run(Request(argv=typed))["argv"]  # the program itself resolved on PATH
    assert os.path.basename(argv[0]) == "find" and argv[1:] == list(typed[1:])


def test_tmp_and_python_keep_their_documented_meaning():
    params = _as_run(
        Request(
            argv=("redis-benchmark", "-s", "{tmp}/s", "{python}", "{tmpx}"),
            env={"A": "{tmp}/a {}", "B": "{nope}"},
            server="redis-server --unixsocket {tmp}/s --x {}",
            ready="log:ready{3}",
        )
    )
    assert params["argv"][1:] == ["-s", "/run/T/s", "/usr/bin/python3", "{tmpx}"]
    assert params["env"] == {"A": "/run/T/a {}", "B": "{nope}"}
    assert params["server"]["argv"][1:] == ["--unixsocket", "/run/T/s", "--x", "{}"]
    assert params["server"]["ready"] == {"log": "ready{3}"}


def test_cwd_and_stdin_are_paths_as_typed(tmp_path):
    odd = tmp_path / "{tmp}"
    odd.mkdir()
    (odd / "in{}").write_text("x")
    params = _as_run(Request(argv=("cat",), cwd=str(odd), stdin=str(odd / "in{}")))
    assert params["cwd"] == str(odd) and params["stdin"] == str(odd / "in{}")


REFUSALS = [
    (["--env", "LD_PRELOAD=/x.so"], "--env: "),
    (["--env", "1BAD=x"], "--env"),
    (["--ready", "port:5"], "--ready says when the --server takes requests"),
    (["--aged-level", "50%"], "--aged-level is the fragmented state of --aged"),
    (["--budget", "100000000000000000000h"], "--budget '100000000000000000000h': at most 168h"),
    (["--server", "sleep 1", "--ready", "port:99999"], "--ready 'port:99999': port must be"),
    (["--metric", "json:"], "--metric 'json:'"),
    (["--allocators", "nope"], "--allocators: unknown nope"),
]


@pytest.mark.parametrize("args,said", REFUSALS, ids=lambda v: v[0] if isinstance(v, list) else "")
def test_a_refusal_names_the_option_typed_and_leaves_nothing(tmp_path, args, said):
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["try", *args, "-o", str(out), "--", "true"])
    assert result.exit_code != 0 and "Traceback" not in result.output
    assert result.output.startswith(f"hugebench: error: {said}"), result.output
    assert "experiment.yaml" not in result.output and "key '" not in result.output
    assert not out.exists()


def test_a_too_long_argument_is_refused_as_the_programs_argument(tmp_path):
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["try", "-o", str(out), "--", "true", "x" * 200_000])
    assert result.exit_code == 2, result.output
    assert result.output.startswith("hugebench: error: the program's arguments (after --): ")
    assert not out.exists()


def test_spec_errors_in_the_generated_file_are_said_in_options():
    said = options.in_options("hugebench try:12: key 'params.server.ready.port': bad port")
    assert said == "--ready: bad port"
    assert options.in_options("hugebench try:3: key 'timeout': too long") == "--budget: too long"
    assert options.in_options("hugebench try: key 'perf': odd") == "try (perf): odd"


def test_o_that_is_not_a_directory_is_a_clean_error(tmp_path):
    for target in ("/dev/null", "/proc/hugebench-cannot-be-here"):
        result = CliRunner().invoke(main, ["try", "-o", target, "--", "true"])
        assert result.exit_code == 1, result.output
        assert result.output.startswith(f"hugebench: error: -o {target}: ")
        assert "Traceback" not in result.output


def test_o_in_a_read_only_directory_is_a_clean_error(unprivileged, tmp_path):
    from test_unprivileged import _shared_dir

    work = unprivileged.owned_dir(unprivileged.home / "lab")
    locked = work / "ro"
    locked.mkdir()
    locked.chmod(0o555)
    os.chown(locked, 0, 0)  # root's, read-only to the user
    lock_dir = _shared_dir(unprivileged.home.parent / "lock-try-ro", 0o1777)
    import hugebench

    env = {  # the hugebench under test, as the user imports it
        "HUGEBENCH_LOCK": str(lock_dir / "hugebench.lock"),
        "PYTHONPATH": str(Path(hugebench.__file__).resolve().parents[1]),
    }
    ran = unprivileged.hugebench(
        "try", "--allocators", "glibc", "-o", "ro/x", "--", "true", env=env, cwd=work
    )
    assert ran.returncode == 1, ran.stderr
    assert "-o ro/x: cannot write experiment.yaml there: Permission denied" in ran.stderr
    assert "Traceback" not in ran.stderr and not (locked / "x").exists()


def _thp_found() -> str:
    text = Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text()
    return text.split("[")[1].split("]")[0]


@pytest.mark.skipif(
    not Path("/sys/kernel/mm/transparent_hugepage/enabled").exists(), reason="no THP here"
)
def test_the_program_receives_braces_as_typed(tmp_path):
    """A real try: the program prints the length of what it got; `{}{x}` must arrive as 5 characters."""
    import shutil

    if (
        shutil.which("jemalloc.sh") is None
        and not Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2").exists()
    ):
        pytest.skip("jemalloc not installed: a try needs two configurations")
    script = (
        'import json, sys; print(json.dumps({"n": len(sys.argv[1]), "ok": sys.argv[1] == "{}{x}"}))'
    )
    out = tmp_path / "o"
    result = CliRunner().invoke(
        main,
        ["try", "--json", "--regime", "back-to-back", "--budget", "10s", "--allocators", "glibc,jemalloc-thp",
         "--thp", _thp_found(), "--metric", "json:n", "-o", str(out), "--",
         sys.executable, "-c", script, "{}{x}"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    verdict = json.loads(result.stdout.strip().splitlines()[-1])
    assert verdict["baseline"]["median"] == 5, verdict["baseline"]
    assert "{{}}{{x}}" in (out / "experiment.yaml").read_text()  # the file spells them doubled


# issue 53: options that ran something else than asked, or slept past the budget
ROUND5 = [
    (["--allocators", ","], "--allocators ',': names no allocator"),
    (["--allocators", " , ,"], "--allocators ' , ,': names no allocator"),
    (["--regime", "cold", "--idle", "nan"], "--idle nan: give the seconds of idle, 0 to 3600"),
    (
        ["--regime", "cold", "--idle", "3600", "--budget", "30s"],
        "--idle 3600: each cold run idles 3600 s first",
    ),
    (["--server", "sleep 1", "--ready", "port:٥٠"], "--ready 'port:٥٠': port must be"),
]


@pytest.mark.parametrize(
    "args,said", ROUND5, ids=lambda v: " ".join(v) if isinstance(v, list) else ""
)
def test_options_that_would_mislead_or_hang_are_refused_up_front(tmp_path, args, said):
    out = tmp_path / "o"
    result = CliRunner().invoke(main, ["try", *args, "-o", str(out), "--", "true"])
    assert result.exit_code == 2 and "Traceback" not in result.output, result.output
    assert result.output.startswith(f"hugebench: error: {said}"), result.output
    assert not out.exists()


def test_an_idle_the_budget_holds_is_taken():
    from hugebench.trial.session import refuse_idle

    cold = [{"allocator": "glibc", "regime": "cold:3s"}]
    refuse_idle(Request(argv=("true",), budget_s=60, idle_s=3), cold)  # 6 runs x 3 s + 4 s
    refuse_idle(Request(argv=("true",), budget_s=30, idle_s=3600), [{"regime": "warm"}])
