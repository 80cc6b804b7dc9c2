"""Allocator registry, resolution and the 'is it really mapped' check."""

import pytest

from hugebench import allocators as am
from hugebench.errors import SpecError, ToolMissingError

MAPS_GLIBC = """\
7f00 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6
7f01 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libm.so.6
"""


def test_builtin_knobs():
    reg = am.registry()
    assert reg["jemalloc-thp"].env == {"MALLOC_CONF": "thp:always,metadata_thp:always"}
    assert reg["mimalloc-large"].env == {"MIMALLOC_LARGE_OS_PAGES": "1"}
    assert reg["glibc-hugetlb"].env == {"GLIBC_TUNABLES": "glibc.malloc.hugetlb=1"}
    assert reg["glibc"].library is None and reg["void"].mode == "void"


def test_missing_library_names_the_package(monkeypatch):
    monkeypatch.setattr(am, "find_library", lambda lib: None)
    with pytest.raises(ToolMissingError, match="apt-get install libjemalloc2"):
        am.check_all(["jemalloc"], am.registry())


def test_unknown_allocator_listed_with_known(tmp_path):
    with pytest.raises(ToolMissingError, match="unknown allocator 'nope'"):
        am.check_all(["nope"], am.registry())


def test_user_allocator_path_and_base(tmp_path):
    lib = tmp_path / "libtcmalloc.so"
    lib.write_bytes(b"")
    reg = am.registry({"google": {"path": str(lib), "env": {"TCMALLOC_X": 1}},
                       "je2": {"base": "jemalloc", "env": {"MALLOC_CONF": "narenas:1"}}})
    assert reg["google"].resolve() == lib and reg["google"].env == {"TCMALLOC_X": "1"}
    assert reg["je2"].library == "libjemalloc.so.2" and reg["je2"].env["MALLOC_CONF"] == "narenas:1"
    missing = am.registry({"gone": {"path": str(tmp_path / "missing.so")}})
    with pytest.raises(ToolMissingError, match="check the path"):
        missing["gone"].resolve()
    with pytest.raises(SpecError, match="unknown key"):
        am.registry({"bad": {"path": "/x.so", "lib": 1}})


def test_verify_mapped(tmp_path):
    glibc = am.BUILTIN["glibc"]
    assert am.verify_mapped(glibc, None, MAPS_GLIBC) == "glibc"
    lib = tmp_path / "libjemalloc.so.2"
    lib.write_bytes(b"")
    maps_je = MAPS_GLIBC + f"7f02 r-xp 00000000 08:01 3 {lib}\n"
    with pytest.raises(RuntimeError, match="expects glibc"):
        am.verify_mapped(glibc, None, maps_je)
    je = am.Allocator("jemalloc", str(lib))
    assert am.verify_mapped(je, str(lib), maps_je) == str(lib)
    with pytest.raises(RuntimeError, match="not mapped"):
        am.verify_mapped(je, str(lib), MAPS_GLIBC)


@pytest.mark.parametrize("name", ["jemalloc", "tcmalloc", "mimalloc"])
def test_debian_allocators_installed(name):
    alloc = am.BUILTIN[name]
    if am.find_library(alloc.library) is None:
        pytest.skip(f"{alloc.library} not installed (apt-get install {alloc.package})")
    info = alloc.describe()
    assert info["path"].endswith(".so") or ".so." in info["path"]
    assert info["version"]
