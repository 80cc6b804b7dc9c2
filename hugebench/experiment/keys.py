"""Every key an experiment file may have (the manual's reference, hugebench.manual.docgen), and what the checks of
each part (``validation``, ``check_axes``, ``check_parts``) share."""

from __future__ import annotations

from hugebench import workloads
from hugebench.knob_catalogue import HUGETLB_2MB, THP_DEFRAG
from hugebench.yamlsafe import Where

_TOP_KEYS = {
    "name": "experiment name (used in results and reports)",
    "workload": f"one of {', '.join(workloads.WORKLOADS)}",
    "description": "free text",
    "repetitions": "runs per cell (int >= 1)",
    "warmup": "uncounted warm-up runs per cell before the first block (int >= 0)",
    "seed": "seed of the interleaved order (int)",
    "timeout": "seconds a worker may run before it is killed (number > 0)",
    "memory_limit": "the most memory a run may use (256M, 1.5G): over it, the run is OOM-killed (status oom)",
    "params": "fixed workload parameters",
    "axes": "name -> list of values; the cartesian product is the set of cells",
    "exclude": "list of partial cells to leave out",
    "baseline": "partial cell that ratios are computed against",
    "allocators": "user-defined allocators: name -> {path: /abs/lib.so, env: {...}} or {base: NAME, env: {...}}",
    "system": f"kernel knobs fixed for the whole sweep ({THP_DEFRAG}: madvise, {HUGETLB_2MB}: 1024, ...)",
    "perf": "whole-process perf stat: auto | off | list of event names",
    "counters": "in-process counters around the timed phase: auto | off | list of labels",
    "order": "interleaved (default: blocks of one run per cell, shuffled) | grouped (fewest knob flips)",
    "condition_memory": "before each run: {compact: bool, drop_caches: bool} or false",
    "expected": "published numbers this experiment reproduces: {source: TEXT, metric: COLUMN, claims: [...]}",
    "cluster": "run on several machines: {scheduler: tls://HOST:8786 or ssh: [h1, h2], certs: DIR, machines: each|spread}",
}
_AUTO_KEYS = {
    "min": "blocks always run (int >= 3; default 6, the fewest for a 95% verdict)",
    "max": "most blocks, i.e. most runs of any cell (int >= min)",
    "target": "stop a cell once its CI is narrower than this share of its median (0 < x < 1, e.g. 0.03)",
    "metric": "column whose median's CI is judged (default: the workload's primary metric)",
}


AUTO_MIN_DEFAULT = (
    6  # stats.min_runs_for(0.95): fewer values cannot give a 95% interval of a median
)


_BAD = object()  # the value of a param or an axis whose check failed (its error is collected)
_BOOL_HINT = " (YAML reads unquoted yes/no/on/off/true/false as a boolean: quote the word)"


def _mapping(data: dict, key: str, where: Where) -> dict:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise where.error(
            (key,), f"must be a mapping ({_TOP_KEYS[key]}), got {type(value).__name__}"
        )
    return value
