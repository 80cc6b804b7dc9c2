"""Measurement: what a run records besides its own timers.

What belongs here: perf (``perf``: detection, the ``perf stat`` wrapper argv, its CSV), which event answers
which question on this CPU (``events``), the numeric encoding of those events for ``_core``'s in-process
counters (``encoding``), counter columns and per-op derivations (``counters``), and the per-phase cost of a
run (``phases``: rusage, huge-page coverage, the worker's phase hook).
What does not: reading /proc and /sys (``hugebench.kernel`` does that; this package snapshots through it),
changing the kernel (``hugebench.system``), statistics over runs (``hugebench.stats``).
"""
