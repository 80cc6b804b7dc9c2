"""The workload registry (hugebench/workloads/) is the one source of a workload's parameters: the
pybind11 binding and the _core.pyi stub must agree with it on names, order, defaults and types."""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from hugebench import _core, workloads

STUB = Path(_core.__file__).with_name("_core.pyi")
EXTRAS = ["counters", "hook"]  # every workload function takes these after its own parameters
NO_DEFAULT = object()


@dataclass(frozen=True)
class Arg:
    name: str
    annotation: str  # source text
    default: Any  # a Python value, Ellipsis ("has one, see the registry") or NO_DEFAULT
    keyword_only: bool


def _args(fn: ast.FunctionDef, source: str) -> list[Arg]:
    def value(node):
        return NO_DEFAULT if node is None else ast.literal_eval(node)

    a = fn.args
    positional = a.posonlyargs + a.args
    pos_defaults = [None] * (len(positional) - len(a.defaults)) + list(a.defaults)
    out = [
        Arg(p.arg, ast.get_source_segment(source, p.annotation) or "", value(d), False)
        for p, d in zip(positional, pos_defaults)
    ]
    out += [
        Arg(p.arg, ast.get_source_segment(source, p.annotation) or "", value(d), True)
        for p, d in zip(a.kwonlyargs, a.kw_defaults)
    ]
    return out


def binding_args(function) -> list[Arg]:
    """The arguments of a pybind11 function, from the signature line pybind11 writes atop __doc__."""
    signature = function.__doc__.splitlines()[0]
    source = f"def {signature}: ..."
    return _args(ast.parse(source).body[0], source)


def _stub_module() -> tuple[ast.Module, str]:
    source = STUB.read_text()
    return ast.parse(source), source


def stub_args(name: str) -> list[Arg]:
    module, source = _stub_module()
    fn = next(n for n in module.body if isinstance(n, ast.FunctionDef) and n.name == name)
    return _args(fn, source)


def stub_literal_choices(annotation: str) -> tuple | None:
    """The values of a Literal[...] annotation, following a module-level alias; None if not a Literal."""
    module, _ = _stub_module()
    aliases = {
        t.id: n.value
        for n in module.body
        if isinstance(n, ast.Assign)
        for t in n.targets
        if isinstance(t, ast.Name)
    }
    node = ast.parse(annotation, mode="eval").body
    if isinstance(node, ast.Name) and node.id in aliases:
        node = aliases[node.id]
    if not (isinstance(node, ast.Subscript) and getattr(node.value, "id", None) == "Literal"):
        return None
    items = node.slice.elts if isinstance(node.slice, ast.Tuple) else [node.slice]
    return tuple(ast.literal_eval(item) for item in items)


# pybind11 spells a C++ parameter's type by what it accepts (2.x: "int", 3.x: "typing.SupportsInt | ...").
BINDING_TYPES = {
    int: ("int", "SupportsInt"),
    float: ("float", "SupportsFloat"),
    str: ("str",),
    bool: ("bool",),
}


