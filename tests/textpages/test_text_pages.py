"""The text_pages axis: libhbtext.so moving a real program's text onto huge pages, and its Python side.

The real programs are built here: 12 MiB of `ret` instructions in .text (asm .fill), called at every 4 KiB
page, so the text is large enough for an aligned interior and every page of it is executed. `big2m` is
linked with -z max-page-size=0x200000 (the kernel loads it 2 MiB-aligned), `big4k` with the default (a
4 KiB-granular base: head and tail around the interior, and no file-thp).
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess

import pytest
from hypothesis import given
from hypothesis import strategies as st

from hugebench.machine import textpages as text
from hugebench.machine.textpages import conditions

BLOB = 12 << 20
CALLS = BLOB // 4096
PROGRAM = r"""
#include <cstdio>
asm(".text\n.globl hb_blob\n.type hb_blob,@function\n.p2align 12\nhb_blob:\n"
    ".fill %(blob)d, 1, 0xc3\n.size hb_blob, %(blob)d\n");
extern "C" void hb_blob();
int main() {
    auto base = reinterpret_cast<char*>(&hb_blob);
    long calls = 0;
    for (long off = 0; off < %(blob)dL; off += 4096, ++calls) reinterpret_cast<void (*)()>(base + off)();
    std::printf("calls=%%ld\n", calls);
    return 7;
}
"""
THREADS = r"""
#include <pthread.h>
#include <unistd.h>
static void* idle(void* p) { for (;;) pause(); return p; }
__attribute__((constructor)) static void start(void) { pthread_t t; pthread_create(&t, 0, idle, 0); }
"""


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if shutil.which("g++") is None:
        pytest.skip("needs g++ to build the test programs")
    out = tmp_path_factory.mktemp("textprog")
    (out / "big.cpp").write_text(PROGRAM % {"blob": BLOB})
    (out / "threads.c").write_text(THREADS)
    commands = {
        "big2m": ["g++", "-O2", "-Wl,-z,max-page-size=0x200000", "-o", "big2m", "big.cpp"],
        "big4k": ["g++", "-O2", "-o", "big4k", "big.cpp"],
        "libthreads.so": [
            "gcc",
            "-shared",
            "-fPIC",
            "-o",
            "libthreads.so",
            "threads.c",
            "-lpthread",
        ],
    }
    for command in commands.values():
        subprocess.run(command, cwd=out, check=True, capture_output=True)
    return {name: str(out / name) for name in commands}


def run(program, mode, report_dir, preload=None, **env):
    report_dir.mkdir(exist_ok=True)
    environ = {
        **os.environ,
        "LD_PRELOAD": preload or text.text_library(),
        "HB_TEXT_REPORT_DIR": str(report_dir),
        **env,
    }
    if mode is not None:
        environ["HB_TEXT_PAGES"] = mode
    result = subprocess.run([program], env=environ, capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (7, f"calls={CALLS}\n"), (
        result.stderr
    )  # the program still works
    return text.read_reports(report_dir)


def skip_unless_possible(mode, binary=None):
    why = text.check_mode(mode, binary=binary)
    if why:
        pytest.skip(f"text_pages {mode} cannot work here: {why}")


# -- range arithmetic --------------------------------------------------------------------------------

MIB = 1 << 20


@pytest.mark.parametrize(
    "start, end, expected",
    [
        (0x1000, 0x1000 + 12 * MIB, (2 * MIB, 12 * MIB, 2 * MIB - 0x1000, 0x1000)),
        (2 * MIB, 8 * MIB, (2 * MIB, 8 * MIB, 0, 0)),  # already aligned: no head, no tail
        (
            0x1000,
            0x5000,
            (0x1000, 0x1000, 0, 0x4000),
        ),  # tiny text: no interior, all of it stays small
        (
            MIB,
            3 * MIB,
            (MIB, MIB, 0, 2 * MIB),
        ),  # 2 MiB long but straddling a boundary: no whole page inside
    ],
)
def test_interior(start, end, expected):
    assert text.interior(start, end) == expected


@given(st.integers(0, 1 << 40), st.integers(0, 1 << 30))
def test_interior_partitions_the_range(start, length):
    lo, hi, head, tail = text.interior(start, start + length)
    assert head + (hi - lo) + tail == length
    assert lo % (2 * MIB) == 0 or lo == hi == start
    assert start <= lo <= hi <= start + length


def test_interior_refuses_a_backward_range():
    with pytest.raises(ValueError):
        text.interior(10, 5)


# -- reports and verify, on files ------------------------------------------------------------------


def record(pid=100, mode="thp", action="moved", huge=10 * MIB, **extra):
    fields = {
        "pid": pid,
        "image": 0,
        "exe": "/bin/x",
        "mode": mode,
        "text_start": 0x1000,
        "text_end": 0x1000 + 12 * MIB,
        "interior_start": 2 * MIB,
        "interior_end": 12 * MIB,
        "head_bytes": 2 * MIB - 0x1000,
        "tail_bytes": 0x1000,
        "action": action,
        "error": None,
        "seconds": 0.01,
        "AnonHugePages": huge,
        "FilePmdMapped": 0,
        "Private_Hugetlb": 0,
        "Shared_Hugetlb": 0,
        "Rss": 12 * MIB,
    }
    return {**fields, **extra}


def test_read_reports_merges_start_and_exit_per_image(tmp_path):
    exit_only = {
        k: v for k, v in record(pid=101).items() if k not in ("action", "error", "seconds")
    }
    files = {
        "text-100.json": record(),
        "text-exit-100.json": record(huge=4 * MIB),
        "text-100-1.json": record(image=1),
        "text-exit-101.json": {**exit_only, "forked_from": 100},
        "text-9.json.tmp": {},
        "other.json": {},
    }
    for name, value in files.items():
        (tmp_path / name).write_text(json.dumps(value))
    (tmp_path / "text-7.json").write_text("{truncated")
    reports = text.read_reports(tmp_path)
    assert [(r["pid"], r["image"], "exit" in r, "action" in r) for r in reports] == [
        (100, 0, True, True),
        (100, 1, False, True),
        (101, 0, True, False),
    ]
    assert reports[0]["exit"]["AnonHugePages"] == 4 * MIB


def test_verify_columns_prefer_the_exit_reading():
    main = {**record(huge=0), "exit": record(huge=10 * MIB)}  # e.g. collapsed after load
    row = text.verify(
        "thp", [main, {"pid": 5, "forked_from": 100, "exit": record(huge=0)}]
    )  # a fork: not judged
    assert row["text.interior_bytes"] == 10 * MIB and row["text.huge_bytes"] == 10 * MIB
    assert row["text.coverage"] == 1.0 and row["text.head_bytes"] == 2 * MIB - 0x1000
    assert row["text.processes"] == 2 and row["text.measured_at"] == "exit"


def test_verify_fails_a_shortfall_with_the_reason():
    failed = record(
        action="error", huge=0, error="mremap: Cannot allocate memory (old text still mapped)"
    )
    with pytest.raises(RuntimeError, match=r"0% < 90%.*mremap: Cannot allocate memory"):
        text.verify("thp", [failed])
    with pytest.raises(RuntimeError, match="did not hold in 1 of 2"):
        text.verify("hugetlb", [record(huge=10 * MIB), record(pid=101, huge=8 * MIB)])


def test_verify_off_needs_small_pages_and_skips_texts_without_interior():
    tiny = record(interior_start=0x1000, interior_end=0x1000, huge=0, action="none", mode="off")
    row = text.verify("off", [record(mode="off", action="none", huge=0), tiny])
    assert row["text.coverage"] == 0
    with pytest.raises(
        RuntimeError, match="control was not on 4 KiB pages.*page cache held large folios"
    ):
        text.verify("off", [record(mode="off", action="none", FilePmdMapped=4 * MIB, huge=0)])
    assert math.isnan(text.verify("thp", [tiny])["text.coverage"])


def test_verify_without_reports_says_the_preload_did_not_take():
    with pytest.raises(RuntimeError, match="no process wrote a text report"):
        text.verify("thp", [])
    with pytest.raises(ValueError, match="unknown text_pages mode"):
        text.verify("huge", [record()])


# -- check_mode on a fake kernel -------------------------------------------------------------------


def test_check_mode_refusals_on_a_fake_kernel(fake_sys, built):
    roots = {"host": fake_sys.host}
    assert text.check_mode("off", **roots) is None
    assert text.check_mode("thp", **roots) is None
    assert "unknown" in text.check_mode("2m", **roots)
    (fake_sys.sys_root / "kernel/mm/transparent_hugepage/enabled").write_text(
        "always madvise [never]\n"
    )
    assert "'never'" in text.check_mode("thp", **roots)
    assert "no free page" in text.check_mode("hugetlb", **roots)
    pool = fake_sys.sys_root / "kernel/mm/hugepages/hugepages-2048kB"
    (pool / "free_hugepages").write_text("5\n")
    assert text.check_mode("hugetlb", **roots) is None
    assert "needs 6 pages, 5 are free" in text.check_mode("hugetlb", binary=built["big2m"], **roots)
    (pool / "free_hugepages").write_text("6\n")
    assert text.check_mode("hugetlb", binary=built["big2m"], **roots) is None


def test_text_segment_of_the_built_programs(built):
    aligned, small = (conditions.read_text_segment(built[n]) for n in ("big2m", "big4k"))
    assert aligned.load_aligned and aligned.hugetlb_pages() == 6
    assert small.congruent and not small.load_aligned and small.max_align == 0x1000
    with pytest.raises(ValueError, match="not a 64-bit"):
        conditions.read_text_segment(built["big2m"].replace("big2m", "big.cpp"))


# -- the library in real programs ------------------------------------------------------------------


def test_nothing_happens_without_the_mode(built, tmp_path):
    assert run(built["big2m"], None, tmp_path / "r") == []


@pytest.mark.parametrize("program", ["big2m", "big4k"])
def test_thp_moves_the_text_onto_huge_pages(built, tmp_path, program):
    skip_unless_possible("thp")
    assert text.prepare_page_cache(built[program], "thp") == {"text.page_cache": "evicted"}
    reports = run(built[program], "thp", tmp_path / "r")
    row = text.verify("thp", reports)
    main = reports[0]
    assert (
        main["action"] == "moved"
        and main["exit"]["AnonHugePages"] >= 0.9 * row["text.interior_bytes"]
    )
    assert row["text.coverage"] >= 0.9 and row["text.interior_bytes"] >= 10 * MIB
    assert (
        row["text.head_bytes"] + row["text.interior_bytes"] + row["text.tail_bytes"]
        == row["text.bytes"]
    )
    if program == "big4k":  # a 4 KiB-granular base: the unaligned ends stay small and are counted
        assert row["text.head_bytes"] + row["text.tail_bytes"] > 0


def test_off_is_on_small_pages_once_the_page_cache_is_evicted(built, tmp_path):
    skip_unless_possible("file-thp", built["big2m"])
    text.prepare_page_cache(
        built["big2m"], "file-thp"
    )  # leave large folios behind, as a file-thp run would
    polluted = run(built["big2m"], "off", tmp_path / "polluted")
    assert polluted[0]["action"] == "none" and polluted[0]["exit"]["FilePmdMapped"] > 0
    with pytest.raises(RuntimeError, match="control was not on 4 KiB pages"):
        text.verify("off", polluted)
    assert text.prepare_page_cache(built["big2m"], "off") == {"text.page_cache": "evicted"}
    row = text.verify("off", run(built["big2m"], "off", tmp_path / "clean"))
    assert row["text.huge_bytes"] == 0 and row["text.action"] == "none"


def test_file_thp_maps_the_file_text_with_pmds(built, tmp_path):
    """On this kernel (6.18, ext4 with large folios, no CONFIG_READ_ONLY_THP_FOR_FS) file-thp works for a
    binary loaded 2 MiB-aligned, once hb-textfill has filled its page cache with 2 MiB folios."""
    skip_unless_possible("file-thp", built["big2m"])
    cache = text.prepare_page_cache(built["big2m"], "file-thp")
    assert (
        cache["text.page_cache"] == "evicted+filled-large"
        and cache["text.page_cache_pmd_bytes"] == 12 * MIB
    )
    reports = run(built["big2m"], "file-thp", tmp_path / "r")
    row = text.verify("file-thp", reports)
    assert (
        reports[0]["action"] == "madvised"
        and reports[0]["exit"]["FilePmdMapped"] == row["text.huge_bytes"]
    )
    assert row["text.coverage"] >= 0.9


def test_file_thp_after_ordinary_reads_falls_short(built, tmp_path):
    """A cache warmed by read() (cp, a plain run) holds small folios (readahead-sized): no PMD maps them."""
    skip_unless_possible("file-thp", built["big2m"])
    text.prepare_page_cache(built["big2m"], "off")
    with open(built["big2m"], "rb") as f:
        f.read()
    with pytest.raises(RuntimeError, match="did not hold"):
        text.verify("file-thp", run(built["big2m"], "file-thp", tmp_path / "r"))


def test_file_thp_refused_for_a_pie_loaded_4k_aligned(built, tmp_path):
    why = text.check_mode("file-thp", binary=built["big4k"])
    assert "max-page-size=0x200000" in why and "p_align is 0x1000" in why
    text.prepare_page_cache(built["big4k"], "file-thp")
    reports = run(built["big4k"], "file-thp", tmp_path / "r")
    assert reports[0]["action"] == "error" and "max-page-size" in reports[0]["error"]
    with pytest.raises(RuntimeError, match="not a multiple of 2 MiB"):
        text.verify("file-thp", reports)


def test_threads_at_load_leave_the_text_alone(built, tmp_path):
    # The later library in LD_PRELOAD is initialised first: its thread runs when libhbtext.so's turn comes.
    preload = f"{text.text_library()} {built['libthreads.so']}"
    reports = run(built["big2m"], "thp", tmp_path / "r", preload=preload)
    assert reports[0]["action"] == "error" and "threads already run" in reports[0]["error"]
    assert reports[0]["exit"]["AnonHugePages"] == 0
    with pytest.raises(RuntimeError, match="threads already run"):
        text.verify("thp", reports)


@pytest.mark.parametrize(
    "failure, state",
    [("mremap", "mapped again from the file"), ("mremap-early", "old text still mapped")],
)
def test_a_failed_mremap_leaves_a_working_program(built, tmp_path, failure, state):
    reports = run(built["big4k"], "thp", tmp_path / "r", HB_TEXT_FAIL=failure)
    assert reports[0]["action"] == "error" and state in reports[0]["error"]
    assert reports[0]["exit"]["AnonHugePages"] == 0


@pytest.mark.needs_root
def test_hugetlb_refused_then_granted_from_the_pool(built, tmp_path):
    from hugebench.kernel import LOCAL
    from hugebench.system import discover_knobs

    pool = discover_knobs(LOCAL)["hugetlb.2MB"]
    original = pool.read()
    needed = conditions.read_text_segment(built["big2m"]).hugetlb_pages()
    try:
        pool.write(str(int(original) + needed - 1))
        assert "too small" in text.check_mode("hugetlb", binary=built["big2m"])
        short = run(
            built["big2m"], "hugetlb", tmp_path / "short"
        )  # the library alone: refused, text left
        assert short[0]["action"] == "error" and "MAP_HUGETLB" in short[0]["error"]
        pool.write(str(int(original) + needed))
        if text.check_mode("hugetlb", binary=built["big2m"]):
            pytest.skip(
                f"could not reserve {needed} 2 MiB pages: {text.check_mode('hugetlb', binary=built['big2m'])}"
            )
        reports = run(built["big2m"], "hugetlb", tmp_path / "granted")
        row = text.verify("hugetlb", reports)
        assert reports[0]["action"] == "moved" and reports[0]["exit"]["Private_Hugetlb"] == 12 * MIB
        assert row["text.coverage"] == 1.0
    finally:
        pool.write(original)
    assert pool.read() == original
