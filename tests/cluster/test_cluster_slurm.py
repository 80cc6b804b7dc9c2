"""A cluster sweep through SLURM for real: Debian's slurm-wlm and munge as a one-node cluster, dask-jobqueue.

The test writes a munge key, a slurm.conf (this machine as the one node, on 127.0.0.1, free ports) and state
directories in its temp dir, starts munged, slurmctld and slurmd in the foreground, asks dask-jobqueue's
SLURMCluster for one job (a Dask worker with the resource ``machine=1``, adopted by the client as the machine
named by the node's host name), and runs a small sweep through it with `hugebench sweep --cluster`. No kernel
knob is switched (no thp axis). The job is cancelled, the daemons stopped, and every process they started
ended; the test fails if a job's process outlived the cluster. Where slurm cannot start, it skips with what
it printed.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip(
    "distributed", reason="the cluster extra is not installed: pip install '.[cluster]'"
)
jobqueue = pytest.importorskip(
    "dask_jobqueue", reason="the cluster extra is not installed: pip install '.[cluster]'"
)
psutil = pytest.importorskip("psutil")

from cluster_lab import lab_spec, stop_daemons

from hugebench.experiment.cluster import safe_host

BIN = Path(sys.executable).parent
DAEMONS = {
    name: shutil.which(name) or f"/usr/sbin/{name}" for name in ("munged", "slurmctld", "slurmd")
}
MARK = "HB_SLURM_TEST"  # in the environment of the daemons and the job: what to end afterwards

pytestmark = [
    pytest.mark.slow,
    pytest.mark.needs_root,
    pytest.mark.skipif(
        not all(Path(p).exists() for p in DAEMONS.values()) or not shutil.which("sbatch"),
        reason="no slurm: apt-get install slurm-wlm munge (.ci/setup does)",
    ),
]

SLURM_CONF = """\
ClusterName=hbtest
SlurmctldHost={node}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmdPort={d_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={run}/munge.sock
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={run}/slurmctld.pid
SlurmdPidFile={run}/slurmd.pid
SlurmctldLogFile={tmp}/slurmctld.log
SlurmdLogFile={tmp}/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
NodeName={node} NodeAddr=127.0.0.1 CPUs={cpus} RealMemory={memory_mb} State=UNKNOWN
PartitionName=hbtest Nodes={node} Default=YES MaxTime=INFINITE State=UP
"""

SPEC = lab_spec("slurm-lab")


def _free_ports(n: int) -> list[int]:
    socks = [socket.socket() for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def _wait(what: str, check, timeout: float, logs: list[Path]):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = check()
        if value:
            return value
        time.sleep(0.2)
    text = "\n".join(
        f"--- {p.name}\n{p.read_text(errors='replace')[-2000:]}" for p in logs if p.exists()
    )
    pytest.skip(f"slurm did not start here ({what} within {timeout:g} s):\n{text}")


def _marked(tmp: Path) -> list:
    found = []
    for proc in psutil.process_iter(["pid"]):
        try:
            if proc.environ().get(MARK) == str(tmp):
                found.append(proc)
        except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
            continue
    return found


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """munged, slurmctld and slurmd of a one-node cluster in tmp_path; SLURM_CONF set for sbatch & co."""
    tmp = tmp_path
    # munged wants its socket's directory and each above it searchable by all; pytest's temp dirs are not
    run, key_dir = Path(tempfile.mkdtemp(prefix="hb-slurm-")), tmp / "munge"
    run.chmod(0o755)
    for d, mode in ((key_dir, 0o700), (tmp / "state", 0o755), (tmp / "spool", 0o755)):
        d.mkdir(mode=mode)
    key = key_dir / "munge.key"
    key.write_bytes(os.urandom(128))
    key.chmod(0o600)
    node = socket.gethostname().split(".")[0]
    memory_mb = int(Path("/proc/meminfo").read_text().split()[1]) // 1024 // 2
    ctld_port, d_port = _free_ports(2)
    conf = tmp / "slurm.conf"
    conf.write_text(
        SLURM_CONF.format(
            node=node,
            ctld_port=ctld_port,
            d_port=d_port,
            run=run,
            tmp=tmp,
            cpus=os.cpu_count(),
            memory_mb=memory_mb,
        )
    )
    monkeypatch.setenv("SLURM_CONF", str(conf))
    monkeypatch.setenv(
        MARK, str(tmp)
    )  # sbatch exports the environment: the job's processes carry it too
    env = dict(os.environ)
    daemons = []

    def start(name, *args):
        log = open(tmp / f"{name}.out", "ab")
        daemons.append(
            subprocess.Popen([DAEMONS[name], *args], stdout=log, stderr=subprocess.STDOUT, env=env)
        )

    logs = [
        tmp / n
        for n in ("munged.out", "slurmctld.out", "slurmd.out", "slurmctld.log", "slurmd.log")
    ]
    try:
        start(
            "munged",
            "-F",
            f"--key-file={key}",
            f"--socket={run}/munge.sock",
            f"--pid-file={run}/munged.pid",
            f"--log-file={key_dir}/munged.log",
            f"--seed-file={key_dir}/munged.seed",
        )
        _wait("munged's socket", (run / "munge.sock").exists, 15, logs)
        start("slurmctld", "-D", "-f", str(conf))
        start("slurmd", "-D", "-f", str(conf))

        def idle():
            out = subprocess.run(
                ["sinfo", "-h", "-o", "%t"], capture_output=True, text=True, timeout=10
            )
            return out.stdout.strip() == "idle"

        _wait("the node idle in sinfo", idle, 30, logs)
        yield tmp, node
    finally:
        stop_daemons(daemons, timeout=15)
        left = _marked(tmp)  # a job step (slurmstepd) or worker that outlived its daemon
        for proc in left:
            proc.kill()
        psutil.wait_procs(left, timeout=10)
        shutil.rmtree(run, ignore_errors=True)


def test_a_sweep_through_slurm_runs_on_the_node_and_leaves_no_job(slurm):
    tmp, node = slurm
    from distributed import Client

    from hugebench.cluster import certs

    certs.make(tmp / "certs")

    cluster = jobqueue.SLURMCluster(
        cores=1,
        processes=1,
        memory="1GB",
        walltime="00:10:00",
        log_directory=str(tmp / "jobs"),
        # --chdir: not the checkout this test runs in, whose hugebench (no _core) would shadow the installed one
        job_extra_directives=["--exclusive", f"--chdir={tmp}"],
        worker_extra_args=["--resources", "machine=1"],
        job_script_prologue=[
            f"export HUGEBENCH_LOCK={tmp}/machine.lock HUGEBENCH_JOURNAL={tmp}/journal.json"
        ],
        scheduler_options={"host": "127.0.0.1", "dashboard_address": ":0"},
        python=sys.executable,
        security=certs.security(
            tmp / "certs", "scheduler", "worker", "client"
        ),  # TLS, as the manual says
    )
    spec = tmp / "slurm-lab.yaml"
    spec.write_text(SPEC)
    out = tmp / "results"
    with cluster, Client(cluster) as client:
        assert "#SBATCH --exclusive" in cluster.job_script()
        cluster.scale(jobs=1)
        client.wait_for_workers(1, timeout=90)
        assert cluster.scheduler_address.startswith("tls://")
        jobs = client.run(lambda: os.environ.get("SLURM_JOB_ID"))
        assert all(jobs.values()), f"the worker is not a SLURM job: {jobs}"
        result = subprocess.run(
            [
                str(BIN / "hugebench"),
                "sweep",
                str(spec),
                "--cluster",
                cluster.scheduler_address,
                "--certs",
                str(tmp / "certs"),
                "-q",
                "-o",
                str(out),
                "--format",
                "csv",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "COLUMNS": "200"},
        )
        assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    rows = [json.loads(line) for line in (out / "runs.jsonl").read_text().splitlines()]
    assert {r["status"] for r in rows} == {"ok"}, [r["error"] for r in rows]
    context = json.loads(next((out / "sweeps").glob(f"*.{safe_host(node)}.json")).read_text())
    assert isinstance(context["machine"]["hugebench"]["core_build"], dict), context["machine"][
        "hugebench"
    ]
    assert [r["host"] for r in rows if not r["warmup"]] == [safe_host(node)] * 2
    assert (
        "Launching batch job" in (tmp / "slurmd.log").read_text()
        or "batch" in (tmp / "slurmd.log").read_text()
    )
    deadline = time.monotonic() + 20  # scancel ends the job: its worker and slurmstepd go
    while any("SLURM_JOB_ID" in _env(p) for p in _marked(tmp)) and time.monotonic() < deadline:
        time.sleep(0.5)
    left = [p for p in _marked(tmp) if "SLURM_JOB_ID" in _env(p)]
    assert not left, f"the job's processes outlived the cluster: {[_cmd(p) for p in left]}"


def _env(proc) -> dict:
    try:
        return proc.environ()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return {}


def _cmd(proc) -> list:
    try:
        return proc.cmdline()
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return []
