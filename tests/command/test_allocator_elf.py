"""An allocator path that is no allocator (issue 38): `/etc/passwd`, libz (it imports malloc, defines none), a
.so built here that exports no malloc, an executable, a FIFO, a truncated ELF — each refused when the experiment
is loaded (plan, sweep, try --allocator), naming the key or option, before anything runs. A real malloc library
(jemalloc, a .so built here defining malloc and free) passes."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from hugebench.cli import main
from hugebench.errors import SpecError
from hugebench.experiment import parse_spec
from hugebench.machine.allocators import find_library
from hugebench.machine.elf import why_not_allocator

HEAD = "name: a\nworkload: hashlookup\nparams: {keys: 1000}\n"


def _gcc_so(tmp_path: Path, name: str, source: str) -> Path:
    if shutil.which("gcc") is None:
        pytest.skip("gcc is needed to build a test library")
    src = tmp_path / f"{name}.c"
    src.write_text(source)
    lib = tmp_path / f"lib{name}.so"
    subprocess.run(["gcc", "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    return lib


@pytest.fixture
def no_malloc_so(tmp_path) -> Path:
    return _gcc_so(tmp_path, "nomalloc", "int answer(void) { return 42; }\n")


@pytest.fixture
def malloc_so(tmp_path) -> Path:
    return _gcc_so(
        tmp_path,
        "mymalloc",
        "#include <stddef.h>\nextern void *__libc_malloc(size_t);\nextern void __libc_free(void *);\n"
        "void *malloc(size_t n) { return __libc_malloc(n); }\n"
        "void free(void *p) { __libc_free(p); }\n",
    )


def test_what_is_not_a_malloc_library_says_why(tmp_path, no_malloc_so):
    assert "no ELF magic" in why_not_allocator("/etc/passwd")
    assert "defines no malloc and no free" in why_not_allocator(str(no_malloc_so))
    assert why_not_allocator(
        _executable()
    )  # a PIE executable: a shared object, but no malloc in it
    exe = tmp_path / "exe"
    (tmp_path / "exe.c").write_text("int main(void) { return 0; }\n")
    subprocess.run(["gcc", "-no-pie", "-o", str(exe), str(tmp_path / "exe.c")], check=True)
    assert "not a shared object" in why_not_allocator(str(exe))
    truncated = tmp_path / "libcut.so"
    truncated.write_bytes(no_malloc_so.read_bytes()[:40])
    assert "not a well-formed ELF" in why_not_allocator(str(truncated))
    fifo = tmp_path / "libfifo.so"
    os.mkfifo(fifo)
    assert "not a regular file" in why_not_allocator(str(fifo))  # and it did not block
    assert "cannot read it" in why_not_allocator(str(tmp_path))


def test_libz_imports_malloc_but_defines_none():
    libz = find_library("libz.so.1")
    if libz is None:
        pytest.skip("libz.so.1 not found")
    assert "defines no malloc and no free" in why_not_allocator(str(libz))


def test_malloc_libraries_pass(malloc_so):
    assert why_not_allocator(str(malloc_so)) is None
    for soname in ("libjemalloc.so.2", "libmimalloc.so.2", "libc.so.6"):
        path = find_library(soname)
        if path is not None:
            assert why_not_allocator(str(path)) is None, soname


def _executable() -> str:
    return os.path.realpath(shutil.which("true") or "/bin/true")


@pytest.mark.parametrize("which", ["passwd", "no-malloc"])
def test_plan_refuses_the_path_naming_the_key(tmp_path, no_malloc_so, which):
    path = "/etc/passwd" if which == "passwd" else str(no_malloc_so)
    text = HEAD + f"allocators: {{mine: {{path: {path}}}}}\naxes: {{allocator: [glibc, mine]}}\n"
    with pytest.raises(SpecError, match=r"x.yaml:4: key 'allocators.mine.path': allocator 'mine'"):
        parse_spec(text, "x.yaml")
    (tmp_path / "x.yaml").write_text(text)
    result = CliRunner().invoke(main, ["plan", str(tmp_path / "x.yaml")])
    assert result.exit_code == 2 and "Traceback" not in result.output
    assert "allocators.mine.path" in result.output


def test_a_real_malloc_library_plans(tmp_path, malloc_so):
    text = (
        HEAD + f"allocators: {{mine: {{path: {malloc_so}}}}}\naxes: {{allocator: [glibc, mine]}}\n"
    )
    assert "mine" in parse_spec(text, "x.yaml").axes["allocator"]


def test_try_refuses_an_allocator_that_is_not_one_naming_the_option(tmp_path, no_malloc_so):
    out = tmp_path / "o"
    for path in ("/etc/passwd", str(no_malloc_so)):
        result = CliRunner().invoke(
            main,
            ["try", "--allocator", path, "--allocators", "glibc", "-o", str(out), "--", "true"],
        )
        assert result.exit_code == 2, result.output
        assert result.output.startswith("hugebench: error: --allocator: "), result.output
        assert "experiment.yaml" not in result.output and not out.exists()
