"""Validation of the experiment's typed parts and allocator table: ``condition_memory:``, ``repetitions: {auto:
...}`` and ``allocators:``, each error with file:line:key. The parts themselves are in ``parts``."""

from __future__ import annotations

from hugebench.errors import SpecError, ToolMissingError
from hugebench.experiment.claims import _metric, known_keys
from hugebench.experiment.collect import Collected
from hugebench.experiment.keys import _AUTO_KEYS, AUTO_MIN_DEFAULT, _mapping
from hugebench.experiment.model import MAX_REPETITIONS
from hugebench.experiment.parts import Adaptive, MemoryConditioning
from hugebench.machine import allocators as alloc_mod
from hugebench.machine.elf import why_not_allocator


def _conditioning(data, where) -> MemoryConditioning | None:
    value = data.get("condition_memory", False)
    if value is False or value is None or value == {}:
        return None
    if value is True:
        return MemoryConditioning(compact=True, drop_caches=True)
    if not isinstance(value, dict) or set(value) - {"compact", "drop_caches"}:
        raise where.error(
            ("condition_memory",), "must be false, true or {compact: bool, drop_caches: bool}"
        )
    for key, flag in value.items():
        if not isinstance(flag, bool):
            raise where.error(("condition_memory", key), f"must be true or false, got {flag!r}")
    return MemoryConditioning(**value)


def _adaptive(data, workload, params, where) -> Adaptive | None:
    """``repetitions: {auto: {min, max, target, metric}}`` checked; None for a fixed number of repetitions."""
    value = data.get("repetitions")
    if value == "auto":
        raise where.error(
            ("repetitions",),
            "auto needs its bounds: {auto: {max: 12, target: 0.03}} "
            f"(min defaults to {AUTO_MIN_DEFAULT})",
        )
    if not isinstance(value, dict):
        return None
    if list(value) != ["auto"] or not isinstance(value["auto"], dict):
        raise where.error(
            ("repetitions",), "must be an integer, or {auto: {min: N, max: N, target: F}}"
        )
    auto, path = value["auto"], ("repetitions", "auto")
    known_keys(auto, _AUTO_KEYS, path, where)
    for required in ("max", "target"):
        if required not in auto:
            raise where.error(path, f"missing '{required}' ({_AUTO_KEYS[required]})")
    low = auto.get("min", AUTO_MIN_DEFAULT)
    if isinstance(low, bool) or not isinstance(low, int) or not 3 <= low <= MAX_REPETITIONS:
        raise where.error(
            path + ("min",),
            f"must be an integer from 3 to {MAX_REPETITIONS} (with fewer runs the "
            f"CI of a median is a short range that misses it often), got {low!r}",
        )
    high = auto["max"]
    if isinstance(high, bool) or not isinstance(high, int) or not low <= high <= MAX_REPETITIONS:
        raise where.error(
            path + ("max",),
            f"must be an integer from min ({low}) to {MAX_REPETITIONS}, got {high!r}",
        )
    target = auto["target"]
    if isinstance(target, bool) or not isinstance(target, (int, float)) or not 0 < target < 1:
        raise where.error(
            path + ("target",),
            f"must be a share of the median between 0 and 1 (0.03 = 3%), got {target!r}",
        )
    metric = _metric(auto.get("metric"), path + ("metric",), workload, params, where)
    return Adaptive(min=low, max=high, target=float(target), metric=metric)


def _user_allocators(data, where, found: Collected) -> tuple[dict, dict]:
    """The ``allocators:`` section, each entry checked: the valid entries, and the names of the others
    (an axis naming one of those is not refused again for it)."""
    user = found.take(_mapping, data, "allocators", where, default={})
    good: dict = {}
    bad: dict = {}
    for name, entry in user.items():
        try:
            alloc_mod.user_allocator(name, entry)
            good[name] = entry
        except SpecError as exc:
            found.add(where.error(("allocators", name), str(exc)))
            bad[name] = None
    return good, bad


def _check_user_paths(user: dict, table: dict, axes: dict, where) -> None:
    """A library path given under ``allocators:`` must exist when the allocator axis uses it, and be a
    shared object that defines malloc and free (:func:`..command.elf.why_not_allocator`).

    Only user paths are checked here: a built-in's library (an apt package) may be missing on the machine
    that plans; the sweep's preflight refuses it with the package to install.
    """
    for name in axes.get("allocator", ()):
        if "path" in user.get(name, {}):
            try:
                path = table[name].resolve()
            except ToolMissingError as exc:
                raise where.error(
                    ("allocators", name, "path"), str(exc), cls=ToolMissingError
                ) from None
            why = why_not_allocator(str(path))
            if why:
                raise where.error(("allocators", name, "path"), f"allocator {name!r}: {why}")
