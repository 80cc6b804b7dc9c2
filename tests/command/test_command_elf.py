"""why_preload_cannot_take on real binaries, each verdict checked against what the probe really sees."""

from __future__ import annotations

import os
import shutil
import stat
import struct
import subprocess
from pathlib import Path

import pytest

from hugebench.machine.elf import ElfFormatError, read_elf, why_preload_cannot_take
from hugebench.machine.mallocprobe import probe_library, read_probes, verify

TINY_CXX = '#include <cstdio>\nint main() { std::puts("static"); return 0; }\n'
TINY_C = '#include <stdio.h>\nint main(void) { puts("static"); return 0; }\n'


def _compile(tmp: Path, flag: str) -> Path:
    """A tiny program linked with ``flag`` (-static, -static-pie): g++ with static libstdc++, else gcc."""
    out = tmp / f"tiny{flag}"
    for compiler, source, text in (("g++", "tiny.cpp", TINY_CXX), ("gcc", "tiny.c", TINY_C)):
        if shutil.which(compiler) is None:
            continue
        (tmp / source).write_text(text)
        built = subprocess.run(
            [compiler, flag, "-O1", "-o", str(out), str(tmp / source)], capture_output=True
        )
        if built.returncode == 0:
            return out
    pytest.skip(f"neither g++ nor gcc links a {flag} program here (static libc/libstdc++ missing?)")


@pytest.fixture(scope="module")
def static_binary(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp("static"), "-static")


@pytest.fixture(scope="module")
def static_pie_binary(tmp_path_factory) -> Path:
    return _compile(tmp_path_factory.mktemp("staticpie"), "-static-pie")


def _probe_takes(program: str, tmp_path: Path) -> bool:
    """Run ``program`` with the probe preloaded: did any process write a probe file?"""
    directory = Path(tmp_path) / f"probes-{len(list(Path(tmp_path).glob('probes-*')))}"
    directory.mkdir()
    env = {
        "PATH": os.environ["PATH"],
        "LD_PRELOAD": probe_library(),
        "HB_PROBE_DIR": str(directory),
    }
    subprocess.run([program], env=env, capture_output=True, timeout=30, check=False)
    return bool(read_probes(directory))


def _executable(path: Path, text: str) -> Path:
    path.write_text(text)
    path.chmod(0o755)
    return path


def test_a_dynamic_program_takes_the_preload(tmp_path):
    assert why_preload_cannot_take("/bin/ls") is None
    assert why_preload_cannot_take("ls") is None
    assert _probe_takes("/bin/ls", tmp_path)


def test_a_static_program_is_refused_and_really_ignores_the_preload(tmp_path, static_binary):
    reason = why_preload_cannot_take(str(static_binary))
    assert reason is not None and "statically linked" in reason and str(static_binary) in reason
    assert not _probe_takes(str(static_binary), tmp_path)
    with pytest.raises(RuntimeError, match="LD_PRELOAD did not take"):
        verify("jemalloc", "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2", [], {})


def test_a_static_pie_program_is_refused_too(tmp_path, static_pie_binary):
    info = read_elf(open(static_pie_binary, "rb"))
    if info.static_kind != "static-pie":
        pytest.skip(f"the toolchain made a {info.static_kind} binary of -static-pie")
    assert "static-pie" in why_preload_cannot_take(str(static_pie_binary))
    assert not _probe_takes(str(static_pie_binary), tmp_path)


@pytest.mark.parametrize("bit,owner", [(stat.S_ISUID, "uid"), (stat.S_ISGID, "gid")])
def test_setuid_and_setgid_are_refused_when_they_change_the_ids(tmp_path, bit, owner):
    copy = tmp_path / "true-copy"
    shutil.copy2("/bin/true", copy)
    copy.chmod(0o755 | bit)
    # Our own ids: exec changes nothing, the loader is not in secure mode and the preload takes.
    assert why_preload_cannot_take(str(copy)) is None
    assert _probe_takes(str(copy), tmp_path)
    if os.geteuid() != 0:
        pytest.skip("giving the copy to another user needs root")
    os.chown(copy, 65534 if owner == "uid" else -1, 65534 if owner == "gid" else -1)
    copy.chmod(0o755 | bit)  # chown clears the bit
    reason = why_preload_cannot_take(str(copy))
    assert (reason is None) == _probe_takes(
        str(copy), tmp_path
    )  # the verdict is what really happens
    if not os.statvfs(copy).f_flag & os.ST_NOSUID:
        assert reason is not None and ("setuid" if owner == "uid" else "setgid") in reason


