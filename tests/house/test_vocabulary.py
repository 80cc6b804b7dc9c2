"""One registry per vocabulary, read everywhere (issue 54): a grep of the package's code (its string literals,
docstrings aside) finds no knob name or kernel knob path outside the knob catalogue, no branch on an output
format's name outside the exporters, and no module importing another package's private names."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from paths import ROOT

from hugebench import knob_catalogue as catalogue
from hugebench.report import exporters

PACKAGE = ROOT / "hugebench"
CATALOGUE = PACKAGE / "knob_catalogue.py"
EXPORTERS = PACKAGE / "report" / "exporters"

# Every declared knob's name (aliases are plain words: "thp" is also a text-pages mode), the mTHP family's
# prefix, and the directories the knobs live in.
KNOB_NAMES = [d.name for d in catalogue.DECLARED] + [catalogue.MTHP_PREFIX, "thp.mthp_shmem."]
KNOB_NAME = re.compile(
    r"(?<![\w.])("
    + "|".join(re.escape(n) for n in sorted(KNOB_NAMES, key=len, reverse=True))
    + r")(?![\w])"
)
KNOB_PATH = re.compile(
    "|".join(
        re.escape(p)
        for p in (
            catalogue.THP_DIR,
            "transparent_hugepage/",
            catalogue.HUGETLB_DIR,
            catalogue.REPORTING_DIR,
            catalogue.DEFAULT_POOL,
            *(d.path for d in catalogue.DECLARED if d.root == "proc"),
        )
    )
)


def _sources(exclude: Path | None = None) -> list[Path]:
    return [
        p
        for p in sorted(PACKAGE.rglob("*.py"))
        if exclude is None or not (p == exclude or exclude in p.parents)
    ]


def _docstrings(tree: ast.AST) -> set[int]:
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0].value))
    return out


def _strings(path: Path):
    """(line, text) of every string literal of a module but its docstrings (f-strings' literal parts too)."""
    tree = ast.parse(path.read_text())
    skip = _docstrings(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in skip:
            yield node.lineno, node.value


def test_no_knob_name_or_knob_path_outside_the_catalogue():
    found = [
        f"{path.relative_to(ROOT)}:{line}: {text!r}"
        for path in _sources()
        if path != CATALOGUE
        for line, text in _strings(path)
        if KNOB_NAME.search(text) or KNOB_PATH.search(text)
    ]
    assert not found, (
        "name the knob (or its directory) by hugebench.knob_catalogue's constant:\n"
        + "\n".join(found)
    )


def _names_a_format(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in exporters.FORMATS
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any(_names_a_format(e) for e in node.elts)
    return False


def test_no_branch_on_a_format_name_outside_the_exporters():
    """``fmt == "csv"``, ``fmt in ("rich", "markdown")``, ``if kind == "json"`` with an export format: a
    comparison with a format's name decides per format, which is the exporters' job (a module there)."""
    found = []
    for path in _sources(exclude=EXPORTERS):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Compare) and any(
                _names_a_format(side) for side in [node.left, *node.comparators]
            ):
                names = {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}
                if names & {"fmt", "format", "fmt_", "output_format", "export_format"}:
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {ast.unparse(node)}")
            if isinstance(node, ast.Attribute) and node.attr in (
                "to_csv",
                "to_json",
                "to_markdown",
            ):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: .{node.attr}")
    assert not found, (
        "a format decision outside hugebench/report/exporters (add it to the format's module):\n"
        + "\n".join(found)
    )


def test_no_module_imports_another_package_s_private_names():
    """``from hugebench.x.y import _name`` is allowed inside package ``hugebench.x`` only."""
    found = []
    for path in _sources():
        package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:2])
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.ImportFrom) or not (node.module or "").startswith(
                "hugebench."
            ):
                continue
            if ".".join(node.module.split(".")[:2]) == package:
                continue
            private = [a.name for a in node.names if a.name.startswith("_") and a.name != "_core"]
            if private:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.module} {private}")
    assert not found, "make the name public where it lives:\n" + "\n".join(found)


def test_the_catalogue_names_what_it_has():
    """The constants are the declared names, and the docstring cites only what the module defines."""
    for name in (catalogue.THP_ENABLED, catalogue.HUGETLB_2MB, catalogue.REPORTING_ORDER):
        assert catalogue.declaration(name) is not None
    assert catalogue.declaration(catalogue.mthp_name(64)).name == catalogue.mthp_name("64kB")
    for cited in re.findall(r"``(_?[a-z_]+|[A-Z_]+)``", catalogue.__doc__ or ""):
        assert hasattr(catalogue, cited), (
            f"the catalogue's docstring cites {cited!r}, which it lacks"
        )
