"""The documentation: the manual builds in MkDocs' strict mode, and the commands it shows work.

Every fenced ``sh`` block of README.md and docs/getting-started.md that follows a line ``<!-- ci: runs -->``
is run here, in order per file, each line as a shell command in a scratch directory that has the repository's
``experiments/`` and ``.venv`` (the interpreter running these tests) — so a documented command that no longer
works fails CI. Blocks without the marker (a long sweep, a command needing root, the setup itself) are not run;
the test checks that each file has marked blocks, so the convention cannot quietly be dropped. Commands that
read a store made by a long sweep (``results/tlb``, ``other-machine/tlb``) get the committed sample stores
(tests/data) in its place: :data:`STORES`.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import ROOT

MARKER = "<!-- ci: runs -->"
BLOCK = re.compile(r"^" + re.escape(MARKER) + r"\n```sh\n(.*?)^```", re.MULTILINE | re.DOTALL)
RUN_FILES = ("README.md", "docs/getting-started.md")
STORES = {
    "results/tlb": "sample_results",
    "other-machine/tlb": "sample_results_b",
}  # path in docs -> tests/data
COMMAND_TIMEOUT = 60  # seconds: what "a command that finishes in under a minute" means here


def marked_blocks(path: Path) -> list[str]:
    """The shell text of every fenced sh block marked to run in CI."""
    return BLOCK.findall(path.read_text(encoding="utf-8"))


def test_marker_is_found_in_every_file():
    for name in RUN_FILES:
        assert marked_blocks(ROOT / name), (
            f"{name} has no '{MARKER}' block: nothing of it would be run"
        )


def test_a_marker_must_precede_an_sh_block():
    for name in RUN_FILES:
        text = (ROOT / name).read_text(encoding="utf-8")
        markers = re.findall(r"^" + re.escape(MARKER) + r"$", text, re.MULTILINE)
        assert len(markers) == len(marked_blocks(ROOT / name)), (
            f"{name}: a '{MARKER}' line not before ```sh"
        )


@pytest.fixture
def scratch(tmp_path):
    """A directory that looks like a checkout to the documented commands, with a private lock and journal."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "experiments").symlink_to(ROOT / "experiments")
    (work / ".venv").symlink_to(Path(sys.prefix))
    for where, sample in STORES.items():
        shutil.copytree(ROOT / "tests" / "data" / sample, work / where)
    env = dict(
        os.environ,
        PATH=f"{Path(sys.executable).parent}:{os.environ.get('PATH', '')}",
        HUGEBENCH_LOCK=str(tmp_path / "hugebench.lock"),
        HUGEBENCH_JOURNAL=str(tmp_path / "journal.json"),
        COLUMNS="100",
    )
    return work, env


@pytest.mark.parametrize("name", RUN_FILES)
def test_documented_commands_run(name, scratch):
    work, env = scratch
    for block in marked_blocks(ROOT / name):
        # one shell per block, so a heredoc or a variable spans its lines; -e: the first failure stops it
        try:
            done = subprocess.run(
                ["bash", "-euo", "pipefail", "-c", block],
                cwd=work,
                env=env,
                text=True,
                capture_output=True,
                timeout=COMMAND_TIMEOUT * max(1, block.count("\n")),
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"{name}: this block took too long to be a quick command:\n{block}")
        assert done.returncode == 0, (
            f"{name}: block failed ({done.returncode}):\n{block}\n{done.stdout}\n{done.stderr}"
        )
        assert "Traceback" not in done.stdout + done.stderr, block


def test_manual_builds_in_strict_mode(tmp_path):
    pytest.importorskip(
        "mkdocs", reason="mkdocs not installed (pip install '.[docs]'; .ci/setup does)"
    )
    site = tmp_path / "site"
    done = subprocess.run(
        _mkdocs() + ["build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        text=True,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (site / "index.html").is_file()
    keys = (site / "experiments" / "index.html").read_text(encoding="utf-8")
    assert "<!-- hugebench:" not in keys, "a generated section was left unexpanded"


def _mkdocs() -> list[str]:
    script = (
        Path(sys.executable).parent / "mkdocs"
    )  # the script, not -m: the installed hugebench, not ./hugebench
    return [str(script)] if script.exists() else [sys.executable, "-m", "mkdocs"]


def test_a_broken_link_fails_the_build(tmp_path):
    pytest.importorskip(
        "mkdocs", reason="mkdocs not installed (pip install '.[docs]'; .ci/setup does)"
    )
    copy = tmp_path / "repo"
    shutil.copytree(ROOT / "docs", copy / "docs")
    shutil.copy(ROOT / "mkdocs.yml", copy / "mkdocs.yml")
    (copy / "hugebench" / "manual").mkdir(parents=True)
    shutil.copy(
        ROOT / "hugebench" / "manual" / "docgen.py", copy / "hugebench" / "manual" / "docgen.py"
    )
    with open(copy / "docs" / "index.md", "a", encoding="utf-8") as page:
        page.write("\n[a page that does not exist](nope.md)\n")
    done = subprocess.run(
        _mkdocs() + ["build", "--strict", "--site-dir", str(tmp_path / "site")],
        cwd=copy,
        text=True,
        capture_output=True,
        timeout=120,
    )
    assert done.returncode != 0 and "nope.md" in done.stdout + done.stderr


def test_generated_reference_has_every_key_and_parameter():
    from hugebench import experiment as spec
    from hugebench import workloads
    from hugebench.manual import docgen

    keys = docgen.spec_keys()
    for key in spec.TOP_KEYS:
        assert f"| `{key}` |" in keys
    reference = docgen.workload_reference()
    for name, workload in workloads.WORKLOADS.items():
        assert f"### `{name}`" in reference
        for param in workload.params:
            assert f"| `{param}` |" in reference, (name, param)


def test_unknown_generated_section_is_an_error():
    from hugebench.manual import docgen

    with pytest.raises(ValueError, match="unknown generated section 'nope'"):
        docgen.expand("text\n<!-- hugebench:nope -->\n")


# Messages the troubleshooting page quotes: each must still be in the page and in the code that raises it, so
# the page cannot describe an error the program no longer prints.
QUOTED_ERRORS = (
    "another sweep is running on this machine",
    "left kernel knobs changed",
    "is both a fixed param and an axis; keep one",
    "unknown key; allowed keys",
    "install it: apt-get install",
    "unknown parameter of workload",
    "YAML reads unquoted yes/no/on/off/true/false as a boolean: quote the word",
    "KVM guest without vPMU",
    "is not in this build",
    "THP mode must be one of",
    "is missing: reinstall hugebench (pip install .)",
)


def test_troubleshooting_quotes_real_messages():
    page = " ".join((ROOT / "docs" / "troubleshooting.md").read_text(encoding="utf-8").split())
    code = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "hugebench").rglob("*.py"))
    for message in QUOTED_ERRORS:
        assert message in page, f"troubleshooting.md no longer quotes {message!r}"
        assert message in code, (
            f"no code prints {message!r} any more: update docs/troubleshooting.md"
        )


def test_every_shipped_experiment_is_in_the_manual():
    page = (ROOT / "docs" / "experiments.md").read_text(encoding="utf-8")
    for path in sorted((ROOT / "experiments").glob("*.yaml")):
        stem = path.stem
        assert (
            f"`experiments/{path.name}`" in page or f"`{path.name}`" in page or f"`{stem}`" in page
        ), f"experiments/{path.name} is not in docs/experiments.md"
