"""Sweeps over several machines on Dask distributed (the optional extra ``hugebench[cluster]``).

- the ``cluster:`` block and the ``--cluster`` flag are parsed in ``hugebench.experiment.cluster`` (no Dask needed);
- ``client``: plans and places runs on machines, keeps the one store (``run_cluster_sweep``);
- ``machine``: the worker plugin that runs a machine's part with the local sweep's own pieces;
- ``serve``: ``hugebench worker``, one per machine.
"""

from __future__ import annotations


def run_cluster_sweep(spec, runs, options):
    """Run a planned sweep on the cluster named by ``options.cluster`` (see ``hugebench.cluster.client``)."""
    from hugebench.cluster.client import run_cluster_sweep as run

    return run(spec, runs, options)
