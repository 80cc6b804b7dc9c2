"""The results store: durable appends, resume ids, torn lines, contexts, and load() of several stores."""

from __future__ import annotations

import json
import math
import os
import shutil

import numpy as np
import pandas as pd
import pytest
from paths import DATA

import hugebench
from hugebench.errors import HugebenchError
from hugebench.store import STATUSES, ResultStore, StoreWarning, export_parquet, load, load_contexts


def row(run_id, status="ok", **extra):
    return {
        "run_id": run_id,
        "cell_id": "c-" + run_id[:1],
        "sweep_id": "s1",
        "experiment": "e",
        "workload": "w",
        "repetition": 0,
        "order_index": 0,
        "status": status,
        **extra,
    }


def test_append_round_trips_and_normalises_values(tmp_path):
    store = ResultStore(tmp_path / "res")
    stored = store.append(
        row(
            "a1",
            ns_per_lookup=np.float64(81.5),
            minflt=np.int64(7),
            missing=float("nan"),
            smaps={"Rss": 4096, "AnonHugePages": 2048},
            chunks=[1.0, float("inf")],
        )
    )
    assert stored["schema_version"] == 1
    text = (tmp_path / "res" / "runs.jsonl").read_text()
    assert text.endswith("\n") and text.count("\n") == 1
    back = json.loads(text)
    assert back["missing"] is None  # JSON has no NaN: null
    assert back["smaps.Rss"] == 4096 and back["smaps.AnonHugePages"] == 2048 and "smaps" not in back
    assert back["chunks"] == [1.0, None]
    assert back["minflt"] == 7 and isinstance(back["minflt"], int)
    assert store.rows() == [back]


def test_append_is_fsynced(tmp_path, monkeypatch):
    synced = []
    real_fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: (synced.append(fd), real_fsync(fd)))
    ResultStore(tmp_path).append(row("a1"))
    assert synced, "append must fsync before returning"


@pytest.mark.parametrize(
    "bad, message",
    [
        ({"status": "ok"}, "run_id"),
        ({"run_id": "x", "status": "weird"}, "weird"),
    ],
)
def test_append_rejects_malformed_rows(tmp_path, bad, message):
    with pytest.raises(ValueError, match=message):
        ResultStore(tmp_path).append(bad)


def test_every_status_is_accepted_and_only_ok_counts_as_completed(tmp_path):
    store = ResultStore(tmp_path)
    for i, status in enumerate(STATUSES):
        store.append(row(f"r{i}", status=status))
    store.append(row("r1", status="ok"))  # r1 failed, then succeeded on resume
    assert store.completed_run_ids() == {"r0", "r1"}


def test_torn_last_line_is_skipped_with_a_warning_and_the_next_append_starts_fresh(tmp_path):
    store = ResultStore(tmp_path)
    store.append(row("a1"))
    store.append(row("a2"))
    with open(store.runs_path, "ab") as handle:
        handle.write(b'{"run_id": "a3", "sta')  # a crash in the middle of a write
    with pytest.warns(StoreWarning, match="torn last line"):
        assert [r["run_id"] for r in store.rows()] == ["a1", "a2"]
    with pytest.warns(StoreWarning):
        assert store.completed_run_ids() == {"a1", "a2"}
    store.append(row("a4"))
    with pytest.warns(StoreWarning, match="corrupt line 3"):
        assert [r["run_id"] for r in store.rows()] == ["a1", "a2", "a4"]
    with pytest.warns(StoreWarning):
        assert list(load(tmp_path)["run_id"]) == ["a1", "a2", "a4"]


def test_reading_an_empty_or_missing_store(tmp_path):
    store = ResultStore(tmp_path / "nothing")
    assert store.rows() == [] and store.completed_run_ids() == set() and store.contexts() == {}
    assert not (tmp_path / "nothing").exists(), "reading must not create the directory"


def test_contexts_are_written_updated_and_listed(tmp_path):
    store = ResultStore(tmp_path)
    store.write_context(
        "s1", {"axes": ["allocator"], "baseline": {"allocator": "glibc"}, "x": float("nan")}
    )
    store.write_context("s2", {"axes": ["thp"]})
    merged = store.update_context(
        "s1", ended_at="2024-01-01T00:00:00+00:00", sweep_wall_s=12.5, worker_wall_s_sum=10.0
    )
    assert merged["axes"] == ["allocator"] and merged["sweep_wall_s"] == 12.5
    contexts = store.contexts()
    assert set(contexts) == {"s1", "s2"}
    assert contexts["s1"]["worker_wall_s_sum"] == 10.0 and contexts["s1"]["x"] is None
    assert contexts["s1"]["schema_version"] == 1 and contexts["s1"]["sweep_id"] == "s1"
    assert sorted(p.name for p in (tmp_path / "sweeps").iterdir()) == ["s1.json", "s2.json"], (
        "no temp files left"
    )
    assert load_contexts(tmp_path)["s2"]["source"] == str(tmp_path)


