"""Small helpers shared across modules."""

from __future__ import annotations

import os
import shutil
import subprocess


def run_text(argv: list[str], timeout: float = 30) -> str | None:
    """stdout of a command run in the C locale, or None if it is missing, fails or times out."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False,
                              env={**os.environ, "LC_ALL": "C"})
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None
