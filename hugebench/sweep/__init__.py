"""The sweep: a spec planned into runs (plan, estimate), checked against the machine (machine_checks),
prepared once (preflight) and run in one loop (orchestrator, progress)."""
