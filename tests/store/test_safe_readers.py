"""Readers never carry another user's secret (issue 53): a store's files are read as its writers write them.

An unprivileged user (``nobody``) owns a results directory and plants in it a symbolic link to a file only
root may read (0600 in a 0700 directory) holding rows with a marker. Root then does what a report does there
(``report --html``, ``--export-json/--export-csv``, ``compare --html``, ``history --html``, ``report --plots``):
each is refused with one line naming the link, and the marker appears nowhere: not on the terminal, not in any
file written into nobody's directory. A link root owns, and nobody's own plain files, are read as before.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner
from paths import TESTS

from hugebench.cli import main
from hugebench.errors import UnsafePathError
from hugebench.store import load

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0, reason="planting as another user needs root to drop privileges"
)
SAMPLE = TESTS / "data" / "sample_results"
MARK = "SECRETxROW"  # in every secret row, as its allocator's name


@pytest.fixture
def planted(unprivileged, tmp_path):
    """(nobody's results directory, whose runs.jsonl nobody linked to root's secret rows; the secret file;
    a function running a shell line as nobody)."""
    private = tmp_path / "private"
    private.mkdir(mode=0o700)
    secret = private / "runs.jsonl"
    secret.write_text((SAMPLE / "runs.jsonl").read_text().replace('"glibc"', f'"{MARK}"'))
    secret.chmod(0o600)
    results = unprivileged.owned_dir(unprivileged.home / "results")
    shutil.copytree(SAMPLE / "sweeps", results / "sweeps")
    for path in [results / "sweeps", *(results / "sweeps").iterdir()]:
        os.chown(path, unprivileged.uid, unprivileged.gid)

    def as_nobody(line: str) -> None:
        ran = unprivileged.run(["sh", "-ec", line])
        assert ran.returncode == 0, ran.stderr

    as_nobody(f"ln -s {secret} {results}/runs.jsonl")
    return results, secret, as_nobody


def _nothing_copied(results: Path, output: str, secret: Path) -> None:
    assert MARK not in output
    for where, _, files in os.walk(results):
        for name in files:
            path = Path(where, name)
            if not path.is_symlink() and not path.samefile(secret):
                assert MARK.encode() not in path.read_bytes(), path


def _refused(outcome, what: str = "symbolic link owned by uid") -> None:
    assert outcome.exit_code == 1 and isinstance(outcome.exception, SystemExit), outcome.output
    assert what in outcome.output and "Traceback" not in outcome.output
    errors = [line for line in outcome.output.splitlines() if line.startswith("hugebench: error:")]
    assert len(errors) == 1, outcome.output


COMMANDS = {
    "report --html": lambda r: ["report", r, "--html"],
    "report exports": lambda r: [
        "report",
        r,
        "--export-json",
        r / "o.json",
        "--export-csv",
        r / "o.csv",
    ],
    "compare --html": lambda r: ["compare", r, r, "--html"],
    "history --html": lambda r: ["history", r, "--html", r / "h.html"],
    "report --plots": lambda r: ["report", r, "--plots"],
    "report markdown": lambda r: ["report", r, "--format", "markdown"],
}


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_planted_runs_link_to_root_only_rows_is_refused_and_nothing_is_copied(planted, command):
    results, secret, _ = planted
    outcome = CliRunner().invoke(main, [str(a) for a in COMMANDS[command](results)])
    _refused(outcome)
    assert f"{results}/runs.jsonl" in outcome.output
    _nothing_copied(results, outcome.output, secret)
    assert MARK in secret.read_text()  # the secret itself is untouched


def test_the_loader_refuses_it_too(planted):
    results, _, _ = planted
    with pytest.raises(UnsafePathError, match=r"runs\.jsonl.*symbolic link owned by uid \d+"):
        load(results)


def test_a_planted_context_link_is_skipped_with_a_warning_and_not_shown(planted, tmp_path):
    results, _, as_nobody = planted
    private_context = tmp_path / "private" / "context.json"
    context = (results / "sweeps" / "tlb-sample-0001.json").read_text()
    private_context.write_text(context.replace('"tlb-sample"', f'"{MARK}"'))
    private_context.chmod(0o600)
    as_nobody(
        f"rm {results}/runs.jsonl && cp {SAMPLE}/runs.jsonl {results}/runs.jsonl && "
        f"rm {results}/sweeps/tlb-sample-0001.json && "
        f"ln -s {private_context} {results}/sweeps/tlb-sample-0001.json"
    )
    outcome = CliRunner().invoke(main, ["report", str(results), "--format", "json"])
    assert isinstance(outcome.exception, SystemExit), (
        outcome.output
    )  # (a clean error: no axes known)
    warning = "hugebench: warning: " + f"{results}/sweeps/tlb-sample-0001.json: refused, "
    assert warning in outcome.output and "symbolic link owned by uid" in outcome.output
    _nothing_copied(results, outcome.output, private_context)


def test_a_planted_link_on_the_way_to_the_store_is_refused(unprivileged, tmp_path):
    private = tmp_path / "private-store"
    shutil.copytree(SAMPLE, private)
    (private / "runs.jsonl").write_text(
        (SAMPLE / "runs.jsonl").read_text().replace('"glibc"', f'"{MARK}"')
    )
    private.chmod(0o700)
    linked = unprivileged.home / "results"
    ran = unprivileged.run(["ln", "-s", str(private), str(linked)])
    assert ran.returncode == 0, ran.stderr
    outcome = CliRunner().invoke(main, ["report", str(linked), "--format", "markdown"])
    _refused(outcome)
    assert MARK not in outcome.output


def test_a_hard_link_to_another_owners_file_in_a_users_directory_is_refused(planted):
    """What nobody could plant where fs.protected_hardlinks is 0 (root makes the link here)."""
    results, secret, _ = planted
    (results / "runs.jsonl").unlink()
    try:
        os.link(secret, results / "runs.jsonl")
    except OSError as exc:
        pytest.skip(f"cannot hard-link across these directories: {exc.strerror}")
    outcome = CliRunner().invoke(
        main, ["report", str(results), "--export-json", str(results / "o.json")]
    )
    _refused(outcome, "2 hard links and belongs to uid 0")
    _nothing_copied(results, outcome.output, secret)


def test_roots_own_link_and_a_users_own_files_are_read(unprivileged, tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    shutil.copytree(SAMPLE / "sweeps", mine / "sweeps")
    os.symlink(SAMPLE / "runs.jsonl", mine / "runs.jsonl")  # root's link: followed
    assert len(load(mine)) == 55
    theirs = unprivileged.owned_dir(unprivileged.home / "theirs")
    ran = unprivileged.run(["cp", "-r", f"{SAMPLE}/runs.jsonl", f"{SAMPLE}/sweeps", str(theirs)])
    assert ran.returncode == 0, ran.stderr
    outcome = CliRunner().invoke(main, ["report", str(theirs), "--format", "markdown"])
    assert outcome.exit_code == 0 and "glibc" in outcome.output, outcome.output
