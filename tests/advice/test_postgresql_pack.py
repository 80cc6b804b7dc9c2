"""The PostgreSQL pack at a small size, as root: Debian's server started by hugebench as the postgres user
on a fresh cluster per run, pgbench as the driver; huge_pages on really puts shared buffers on the hugetlb
pool the preset sizes (and sets back); shmem_enabled always puts them on THP; no postgres left running."""

from __future__ import annotations

import glob

import pytest
from real_pack import by_preset, needs, run_small

pytestmark = [
    *needs("pgbench", "setpriv"),
    pytest.mark.skipif(
        not glob.glob("/usr/lib/postgresql/*/bin/postgres"),
        reason="no PostgreSQL server (apt-get install postgresql)",
    ),
]


def test_the_postgresql_pack_runs_the_server_as_postgres(tmp_path):
    pack, rows, report = run_small(
        "postgresql", tmp_path, {"scale": 1, "seconds": 2}, leftovers=("postgres",)
    )
    presets = by_preset(pack, rows)
    assert set(presets) == {"documented", "huge-pages", "thp-always", "shmem-thp"}
    for row in presets["huge-pages"]:  # shared buffers on the pool
        assert row["smaps.Shared_Hugetlb"] + row["smaps.Private_Hugetlb"] > 0
    for row in presets["documented"]:
        assert row["smaps.Shared_Hugetlb"] == 0 and row["smaps.ShmemPmdMapped"] == 0
    assert all(r["smaps.ShmemPmdMapped"] > 0 for r in presets["shmem-thp"])
    assert all(r["tps"] > 0 for rs in presets.values() for r in rs)
    assert "THP always: fewer transactions per second" in report