def test_context_errors_name_the_problem(tmp_path):
    store = ResultStore(tmp_path)
    with pytest.raises(HugebenchError, match="write_context"):
        store.update_context("never-written", sweep_wall_s=1.0)
    with pytest.raises(HugebenchError, match="safe file name"):
        store.write_context("../escape", {})


def test_load_concatenates_several_stores_and_keeps_unknown_columns(tmp_path):
    first, second = ResultStore(tmp_path / "m1"), ResultStore(tmp_path / "m2")
    first.append(row("a1", allocator="glibc", ns_per_lookup=80.0, keys=1000))
    first.append(
        row("a2", status="oom", allocator="glibc", ns_per_lookup=None, keys=1000, error="killed")
    )
    second.append(
        row("b1", allocator="jemalloc", ns_per_lookup=70, keys=2000, brand_new_metric="x")
    )
    df = hugebench.load(tmp_path / "m1", tmp_path / "m2" / "runs.jsonl")
    assert list(df["run_id"]) == ["a1", "a2", "b1"]
    assert list(df["source"]) == [str(tmp_path / "m1")] * 2 + [str(tmp_path / "m2")]
    assert pd.api.types.is_float_dtype(df["ns_per_lookup"]) and math.isnan(df["ns_per_lookup"][1])
    assert pd.api.types.is_numeric_dtype(df["keys"])
    assert df["brand_new_metric"].tolist()[2] == "x" and pd.isna(df["brand_new_metric"][0])


def test_load_makes_all_null_columns_numeric_and_tolerates_old_rows(tmp_path):
    store = ResultStore(tmp_path)
    store.append(row("a1", **{"pmu.cycles": None, "pmu.cycles.reason": "not supported"}))
    with open(store.runs_path, "a") as handle:  # an old row without most columns
        handle.write(json.dumps({"run_id": "old"}) + "\n")
    df = load(tmp_path)
    assert pd.api.types.is_float_dtype(df["pmu.cycles"]) and df["pmu.cycles"].isna().all()
    assert df["pmu.cycles.reason"][0] == "not supported"
    assert pd.isna(df["status"][1])


def test_load_of_several_sweeps_in_one_directory(tmp_path):
    store = ResultStore(tmp_path)
    for sweep in ("s1", "s2"):
        store.write_context(sweep, {"axes": ["allocator"]})
        store.append({**row(f"{sweep}-r"), "sweep_id": sweep})
    df = load(tmp_path)
    assert sorted(df["sweep_id"]) == ["s1", "s2"] and set(store.contexts()) == {"s1", "s2"}


def test_load_names_the_machine_of_every_row(tmp_path):
    for machine in (
        "m1",
        "m2",
    ):  # two local sweeps on two machines: the host name comes from each context
        store = ResultStore(tmp_path / machine)
        store.write_context(f"s-{machine}", {"machine": {"hostname": f"box-{machine}"}})
        store.append({**row(f"{machine}-r"), "sweep_id": f"s-{machine}"})
    cluster = ResultStore(tmp_path / "c")  # a cluster sweep's rows say which machine ran them
    cluster.write_context("s.lab-a", {"machine": {"hostname": "lab-a.example"}})
    cluster.append({**row("c-r"), "sweep_id": "s.lab-a", "host": "lab-a"})
    df = load(tmp_path / "m1", tmp_path / "m2", tmp_path / "c")
    assert df["host"].tolist() == ["box-m1", "box-m2", "lab-a"]


def test_load_errors(tmp_path):
    with pytest.raises(HugebenchError, match="at least one"):
        load()
    with pytest.raises(HugebenchError, match="no such results directory"):
        load(tmp_path / "missing")
    assert load(tmp_path).empty


def test_parquet_export_round_trips(tmp_path):
    pytest.importorskip("pyarrow")
    store = ResultStore(tmp_path)
    store.append(row("a1", ns_per_lookup=80.0, odd=1))
    store.append(row("a2", ns_per_lookup=None, odd="text", chunks=[1, 2]))
    df = load(tmp_path)
    back = pd.read_parquet(export_parquet(df, tmp_path / "runs.parquet"))
    assert list(back["run_id"]) == ["a1", "a2"]
    assert back["ns_per_lookup"][0] == 80.0 and math.isnan(back["ns_per_lookup"][1])
    assert list(back["odd"]) == ["1", "text"]


SAMPLE_STORES = [str(DATA / name) for name in ("sample_results", "sample_results_b")]


