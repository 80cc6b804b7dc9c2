"""Several metrics per run: the ``metric`` list, the drivers hugebench knows (parsed from real output captured
here: redis-benchmark 7.0.15, pgbench 15.18) and HdrHistogram logs."""

from __future__ import annotations

import pytest
from paths import DATA

from hugebench.workloads.command import drivers
from hugebench.workloads.command.metric import extract, extract_all, parse_metric, parse_metrics

OUT = DATA / "drivers"


def _read(name: str) -> str:
    return (OUT / name).read_text()


@pytest.mark.parametrize(
    "name, keys",
    [
        ("redis-benchmark-csv.txt", {"rps", "avg_ms", "p50_ms", "p95_ms", "p99_ms", "max_ms"}),
        ("redis-benchmark-full.txt", {"rps", "avg_ms", "min_ms", "p50_ms", "p95_ms", "p99_ms"}),
        ("redis-benchmark-q.txt", {"rps", "p50_ms"}),
    ],
)
def test_redis_benchmark_in_each_of_its_formats(name, keys):
    got = drivers.redis_benchmark(_read(name), "GET")
    assert keys <= set(got)
    assert got["rps"] > 1000 and all(v > 0 for v in got.values())
    other = drivers.redis_benchmark(_read(name), "set")
    assert other["rps"] != got["rps"]  # each test its own section


def test_redis_benchmark_numbers_are_the_printed_ones():
    got = drivers.redis_benchmark(_read("redis-benchmark-csv.txt"), "GET")
    assert got == {
        "rps": 56497.18,
        "avg_ms": 0.537,
        "p50_ms": 0.335,
        "p95_ms": 1.399,
        "p99_ms": 4.935,
        "max_ms": 12.199,
    }
    full = drivers.redis_benchmark(_read("redis-benchmark-full.txt"), "SET")
    assert full["rps"] == 39292.73 and full["p99_ms"] == 4.343 and full["max_ms"] == 34.239


def test_several_tests_without_test_is_a_reason_not_a_guess():
    m = parse_metrics({"driver": "redis-benchmark"})
    value, why = extract(m[0], _read("redis-benchmark-csv.txt"), None)
    assert value is None and "several tests (SET, GET)" in why and "test:" in why


def test_a_quantity_the_output_lacks_says_how_to_get_it():
    metrics = parse_metrics({"driver": "redis-benchmark", "test": "GET"})
    found = extract_all(metrics, _read("redis-benchmark-q.txt"), None)
    assert found["rps"][0] == pytest.approx(24721.88)
    assert found["p99_ms"][0] is None and "without -q" in found["p99_ms"][1]


def test_pgbench_real_output():
    plain = drivers.pgbench(_read("pgbench.txt"), "")
    assert plain == {"tps": 476.391558, "latency_avg_ms": 8.396, "failed": 0.0}
    progress = drivers.pgbench(_read("pgbench-progress.txt"), "")
    assert progress["latency_stddev_ms"] == 4.693 and progress["tps"] == 479.901678


