"""The proof that a run used the allocator its cell asks for, refused in every wrong state (issue 26, section 8):
a second malloc library mapped beside the requested one, a glibc cell whose malloc comes from elsewhere,
an allocator knob missing from the worker's environment."""

from __future__ import annotations

import pytest

from hugebench.machine import allocators as am
from hugebench.machine.mallocprobe import verify
from hugebench.run import worker

LIBDIR = "/usr/lib/x86_64-linux-gnu"
GLIBC = f"{LIBDIR}/libc.so.6"


def _maps(*paths: str) -> str:
    return "".join(f"7f{i:02x} r-xp 00000000 08:01 {i} {p}\n" for i, p in enumerate(paths))


@pytest.fixture
def libs(tmp_path):
    """Real files (verify_mapped compares real paths) named like two allocators."""
    je, tc = tmp_path / "libjemalloc.so.2", tmp_path / "libtcmalloc_minimal.so.4"
    je.write_bytes(b"")
    tc.write_bytes(b"")
    return str(je), str(tc)


def test_a_second_malloc_library_beside_the_requested_one_is_refused(libs):
    je, tc = libs
    assert am.verify_mapped("jemalloc", je, _maps(GLIBC, je)) == je
    with pytest.raises(RuntimeError, match=f"{tc} is mapped besides {je}"):
        am.verify_mapped("jemalloc", je, _maps(GLIBC, je, tc))


def test_a_glibc_cell_refuses_any_other_malloc_provider(libs):
    je, _ = libs
    assert am.verify_malloc("glibc", None, GLIBC) == GLIBC
    assert am.verify_malloc(
        "glibc", None, "/lib/x86_64-linux-gnu/libc-2.31.so"
    )  # glibc before 2.34, real path
    for other in (je, f"{LIBDIR}/libz.so.1", "/opt/x/libc.evil.so", "/opt/x/libcrypt.so.1", "libc"):
        with pytest.raises(RuntimeError, match="expects glibc malloc"):
            am.verify_malloc("glibc", None, other)
    with pytest.raises(RuntimeError, match="cannot tell"):
        am.verify_malloc("glibc", None, None)


def test_an_allocator_cell_refuses_glibc_or_another_library(libs):
    je, tc = libs
    assert am.verify_malloc("jemalloc", je, je) == je
    for other in (GLIBC, tc):
        with pytest.raises(RuntimeError, match="malloc resolves to"):
            am.verify_malloc("jemalloc", je, other)


def _probe(pid: int, malloc: str, free: str | None = None, knobs=None) -> dict:
    return {
        "pid": pid,
        "exe": "/usr/bin/prog",
        "malloc": malloc,
        "free": free or malloc,
        "knobs": knobs or {},
    }


def test_the_command_probe_holds_a_glibc_cell_to_glibc_in_every_process(libs):
    je, _ = libs
    assert (
        verify("glibc", None, [_probe(1, GLIBC), _probe(2, GLIBC)], {})["allocator_processes"] == 2
    )
    for wrong in (
        [_probe(1, je)],
        [_probe(1, GLIBC), _probe(2, je)],
        [_probe(1, GLIBC, free=je)],
        [_probe(1, "/opt/x/libc.so.evil")],
        [_probe(1, None)],
    ):
        with pytest.raises(RuntimeError, match="do not resolve to glibc's libc.so.6"):
            verify("glibc", None, wrong, {})


def test_the_command_probe_holds_an_allocator_cell_to_its_library(libs):
    je, tc = libs
    assert verify("jemalloc", je, [_probe(1, je)], {})["allocator_malloc_from"] == je
    for wrong in ([_probe(1, GLIBC)], [_probe(1, je), _probe(2, tc)], [_probe(1, je, free=GLIBC)]):
        with pytest.raises(RuntimeError, match=f"do not resolve to {je}"):
            verify("jemalloc", je, wrong, {})


def _request(**kwargs) -> worker.WorkerRequest:
    return worker.WorkerRequest(run={}, allocator="glibc-hugetlb", **kwargs)


def test_the_worker_refuses_an_allocator_knob_missing_from_its_environment(monkeypatch):
    """This test process runs glibc's malloc: its allocator proof passes only with the knob really set."""
    knob = am.BUILTIN["glibc-hugetlb"].env
    monkeypatch.delenv("GLIBC_TUNABLES", raising=False)
    with pytest.raises(RuntimeError, match="GLIBC_TUNABLES not in the worker's environment"):
        worker._verify_allocator(_request(allocator_env=dict(knob)))
    monkeypatch.setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=0")  # set, but to another value
    with pytest.raises(RuntimeError, match="GLIBC_TUNABLES not in the worker's environment"):
        worker._verify_allocator(_request(allocator_env=dict(knob)))
    monkeypatch.setenv("GLIBC_TUNABLES", knob["GLIBC_TUNABLES"])
    row = worker._verify_allocator(_request(allocator_env=dict(knob)))
    assert row["allocator_mapped"] == "glibc" and am.is_glibc(row["allocator_malloc_from"])