def test_a_script_is_judged_by_its_interpreter(tmp_path, static_binary):
    shell_script = _executable(tmp_path / "ok.sh", "#!/bin/sh\nexit 0\n")
    assert why_preload_cannot_take(str(shell_script)) is None
    assert _probe_takes(str(shell_script), tmp_path)
    static_script = _executable(tmp_path / "bad.sh", f"#!{static_binary} -x\n")
    reason = why_preload_cannot_take(str(static_script))
    assert (
        reason.startswith(f"{static_script} runs {static_binary}, and ")
        and "statically linked" in reason
    )
    nested = _executable(tmp_path / "nested", f"#!{static_script}\n")
    assert "statically linked" in why_preload_cannot_take(str(nested))
    loop = _executable(tmp_path / "loop", f"#!{tmp_path / 'loop'}\n")
    assert "nest more than" in why_preload_cannot_take(str(loop))
    assert "empty #! line" in why_preload_cannot_take(str(_executable(tmp_path / "empty", "#!\n")))


def test_env_shebang_is_judged_by_the_program_env_finds(tmp_path, static_binary):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2(static_binary, bin_dir / "tool")
    script = _executable(tmp_path / "script", "#!/usr/bin/env -S tool --flag\n")
    assert "statically linked" in why_preload_cannot_take(
        str(script), path_env=f"{bin_dir}:/usr/bin:/bin"
    )
    assert "tool is not found on PATH" in why_preload_cannot_take(
        str(script), path_env="/usr/bin:/bin"
    )


def test_programs_that_cannot_run_at_all(tmp_path):
    assert (
        why_preload_cannot_take("no-such-program-hb") == "no-such-program-hb is not found on PATH"
    )
    assert "does not exist" in why_preload_cannot_take(str(tmp_path / "missing"))
    (tmp_path / "data").write_text("#!/bin/sh\n")
    assert "not executable" in why_preload_cannot_take(str(tmp_path / "data"))
    assert "is a directory" in why_preload_cannot_take(str(tmp_path))
    garbage = _executable(tmp_path / "garbage", "just text\n")
    assert "neither an ELF executable nor a #! script" in why_preload_cannot_take(str(garbage))
    broken = tmp_path / "broken"
    broken.write_bytes(b"\x7fELF\x02\x01\x01" + bytes(9) + b"\x02\x00")
    broken.chmod(0o755)
    assert "not a well-formed ELF file" in why_preload_cannot_take(str(broken))


def test_path_env_is_where_the_program_is_looked_up(tmp_path):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shutil.copy2("/bin/true", bin_dir / "only-here")
    assert why_preload_cannot_take("only-here", path_env=str(bin_dir)) is None
    assert why_preload_cannot_take("only-here", path_env="/usr/bin") is not None


# -- the parser on headers of other classes and byte orders -----------------------------------------


def _elf(bits: int, little: bool, p_types: list[int], e_type: int = 2, machine: int = 62) -> bytes:
    order = "<" if little else ">"
    ident = b"\x7fELF" + bytes([1 if bits == 32 else 2, 1 if little else 2, 1]) + bytes(9)
    if bits == 64:
        ehsize, phentsize = 64, 56
        header = struct.pack(
            order + "HHIQQQIHHHHHH",
            e_type,
            machine,
            1,
            0,
            ehsize,
            0,
            0,
            ehsize,
            phentsize,
            len(p_types),
            0,
            0,
            0,
        )
    else:
        ehsize, phentsize = 52, 32
        header = struct.pack(
            order + "HHIIIIIHHHHHH",
            e_type,
            machine,
            1,
            0,
            ehsize,
            0,
            0,
            ehsize,
            phentsize,
            len(p_types),
            0,
            0,
            0,
        )
    phdrs = b"".join(struct.pack(order + "I", t) + bytes(phentsize - 4) for t in p_types)
    return ident + header + phdrs


@pytest.mark.parametrize("bits", [32, 64])
@pytest.mark.parametrize("little", [True, False])
def test_the_parser_reads_both_classes_and_byte_orders(tmp_path, bits, little):
    path = tmp_path / "elf"
    path.write_bytes(_elf(bits, little, [6, 3, 1, 2], machine=40))
    info = read_elf(open(path, "rb"))
    assert (info.bits, info.little_endian, info.machine, info.has_interp, info.static_kind) == (
        bits,
        little,
        40,
        True,
        None,
    )
    path.write_bytes(_elf(bits, little, [1, 2], e_type=3))
    assert read_elf(open(path, "rb")).static_kind == "static-pie"
    path.write_bytes(_elf(bits, little, [1]))
    assert read_elf(open(path, "rb")).static_kind == "statically linked"
    path.write_bytes(
        _elf(bits, little, [1, 3])[: -(56 if bits == 64 else 32) + 2]
    )  # into the 2nd p_type
    with pytest.raises(ElfFormatError):
        read_elf(open(path, "rb"))


def test_a_program_for_another_class_or_machine_is_refused(tmp_path):
    foreign = tmp_path / "foreign"
    foreign.write_bytes(_elf(32, True, [6, 3, 1], machine=3))
    foreign.chmod(0o755)
    assert "32-bit ELF for machine 3" in why_preload_cannot_take(str(foreign))
