"""The `cluster:` block and the --cluster flag: checked at load with file:line: key errors; no Dask needed."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from hugebench import experiment as spec
from hugebench.cli import main
from hugebench.cluster.client import blocks, check_identical, on_host, place
from hugebench.errors import HugebenchError, SpecError
from hugebench.experiment.cluster import ClusterConfig, resolve
from hugebench.sweep import plan

BASE = """name: c
workload: hashlookup
repetitions: 2
params: {keys: 1000}
axes: {thp: [always, never]}
"""


def _parse(extra: str):
    return spec.parse_spec(BASE + extra, "c.yaml")


def test_a_cluster_block_is_read_and_left_out_of_the_fingerprint():
    s = _parse(
        "cluster:\n  scheduler: tls://lab1:8786\n  certs: /etc/hb\n  machines: spread\n"
        "  workers: 3\n"
    )
    assert s.cluster.to_dict() == {
        "scheduler": "tls://lab1:8786",
        "certs": "/etc/hb",
        "machines": "spread",
        "workers": 3,
    }
    assert s.fingerprint() == _parse("").fingerprint()
    assert resolve(s.cluster, None, None, None, "c.yaml") == ClusterConfig(
        "tls://lab1:8786", (), "spread", 3, certs="/etc/hb"
    )


@pytest.mark.parametrize(
    "block, where",
    [
        (
            "cluster:\n  scheduler: lab1\n",
            "c.yaml:7: key 'cluster.scheduler': must be an address like tls://lab1:8786",
        ),
        (
            "cluster:\n  ssh: [a, b]\n  certs: c\n  machines: both\n",
            "c.yaml:9: key 'cluster.machines': must be one of each, spread",
        ),
        ("cluster:\n  scheduler: tcp://a:1\n  ssh: [a]\n", "give exactly one of scheduler"),
        ("cluster:\n  schedular: tcp://a:1\n", "c.yaml:7: key 'cluster.schedular': unknown key"),
        ("cluster:\n  ssh: a,b\n", "key 'cluster.ssh': must be a non-empty list of host names"),
        (
            "cluster:\n  scheduler: tls://a:1\n  certs: c\n  workers: 0\n",
            "key 'cluster.workers': must be an integer from 1",
        ),
        ("cluster: yes\n", "c.yaml:6: key 'cluster': must be a mapping"),
        (
            "cluster:\n  scheduler: tcp://127.0.0.1:0\n  insecure_accept_any_client: true\n",
            "c.yaml:7: key 'cluster.scheduler': port 0 in 'tcp://127.0.0.1:0' is out of range",
        ),
        (
            "cluster:\n  ssh: ['h:99999']\n  certs: c\n",
            "c.yaml:7: key 'cluster.ssh': port 99999 in 'h:99999' is out of range",
        ),
        (
            "cluster:\n  scheduler: tcp://lab1:8786\n",
            "c.yaml:7: key 'cluster.scheduler': Dask's tcp:// authenticates nobody",
        ),
        ("cluster:\n  ssh: [a]\n", "c.yaml:7: key 'cluster.ssh': Dask's tcp:// authenticates"),
        (
            "cluster:\n  scheduler: tls://lab1:8786\n",
            "c.yaml:6: key 'cluster.certs': a tls:// scheduler needs the lab's certificates: give",
        ),
        (
            "cluster:\n  scheduler: tcp://lab1:8786\n  certs: c\n",
            "key 'cluster.scheduler': tcp://lab1:8786 is plain tcp://; with certs",
        ),
        (
            "cluster:\n  scheduler: tcp://a:1\n  insecure_accept_any_client: yes please\n",
            "key 'cluster.insecure_accept_any_client': must be true or false",
        ),
        (
            "cluster:\n  scheduler: tls://a:1\n  certs: c\n  lost_after: 0\n",
            "c.yaml:9: key 'cluster.lost_after': must be a number of seconds",
        ),
    ],
)
def test_a_bad_cluster_block_is_refused_with_file_line_and_key(block, where):
    with pytest.raises(SpecError) as err:
        _parse(block)
    assert where in str(err.value)


def test_the_flags_beat_the_block():
    block = {"scheduler": "tls://lab1:8786", "certs": "c", "machines": "each"}
    config = resolve(block, "ssh://h1,h2", "spread", 2, "c.yaml")
    assert config == ClusterConfig(None, ("h1", "h2"), "spread", 2, certs="c")
    assert resolve({}, None, None, None, "c.yaml") is None
    with pytest.raises(
        SpecError, match="--machines/--workers/--certs/--insecure-accept-any-client need a cluster"
    ):
        resolve({}, None, "spread", None, "c.yaml")


def test_the_sweep_command_refuses_a_bad_cluster_flag_before_anything_runs(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    result = CliRunner().invoke(
        main, ["sweep", str(path), "--cluster", "lab1:8786", "-o", str(tmp_path / "r")]
    )
    assert result.exit_code != 0
    assert "--cluster: must be an address like tls://lab1:8786" in result.output
    assert not (tmp_path / "r").exists()


def test_a_user_allocator_path_is_left_to_the_machines_of_a_cluster():
    text = (
        BASE.replace("axes: {thp: [always, never]}", "axes: {allocator: [mine]}")
        + "allocators: {mine: {path: /nowhere/libmine.so}}\n"
    )
    with pytest.raises(HugebenchError, match="c.yaml:6: key .allocators.mine.path.: .*libmine.so"):
        spec.parse_spec(text, "c.yaml")
    assert spec.parse_spec(text, "c.yaml", local=False).allocators == {
        "mine": {"path": "/nowhere/libmine.so"}
    }
    assert spec.parse_spec(text + "cluster: {scheduler: 'tls://a:1', certs: c}\n", "c.yaml").cluster


def test_each_makes_ids_per_host_and_spread_hands_out_whole_blocks():
    runs = plan.plan(_parse(""))  # 2 cells x 2 repetitions
    each = place(runs, ["a", "b"])
    assert [r.cell["host"] for r in each["a"]] == ["a"] * 4
    ids = {r.run_id for rs in each.values() for r in rs}
    assert len(ids) == 8 and not ids & {r.run_id for r in runs}
    assert on_host(runs[0], "a").run_id == each["a"][0].run_id  # stable: resume finds them again
    by_block = blocks(runs)  # spread hands out whole blocks: one run of each cell
    assert [{r.repetition for r in b} for b in by_block] == [{0}, {1}]
    assert [len({r.cell_id for r in b}) for b in by_block] == [2, 2]


def test_spread_names_what_differs():
    machine = {
        "cpu": {"model_name": "X"},
        "kernel": {"release": "6.1"},
        "memory": {"hpage_pmd_size": 2097152, "thp": {"enabled": "madvise", "mthp": {}}},
    }
    check_identical({"a": machine, "b": machine})
    other = {**machine, "kernel": {"release": "6.18"}}
    with pytest.raises(SpecError, match="their kernel differs: a has '6.1', b has '6.18'"):
        check_identical({"a": machine, "b": other})


def test_blocks_are_whole_also_for_warm_ups_and_adaptive_blocks_of_some_cells():
    s = _parse("warmup: 1\n")
    runs = plan.plan(s)  # a warm-up block, then repetitions 0 and 1, of 2 cells
    assert [[r.repetition for r in b] for b in blocks(runs)] == [[-1, -1], [0, 0], [1, 1]]
    extra = plan.block(
        s, 5, {runs[0].cell_id}
    )  # repetitions: auto adds a block of the cells still too wide
    assert [[r.repetition for r in b] for b in blocks(extra)] == [[5]]


def test_adaptive_repetitions_need_spread_on_a_cluster(tmp_path):
    from hugebench.cluster.client import run_cluster_sweep
    from hugebench.sweep.orchestrator import SweepOptions

    s = spec.parse_spec(
        BASE.replace("repetitions: 2", "repetitions: {auto: {min: 3, max: 6, target: 0.05}}"),
        "c.yaml",
    )
    options = SweepOptions(
        out=tmp_path / "r", cluster=ClusterConfig("tls://127.0.0.1:1", certs="c")
    )
    with pytest.raises(SpecError, match="repetitions: auto needs machines: spread"):
        run_cluster_sweep(s, plan.plan(s), options)


def test_plan_shows_which_machine_gets_which_runs_and_its_time(tmp_path):
    """`hugebench plan` expands a cluster sweep per machine: ssh hosts by name, a scheduler's as `workers`
    placeholders (named when the sweep asks it); each: every run everywhere; spread: blocks dealt in turn."""
    pytest.importorskip("cryptography")
    from hugebench.cluster.certs import make

    make(tmp_path / "c")  # plan checks the client's certificates as a sweep does (issue 53)
    path = tmp_path / "c.yaml"
    path.write_text(
        BASE.replace("repetitions: 2", "repetitions: 5")
        + f"cluster: {{ssh: [lab1, lab2], certs: {tmp_path / 'c'}}}\n"
    )
    each = CliRunner().invoke(main, ["plan", str(path)])
    assert each.exit_code == 0, each.output
    assert (
        "cluster: machines: each (every run on every machine), over the ssh hosts of ssh://lab1,lab2:"
        in each.output
    )
    assert (
        "  lab1: 10 runs (2 cells), ~" in each.output
        and "  lab2: 10 runs (2 cells), ~" in each.output
    )
    spread = CliRunner().invoke(
        main,
        [
            "plan",
            str(path),
            "--cluster",
            "tls://head:8786",
            "--machines",
            "spread",
            "--workers",
            "2",
        ],
    )
    assert spread.exit_code == 0, spread.output
    assert (
        "over 2 machine(s) as `workers` says; their names come from tls://head:8786"
        in spread.output
    )
    assert "  machine 1: 6 runs (blocks 0, 2, 4), ~" in spread.output
    assert "  machine 2: 4 runs (blocks 1, 3), ~" in spread.output
    times = [
        line.rsplit("~", 1)[1]
        for line in spread.output.splitlines()
        if line.startswith("  machine")
    ]
    assert all(t.strip() and "unknown" not in t for t in times)  # hashlookup has a time model


def test_the_flags_name_themselves_in_a_refusal_and_the_opt_in_is_explicit(tmp_path):
    path = tmp_path / "c.yaml"
    path.write_text(BASE)
    for args, says in [
        (["--cluster", "ssh://h:99999", "--certs", "c"], "--cluster: port 99999 in 'h:99999'"),
        (["--cluster", "tcp://127.0.0.1:8786"], "--cluster: Dask's tcp:// authenticates nobody"),
        (["--cluster", "tls://127.0.0.1:8786"], "--cluster: a tls:// scheduler needs the lab's"),
    ]:
        result = CliRunner().invoke(main, ["plan", str(path), *args])
        assert result.exit_code == 2 and says in result.output, result.output
    config = resolve({}, "tcp://127.0.0.1:8786", None, None, "c.yaml", insecure=True)
    assert config.insecure and config.certs is None
    assert resolve({}, "tls://h:1", None, None, "c.yaml", certs="d") == ClusterConfig(
        "tls://h:1", certs="d"
    )
