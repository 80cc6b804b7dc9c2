"""libhbprobe.so in real programs under real allocators, and the Python side that reads and verifies it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from hugebench.machine.allocators import BUILTIN, find_library
from hugebench.machine.mallocprobe import probe_library, read_exits, read_probes, verify

ALLOCATOR_VARS = ("LD_PRELOAD", "MALLOC_CONF", "HB_PROBE_DIR", "GLIBC_TUNABLES")
EXIT_FIELDS = (
    "Rss",
    "AnonHugePages",
    "FilePmdMapped",
    "ShmemPmdMapped",
    "Private_Hugetlb",
    "Shared_Hugetlb",
    "Anonymous",
    "VmHWM",
)
PRINT_KNOBS = "import json; from hugebench.machine.allocators import probe_knobs; print(json.dumps(probe_knobs()))"


def _library(soname: str) -> str:
    path = find_library(soname)
    if path is None:
        pytest.skip(f"{soname} is not installed")
    return str(path)


def _run(
    argv, tmp_path: Path, preload=(), env=None, probe_dir: Path | None = None
) -> subprocess.CompletedProcess:
    """Run argv with ``preload`` and then the probe in LD_PRELOAD, nothing of ours inherited."""
    base = {
        k: v
        for k, v in os.environ.items()
        if k not in ALLOCATOR_VARS and not k.startswith("MIMALLOC_")
    }
    base["LD_PRELOAD"] = " ".join([*preload, probe_library()])
    if probe_dir is not None:
        base["HB_PROBE_DIR"] = str(probe_dir)
    base.update(env or {})
    return subprocess.run(
        argv, env=base, cwd=tmp_path, capture_output=True, text=True, timeout=60, check=False
    )


@pytest.fixture
def probe_dir(tmp_path) -> Path:
    directory = tmp_path / "probes"
    directory.mkdir()
    return directory


def test_the_library_is_installed_beside_the_package_and_exports_only_its_own_name():
    path = probe_library()
    assert Path(path).parent == Path(__import__("hugebench").__file__).resolve().parent
    if shutil.which("readelf") is None or shutil.which("nm") is None:
        pytest.skip("binutils (readelf, nm) are needed to inspect the library")
    needed = subprocess.run(
        ["readelf", "-d", path], capture_output=True, text=True, check=True
    ).stdout
    assert [
        line.split("[")[1].rstrip("]") for line in needed.splitlines() if "(NEEDED)" in line
    ] == ["libc.so.6"]
    exported = subprocess.run(
        ["nm", "-D", "--defined-only", path], capture_output=True, text=True, check=True
    ).stdout
    # nothing that could interpose on the program's own symbols: one function under a hugebench name
    assert [line.split()[-1] for line in exported.splitlines()] == ["hb_probe_provider"]


def test_nothing_is_written_without_hb_probe_dir(tmp_path):
    result = _run([sys.executable, "-c", "print('hi')"], tmp_path)
    assert (result.returncode, result.stdout, result.stderr) == (0, "hi\n", "")
    assert list(tmp_path.iterdir()) == []


def test_glibc_serves_a_program_without_allocator(tmp_path, probe_dir):
    result = _run(["/bin/true"], tmp_path, probe_dir=probe_dir)
    assert result.returncode == 0 and result.stderr == ""
    [probe] = read_probes(probe_dir)
    assert probe["pid"] > 0 and probe["ppid"] == os.getpid()
    assert probe["exe"] == os.path.realpath("/bin/true")
    assert os.path.basename(probe["malloc"]) == "libc.so.6" == os.path.basename(probe["free"])
    assert probe["knobs"] == {}
    assert verify("glibc", None, [probe], {}) == {
        "allocator_malloc_from": probe["malloc"],
        "allocator_served": "glibc",
        "allocator_processes": 1,
    }
    with pytest.raises(RuntimeError, match="do not resolve to .*libjemalloc"):
        verify("jemalloc", _library("libjemalloc.so.2"), [probe], {})


@pytest.mark.parametrize(
    "name", ["jemalloc", "jemalloc-thp", "jemalloc-hpa", "mimalloc", "mimalloc-large"]
)
def test_the_probe_sees_what_probe_knobs_sees(tmp_path, probe_dir, name):
    """In the same process, the C probe and Python's probe_knobs() agree on the provider and every knob."""
    alloc = BUILTIN[name]
    library = _library(alloc.library)
    result = _run(
        [sys.executable, "-c", PRINT_KNOBS], tmp_path, [library], dict(alloc.env), probe_dir
    )
    assert result.returncode == 0, result.stderr
    [probe] = read_probes(probe_dir)
    assert probe["malloc"] == os.path.realpath(library) == probe["free"]
    assert probe["knobs"] == json.loads(result.stdout)
    row = verify(name, library, [probe], alloc.expect)
    assert (
        row["allocator_malloc_from"] == os.path.realpath(library)
        and row["allocator_processes"] == 1
    )
    assert {k: row[f"allocator.{k}"] for k in alloc.expect} == dict(alloc.expect)


def test_jemalloc_thp_always_reads_back(tmp_path, probe_dir):
    library = _library("libjemalloc.so.2")
    _run(["/bin/true"], tmp_path, [library], {"MALLOC_CONF": "thp:always"}, probe_dir)
    [probe] = read_probes(probe_dir)
    assert probe["knobs"]["jemalloc.opt.thp"] == "always"
    verify("jemalloc", library, [probe], {"jemalloc.opt.thp": "always"})
    with pytest.raises(RuntimeError, match="knobs did not take effect: jemalloc.opt.metadata_thp"):
        verify("jemalloc-thp", library, [probe], BUILTIN["jemalloc-thp"].expect)


