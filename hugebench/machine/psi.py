"""Pressure stall information over a run: at every sample of the program tree, the stall totals of cpu, memory
and io of the run's own cgroup v2 (the program, its server, and the worker that supervises it where there is
one: every process of the run, nothing else), or of the whole machine (``/proc/pressure``) when the run has no cgroup. Each
sampling interval becomes a share of its time in which some task stalled (``series_psi_<kind>_some_pct``),
and the run as a whole ``psi.<kind>_some_pct`` / ``_full_pct``; ``psi.source`` says which of the two was read.

What belongs here: turning totals into shares. What does not: reading the files (``hugebench.kernel.pressure``).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from hugebench.kernel.host import LOCAL, Host
from hugebench.kernel.pressure import KINDS, own_cgroup_v2, read_pressure


@dataclass
class PressureLog:
    """Stall totals at each sample's time; ``cgroup`` None reads the machine's."""

    host: Host = LOCAL
    cgroup: Path | None = (
        None  # the run's cgroup v2 directory when known, else this process's is read
    )
    readings: list[tuple[float, dict]] = field(default_factory=list)
    _located: bool = False

    def tick(self, now: float) -> None:
        if not self._located:
            self._located = True
            # a supervisor in the sweep's process (run.inprocess) is given the run's cgroup; a worker is in it
            self.cgroup = self.cgroup or own_cgroup_v2(self.host)
            if self.cgroup is not None and read_pressure("memory", self.cgroup) is None:
                self.cgroup = None  # a cgroup without PSI files: the machine's, then
        totals = {
            kind: found
            for kind in KINDS
            if (found := read_pressure(kind, self.cgroup, self.host)) is not None
        }
        if totals:
            self.readings.append((now, totals))

    def source(self) -> str:
        return (
            f"cgroup {self.cgroup}" if self.cgroup else f"{self.host.proc}/pressure (machine-wide)"
        )

    def columns(self, step: int = 1) -> dict:
        """The run's stall shares (%), and per sampling interval (thinned by ``step`` like the other series:
        each kept point the share over the span since the previous kept one)."""
        if len(self.readings) < 2:
            return {"psi.reason": "fewer than two pressure readings (no PSI, or a run too short)"}
        out: dict = {"psi.source": self.source()}
        (t0, first), (t1, last) = self.readings[0], self.readings[-1]
        for kind in KINDS:
            for level in ("some", "full"):
                share = _share(first, last, kind, level, t1 - t0)
                if share is not None:
                    out[f"psi.{kind}_{level}_pct"] = share
        kept = self.readings[::step]
        for kind in KINDS:
            series = [None] + [
                _share(a, b, kind, "some", tb - ta)
                for (ta, a), (tb, b) in zip(kept, kept[1:], strict=False)
            ]
            if any(v is not None for v in series):
                out[f"series_psi_{kind}_some_pct"] = series
        return out


def _share(a: dict, b: dict, kind: str, level: str, seconds: float) -> float | None:
    if seconds <= 0 or level not in a.get(kind, {}) or level not in b.get(kind, {}):
        return None
    stalled_us = b[kind][level] - a[kind][level]
    return round(min(100.0, 100.0 * stalled_us / (seconds * 1e6)), 3)
