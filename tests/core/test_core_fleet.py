"""The fleet workload (issue 16) through hugebench._core on small live sets: request accounting, the
allocator-time sampling rate, the time series, and the derived columns' arithmetic."""

from __future__ import annotations

import math

import pytest

from hugebench import _core
from hugebench import experiment as spec
from hugebench.errors import SpecError
from hugebench.machine import allocators
from hugebench.measure.phases import PhaseRecorder
from hugebench.workloads import WORKLOADS
from hugebench.workloads.fleet import fleet_metrics, fragmentation, time_weighted

SMALL = {"objects": 2000, "duration_s": 0.2, "sample_interval_s": 0.05, "chunks": 4}


def _run(**params):
    calls = []
    result = _core.fleet(
        **{**SMALL, **params}, hook=lambda phase, edge: calls.append((phase, edge))
    )
    return result, calls


def test_request_accounting():
    r, _ = _run(threads=2, temporaries=3, replacements=2, lookups=5, shrink_fraction=0.75)
    n = r["requests"]
    assert n > 0 and n == r["requests_peak"] + r["requests_churn"]
    assert (
        r["lookups_done"] == 5 * n
        and r["replacements_done"] == 2 * n
        and r["temporaries_done"] == 3 * n
    )
    assert set(r) & set(WORKLOADS["fleet"].params) == {
        "threads"
    }  # a result key must not hide an axis value
    assert r["steady_mallocs"] == r["steady_frees"] == 5 * n
    assert (
        r["objects_peak"] == 2000 and r["objects_after_shrink"] == 2 * 250
    )  # each thread keeps a quarter
    assert (
        r["mallocs"] == 2000 + r["steady_mallocs"]
    )  # grow + requests; the shrink and teardown only free
    assert r["frees"] == r["mallocs"]
    assert r["mismatches"] == 0
    assert r["requests_per_s"] == pytest.approx(n / r["steady_s"])
    assert r["request_ns_p50"] <= r["request_ns_p90"] <= r["request_ns_p99"] <= r["request_ns_p999"]


def test_k0_is_the_allocator_only_loop():
    r, _ = _run(lookups=0)
    assert r["lookups_done"] == 0 and r["requests"] > 0 and r["steady_mallocs"] == 5 * r["requests"]


def test_peak_live_bytes_and_size_mix():
    r, _ = _run(size_mix="64:1", temporaries=0, replacements=0)
    assert 17 * 2000 <= r["peak_live_bytes"] <= 64 * 2000
    assert r["mean_size"] == pytest.approx((16 + 64) / 2) == _core.fleet_size_mean("64:1")
    with pytest.raises(ValueError, match="size_mix"):
        _core.fleet(**SMALL, size_mix="64:1,32:1")


@pytest.mark.parametrize("every", [1, 16, 64])
def test_allocator_time_sampling_rate(every):
    r, _ = _run(alloc_sample_every=every, duration_s=0.3)
    calls, timed = r["alloc_calls"], r["alloc_calls_timed"]
    assert calls == r["steady_mallocs"] + r["steady_frees"]
    if every == 1:
        assert timed == calls
    else:  # random gaps with mean `every`: the count is within a few standard deviations of calls/every
        assert timed == pytest.approx(calls / every, rel=0.1)
    assert 0 < r["alloc_time_share"]
    if every == 1:  # every call timed: a share of the threads' own steady time
        assert r["alloc_time_share"] < 1
    # sampled, the share is scaled up by calls/timed: one sampled call the hypervisor stalled for a few ms
    # counts `every` times (CI saw 1.03 at every=64), so a bound of 1 is not the estimator's to keep
    assert 0 < r["alloc_clock_overhead_ns"] < 200


def test_sampling_off():
    r, _ = _run(alloc_sample_every=0)
    assert r["alloc_calls_timed"] == 0 and r["alloc_time_share"] is None


def test_time_series_follows_the_phases():
    r, calls = _run(duration_s=0.4, sample_interval_s=0.1)
    samples = [phase for phase, edge in calls if edge == "sample"]
    assert samples == r["series_phase"]
    assert samples[0] == "peak" and samples[-1] == "churn" and samples.count("shrink") == 1
    assert 2 <= samples.count("peak") <= 3 and 2 <= samples.count("churn") <= 3
    t = r["series_t_s"]
    assert t == sorted(t) and len(t) == len(r["series_live_bytes"]) == len(r["series_requests"])
    assert r["series_requests"] == sorted(r["series_requests"])
    assert r["series_live_bytes"][samples.index("shrink")] == r["live_bytes_after_shrink"]
    edges = [(p, e) for p, e in calls if e != "sample"]
    assert [p for p, e in edges if e == "begin"] == ["grow", "peak", "shrink", "churn", "teardown"]


def test_at_most_about_60_samples():
    r, _ = _run(duration_s=0.5, sample_interval_s=0.001 * 10)
    assert len(r["series_t_s"]) <= 64  # the row keeps lists of up to 64 entries


def test_recorder_records_the_series_and_its_cost():
    recorder = PhaseRecorder(timed_phase="churn")
    r = _core.fleet(**SMALL, hook=recorder)
    m = recorder.metrics()
    assert m["sampler.samples"] == len(r["series_t_s"]) == len(m["series_rss_bytes"])
    assert all(rss > 0 for rss in m["series_rss_bytes"])
    assert 0 < m["sampler.read_max_s"] <= m["sampler.read_s"] < 1
    assert "phase.peak.smaps.Rss" in m and "phase.churn.smaps.Rss" in m


