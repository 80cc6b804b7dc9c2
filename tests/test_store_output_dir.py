"""A results directory that cannot be created or written is a clean error naming the path, not a traceback."""

from __future__ import annotations

import os

import pytest

from hugebench.errors import HugebenchError
from hugebench.store import ResultStore


def test_results_directory_under_a_file_is_a_clean_error(tmp_path):
    (tmp_path / "file").write_text("")
    store = ResultStore(tmp_path / "file" / "results")
    with pytest.raises(HugebenchError, match="cannot write the results directory .*file/results.*-o DIR"):
        store.write_context("s-1", {})
    with pytest.raises(HugebenchError, match="cannot write the results directory"):
        store.append({"run_id": "r", "status": "ok"})


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_results_directory_without_write_permission_is_a_clean_error(tmp_path):
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o555)
    with pytest.raises(HugebenchError, match="cannot write the results directory"):
        ResultStore(locked / "r").write_context("s-1", {})