def test_wrk_memtier_memaslap_fio_documented_formats():
    wrk = """Running 10s test @ http://127.0.0.1:8080
  2 threads and 10 connections
  Thread Stats   Avg      Stdev     Max   +/- Stdev
    Latency   635.91us    0.89ms  12.92ms   93.69%
    Req/Sec    56.20k     8.07k   62.00k    86.54%
  Latency Distribution
     50%  250.00us
     75%  491.00us
     90%  700.00us
     99%    5.80ms
  22464657 requests in 10.10s, 17.76GB read
Requests/sec: 2224201.02
Transfer/sec:      1.76GB
"""
    got = drivers.wrk(wrk, "")
    assert got["rps"] == 2224201.02 and got["p99_ms"] == pytest.approx(5.80)
    assert got["p50_ms"] == pytest.approx(0.25) and got["max_ms"] == pytest.approx(12.92)
    memtier = """ALL STATS
=========================================================================
Type         Ops/sec     Hits/sec   Misses/sec    Avg. Latency     p50 Latency     p99 Latency   p99.9 Latency       KB/sec
-------------------------------------------------------------------------
Sets        16697.21          ---          ---         0.21856         0.20700         0.43900         1.19900      1286.19
Gets       166970.97      0.00    166970.97         0.21713         0.20700         0.43100         1.15100      6504.29
Totals     183668.18      0.00    166970.97         0.21727         0.20700         0.43100         1.15100      7790.48
"""
    got = drivers.memtier(memtier, "")
    assert got == {
        "ops_per_s": 183668.18,
        "avg_ms": 0.21727,
        "p50_ms": 0.207,
        "p99_ms": 0.431,
        "p99_9_ms": 1.151,
        "kb_per_s": 7790.48,
    }
    assert drivers.memaslap("Run time: 10.0s Ops: 1234567 TPS: 123456 Net_rate: 12.3M/s", "") == {
        "tps": 123456.0
    }
    fio = (
        'fio-3.33\n{"jobs": [{"read": {"io_bytes": 4096, "iops": 100.5, "bw": 402, '
        '"clat_ns": {"percentile": {"50.000000": 1000000, "99.000000": 4000000}}}}]}'
    )
    got = drivers.fio(fio, "read")
    assert got["iops"] == 100.5 and got["p99_ms"] == 4.0 and got["p50_ms"] == 1.0


def test_metric_list_first_is_judged_and_driver_expands_in_order():
    ms = parse_metrics(
        [
            {"json": "rps", "better": "higher"},
            {"regex": "p99=([0-9.]+)", "name": "p99_ms"},
        ]
    )
    assert [m.column for m in ms] == ["rps", "p99_ms"]
    assert parse_metric([{"json": "rps", "better": "higher"}]).column == "rps"
    d = parse_metrics(
        {"driver": "redis-benchmark", "test": "GET", "primary": "p99_ms", "prefix": "get_"}
    )
    assert d[0].column == "get_p99_ms" and d[0].better == "lower"
    assert {m.column for m in d} >= {"get_rps", "get_p50_ms"}
    assert next(m for m in d if m.column == "get_rps").better == "higher"


@pytest.mark.parametrize(
    "value, words",
    [
        ([], "empty list"),
        ([{"json": "a"}, {"json": "a"}], "two metrics are named 'a'"),
        ([{"json": "a"}, "wall"], "wall may only be the first"),
        ({"driver": "ab"}, "not one hugebench knows"),
        ({"driver": "pgbench", "test": "x"}, "has no tests"),
        ({"driver": "wrk", "primary": "tps"}, "wrk gives rps"),
        ({"driver": "wrk", "colour": 1}, "takes test, primary and prefix"),
        ([{"json": "a"}, {"regex": "x"}], "metric.1: metric.regex"),
        ({"json": "a", "percentile": 99}, "belong to an hdr"),
        ({"hdr": "f", "name": "p", "percentile": 101}, "percentile must be"),
    ],
)
def test_bad_metrics_are_refused_with_the_key(value, words):
    with pytest.raises(ValueError, match=None) as info:
        parse_metrics(value)
    assert words in str(info.value)


def test_hdr_log_percentile(tmp_path):
    hdrh = pytest.importorskip("hdrh", reason="the hdrhistogram package is not installed")
    from hdrh.histogram import HdrHistogram
    from hdrh.log import HistogramLogWriter

    del hdrh
    with open(tmp_path / "lat.hlog", "w") as f:
        writer = HistogramLogWriter(f)
        for interval in range(2):
            h = HdrHistogram(1, 10_000_000, 3)
            for v in range(1, 1001):
                h.record_value(v * 10 * (interval + 1))  # microseconds
            h.set_start_time_stamp(interval * 1000)
            h.set_end_time_stamp(interval * 1000 + 1000)
            writer.output_interval_histogram(h)
    (m,) = parse_metrics({"hdr": "lat.hlog", "percentile": 99, "name": "p99_ms", "scale": 0.001})
    value, why = extract(m, "", None, str(tmp_path))
    assert why is None and value == pytest.approx(19.8, rel=0.01)  # 2000 values: p99 of both
    missing, why = extract(m, "", None, str(tmp_path / "nowhere"))
    assert missing is None and "was not written" in why
