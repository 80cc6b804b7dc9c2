"""Allocator registry, resolution and the 'is it really mapped' check."""

import pytest

from hugebench.errors import SpecError, ToolMissingError
from hugebench.machine import allocators as am

MAPS_GLIBC = """\
7f00 r-xp 00000000 08:01 1 /usr/lib/x86_64-linux-gnu/libc.so.6
7f01 r-xp 00000000 08:01 2 /usr/lib/x86_64-linux-gnu/libm.so.6
"""


def test_each_variant_is_its_base_library_with_knobs():
    """A huge-page variant (jemalloc-thp, mimalloc-large, glibc-hugetlb...) preloads exactly its base's library
    from the same package and only adds environment knobs; the bases and void set none."""
    reg = am.registry()
    variants = {name: a for name, a in reg.items() if "-" in name and a.mode != "as-is"}
    assert variants, "no huge-page variant among the built-ins"
    for name, alloc in variants.items():
        base = reg[name.split("-")[0]]
        assert (alloc.library, alloc.package, alloc.mode) == (
            base.library,
            base.package,
            "malloc",
        ), name
        assert alloc.env and not base.env, name
        assert set(alloc.environment()) - set(alloc.env) <= {"LD_PRELOAD"}
    assert (
        reg["glibc"].environment() == {}
        and reg["as-is"].environment() == {}  # the program untouched: nothing preloaded, no knob
        and reg["as-is"].mode == "as-is"
        and reg["void"].mode == "void"
        and reg["void"].library is None
    )


def test_glibc_knobs_are_tunables_this_glibc_knows():
    """GLIBC_TUNABLES with a name glibc does not know is ignored without a word: every built-in's tunable must be
    one the dynamic loader lists."""
    import glob
    import subprocess

    loaders = glob.glob("/lib64/ld-linux-*.so.*") + glob.glob("/lib/ld-linux-*.so.*")
    listed = (
        subprocess.run([loaders[0], "--list-tunables"], capture_output=True, text=True)
        if loaders
        else None
    )
    if listed is None or listed.returncode != 0:
        pytest.skip("no dynamic loader with --list-tunables (glibc >= 2.33) here")
    known = {line.split(":")[0] for line in listed.stdout.splitlines()}
    for alloc in am.BUILTIN.values():
        for item in filter(None, alloc.env.get("GLIBC_TUNABLES", "").split(":")):
            assert item.split("=")[0] in known, (alloc.name, item)


@pytest.mark.parametrize("name", [n for n, a in am.BUILTIN.items() if a.expect])
def test_each_builtin_knob_takes_effect_in_a_process_that_has_it(name):
    """What the registry's env asks, the library really reads: a process given environment() reports expect."""
    import json
    import os
    import subprocess
    import sys

    alloc = am.BUILTIN[name]
    if am.find_library(alloc.library) is None:
        pytest.skip(f"{alloc.library} not installed (apt-get install {alloc.package})")
    code = "import json; from hugebench.machine.allocators import probe_knobs; print(json.dumps(probe_knobs()))"
    env = {**{k: v for k, v in os.environ.items() if k in ("PATH", "HOME")}, **alloc.environment()}
    probed = json.loads(
        subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            capture_output=True,
            text=True,
            cwd="/",
            check=True,
        ).stdout
    )
    am.check_expected(name, alloc.expect, probed)


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
    reg = am.registry(
        {
            "google": {"path": str(lib), "env": {"TCMALLOC_X": 1}},
            "je2": {"base": "jemalloc", "env": {"MALLOC_CONF": "narenas:1"}},
        }
    )
    assert reg["google"].resolve() == lib and reg["google"].env == {"TCMALLOC_X": "1"}
    assert reg["je2"].library == "libjemalloc.so.2" and reg["je2"].env["MALLOC_CONF"] == "narenas:1"
    missing = am.registry({"gone": {"path": str(tmp_path / "missing.so")}})
    with pytest.raises(ToolMissingError, match="check the path"):
        missing["gone"].resolve()
    with pytest.raises(SpecError, match="unknown key"):
        am.registry({"bad": {"path": "/x.so", "lib": 1}})


def test_verify_mapped(tmp_path):
    assert am.verify_mapped("glibc", None, MAPS_GLIBC) == "glibc"
    lib = tmp_path / "libjemalloc.so.2"
    lib.write_bytes(b"")
    maps_je = MAPS_GLIBC + f"7f02 r-xp 00000000 08:01 3 {lib}\n"
    with pytest.raises(RuntimeError, match="expects glibc"):
        am.verify_mapped("glibc", None, maps_je)
    assert am.verify_mapped("jemalloc", str(lib), maps_je) == str(lib)
    with pytest.raises(RuntimeError, match="not mapped"):
        am.verify_mapped("jemalloc", str(lib), MAPS_GLIBC)


@pytest.mark.parametrize("name", ["jemalloc", "tcmalloc", "mimalloc"])
def test_debian_allocators_installed(name):
    alloc = am.BUILTIN[name]
    if am.find_library(alloc.library) is None:
        pytest.skip(f"{alloc.library} not installed (apt-get install {alloc.package})")
    info = alloc.describe()
    assert info["path"].endswith(".so") or ".so." in info["path"]
    assert info["version"]


def test_expected_knobs_are_checked():
    am.check_expected("x", {"jemalloc.opt.thp": "always"}, {"jemalloc.opt.thp": "always"})
    with pytest.raises(RuntimeError, match="did not take effect: jemalloc.opt.thp is 'default'"):
        am.check_expected("x", {"jemalloc.opt.thp": "always"}, {"jemalloc.opt.thp": "default"})


@pytest.mark.parametrize(
    "name,env,key,value",
    [
        (
            "jemalloc",
            {"MALLOC_CONF": "thp:always,metadata_thp:always"},
            "jemalloc.opt.thp",
            "always",
        ),
        ("jemalloc", {}, "jemalloc.opt.thp", "default"),
        ("jemalloc", {"MALLOC_CONF": "hpa:true"}, "jemalloc.opt.hpa", True),
        (
            "jemalloc",
            {"MALLOC_CONF": "hpa:true,hpa_hugify_delay_ms:500"},
            "jemalloc.opt.hpa_hugify_delay_ms",
            500,
        ),
        ("jemalloc", {}, "jemalloc.opt.hpa", False),
        ("mimalloc", {"MIMALLOC_LARGE_OS_PAGES": "1"}, "mimalloc.large_os_pages", True),
        ("mimalloc", {"MIMALLOC_ALLOW_LARGE_OS_PAGES": "1"}, "mimalloc.large_os_pages", False),
    ],
)
def test_probe_reads_the_knobs_the_library_really_took(name, env, key, value):
    import json
    import os
    import subprocess
    import sys

    path = am.find_library(am.BUILTIN[name].library)
    if path is None:
        pytest.skip(f"{name} not installed")
    code = "import json; from hugebench.machine.allocators import probe_knobs; print(json.dumps(probe_knobs()))"
    env = {
        **{k: v for k, v in os.environ.items() if k in ("PATH", "HOME")},
        "LD_PRELOAD": str(path),
        **env,
    }
    out = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, cwd="/", check=True
    ).stdout
    assert json.loads(out)[key] == value
