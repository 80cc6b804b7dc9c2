"""The package's imports read as a graph (an AST walk of hugebench/, lazy imports in functions included):
no import circle, and no module imports one of a higher layer (docs/architecture.md: one direction, top
to bottom). A new module needs a line in LAYERS; a failure names the import that runs the wrong way."""

from __future__ import annotations

import ast
from pathlib import Path

from paths import ROOT

PACKAGE = ROOT / "hugebench"

# Layers, lowest first; a module belongs to the longest dotted prefix listed (``cli.*`` modules: ``cli``). A
# module may import its own layer and any lower one. The root package (its ``__init__`` re-exports
# store.load) sits with the store.
LAYERS = (
    (
        "base",
        ("errors", "_util", "safefs", "knob_catalogue", "columns", "yamlsafe", "window", "_core"),
    ),
    ("kernel", ("kernel",)),
    ("system", ("system",)),
    ("measure", ("measure",)),
    ("store", ("", "store", "stats")),
    ("machine", ("machine",)),
    ("workloads", ("workloads",)),
    ("experiment", ("experiment",)),  # experiment.cluster: the parser of a file's cluster: block
    # a workload's runner (workloads.<name>.runner) is called by the worker like run.supervisor
    ("run", ("run", "workloads.codetlb.runner")),
    ("sweep", ("sweep", "cluster", "advice.pack")),  # advice.pack: a pack's spec
    ("report", ("report",)),
    # a workload's own command (workloads.<name>.sweep: `hugebench probe`) sits with the commands
    ("commands", ("trial", "advice", "doctor", "manual", "cli", "workloads.tlbprobe.sweep")),
)
# The layers the house rules name: these never import those.
LOWER = {"kernel", "system", "measure", "store"}
HIGHER = {"experiment", "sweep", "run", "report", "commands"}


def _modules() -> dict[str, Path | None]:
    found: dict[str, Path | None] = {
        "hugebench._core": None
    }  # the C++ extension: imports nothing of ours
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imports(name: str, path: Path | None, modules: dict) -> set[str]:
    if path is None:
        return set()
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names if a.name.split(".")[0] == "hugebench"}
        elif isinstance(node, ast.ImportFrom):
            base = (
                package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            )
            target = ".".join(base + ([node.module] if node.module else []))
            if target.split(".")[0] == "hugebench":
                out |= {
                    f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target
                    for a in node.names
                }
    return {m for m in out if m in modules and m != name}


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def layer_of(module: str) -> int:
    parts = module.split(".")[1:]
    if parts and parts[0].startswith("cli_"):
        parts[0] = "cli"
    by_prefix = {prefix: index for index, (_, prefixes) in enumerate(LAYERS) for prefix in prefixes}
    for end in range(len(parts), -1, -1):
        if ".".join(parts[:end]) in by_prefix:
            return by_prefix[".".join(parts[:end])]
    raise AssertionError(
        f"{module}: no layer in tests/house/test_layers.py LAYERS; add it where it belongs"
    )


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, stack, on, out, counter = {}, {}, [], set(), [], [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def test_the_graph_reader_sees_the_imports_it_should():
    graph = _graph()
    assert "hugebench.run.rundir" in graph["hugebench.run.worker"]  # from .rundir import ...
    assert "hugebench.stats" in graph["hugebench.stats.adaptive"]  # from .stats import ...
    assert (
        "hugebench.report.figures" in graph["hugebench.workloads.tlbprobe.sweep"]
    )  # a lazy import in a function
    assert (
        "hugebench._core" in graph["hugebench.run.worker"]
        and "hugebench" not in graph["hugebench.run.worker"]
    )
    assert _circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert (
        layer_of("hugebench.cli.try_")
        == layer_of("hugebench.cli")
        > layer_of("hugebench.report.tables")
    )


def test_no_import_circle():
    assert _circles(_graph()) == []


def test_no_module_imports_a_higher_layer():
    graph = _graph()
    upward = sorted(
        f"{a} -> {b} ({LAYERS[layer_of(a)][0]} imports {LAYERS[layer_of(b)][0]})"
        for a, targets in graph.items()
        for b in targets
        if layer_of(b) > layer_of(a)
    )
    assert upward == []
    names = [name for name, _ in LAYERS]
    assert all(names.index(low) < names.index(high) for low in LOWER for high in HIGHER)
