"""A lab user installs hugebench from a checkout root owns and nobody may write: the build writes nothing into
the source tree (pyproject has no in-tree ``build-dir``; .ci/setup passes one outside the tree).

The checkout's tracked files are copied to a root-owned, read-only directory; as ``nobody`` a fresh venv is
made and ``pip install --no-deps --no-build-isolation`` builds the whole package there, C++ core included
(the build tools and the dependencies come from this session's packages, which the venv sees through a
.pth, so nothing is downloaded). The build is the real one, a few minutes on 2 cores: the wheel lane.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sysconfig
from pathlib import Path

import pytest
from paths import ROOT

# beside: a build as another user touches no kernel knob, so it runs beside the real lanes (tests/fast_lane.py)
pytestmark = [pytest.mark.needs_root, pytest.mark.wheel, pytest.mark.slow, pytest.mark.beside]


def _read_only_copy(dest: Path) -> Path:
    """The checkout's tracked files (as they are in the work tree) under dest, root-owned, read-only."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z"], capture_output=True, check=True
    ).stdout
    for rel in filter(None, listed.decode().split("\0")):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    for path in [dest, *dest.rglob("*")]:
        path.chmod(0o555 if path.is_dir() else 0o444 | (path.stat().st_mode & 0o111))
    return dest


def test_nobody_installs_from_a_root_owned_read_only_checkout(unprivileged, tmp_path_factory):
    if not unprivileged.dropping:
        pytest.skip(
            "runs as root, to install as another user from a checkout that user cannot write"
        )
    base = Path(unprivileged.home)
    checkout = _read_only_copy(tmp_path_factory.mktemp("checkout") / "hugebench")
    checkout.parent.chmod(0o755)
    for (
        parent
    ) in checkout.parents:  # nobody must reach the copy (pytest's tmp dirs are private to root)
        if parent == Path("/tmp") or parent == Path("/"):
            break
        parent.chmod(parent.stat().st_mode | 0o555)
    before = {p: p.stat().st_mtime_ns for p in checkout.rglob("*")}

    venv = base / "venv"
    made = unprivileged.run([unprivileged.python, "-m", "venv", "--without-pip", venv])
    assert made.returncode == 0, made.stderr
    site = unprivileged.run(
        [venv / "bin/python", "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]
    ).stdout.strip()
    ours = "".join(
        f"{p}\n" for p in dict.fromkeys([sysconfig.get_paths()[k] for k in ("purelib", "platlib")])
    )
    write = f"open({site + '/session.pth'!r}, 'w').write({ours!r})"
    pth = unprivileged.run([venv / "bin/python", "-c", write])
    assert pth.returncode == 0, pth.stderr

    install = unprivileged.run(
        [
            venv / "bin/python",
            "-m",
            "pip",
            "install",
            "-q",
            "--no-cache-dir",
            "--no-deps",
            "--no-build-isolation",
            checkout,
        ],
        timeout=1200,
    )
    assert install.returncode == 0, install.stderr[-3000:]
    where = unprivileged.run(
        [
            venv / "bin/python",
            "-c",
            "import hugebench, hugebench._core as c; print(hugebench.__file__)",
        ],
        cwd=base,
    )
    assert where.returncode == 0, where.stderr
    assert where.stdout.strip().startswith(str(venv)), where.stdout
    after = {p: p.stat().st_mtime_ns for p in checkout.rglob("*")}
    assert after == before, "the install wrote into the checkout"
    assert os.stat(checkout).st_uid == 0