def agreement_problems(entry: workloads.Workload, binding: list[Arg], stub: list[Arg]) -> list[str]:
    """Every way in which the binding or the stub disagrees with the registry entry (empty: they agree)."""
    problems = []
    names = list(entry.params) + EXTRAS
    for where, args in (("binding", binding), ("stub", stub)):
        if [a.name for a in args] != names:
            problems.append(f"{where} parameters {[a.name for a in args]} != registry {names}")
        problems += [f"{where}: {a.name} is not keyword-only" for a in args if not a.keyword_only]
    for arg in binding:
        param = entry.params.get(arg.name)
        if param is None:
            continue
        if (
            arg.default is NO_DEFAULT
            or arg.default != param.default
            or type(arg.default) is not type(param.default)
        ):
            problems.append(
                f"binding default of {arg.name} is {arg.default!r}, registry says {param.default!r}"
            )
        accepted = {part.strip().split(".")[-1] for part in arg.annotation.split("|")}
        if not accepted & set(BINDING_TYPES[param.type]):
            problems.append(
                f"binding type of {arg.name} is {arg.annotation}, registry says {param.type.__name__}"
            )
    for arg in stub:
        param = entry.params.get(arg.name)
        if param is None:
            continue
        if arg.default is NO_DEFAULT or arg.default not in (Ellipsis, param.default):
            problems.append(
                f"stub default of {arg.name} is {arg.default!r}: write '...' (registry: {param.default!r})"
            )
        choices = stub_literal_choices(arg.annotation)
        if param.choices and choices != param.choices:
            problems.append(
                f"stub choices of {arg.name} are {choices}, registry says {param.choices}"
            )
        if not param.choices and arg.annotation != param.type.__name__:
            problems.append(
                f"stub type of {arg.name} is {arg.annotation}, registry says {param.type.__name__}"
            )
    return problems


@pytest.mark.parametrize("name", sorted(n for n, w in workloads.WORKLOADS.items() if w.function))
def test_binding_and_stub_agree_with_the_registry(name):
    entry = workloads.WORKLOADS[name]
    function = getattr(_core, entry.function)
    assert agreement_problems(entry, binding_args(function), stub_args(entry.function)) == []


@pytest.mark.parametrize("name", sorted(n for n, w in workloads.WORKLOADS.items() if w.function))
def test_extras_are_optional_in_binding_and_stub(name):
    function = workloads.WORKLOADS[name].function
    for args in (binding_args(getattr(_core, function)), stub_args(function)):
        extras = {a.name: a.default for a in args if a.name in EXTRAS}
        assert extras == {"counters": [], "hook": None}


def test_every_core_function_taking_a_hook_is_a_registered_workload():
    functions = {
        name
        for name in dir(_core)
        if callable(getattr(_core, name)) and getattr(_core, name).__doc__
    }
    with_hook = {
        name for name in functions if "hook" in [a.name for a in binding_args(getattr(_core, name))]
    }
    assert with_hook == {w.function for w in workloads.WORKLOADS.values() if w.function}


def test_a_drifted_signature_is_reported():
    """The checker itself: each kind of drift the issue names is caught."""
    entry = workloads.WORKLOADS["hashlookup"]
    binding = binding_args(_core.hashlookup)
    stub = stub_args("hashlookup")
    assert agreement_problems(entry, binding, stub) == []

    def replaced(args, name, **changes):
        return [Arg(**{**a.__dict__, **changes}) if a.name == name else a for a in args]

    required_keys = replaced(binding, "keys", default=NO_DEFAULT)
    assert any("default of keys" in p for p in agreement_problems(entry, required_keys, stub))
    wrong_default = replaced(stub, "threads", default=2)
    assert any(
        "stub default of threads" in p for p in agreement_problems(entry, binding, wrong_default)
    )
    swapped = [binding[1], binding[0], *binding[2:]]
    assert any("binding parameters" in p for p in agreement_problems(entry, swapped, stub))
    missing = stub[1:]
    assert any("stub parameters" in p for p in agreement_problems(entry, binding, missing))
    narrowed = replaced(stub, "order", annotation='Literal["uniform"]')
    assert any("stub choices of order" in p for p in agreement_problems(entry, binding, narrowed))
    retyped = replaced(binding, "zipf_s", annotation="str")
    assert any("binding type of zipf_s" in p for p in agreement_problems(entry, retyped, stub))


def test_core_defaults_come_from_the_registry():
    """One source of truth: _core's defaults are the registry's values (the binding reads them at import)."""
    for entry in (
        w for w in workloads.WORKLOADS.values() if w.function
    ):  # `command` runs no _core code
        binding = {a.name: a.default for a in binding_args(getattr(_core, entry.function))}
        assert {n: binding[n] for n in entry.params} == {
            n: p.default for n, p in entry.params.items()
        }
