"""`server: {soak: DURATION}`: a real redis-server under redis-benchmark run again and again for a few
seconds, every metric the median over the driver's runs, the judged one per run, and the memory over the
whole soak with its slope and figure; a bad duration refused at load."""

from __future__ import annotations

import shutil
import textwrap

import pytest
from click.testing import CliRunner

from hugebench import load
from hugebench.cli import main
from hugebench.errors import SpecError
from hugebench.experiment import load_spec
from hugebench.sweep import plan as plan_mod
from hugebench.sweep.orchestrator import SweepOptions, run_sweep
from hugebench.workloads.command.soak import combine, parse_duration

REDIS = shutil.which("redis-server") and shutil.which("redis-benchmark")


def _spec(tmp_path, soak: str, extra: str = ""):
    path = tmp_path / "soak.yaml"
    path.write_text(
        "name: soak\nworkload: command\nperf: off\ntimeout: 60\nparams:\n"
        + textwrap.indent(
            textwrap.dedent(
                f"""\
                server:
                  argv: [redis-server, --port, "0", --unixsocket, "{{tmp}}/r.sock", --save, "", --daemonize, "no"]
                  ready: {{path: "{{tmp}}/r.sock"}}
                  soak: {soak}
                argv: [redis-benchmark, -s, "{{tmp}}/r.sock", -n, "3000", -d, "4096", -r, "3000", -t, "set,get", --csv]
                metric: {{driver: redis-benchmark, test: GET}}
                sample_interval: 0.2
                """
            )
            + extra,
            "  ",
        )
    )
    return path


def test_durations():
    assert parse_duration("30m") == 1800 and parse_duration("1.5h") == 5400
    assert parse_duration(45) == 45 and parse_duration("2s") == 2
    for bad in ("soon", "0s", "8d", True, "-3s"):
        with pytest.raises(ValueError):
            parse_duration(bad)


def test_the_medians_and_the_series_of_the_runs():
    runs = [
        (1.0, {"rps": (100.0, None), "p99_ms": (None, "no p99")}),
        (2.0, {"rps": (300.0, None), "p99_ms": (None, "no p99")}),
        (3.0, {"rps": (200.0, None), "p99_ms": (None, "no p99")}),
    ]
    found, columns = combine(runs, 3.0)
    assert found["rps"] == (200.0, None)
    assert (
        found["p99_ms"][0] is None
        and "no run of the soak's 3 printed it (no p99)" in found["p99_ms"][1]
    )
    assert columns["soak.series"] == [100.0, 300.0, 200.0] and columns["soak.t_s"] == [
        1.0,
        2.0,
        3.0,
    ]
    assert columns["soak.driver_runs"] == 3 and columns["soak.metric"] == "rps"


@pytest.mark.parametrize(
    "soak,extra,message",
    [
        ("forever", "", "server.soak: 'forever' is not a duration"),
        ("3s", "stdout: out.txt\n", "leave stdout: at its default"),
    ],
)
def test_a_bad_soak_is_refused_at_load(tmp_path, soak, extra, message):
    with pytest.raises(SpecError) as err:
        load_spec(_spec(tmp_path, soak, extra))
    assert message in str(err.value) and "soak.yaml" in str(err.value)


@pytest.mark.skipif(
    not REDIS,
    reason="redis-server/redis-benchmark not installed (apt-get install redis-server redis-tools)",
)
def test_a_soak_of_a_few_seconds_gives_medians_a_memory_slope_and_a_figure(tmp_path):
    spec = load_spec(_spec(tmp_path, "3s"))
    result = run_sweep(
        spec,
        plan_mod.plan(spec),
        SweepOptions(out=tmp_path / "res", quiet=True, journal=tmp_path / "j.json"),
    )
    df = load(tmp_path / "res")
    assert result.statuses == {"ok": 1}, df.get("error")
    row = df.iloc[0]
    runs = row["soak.driver_runs"]
    assert runs >= 2 and row["soak_s"] == 3 and row["soak.elapsed_s"] >= 3
    assert len(row["soak.series"]) == len(row["soak.t_s"]) == runs
    assert row["rps"] == pytest.approx(sorted(row["soak.series"])[(runs - 1) // 2], rel=0.5)
    assert 0 < row["p50_ms"] <= row["p99_ms"]
    # the memory over the whole soak: enough samples for a slope, said in words
    assert len(row["series_rss_mib"]) >= 8
    assert row["mem.rss_slope_lo"] <= row["mem.rss_slope_mib_h"] <= row["mem.rss_slope_hi"]
    assert row["mem.rss_trend"].startswith("Rss ")
    out = CliRunner().invoke(main, ["report", str(tmp_path / "res"), "--plots"])
    assert out.exit_code == 0, out.output
    assert (tmp_path / "res" / "plots" / "soak-memory.png").stat().st_size > 1000
