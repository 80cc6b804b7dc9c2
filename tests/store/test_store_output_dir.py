"""A results directory that cannot be created or written is a clean error naming the path, not a traceback."""

from __future__ import annotations

import pytest

from hugebench.errors import HugebenchError
from hugebench.store import ResultStore


def test_results_directory_under_a_file_is_a_clean_error(tmp_path):
    (tmp_path / "file").write_text("")
    store = ResultStore(tmp_path / "file" / "results")
    with pytest.raises(
        HugebenchError, match="cannot write the results directory .*file/results.*-o DIR"
    ):
        store.write_context("s-1", {})
    with pytest.raises(HugebenchError, match="cannot write the results directory"):
        store.append({"run_id": "r", "status": "ok"})


def test_results_directory_without_write_permission_is_a_clean_error(unprivileged):
    # Root writes into a read-only directory, so this runs as a user without root (privileges dropped).
    locked = unprivileged.owned_dir(unprivileged.home / "locked")
    locked.chmod(0o555)
    ran = unprivileged.python_code(
        "from hugebench.errors import HugebenchError\n"
        "from hugebench.store import ResultStore\n"
        "try:\n"
        f"    ResultStore({str(locked / 'r')!r}).write_context('s-1', {{}})\n"
        "except HugebenchError as exc:\n"
        "    print('clean:', exc)\n"
    )
    assert ran.returncode == 0 and "Traceback" not in ran.stderr, ran.stderr
    assert ran.stdout.startswith("clean: cannot write the results directory"), ran.stdout
