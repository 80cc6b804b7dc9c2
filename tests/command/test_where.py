"""Issue 56: which regions of a program pay for huge pages (``hugebench where``), and huge pages for those
alone (``hugebench exec --select RULE``, libhbselect.so).

The program (tests/data/regions_program.c) has a hot 64 MiB region read at random and a cold 256 MiB region
touched once, one word per 64 KiB (the issue's 512 MiB / 2 GiB, smaller). ``where`` must name the hot one as
the region that pays; the rule it suggests, deployed by its printed line, must put 90% or more of the hot
region on huge pages and leave the cold one alone (its smaps: no ``hg`` flag, no huge page, resident memory
within 5% of the program's as-is run)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from paths import DATA

from hugebench.errors import SpecError
from hugebench.kernel.smaps import read_smaps
from hugebench.machine import select_rule
from hugebench.machine.where_view import HEADER

HOT_MIB, COLD_MIB = 64, 256
THP_ENABLED = Path("/sys/kernel/mm/transparent_hugepage/enabled")
HUGEBENCH = [
    str(Path(sys.executable).parent / "hugebench")
]  # the installed one (-m would import ./hugebench)


@pytest.fixture(scope="module")
def program(tmp_path_factory) -> Path:
    if shutil.which("cc") is None:
        pytest.skip("no C compiler (cc) to build the test program")
    out = tmp_path_factory.mktemp("where") / "regions"
    subprocess.run(["cc", "-O2", "-o", str(out), str(DATA / "regions_program.c")], check=True)
    return out


def _thp_madvise() -> None:
    """Skip unless THP is 'madvise' (as this machine is meant to be left)."""
    text = THP_ENABLED.read_text() if THP_ENABLED.exists() else ""
    if "[madvise]" not in text:
        pytest.skip(
            f"THP is not 'madvise' here ({text.strip() or 'no THP'}): the selective rule needs it"
        )


@pytest.mark.parametrize(
    ("rule", "says"),
    [
        ("", "empty"),
        ("anon>=1M", "below 2 MiB"),
        ("anon>=64Q", "not a size"),
        ("hot", "unknown term 'hot'"),
        ("heap,heap", "heap twice"),
        ("anon>=64M,,heap", "empty term"),
        ("anon>=64M,anon<32M", "leaves no size"),
        ("site=main", "OBJECT+0xOFFSET"),
        ("anon>=4M,anon>=8M", "two anon>= terms"),
    ],
)
def test_a_bad_rule_is_refused_with_what_is_wrong(rule, says):
    with pytest.raises(SpecError, match=re.escape(says)):
        select_rule.parse(rule)


def test_a_rule_is_normalised_for_the_library():
    assert select_rule.parse(" heap , anon>=64M").normalised() == "anon>=67108864,heap"
    rule = select_rule.parse("site=prog+0x1139,anon<1G")
    assert rule.normalised() == "anon>=2097152,anon<1073741824,site=prog+0x1139"
    assert rule.selects("", 512 << 20) and not rule.selects("", 1 << 30)
    assert rule.selects("", 4 << 30, site="prog+0x1139") and not rule.selects("[heap]", 8 << 20)


def test_exec_refuses_a_bad_rule_in_one_line():
    done = subprocess.run(
        [*HUGEBENCH, "exec", "--select", "anon>=1K", "--", "true"], capture_output=True, text=True
    )
    assert done.returncode == 2
    assert "below 2 MiB" in done.stderr and "Traceback" not in done.stderr


def _where(argv: list[str], out: Path) -> dict:
    """``hugebench where`` of ``argv`` sampled every 0.2 s: its JSON document and its stdout."""
    done = subprocess.run(
        [*HUGEBENCH, "where", "--interval", "0.2", "--json", str(out), "--", *argv],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    return {"json": json.loads(out.read_text()), "stdout": done.stdout}


@pytest.fixture(scope="module")
def where(program, tmp_path_factory) -> dict:
    _thp_madvise()  # under THP always the hot region is on huge pages already (verdict 'huge')
    out = tmp_path_factory.mktemp("where-json") / "where.json"
    return _where([str(program), str(HOT_MIB), str(COLD_MIB), "150000000"], out)


def test_where_names_the_hot_region_as_the_one_that_pays(where):
    regions = where["json"]["regions"]
    paying = [r for r in regions if r["verdict"] == "pays"]
    assert [r["size"] >> 20 for r in paying] == [HOT_MIB], where["stdout"]
    assert paying[0]["site"] and paying[0]["site"].startswith("regions+0x")
    cold = [r for r in regions if r["kind"] == "anon" and r["size"] >> 20 == COLD_MIB]
    assert [r["verdict"] for r in cold] == ["cold"]
    assert where["json"]["rule"] == f"site={paying[0]['site']}"
    assert HEADER in where["stdout"]
    lines = where[
        "stdout"
    ].splitlines()  # all within 80 columns but the deploy line and the JSON's path
    assert [
        x for x in lines if len(x) > 80 and not x.startswith(("    LD_PRELOAD=", "json: "))
    ] == []


def _hold(argv: list[str], env: dict[str, str] | None = None):
    """The program started with 'hold': it has done its work when it prints 'done' (then waits). Returns
    it and where its blocks are ({'hot': (start, size), 'cold': ...})."""
    proc = subprocess.Popen(
        argv,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    blocks = {}
    for line in proc.stdout:
        words = line.split()
        if words[:1] in (["hot"], ["cold"]):
            blocks[words[0]] = (int(words[1], 16), int(words[2]))
        if line.strip() == "done":
            return proc, blocks
    proc.kill()
    raise AssertionError(f"the program ended without 'done': {proc.stderr.read()}")


def _resident(pid: int, block: tuple[int, int]) -> int:
    """Bytes of the block in memory (pagemap's present bit, page by page: whatever its mapping)."""
    start, size = block
    first, last = start // 4096, (start + size - 1) // 4096
    with open(f"/proc/{pid}/pagemap", "rb") as f:
        f.seek(first * 8)
        raw = f.read((last - first + 1) * 8)
    words = memoryview(raw).cast("Q")
    return sum(4096 for w in words if w >> 63)


def _region(pid: int, size_mib: int):
    """The block's own mapping in smaps (kept apart from its neighbour by its own flags)."""
    found = [v for v in read_smaps(pid) if v.name == "" and v.size >> 20 == size_mib]
    assert len(found) == 1, [v.label() for v in read_smaps(pid)]
    return found[0]


def test_the_suggested_rule_deployed_gives_the_hot_region_alone_huge_pages(where, program):
    _thp_madvise()
    args = [str(program), str(HOT_MIB), str(COLD_MIB), "1000000", "hold"]
    bare, blocks = _hold(args)
    try:
        cold_as_is = _resident(bare.pid, blocks["cold"])
    finally:
        bare.communicate("")
    rule = where["json"]["rule"]
    selective, blocks = _hold([*HUGEBENCH, "exec", "--select", rule, "--", *args])
    try:
        hot, cold = _region(selective.pid, HOT_MIB), _region(selective.pid, COLD_MIB)
        cold_resident = _resident(selective.pid, blocks["cold"])
    finally:
        _, err = selective.communicate("")
    assert f"HUGEBENCH_SELECT={rule}" in err and "libhbselect.so" in err  # the deploy line
    assert "hg" in hot.flags and hot.fields["AnonHugePages"] >= 0.9 * (HOT_MIB << 20)
    assert "hg" not in cold.flags and cold.fields["AnonHugePages"] == 0
    assert cold_as_is >= (COLD_MIB << 20) // 16  # one page per 64 KiB
    assert cold_resident <= 1.05 * cold_as_is


def test_a_size_rule_leaves_the_regions_outside_its_window(program):
    _thp_madvise()
    env = {**os.environ, **select_rule.deploy_environment(select_rule.parse("anon>=32M,anon<128M"))}
    proc, _ = _hold([str(program), str(HOT_MIB), str(COLD_MIB), "1000", "hold"], env)
    try:
        hot, cold = _region(proc.pid, HOT_MIB), _region(proc.pid, COLD_MIB)
    finally:
        proc.communicate("")
    assert "hg" in hot.flags and hot.fields["AnonHugePages"] >= 0.9 * (HOT_MIB << 20)
    assert "hg" not in cold.flags and cold.fields["AnonHugePages"] == 0


def test_a_program_that_madvises_itself_is_reported_as_such(tmp_path):
    pytest.importorskip("numpy")
    script = (
        "import numpy, time\n"
        "a = numpy.ones(16 << 20 >> 3)\n"  # 16 MiB: numpy madvises MADV_HUGEPAGE from 4 MiB on Linux
        "end = time.time() + 1.5\n"
        "while time.time() < end: a.sum()\n"
    )
    found = _where([sys.executable, "-c", script], tmp_path / "where.json")
    advised = [r for r in found["json"]["regions"] if r["advised"] == "hg"]
    assert any(r["size"] >= 16 << 20 for r in advised), found["stdout"]
    assert "the program madvises huge pages itself" in found["stdout"]


def test_try_races_the_selective_configuration_under_thp_madvise_only(monkeypatch, fake_sys):
    from hugebench.trial import matrix

    monkeypatch.setattr(matrix.os, "geteuid", lambda: 0)
    request = matrix.Request(argv=("true",), only=("glibc",), select="anon>=32M", regime="warm")
    built = matrix.build(request, fake_sys.host)
    selective = [c for c in built.cells if c["allocator"] == "selective"]
    assert [c["thp"] for c in selective] == ["madvise"]
    entry = built.user_allocators["selective"]
    assert entry["env"] == {"HUGEBENCH_SELECT": "anon>=33554432"}
    assert entry["path"].endswith("libhbselect.so") and "32 MiB" in entry["description"]
    with pytest.raises(SpecError, match="below 2 MiB"):
        matrix.build(matrix.Request(argv=("true",), select="anon>=1M"), fake_sys.host)


HEAP_C = r"""
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
int main(void) {  /* 64 MiB of the brk heap in 100 KiB blocks (below glibc's mmap threshold) */
    for (int i = 0; i < 640; i++) memset(malloc(100 << 10), 1, 100 << 10);
    printf("done\n");
    fflush(stdout);
    char c;
    while (read(0, &c, 1) > 0) {}
    return 0;
}
"""


def test_the_heap_rule_puts_the_grown_heap_on_huge_pages(tmp_path, program):
    _thp_madvise()
    (tmp_path / "heap.c").write_text(HEAP_C)
    subprocess.run(
        ["cc", "-O2", "-o", str(tmp_path / "heap"), str(tmp_path / "heap.c")], check=True
    )
    env = {**os.environ, **select_rule.deploy_environment(select_rule.parse("heap"))}
    proc, _ = _hold([str(tmp_path / "heap")], env)
    try:
        heap = [v for v in read_smaps(proc.pid) if v.name == "[heap]"]
    finally:
        proc.communicate("")
    assert all("hg" in v.flags for v in heap)
    huge = sum(v.fields["AnonHugePages"] for v in heap)
    assert huge >= 0.75 * (64 << 20), [(v.label(), v.fields["AnonHugePages"]) for v in heap]


def test_the_hot_regions_are_drawn_over_time(where, tmp_path):
    pytest.importorskip("matplotlib")
    from hugebench.report.figures.where_plot import hot_figure, plot_hot

    lines = hot_figure(where["json"]).axes[0].get_lines()
    assert [line.get_label().split(" (")[0] for line in lines] == [
        r["label"] for r in where["json"]["regions"] if r["hot"] > 0
    ]
    assert all(p.stat().st_size > 0 for p in plot_hot(where["json"], tmp_path))


def test_where_refuses_a_program_that_is_not_there():
    done = subprocess.run(
        [*HUGEBENCH, "where", "--", "/nonexistent/prog"], capture_output=True, text=True
    )
    assert done.returncode != 0 and "cannot run /nonexistent/prog" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_html_page_shows_the_table_the_lines_and_the_picture(where):
    pytest.importorskip("matplotlib")
    from hugebench.report.html import render_html
    from hugebench.report.where_page import page

    notes = [line for line in where["stdout"].splitlines() if line.startswith("huge pages for")]
    html = render_html(page(where["json"], notes))
    paying = next(r for r in where["json"]["regions"] if r["verdict"] == "pays")
    assert f"<td>{paying['label']}</td>" in html and "<td>pays</td>" in html
    assert "huge pages for the regions that pay" in html
    assert html.count("<svg") >= 1 and "MiB touched in the interval" in html


@pytest.mark.parametrize("option", ["--html", "--json"])
def test_where_refuses_a_file_it_could_not_write_before_running(tmp_path, option):
    marker = tmp_path / "ran"
    done = subprocess.run(
        [
            *HUGEBENCH,
            "where",
            option,
            str(tmp_path / "missing" / "w.out"),
            "--",
            "touch",
            str(marker),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode != 0 and f"{option} " in done.stderr
    assert "does not exist; create it first" in done.stderr
    assert not marker.exists() and "Traceback" not in done.stderr
