"""Where this machine's probe lives: ~/.cache/hugebench/probe/<machine key>/ (a results directory plus
probe.json, the summary that `doctor` and the latency plots read)."""

from __future__ import annotations

import hashlib
import json
import os
import platform
import socket
from pathlib import Path

from hugebench import kernel
from hugebench._util import write_json_atomic
from hugebench.kernel.host import LOCAL, Host

SUMMARY = "probe.json"


def machine_key(host: Host = LOCAL) -> str:
    """hostname + a hash of what decides the curves: CPU model, kernel release, memory size."""
    cpu = kernel.read_cpu_info(host)
    identity = [
        socket.gethostname(),
        cpu.model_name,
        platform.release(),
        str(kernel.mem_total(host)),
    ]
    digest = hashlib.sha1("|".join(identity).encode()).hexdigest()[:10]
    return f"{socket.gethostname()}-{digest}"


def cache_dir(host: Host = LOCAL) -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "hugebench" / "probe" / machine_key(host)


def write_summary(directory: Path, summary: dict) -> Path:
    path = directory / SUMMARY
    write_json_atomic(path, summary, indent=1, default=str)
    return path


def read_summary(directory: Path | None = None) -> dict | None:
    """This machine's cached probe summary (None when the probe never ran here or the file is unreadable)."""
    path = (directory or cache_dir()) / SUMMARY
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None
