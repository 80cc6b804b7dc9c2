"""Write a fake /sys or /proc tree from a mapping of relative path -> file text (for tests of code that
reads kernel files; tests/conftest.py's fake_sys is the writable kernel the knob tests use)."""

from __future__ import annotations

from pathlib import Path


def write_tree(root: Path, files: dict[str, str]) -> Path:
    """Create each file (and its directories) under ``root``; a value ending in "/" makes a directory only."""
    for rel, text in files.items():
        path = root / rel
        if rel.endswith("/"):
            path.mkdir(parents=True, exist_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root
