"""``regime``: the conditions between runs that change a huge-page fault's cost, chosen per run.

On a VM whose balloon reports free pages (``hugebench.kernel.reporting``), a free 2 MiB block idle for a
moment is handed back to the host, and the next huge-page fault on it pays the host's fault and zeroing
(measured here, docs/trusting-numbers.md: a 2 MiB fault burst several times slower after 4 s idle). Which
cost a verdict holds for depends on how the program is deployed:

* ``back-to-back``: a job run again at once (or a service that stays up): the run starts at once, free page
  reporting as found -- what the program meets deployed as it is, with no machine setting changed.
  Deployed, such a run follows its own previous run (:func:`follows_itself`; ``try`` makes that so).
* ``cold`` / ``cold:Ns``: a batch job started after idle time. Reporting as found, and ``N`` seconds
  (default ``COLD_IDLE_S``) of idle before the run, so that the blocks freed before it are reported.
* ``warm``: runs back to back with free page reporting held off for the run (``page_reporting.order`` set
  above the largest buddy order, journaled and restored like every knob). That is a machine setting, not
  only a way of running: a deployment has it only with its own sysfs write (``try`` names it in the
  configuration and gives that write as a deploy line, ``trial.deploy``).

For the whole sweep, ``system: {page_reporting.order: 'off'}`` (quoted: YAML reads a bare off as false)
holds it off instead. Every row records
``system.page_reporting_order``, ``system.page_reporting_active`` and the KiB reported during the run
(``system.reported_kib_delta``, where the kernel counts it), whatever the regime.

What does not belong here: reading the module (``kernel.reporting``), knob I/O (``knobs``/``state``).
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass

from hugebench.kernel import reporting
from hugebench.kernel.host import LOCAL, Host
from hugebench.system.knobs import REPORTING_KNOB

WARM, COLD, BACK_TO_BACK = "warm", "cold", "back-to-back"
COLD_IDLE_S = 4.0  # the idle gap of issue 40's measurement: 1.20 s back to back, 3.32 s after it
MAX_IDLE_S = 3600.0
SPEC_HELP = (
    "back-to-back, warm (back to back, free page reporting held off), cold (= cold:4s) or cold:Ns "
    "(N seconds of idle before each run, up to 3600)"
)
PREFIX = "system."


@dataclass(frozen=True)
class Regime:
    kind: str  # back-to-back | warm | cold
    idle_s: float = 0.0


def parse(value) -> Regime:
    """An axis value -> Regime; ValueError saying what is allowed."""
    text = value.strip() if isinstance(value, str) else None
    if text in (WARM, BACK_TO_BACK):
        return Regime(text)
    if text == COLD:
        return Regime(COLD, COLD_IDLE_S)
    match = re.fullmatch(r"cold:([0-9]+(?:\.[0-9]+)?)s", text or "")
    if match and 0 <= float(match.group(1)) <= MAX_IDLE_S:
        return Regime(COLD, float(match.group(1)))
    raise ValueError(f"regime must be {SPEC_HELP}; got {value!r}")


def canonical(value) -> str:
    """The one spelling of a regime (``cold`` and ``cold:4s`` are the same runs)."""
    regime = parse(value)
    return regime.kind if regime.kind != COLD else f"{COLD}:{regime.idle_s:g}s"


def holds_reporting(value) -> bool:
    """Whether regime ``value`` holds free page reporting off for its runs (a machine setting)."""
    return parse(value).kind == WARM


def follows_itself(value) -> bool:
    """Whether a run in regime ``value`` is a job run again at once (``back-to-back``, ``warm``): deployed,
    it follows its own previous run, whose freed memory (free 2 MiB blocks not yet reported, or reported)
    is what its huge-page faults meet; ``try`` puts an untimed run of the same configuration just before
    each of its timed runs (the heap program of issue 55: jemalloc with THP 1.0-1.8 s after its own run,
    2.2-4.6 s after another configuration's). None (as found) and ``cold`` runs are not."""
    return value is not None and parse(value).kind in (WARM, BACK_TO_BACK)


def knobs_set(value: str) -> dict[str, str]:
    """The kernel knobs regime ``value`` sets for its runs, journaled and set back as found: knob -> the
    value and for how long (what ``hugebench plan`` lists; :func:`enter` does it)."""
    if parse(value).kind != WARM:
        return {}
    return {
        REPORTING_KNOB: "off (above the largest buddy order) through each warm run, where the "
        "machine reports free pages"
    }


def enter(value: str, state) -> dict:
    """Before the run: the regime's knob set on ``state`` (SystemState), the idle gap slept; its columns."""
    regime = parse(value)
    columns: dict = {f"{PREFIX}idle_before_s": regime.idle_s}
    if REPORTING_KNOB in state.knobs:
        wanted = "off" if regime.kind == WARM else state.found(REPORTING_KNOB)
        state.apply({REPORTING_KNOB: wanted})
    if regime.idle_s:
        time.sleep(regime.idle_s)
    return columns


def before_run(host: Host = LOCAL) -> dict:
    """Free page reporting as the run starts (every row has these)."""
    now = reporting.page_reporting(host)
    return {
        f"{PREFIX}page_reporting_order": now["order"],
        f"{PREFIX}page_reporting_active": now["active"],
        "_reported_kib": reporting.reported_kib(host),
    }


def after_run(before: dict, host: Host = LOCAL) -> dict:
    """The columns of ``before`` with the KiB the host was handed during the run (None where not counted)."""
    columns = {k: v for k, v in before.items() if not k.startswith("_")}
    start, end = before.get("_reported_kib"), reporting.reported_kib(host)
    columns[f"{PREFIX}reported_kib_delta"] = (
        end - start if start is not None and end is not None else None
    )
    return columns
