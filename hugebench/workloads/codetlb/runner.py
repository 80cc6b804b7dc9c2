"""codetlb: a generated large-code program — many distinct functions spread over a chosen text footprint —
called in a seeded random (or Zipf) order, so that instruction-TLB reach, not the instruction cache, sets
the cost of a call.

Layouts: ``sparse`` puts one tiny function at the start of every 4 KiB page of the footprint (a call touches
one cache line per page: iTLB-bound); ``dense`` packs functions of ``func_bytes`` of straight-line code
(executed whole, so i-cache and fetch matter as well). The program is assembly (fast to build at 256 MiB)
plus a C++ driver; built into ``$XDG_CACHE_HOME/hugebench/codetlb/<key>`` once per parameter set.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

GENERATOR_VERSION = 1
PAGE = 4096


def cache_root() -> Path:
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache", "hugebench", "codetlb")


def functions_for(footprint_bytes: int, layout: str, func_bytes: int) -> int:
    return max(1, footprint_bytes // (PAGE if layout == "sparse" else func_bytes))


def assembly(footprint_bytes: int, layout: str, func_bytes: int) -> str:
    """GNU assembler source: the functions (each returns its argument plus its index, so calls chain) and a
    table of their addresses."""
    n = functions_for(footprint_bytes, layout, func_bytes)
    align = ".p2align 12" if layout == "sparse" else ".p2align 4"
    body = (
        "" if layout == "sparse" else f"\t.fill {max(0, func_bytes - 16)}, 1, 0x90\n"
    )  # nops, executed
    lines = ["\t.text"]
    for i in range(n):
        lines.append(f"\t{align}\nhb_fn_{i}:\n{body}\tleaq {i % 1000 + 1}(%rdi), %rax\n\tret")
    lines += [
        '\t.section .data.rel.ro,"aw"',
        "\t.p2align 3",
        "\t.globl hb_fn_table",
        "hb_fn_table:",
    ]
    lines += [f"\t.quad hb_fn_{i}" for i in range(n)]
    lines += [
        "\t.section .rodata",
        "\t.p2align 3",
        "\t.globl hb_fn_count",
        "hb_fn_count:",
        f"\t.quad {n}",
        '\t.section .note.GNU-stack,"",@progbits',
        "",
    ]
    return "\n".join(lines)


@dataclasses.dataclass(frozen=True)
class Build:
    binary: Path
    functions: int
    text_bytes: int
    build_s: float  # 0 when it came from the cache
    cached: bool


def build(
    footprint_bytes: int, layout: str, func_bytes: int, link_align: str, compiler: str = "g++"
) -> Build:
    """The program for these parameters, from the cache or built now (atomically: a crash leaves no half)."""
    from hugebench.workloads.command.control import header_path

    compiler_path = shutil.which(compiler)
    if compiler_path is None:
        raise RuntimeError(
            f"codetlb needs a C++ compiler: {compiler!r} is not on PATH (apt-get install g++)"
        )
    key_source = json.dumps(
        [
            GENERATOR_VERSION,
            footprint_bytes,
            layout,
            func_bytes,
            link_align,
            os.path.realpath(compiler_path),
            _version(compiler_path),
            Path(__file__).with_name("driver.cpp").read_text(),
        ]
    )
    key = hashlib.sha1(key_source.encode()).hexdigest()[:16]
    target = cache_root() / key
    binary = target / "codetlb"
    n = functions_for(footprint_bytes, layout, func_bytes)
    if binary.exists():
        return Build(binary, n, _text_bytes(target), 0.0, True)
    started = time.perf_counter()
    cache_root().mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache_root()))
    try:
        (work / "codetlb.S").write_text(assembly(footprint_bytes, layout, func_bytes))
        link = (
            ["-Wl,-z,max-page-size=0x200000", "-Wl,-z,common-page-size=0x200000"]
            if link_align == "2m"
            else []
        )
        subprocess.run(
            [
                compiler_path,
                "-O2",
                "-std=c++17",
                "-I",
                str(Path(header_path()).parent),
                str(Path(__file__).with_name("driver.cpp")),
                str(work / "codetlb.S"),
                *link,
                "-o",
                str(work / "codetlb"),
            ],
            check=True,
            capture_output=True,
            text=True,
            timeout=3600,
        )
        text = subprocess.run(
            ["size", "-A", str(work / "codetlb")], capture_output=True, text=True
        ).stdout
        (work / "text_bytes").write_text(str(_parse_text_size(text)))
        os.replace(work, target)
    except subprocess.CalledProcessError as exc:
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError(f"building codetlb failed: {exc.stderr[-2000:]}") from None
    except BaseException:
        shutil.rmtree(work, ignore_errors=True)
        raise
    return Build(binary, n, _text_bytes(target), time.perf_counter() - started, False)


def _version(compiler: str) -> str:
    return subprocess.run(
        [compiler, "--version"], capture_output=True, text=True
    ).stdout.splitlines()[0]


def _parse_text_size(size_output: str) -> int:
    for line in size_output.splitlines():
        parts = line.split()
        if parts and parts[0] == ".text":
            return int(parts[1])
    return 0


def _text_bytes(target: Path) -> int:
    try:
        return int((target / "text_bytes").read_text())
    except (OSError, ValueError):
        return 0


def run(request, workdir: Path) -> dict:
    """Build (or reuse) the program for the run's parameters, then measure it as a ``command``."""
    from hugebench.run import supervisor

    p = request.run["params"]
    built = build(p["footprint_bytes"], p["layout"], p["func_bytes"], p["link_align"])
    command = {
        "argv": [str(built.binary), str(p["calls"]), str(p["seed"]), p["order"], str(p["zipf_s"])],
        "cwd": str(workdir),
        "metric": {"json": "ns_per_call", "name": "ns_per_call", "better": "lower"},
        "window": "markers",
        "sample_interval": 1.0,
    }
    measured = dataclasses.replace(request, run={**request.run, "params": command})
    row = supervisor.run(measured, workdir)
    row.update(
        {
            "functions": built.functions,
            "text_bytes": built.text_bytes,
            "build_s": built.build_s,
            "build_cached": built.cached,
            "calls": p["calls"],
        }
    )
    return row
