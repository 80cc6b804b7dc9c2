"""Every deploy line ``try`` prints is run (issue 40, item 6): each printed shell line goes through ``sh -c`` on a
tiny C program that reports what it got — the library its ``malloc`` resolves to, its ``PR_GET_THP_DISABLE``
and its status ``THP_enabled`` — and the test checks that the line took effect. Lines come least invasive
first: per-process before systemd before the machine-wide sysfs write, which carries what else it changes.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest
from paths import ROOT

from hugebench.system import process_thp_supported
from hugebench.trial import deploy as deploy_mod

JEMALLOC = Path("/usr/lib/x86_64-linux-gnu/libjemalloc.so.2")
REAL_THP = Path("/sys/kernel/mm/transparent_hugepage/enabled")
TREE = ROOT

REPORT_C = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
int main(void) {
    Dl_info info;
    char real[PATH_MAX] = "?", line[256];
    void *p = malloc(64);
    if (dladdr(dlsym(RTLD_DEFAULT, "malloc"), &info) && info.dli_fname) realpath(info.dli_fname, real);
    printf("malloc=%s\nprctl=%d\n", real, prctl(PR_GET_THP_DISABLE, 0, 0, 0, 0));
    FILE *f = fopen("/proc/self/status", "r");
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, "THP_enabled:", 12)) printf("thp_enabled=%d\n", atoi(line + 12));
    if (f) fclose(f);
    free(p);
    return 0;
}
"""


@pytest.fixture(scope="module")
def reporter(tmp_path_factory) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build the test program")
    d = tmp_path_factory.mktemp("deploy")
    (d / "report.c").write_text(REPORT_C)
    subprocess.run(["cc", "-O1", "-o", str(d / "report"), str(d / "report.c")], check=True)
    if JEMALLOC.is_file():
        subprocess.run(
            [
                "cc",
                "-O1",
                "-o",
                str(d / "report-je"),
                str(d / "report.c"),
                "-Wl,--no-as-needed",
                str(JEMALLOC),
            ],
            check=True,
        )
    return d / "report"


def _spec(program: Path):
    return types.SimpleNamespace(allocators={}, params={"argv": [str(program)]})


def _run(line: str) -> dict:
    """Run a printed deploy line through a shell, with this tree's `hugebench` first on PATH."""
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}",
        "PYTHONPATH": str(TREE),
    }
    env.pop("LD_PRELOAD", None)
    done = subprocess.run(["sh", "-c", line], capture_output=True, text=True, env=env, timeout=60)
    assert done.returncode == 0, (line, done.stderr)
    return dict(item.split("=", 1) for item in done.stdout.split())


def _line(dep, scope: str) -> str:
    (line,) = [x.shell for x in dep.lines if x.scope == scope]
    return line


def test_as_is_needs_no_line(reporter):
    dep = deploy_mod.deploy({"allocator": "as-is", "thp": "madvise"}, _spec(reporter), "madvise")
    assert dep.lines == () and dep.env == {}


def test_the_allocator_line_runs_the_program_under_that_allocator(reporter):
    if not JEMALLOC.is_file():
        pytest.skip(f"{JEMALLOC} is not installed (apt-get install libjemalloc2)")
    dep = deploy_mod.deploy(
        {"allocator": "jemalloc-thp", "thp": "madvise"},
        _spec(reporter),
        "madvise",
        systemd_version=252,
    )
    assert [x.scope for x in dep.lines] == ["per-process", "systemd"]
    line = _line(dep, "per-process")
    assert "MALLOC_CONF=thp:always,metadata_thp:always" in line and line.endswith(str(reporter))
    got = _run(line)
    assert os.path.realpath(got["malloc"]) == os.path.realpath(JEMALLOC)
    assert "MemoryTHP" not in dep.systemd  # systemd 252 has none: only Environment=


def test_glibc_forced_over_a_linked_jemalloc_is_a_line_that_makes_glibc_serve(reporter):
    linked = reporter.with_name("report-je")
    if not linked.is_file():
        pytest.skip(f"{JEMALLOC} is not installed (apt-get install libjemalloc2)")
    assert "libjemalloc" in _run(str(linked))["malloc"]  # as-is: its own jemalloc
    dep = deploy_mod.deploy(
        {"allocator": "glibc", "thp": "madvise"}, _spec(linked), "madvise", linked="jemalloc"
    )
    got = _run(_line(dep, "per-process"))
    assert os.path.basename(got["malloc"]) == "libc.so.6"