def test_mimalloc_large_os_pages_reads_back(tmp_path, probe_dir):
    library = _library("libmimalloc.so.2")
    _run(["/bin/true"], tmp_path, [library], {"MIMALLOC_LARGE_OS_PAGES": "1"}, probe_dir)
    [probe] = read_probes(probe_dir)
    assert 200 <= probe["knobs"]["mimalloc.version"] < 300
    assert probe["knobs"]["mimalloc.large_os_pages"] is True


def test_a_preloaded_library_that_is_not_an_allocator_leaves_glibc_in_charge(tmp_path, probe_dir):
    libz = _library("libz.so.1")
    _run(["/bin/true"], tmp_path, [libz], probe_dir=probe_dir)
    probes = read_probes(probe_dir)
    assert os.path.basename(probes[0]["malloc"]) == "libc.so.6"
    with pytest.raises(
        RuntimeError, match=r"allocator 'zlib': malloc/free do not resolve to .*libz.* in 1 of 1"
    ):
        verify("zlib", libz, probes, {})
    assert verify("glibc", None, probes, {})["allocator_processes"] == 1


def test_every_process_and_every_exec_writes_its_own_probe(tmp_path, probe_dir):
    """sh forks python, and a shell may exec its last command in its own pid: both images are reported."""
    library = _library("libjemalloc.so.2")
    for script, name in (
        (f"'{sys.executable}' -c pass", "exec"),
        (f"'{sys.executable}' -c pass; true", "fork"),
    ):
        directory = probe_dir / name
        directory.mkdir()
        _run(["sh", "-c", script], tmp_path, [library], probe_dir=directory)
        probes = read_probes(directory)
        exes = [os.path.basename(p["exe"]) for p in probes]
        assert len(probes) >= 2, exes
        assert os.path.realpath(sys.executable) in {p["exe"] for p in probes}
        assert verify("jemalloc", library, probes, {})["allocator_processes"] == len(probes)


def test_the_exit_record_has_the_final_coverage_in_bytes(tmp_path, probe_dir):
    grow = "b = bytearray(64 << 20); b[::4096] = b'x' * len(b[::4096])"
    _run([sys.executable, "-c", grow], tmp_path, probe_dir=probe_dir)
    [probe] = read_probes(probe_dir)
    exits = read_exits(probe_dir)
    record = exits[probe["pid"]]
    assert record["exe"] == probe["exe"]
    for field in EXIT_FIELDS:
        assert isinstance(record[field], int) and record[field] % 1024 == 0, field
    assert record["Rss"] > 0 and record["VmHWM"] >= 64 << 20


def test_a_process_ending_by_exit_underscore_leaves_no_exit_record(tmp_path, probe_dir):
    _run([sys.executable, "-c", "import os; os._exit(3)"], tmp_path, probe_dir=probe_dir)
    assert len(read_probes(probe_dir)) == 1 and read_exits(probe_dir) == {}


def test_the_program_is_undisturbed_when_the_directory_is_missing(tmp_path):
    result = _run(
        ["sh", "-c", "echo out; echo err >&2; exit 7"], tmp_path, probe_dir=tmp_path / "missing"
    )
    assert (result.returncode, result.stdout, result.stderr) == (7, "out\n", "err\n")


def test_readers_skip_torn_and_foreign_files(tmp_path):
    (tmp_path / "probe-12.json").write_text('{"pid": 12, "malloc": "/x"')
    (tmp_path / "probe-7.json").write_text('{"pid": 7}')
    (tmp_path / "probe-7-1.json").write_text('{"pid": 7, "image": 1}')
    (tmp_path / "probe-3.json").write_text('{"pid": 3}')
    (tmp_path / "probe-x.json").write_text('{"pid": 0}')
    (tmp_path / ".probe-5.json.tmp").write_text('{"pid": 5}')
    (tmp_path / "exit-3.json").write_text('{"pid": 3, "Rss": 4096}')
    (tmp_path / "exit-4.json").write_text("[]")
    assert read_probes(tmp_path) == [{"pid": 3}, {"pid": 7}, {"pid": 7, "image": 1}]
    assert read_exits(tmp_path) == {3: {"pid": 3, "Rss": 4096}}


def test_verify_names_each_process_that_escaped_the_allocator():
    good = {
        "pid": 10,
        "exe": "/bin/a",
        "malloc": "/opt/hb/libjemalloc.so.2",
        "free": "/opt/hb/libjemalloc.so.2",
        "knobs": {"jemalloc.opt.thp": "default"},
    }
    bad = {
        "pid": 11,
        "exe": "/bin/b",
        "malloc": "/opt/hb/libjemalloc.so.2",
        "free": "/opt/hb/libc.so.6",
        "knobs": {},
    }
    with pytest.raises(
        RuntimeError, match=r"in 1 of 2 processes: pid 11 \(/bin/b\): .*free from /opt/hb/libc.so.6"
    ):
        verify("j", "/opt/hb/libjemalloc.so.2", [good, bad], {})
    with pytest.raises(RuntimeError, match="LD_PRELOAD did not take .*static or setuid"):
        verify("j", "/opt/hb/libjemalloc.so.2", [], {})
    row = verify("j", "/opt/hb/libjemalloc.so.2", [good], {"jemalloc.opt.thp": "default"})
    assert row == {
        "allocator_malloc_from": "/opt/hb/libjemalloc.so.2",
        "allocator_served": "jemalloc",
        "allocator_processes": 1,
        "allocator.jemalloc.opt.thp": "default",
    }
