"""load() gives the columns a person looks for (issue 30): the axis names the YAML used, timestamps as
timestamps; the report CSV keeps the "too few runs" marker."""

from __future__ import annotations

import io

import pandas as pd
from paths import TESTS

from hugebench import load
from hugebench.report import report
from hugebench.store import ResultStore

SAMPLE = TESTS / "data" / "sample_results"


def test_a_thp_axis_is_a_thp_column_and_started_at_a_timestamp(tmp_path):
    store = ResultStore(tmp_path)
    for i, mode in enumerate(["never", "always", "always"]):
        store.append(
            {
                "run_id": str(i),
                "status": "ok",
                "thp.enabled": mode,
                "ns_per_lookup": 10.0 + i,
                "started_at": f"2026-11-25T17:0{i}:00+00:00",
                **({"allocator.mimalloc.version": 209} if i else {}),
            }
        )
    df = load(tmp_path)
    assert df.groupby("thp")["ns_per_lookup"].median().to_dict() == {"always": 11.5, "never": 10.0}
    assert pd.api.types.is_datetime64_any_dtype(df["started_at"])
    assert df["started_at"].iloc[1] == pd.Timestamp("2026-11-25T17:01:00", tz="UTC")
    assert str(df["allocator.mimalloc.version"].iloc[1]) == "209" and pd.isna(
        df["allocator.mimalloc.version"].iloc[0]
    )


def test_the_csv_report_keeps_the_verdict_text():
    df = pd.read_csv(io.StringIO(report(SAMPLE, "csv")))
    tlb = df[df["experiment"] == "tlb-sample"].set_index(["allocator", "thp"])["verdict"]
    assert tlb[("glibc", "never")] == "baseline" and tlb[("glibc", "always")] == "yes"
    assert tlb[("jemalloc", "never")] == "no" and tlb[("mimalloc", "always")] == "n<6"