@pytest.mark.parametrize("path", SAMPLE_STORES)
def test_load_in_chunks_gives_the_frame_of_all_rows_at_once(path, monkeypatch, tmp_path):
    """load() builds the frame a part of rows at a time (bounded memory), from the journal or from the
    columnar parts it wrote: any part size gives the same frame, dtypes included, as one part holding every
    row read from the journal."""
    from hugebench.store import columnar

    shutil.copytree(path, tmp_path / "s")
    monkeypatch.setattr(columnar, "PART_ROWS", 10**9)
    whole = load(tmp_path / "s")
    assert not (
        tmp_path / "s" / columnar.COLUMNAR_DIR
    ).exists()  # under PART_MIN_BYTES: not written
    for size in (1, 3, 7):
        monkeypatch.setattr(columnar, "PART_ROWS", size)
        pd.testing.assert_frame_equal(load(tmp_path / "s"), whole, check_dtype=True)
        monkeypatch.setattr(
            columnar, "PART_MIN_BYTES", 0
        )  # written as parts, then read back from them
        pd.testing.assert_frame_equal(load(tmp_path / "s"), whole, check_dtype=True)
        assert (tmp_path / "s" / columnar.COLUMNAR_DIR / columnar.MANIFEST).is_file()
        pd.testing.assert_frame_equal(load(tmp_path / "s"), whole, check_dtype=True)
        shutil.rmtree(tmp_path / "s" / columnar.COLUMNAR_DIR)
        monkeypatch.setattr(columnar, "PART_MIN_BYTES", 1 << 20)


def test_a_column_null_in_a_whole_chunk_keeps_its_type(tmp_path, monkeypatch):
    from hugebench.store import columnar

    store = ResultStore(tmp_path)
    for i in range(6):
        store.append({"run_id": f"r{i}", "status": "ok", "note": "x" if i < 2 else None, "v": i})
    monkeypatch.setattr(columnar, "PART_ROWS", 2)
    chunked = load(tmp_path, hosts=False)
    monkeypatch.setattr(columnar, "PART_ROWS", 100)
    pd.testing.assert_frame_equal(chunked, load(tmp_path, hosts=False), check_dtype=True)
    assert chunked["note"].tolist()[:2] == ["x", "x"] and chunked["note"].isna().sum() == 4


def _columnar_store(tmp_path, monkeypatch, rows=6):
    from hugebench.store import columnar

    monkeypatch.setattr(columnar, "PART_ROWS", 2)
    store = ResultStore(tmp_path / "s")
    for i in range(rows):
        store.append({"run_id": f"r{i}", "status": "ok", "v": i, "mixed": [i] if i % 2 else "t"})
    columnar.build(store.runs_path)
    return store, tmp_path / "s" / columnar.COLUMNAR_DIR


def test_columnar_parts_follow_appends_and_a_rewritten_journal(tmp_path, monkeypatch):
    """Appends are read after the parts; a journal replaced or rewritten is read again from its bytes."""
    store, parts = _columnar_store(tmp_path, monkeypatch)
    assert len(list(parts.glob("part-*.parquet"))) == 3
    store.append({"run_id": "r6", "status": "ok", "v": 6})
    assert load(store.path, hosts=False)["v"].tolist() == list(range(7))
    lines = store.runs_path.read_bytes().splitlines(keepends=True)
    store.runs_path.write_bytes(lines[0].replace(b'"v": 0', b'"v": 9') + b"".join(lines[1:]))
    assert load(store.path, hosts=False)["v"].tolist() == [
        9,
        *range(1, 7),
    ]  # same size, other bytes
    store.runs_path.unlink()
    store.append({"run_id": "x", "status": "ok", "v": 42})  # a new journal (another inode)
    assert load(store.path, hosts=False)["v"].tolist() == [42]


def test_columnar_load_reads_only_the_columns_asked(tmp_path, monkeypatch):
    store, _ = _columnar_store(tmp_path, monkeypatch)
    frame = load(store.path, hosts=False, columns=["v", "mixed"])
    assert list(frame.columns) == ["v", "mixed", "source"]
    assert frame["mixed"].tolist() == ["t", [1], "t", [3], "t", [5]]


def test_columnar_form_never_written_through_a_planted_link(tmp_path, monkeypatch):
    """A columnar/ that is a link (to a directory the link's planter chose) is not written into; the store
    still loads, from its journal."""
    from hugebench.store import columnar

    monkeypatch.setattr(columnar, "PART_MIN_BYTES", 0)
    store = ResultStore(tmp_path / "s")
    store.append({"run_id": "r0", "status": "ok", "v": 1})
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (store.path / columnar.COLUMNAR_DIR).symlink_to(elsewhere)
    monkeypatch.setattr(
        "hugebench.safefs._trusted", lambda uid: False
    )  # as if another user planted it
    assert load(store.path, hosts=False)["v"].tolist() == [1]
    assert list(elsewhere.iterdir()) == []


def test_columnar_parts_of_another_user_are_not_read(tmp_path, monkeypatch):
    """Parts not owned by root or by us could have been crafted: the journal is read instead."""
    from hugebench.store import columnar

    store, parts = _columnar_store(tmp_path, monkeypatch)
    if os.geteuid() != 0:
        pytest.skip("giving the parts to another user needs root")
    for file in parts.iterdir():
        os.chown(file, 65534, 65534)
    read = []
    monkeypatch.setattr(columnar, "_read_part", lambda *a: read.append(a))
    assert load(store.path, hosts=False)["v"].tolist() == list(range(6)) and not read
