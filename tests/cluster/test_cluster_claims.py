"""One hugebench worker per machine, decided by the scheduler in one step (hugebench/cluster/claims.py): many
workers claiming one machine at the same instant get exactly one yes, on a real Dask scheduler; two real
`hugebench worker` processes started together for one machine leave one running and one refused with the
reason, without a traceback."""

from __future__ import annotations

import asyncio
import subprocess

import pytest

pytest.importorskip(
    "distributed", reason="the cluster extra is not installed: pip install '.[cluster]'"
)

from cluster_lab import Lab, wait_for

from hugebench.cluster.claims import claim, new_token


def test_claims_at_the_same_instant_get_one_yes():
    from distributed import Scheduler
    from distributed.core import rpc

    async def main():
        async with Scheduler(host="127.0.0.1", port=0, dashboard_address=":0") as scheduler:

            async def one(host="lab-x"):
                async with rpc(scheduler.address) as scheduler_rpc:
                    return await claim(scheduler_rpc, host, new_token(), resource=f"host:{host}")

            answers = await asyncio.gather(*(one() for _ in range(8)))
            again, other = await one(), await one("lab-y")
        return answers, again, other

    answers, again, other = asyncio.run(main())
    assert all(a is not None for a in answers), "the scheduler could not decide"
    assert sum(a["ok"] for a in answers) == 1, answers
    assert all(a["holder"] == "a worker that is starting" for a in answers if not a["ok"])
    assert not again["ok"] and other["ok"]  # the machine stays claimed; another machine is free


def test_two_workers_for_one_machine_started_together_leave_one(tmp_path, monkeypatch):
    monkeypatch.delenv("HUGEBENCH_LOCK", raising=False)
    monkeypatch.delenv("HUGEBENCH_JOURNAL", raising=False)
    lab = Lab(tmp_path)
    try:
        first, second = lab.worker("lab-x"), lab.worker("lab-x")
        ended = wait_for(
            lambda: [p for p in (first, second) if p.poll() is not None], "one worker to be refused"
        )
        assert len(ended) == 1 and ended[0].returncode == 1
        lab.wait_for_hosts("lab-x")
        log = (tmp_path / "worker-lab-x.log").read_text()
        assert (
            log.count("hugebench: error: refused: machine lab-x already has a hugebench worker")
            == 1
        ), log
        assert "Traceback" not in log and "failed to setup" not in log, log
        with pytest.raises(subprocess.TimeoutExpired):
            next(p for p in (first, second) if p is not ended[0]).wait(
                timeout=2
            )  # the other one serves
    finally:
        killed = lab.close()
    assert not killed, killed
