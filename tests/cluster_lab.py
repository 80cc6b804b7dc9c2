"""What the cluster tests share: the small sweep the real-cluster tests (ssh, slurm) send through their
cluster (one cell, two runs), and ``Lab``: a real Dask scheduler and real `hugebench worker` processes on
loopback, each standing for one machine with its own fake /sys and /proc (FakeKernel, installed in the worker
process the way test_sweep_crash does it), journal, lock and host name. The client is the real `hugebench
sweep --cluster` in its own process, so it can be killed like a user's would be. Like a lab set up as the
manual says, every connection is mutual TLS with certificates `hugebench cluster certs` made (``tls=False``:
plain tcp:// and `--insecure-accept-any-client`, for the test that shows what that allows).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from conftest import FakeKernel

from hugebench.cluster import certs as lab_certs

TESTS_DIR = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent


def lab_spec(name: str) -> str:
    """An experiment file's text: hashlookup at 2000 keys, glibc, no perf; ``name`` names the experiment."""
    return (
        f"name: {name}\nworkload: hashlookup\nrepetitions: 2\ntimeout: 60\nperf: off\ncounters: off\n"
        "params: {keys: 2000, lookups: 20000}\naxes:\n  allocator: [glibc]\n"
    )


WORKER = """
import sys
sys.path.insert(0, {tests!r})
from conftest import FakeKernel

from hugebench.cluster import certs as lab_certs
from hugebench.machine import allocators
from hugebench.kernel import Host
Host.at = FakeKernel({root!r}).host_at()  # every host this worker builds writes through the fake kernel
hidden = {hidden!r}   # libraries this fake machine does not have
real_find = allocators.find_library
allocators.find_library = lambda lib: None if any(h in str(lib) for h in hidden) else real_find(lib)
if {plain!r}:  # a plain Dask worker, as dask-jobqueue or SSHCluster start them
    from distributed.cli.dask_worker import main
    main(sys.argv[1:])
else:
    from hugebench.cli import main
    main(sys.argv[1:], prog_name="hugebench")
"""


CLIENT = """
import sys
sys.path.insert(0, {tests!r})
import toy_workload  # a spec may name the toy workload
from hugebench import experiment as spec
from hugebench.sweep import plan
from hugebench.experiment.cluster import resolve
from hugebench.cluster import run_cluster_sweep as run_sweep
from hugebench.sweep.orchestrator import SweepOptions
path, address, out, certs, machines = (sys.argv[1:] + [None])[:5]
s = spec.load_spec(path, local=False)
cluster = resolve(s.cluster, address, machines, 2, path, certs or None, not certs)
result = run_sweep(s, plan.plan(s), SweepOptions(out=out, quiet=True, spec_source=path, cluster=cluster))
print(result.statuses)
"""


