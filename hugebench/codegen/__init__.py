"""Generated programs: source written by Python from a workload's parameters, built once per parameter set
into a cache directory (build time reported, never timed), then run as a ``command`` workload.

What belongs here: generators, their build cache, and the runners that hand the built program to
the run protocol's supervisor (``hugebench.run.supervisor``). What does not: timing or measuring anything (the
supervisor does that).
"""
