"""YAML experiment file -> frozen, validated ``ExperimentSpec``.

Every error names the file, the line and the key, and says what is allowed. Example file::

    name: tlb
    workload: hashlookup
    repetitions: 3
    params: {set_kind: flat}                 # fixed workload parameters
    axes:                                    # the cartesian product of these is the set of cells
      allocator: [glibc, jemalloc-thp]
      thp: [never, always]                   # THP 'enabled'; any kernel knob name works (thp.defrag, ...)
      keys: [10M, 30M]
    exclude: [{allocator: glibc, thp: always}]
    baseline: {allocator: glibc, thp: never}
    allocators: {tcmalloc-google: {path: /opt/tcmalloc/libtcmalloc.so}}
    system: {thp.defrag: madvise}            # kernel knobs fixed for the whole sweep
    expected: {source: a paper, claims: [{cell: {allocator: glibc, thp: never, keys: 10M}, value: 105}]}

``repetitions: {auto: {min: 6, max: 12, target: 0.05}}`` makes the number of blocks adaptive
(``hugebench.stats.adaptive``); ``expected:`` holds published numbers the report gives a verdict on.

The package: ``model`` (the frozen ``ExperimentSpec`` and what a cell is), ``parts`` (its typed sections of a
fixed shape), ``validation`` (the file's keys, each error with file:line:key; ``check_axes`` and ``check_parts``
check the user's names and the typed parts, ``keys`` lists every key), ``cells`` (partial cells, and what only the whole product shows) and
``claims`` (``expected:``, published numbers) and ``cluster`` (the ``cluster:`` block and the ``--cluster``
flag, which ``hugebench.cluster`` runs).
"""

from __future__ import annotations

from hugebench.experiment.cells import void_problem
from hugebench.experiment.claims import _CLAIM_KEYS, _EXPECTED_KEYS, workload_metrics
from hugebench.experiment.keys import _AUTO_KEYS, _TOP_KEYS, AUTO_MIN_DEFAULT
from hugebench.experiment.model import (
    DEFAULT_ALLOCATOR,
    KNOB_PREFIXES,
    MAX_REPETITIONS,
    MAX_RUNS,
    MAX_SEED,
    MAX_TIMEOUT,
    MAX_WARMUP,
    MEMORY_AXIS,
    PERF_MODES,
    REGIME_AXIS,
    TEXT_AXIS,
    THP_MODES,
    TOOL_AXES,
    ExperimentSpec,
    canonical_knob,
    cells,
    is_knob,
    matches,
)
from hugebench.experiment.validation import load_spec, parse_spec
from hugebench.yamlsafe import MAX_DEPTH, MAX_FILE_BYTES, MAX_NODES

# Public: every key a file may have, one line each; what validation checks, and the manual's reference
# (hugebench.manual.docgen).
TOP_KEYS, AUTO_KEYS, EXPECTED_KEYS, CLAIM_KEYS = _TOP_KEYS, _AUTO_KEYS, _EXPECTED_KEYS, _CLAIM_KEYS

__all__ = [
    "AUTO_KEYS",
    "AUTO_MIN_DEFAULT",
    "CLAIM_KEYS",
    "EXPECTED_KEYS",
    "TOP_KEYS",
    "DEFAULT_ALLOCATOR",
    "KNOB_PREFIXES",
    "MAX_DEPTH",
    "MAX_FILE_BYTES",
    "MAX_NODES",
    "MAX_REPETITIONS",
    "MAX_RUNS",
    "MAX_SEED",
    "MAX_TIMEOUT",
    "MAX_WARMUP",
    "MEMORY_AXIS",
    "REGIME_AXIS",
    "PERF_MODES",
    "TEXT_AXIS",
    "TOOL_AXES",
    "THP_MODES",
    "ExperimentSpec",
    "canonical_knob",
    "cells",
    "is_knob",
    "load_spec",
    "matches",
    "parse_spec",
    "void_problem",
    "workload_metrics",
]