class Lab:
    """A scheduler and the workers started on it; every process is ended by the fixture."""

    def __init__(self, tmp_path: Path, tls: bool = True):
        self.tmp = tmp_path
        self.procs: list[subprocess.Popen] = []
        scheduler_file = tmp_path / "scheduler.json"
        self.certs = tmp_path / "certs" if tls else None
        if self.certs is not None:
            lab_certs.make(self.certs)
        self.scheduler = self._start(
            [
                sys.executable,
                "-m",
                "distributed.cli.dask_scheduler",
                "--host",
                "127.0.0.1",
                "--port",
                "0",
                "--no-dashboard",
                "--scheduler-file",
                str(scheduler_file),
                *self.tls_args("scheduler"),
            ],
            "scheduler",
            env={**os.environ, "PYTHONPATH": _path()},
        )
        self.address = json.loads(
            wait_for(
                lambda: scheduler_file.exists() and scheduler_file.read_text() or None,
                "the scheduler file",
            )
        )["address"]
        self.machines: dict[str, FakeKernel] = {}
        self.workers: dict[str, subprocess.Popen] = {}

    def tls_args(self, role: str) -> list[str]:
        """Dask's own CLI options for ``role``'s certificates (the scheduler, a plain `dask worker`)."""
        if self.certs is None:
            return []
        c = self.certs
        return [
            "--protocol",
            "tls",
            "--tls-ca-file",
            str(c / "ca.pem"),
            "--tls-cert",
            str(c / f"{role}.pem"),
            "--tls-key",
            str(c / f"{role}-key.pem"),
        ]

    def hugebench_tls_args(self) -> list[str]:
        """What `hugebench worker` and `hugebench sweep` take: --certs DIR, or the insecure opt-in."""
        if self.certs is None:
            return ["--insecure-accept-any-client"]
        return ["--certs", str(self.certs)]

    def client(self, timeout: float = 30):
        """A Dask client with the lab's client certificate."""
        from distributed import Client

        security = lab_certs.security(self.certs, "client") if self.certs else None
        return Client(self.address, timeout=timeout, security=security)

    def _start(self, argv, name, **kw) -> subprocess.Popen:
        log = open(self.tmp / f"{name}.log", "ab")
        proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=self.tmp, **kw)
        self.procs.append(proc)
        return proc

    def machine(self, host: str) -> FakeKernel:
        if host not in self.machines:
            self.machines[host] = FakeKernel(self.tmp / host).build()
        return self.machines[host]

    def journal(self, host: str) -> Path:
        return self.tmp / f"{host}.journal.json"

    def worker(
        self, host: str, hidden: tuple = (), plain: bool = False, name: str | None = None
    ) -> subprocess.Popen:
        """`hugebench worker` for fake machine ``host`` (or, ``plain``, `dask worker --resources machine=1`
        told its machine by the environment)."""
        kernel = self.machine(host)
        code = textwrap.dedent(
            WORKER.format(
                tests=str(TESTS_DIR), root=str(kernel.root), hidden=list(hidden), plain=plain
            )
        )
        roots = {
            "HUGEBENCH_SYS_ROOT": str(kernel.sys_root),
            "HUGEBENCH_PROC_ROOT": str(kernel.proc_root),
            "HUGEBENCH_JOURNAL": str(self.journal(host)),
            "HUGEBENCH_LOCK": str(self.tmp / f"{host}.lock"),
            "HUGEBENCH_HOST_NAME": host,
        }
        if plain:
            argv = [
                sys.executable,
                "-c",
                code,
                self.address,
                "--name",
                name or host,
                "--nthreads",
                "1",
                "--no-nanny",
                "--resources",
                "machine=1",
                "--death-timeout",
                "30",
                "--no-dashboard",
                *self.tls_args("worker"),
            ]
        else:
            argv = [
                sys.executable,
                "-c",
                code,
                "worker",
                self.address,
                "--host-name",
                host,
                "--sys-root",
                str(kernel.sys_root),
                "--proc-root",
                str(kernel.proc_root),
                "--journal",
                str(self.journal(host)),
                "--lock",
                roots["HUGEBENCH_LOCK"],
                "--idle-restore",
                "3",
                "--death-timeout",
                "30",
                *self.hugebench_tls_args(),
            ]
            roots = {}
        self.workers[host] = self._start(
            argv, f"worker-{host}", env={**os.environ, "PYTHONPATH": _path(), **roots}
        )
        return self.workers[host]

    def wait_for_hosts(self, *hosts: str) -> None:
        with self.client() as client:

            def joined():
                info = client.scheduler_info()["workers"].values()
                return set(hosts) <= {w.get("name") for w in info} or None

            wait_for(joined, f"workers {hosts}")

    def sweep(self, spec: Path, out: Path, *extra: str, wait: bool = True, report: bool = True):
        """`hugebench sweep --cluster` (or, without the report and plots, which take seconds, the same
        run_sweep call it makes)."""
        argv = [
            str(BIN / "hugebench"),
            "sweep",
            str(spec),
            "--cluster",
            self.address,
            "-q",
            "-o",
            str(out),
            "--format",
            "csv",
            *self.hugebench_tls_args(),
            *extra,
        ]
        if not report:
            argv = [
                sys.executable,
                "-c",
                textwrap.dedent(CLIENT.format(tests=str(TESTS_DIR))),
                str(spec),
                self.address,
                str(out),
                str(self.certs or ""),
                *extra,
            ]
        proc = self._start(argv, "client", env={**os.environ, "COLUMNS": "200"})
        if not wait:
            return proc
        proc.wait(timeout=120)
        return proc.returncode, (self.tmp / "client.log").read_text()

    def close(self) -> list[str]:
        """Stop every process, clients and workers first (workers restore their machines), the scheduler last;
        return the ones that had to be killed."""
        killed = []
        for proc in [p for p in reversed(self.procs) if p is not self.scheduler] + [self.scheduler]:
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                killed.append(" ".join(map(str, proc.args[-12:])))
                proc.kill()
                proc.wait(timeout=5)
        return killed


def _path() -> str:
    """PYTHONPATH for the scheduler and workers: they find the toy workload (the scheduler reads tasks too)."""
    return os.pathsep.join(filter(None, [str(TESTS_DIR), os.environ.get("PYTHONPATH")]))


def wait_for(check, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def stop_daemons(daemons, timeout: float) -> None:
    """Ask every daemon to stop (SIGTERM) at once, then wait for each; one that does not stop in ``timeout``
    seconds is killed."""
    for proc in reversed(daemons):
        proc.terminate()
    for proc in daemons:
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
