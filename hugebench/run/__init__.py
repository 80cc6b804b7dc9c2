"""The run protocol: how one planned run becomes one row, the same for a local sweep and a cluster machine.

- ``request``: what the sweep asks of one worker process (:class:`WorkerRequest`);
- ``rundir``: the run directory, the files a run leaves there and who writes and reads each (:class:`RunDir`);
- ``argv``: the measured process's command line and variables, ``[perf stat] hb-exec VARS -- program``,
  built in one place for the worker and for a program the ``command`` workload runs;
- ``rows``: the one constructor of a row (:func:`base_row`) and of a failure (:func:`failure`,
  :func:`failed_row`), and the reading of a worker's reply into row fields;
- ``execute``: :func:`run_one`, the public function both the local sweep (``hugebench.sweep.orchestrator``) and a
  cluster machine (``hugebench.cluster.machine``) call for each run;
- ``worker``: the other end, ``python -m hugebench.run.worker``: the fresh process that reads the request,
  runs the workload and writes the reply;
- ``supervisor``: the worker's side of a ``command`` run (the runner of the ``command`` workload and of
  generated programs): starts the user's program with ``argv``, samples it, marks its window, one row.

Nothing here imports the sweep loop, the cluster or the report; this package's ``__init__`` imports nothing,
so that the worker process (which reads only ``request`` and ``rundir`` of it) starts fast.
"""