def test_thp_never_per_process_comes_before_the_machine_wide_write(reporter):
    dep = deploy_mod.deploy({"allocator": "as-is", "thp": "never"}, _spec(reporter), "madvise")
    assert [x.scope for x in dep.lines][0] == "per-process"
    assert dep.lines[-1].scope == "machine-wide"
    assert "no process on this machine gets THP" in dep.lines[-1].affects
    got = _run(_line(dep, "per-process"))
    assert got["prctl"] == "1" and got["thp_enabled"] == "0"


def test_thp_madvise_per_process_on_an_always_machine_is_except_advised(reporter):
    if not process_thp_supported("madvise"):
        pytest.skip("this kernel has no PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18 and later)")
    dep = deploy_mod.deploy({"allocator": "as-is", "thp": "madvise"}, _spec(reporter), "always")
    line = _line(dep, "per-process")
    assert "hugebench exec --thp madvise --" in line
    got = _run(line)
    assert got["prctl"] == "3" and got["thp_enabled"] == "1"


def test_thp_always_has_no_per_process_line_only_the_machine_wide_one_with_its_cost(reporter):
    dep = deploy_mod.deploy({"allocator": "as-is", "thp": "always"}, _spec(reporter), "madvise")
    assert [x.scope for x in dep.lines] == ["machine-wide"]
    assert "none raises THP above the machine's mode" in dep.thp_per_process
    assert "every process on this machine" in dep.thp


@pytest.mark.needs_root
@pytest.mark.needs_thp
def test_the_machine_wide_line_sets_the_mode_and_is_put_back(reporter):
    before = REAL_THP.read_text()
    found = before.split("[")[1].split("]")[0]
    target = "always" if found != "always" else "madvise"
    dep = deploy_mod.deploy({"allocator": "as-is", "thp": target}, _spec(reporter), found)
    line = _line(dep, "machine-wide")
    try:
        subprocess.run(["sh", "-c", line], check=True, timeout=10)
        assert f"[{target}]" in REAL_THP.read_text()
        got = _run(str(reporter))
        assert got["thp_enabled"] == "1" and got["prctl"] == "0"
    finally:
        REAL_THP.write_text(found)
    assert REAL_THP.read_text() == before


@pytest.mark.needs_root
@pytest.mark.needs_thp
def test_a_page_size_set_is_a_required_machine_wide_line_that_sets_each_size(reporter):
    """A multi-size THP cell: no process can choose its folio sizes, so its sizes are a machine-wide line
    printed after (and needed with) the allocator's; run through sh, it sets each size, and is put back."""
    size = REAL_THP.parent / "hugepages-64kB" / "enabled"
    if not size.exists():
        pytest.skip("this kernel offers no 64 KiB multi-size THP")
    before = size.read_text()
    found = before.split("[")[1].split("]")[0]
    target = "always" if found != "always" else "never"
    cell = {"allocator": "jemalloc", "thp": "madvise", "thp.mthp.64kB": target}
    dep = deploy_mod.deploy(cell, _spec(reporter), "madvise", mthp_found={"thp.mthp.64kB": found})
    assert [x.scope for x in dep.lines][0] == "per-process"
    line = dep.lines[-1]
    assert line.scope == "machine-wide" and line.required
    assert dep.sysfs == ({"path": str(size), "value": target},)
    try:
        subprocess.run(["sh", "-c", line.shell], check=True, timeout=10)
        assert f"[{target}]" in size.read_text()
    finally:
        size.write_text(found)
    assert size.read_text() == before


def test_the_systemd_line_needs_a_running_systemd(reporter):
    if Path("/proc/1/comm").read_text().strip() != "systemd" or shutil.which("systemd-run") is None:
        pytest.skip(
            "systemd is not PID 1 here: a drop-in's Environment= cannot be run by systemd-run"
        )
    if not JEMALLOC.is_file():
        pytest.skip(f"{JEMALLOC} is not installed")
    dep = deploy_mod.deploy({"allocator": "jemalloc", "thp": "madvise"}, _spec(reporter), "madvise")
    env = dep.systemd.splitlines()[1]
    assert env.startswith("Environment=")
    props = [f"--property={env}"]
    done = subprocess.run(
        ["systemd-run", "--wait", "--pipe", "--quiet", *props, str(reporter)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    got = dict(item.split("=", 1) for item in done.stdout.split())
    assert os.path.realpath(got["malloc"]) == os.path.realpath(JEMALLOC)