def test_fragmentation_arithmetic():
    assert fragmentation(300, 100, 100) == (1.0, 2.0)
    assert fragmentation(None, 100, 100) == (None, None) and fragmentation(300, None, 0) == (
        None,
        None,
    )
    row = {
        "peak_rss_bytes": 250,
        "rss_before_workload_bytes": 50,
        "peak_live_bytes": 160,
        "live_bytes_after_shrink": 60,
        "phase.peak.smaps.Rss": 240,
        "phase.shrink.smaps.Rss": 220,
        "phase.churn.smaps.Rss": 190,
        "series_t_s": [0.0, 1.0, 3.0],
        "series_rss_bytes": [100, 100, 200],
        "series_anon_huge_bytes": [0, 50, 100],
        "steady_s": 2.0,
        "sampler.read_s": 0.01,
    }
    m = fleet_metrics(row)
    assert m["fragmentation"] == pytest.approx(200 / 160 - 1)
    assert m["fragmentation_gross"] == pytest.approx(250 / 160 - 1)
    assert m["rss_returned_bytes"] == 50 and m["rss_returned_now_bytes"] == 20
    assert m["rss_returned_share"] == pytest.approx(50 / 100)
    assert m["series_coverage"] == [0.0, 0.5, 0.5]
    assert m["hp_coverage_tw"] == pytest.approx((0 * 1 + 0.5 * 2) / 3)
    assert m["sampler.read_share"] == pytest.approx(0.005)
    assert fleet_metrics({})["fragmentation"] is None


def test_time_weighted():
    assert time_weighted([0, 1], [1.0, 0.0]) == 1.0
    assert time_weighted([0], [0.25]) == 0.25 and time_weighted([], []) is None
    assert math.isclose(time_weighted([0, 1, 2], [0.0, 1.0, None]), 0.0)


def test_hpa_minimum_duration(tmp_path):
    assert allocators.BUILTIN["jemalloc-hpa"].min_duration_s() == 12.0
    assert allocators.BUILTIN["jemalloc"].min_duration_s() == 0.0
    assert allocators.hpa_min_duration_s({"MALLOC_CONF": "hpa:true,hpa_hugify_delay_ms:500"}) == 2.5
    path = tmp_path / "f.yaml"
    path.write_text(
        "name: f\nworkload: fleet\nparams: {duration_s: 5}\naxes: {allocator: [glibc, jemalloc-hpa]}\n"
    )
    with pytest.raises(SpecError, match="duration_s >= 12 s"):
        spec.load_spec(path)
    path.write_text(
        "name: f\nworkload: fleet\nparams: {duration_s: 12}\naxes: {allocator: [glibc, jemalloc-hpa]}\n"
    )
    spec.load_spec(path)


def test_tradeoff_table_flags_more_malloc_more_throughput():
    import pandas as pd

    from hugebench.report.tables import ratio_table, render_ratio_table
    from hugebench.workloads import WORKLOADS

    spec_ = WORKLOADS["fleet"].ratio_tables[0]
    rows = []
    for rep in range(3):
        rows.append(
            {
                "allocator": "glibc",
                "status": "ok",
                "alloc_time_share": 0.027,
                "requests_per_s": 100 + rep,
            }
        )
        rows.append(
            {
                "allocator": "hpa",
                "status": "ok",
                "alloc_time_share": 0.035,
                "requests_per_s": 104 + rep,
            }
        )
        rows.append(
            {
                "allocator": "slow",
                "status": "ok",
                "alloc_time_share": 0.035,
                "requests_per_s": 90 + rep,
            }
        )
    table = ratio_table(pd.DataFrame(rows), ["allocator"], {"allocator": "glibc"}, spec_)
    flags = dict(zip(table["allocator"], table["flag"]))
    assert flags == {"glibc": False, "hpa": True, "slow": False}
    assert table.set_index("allocator").loc["hpa", "alloc_time_share"] == pytest.approx(
        0.035 / 0.027
    )
    text = render_ratio_table(table, ["allocator"], spec_)
    assert "**yes**" in text and "Temeraire" in text


def test_series_and_scatter_plots_draw_one_mark_per_run():
    import pandas as pd

    from hugebench.report.figures import xy_plot
    from hugebench.workloads import WORKLOADS

    rows = pd.DataFrame(
        [
            {
                "allocator": a,
                "series_t_s": [0.0, 1.0, 2.0],
                "series_coverage": [0.0, 0.5, None],
                "series_rss_bytes": [1, 2, 3],
                "alloc_time_share": 0.03 + i / 100,
                "requests_per_s": 100.0 + i,
            }
            for i, a in enumerate(["glibc", "jemalloc-hpa", "glibc"])
        ]
    )
    series, rss, scatter = WORKLOADS["fleet"].xy_plots
    fig = xy_plot(rows, series)
    assert len(fig.axes[0].lines) == 3 and len(fig.axes[0].get_legend().texts) == 2
    fig = xy_plot(rows, scatter, title="t")
    assert len(fig.axes[0].collections) == 3
