"""The worker's request: what the sweep asks of one worker process (written to the run directory's
``request.json`` by the sweep, read there by ``python -m hugebench.run.worker``).

Built once per run by ``hugebench.sweep.preflight.SweepSetup.request_for``; nothing here decides anything.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field

from hugebench._util import write_json_atomic


@dataclass(frozen=True)
class WorkerRequest:
    """What the parent asks of one worker: the run, the allocator it must prove it runs under, the
    timed-phase counters to open, and whether to turn THP off for itself by prctl."""

    run: dict  # RunSpec.to_dict()
    allocator: str
    allocator_path: str | None = None  # the library that must be mapped (None: glibc)
    allocator_env: dict = field(default_factory=dict)  # knobs that must be in the environment
    allocator_expect: dict = field(default_factory=dict)  # what probe_knobs() must then report
    allocator_mode: str = "malloc"  # "as-is": nothing preloaded, whatever malloc serves is recorded
    counters: tuple = ()  # CounterSpec dicts
    thp_prctl_disable: bool = False
    # For a workload that runs a program (workload.runner): the worker wraps the program, not itself.
    perf_bin: str | None = None
    perf_events: tuple = ()
    text_pages: str | None = (
        None  # the program's text (hugebench.machine.textpages); a built-in worker gets it from its parent
    )

    def write(self, path) -> None:
        write_json_atomic(path, asdict(self), default=str)

    @classmethod
    def read(cls, path) -> WorkerRequest:
        with open(path) as f:
            return cls(**json.load(f))
