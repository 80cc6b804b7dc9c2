"""The manual's reference pages, generated from the definitions the code itself validates with.

What belongs here: turning the spec's key tables (``hugebench.experiment.TOP_KEYS`` ...), the workload registry
(``hugebench.workloads.WORKLOADS``), the allocator registry and the column reference
(``hugebench.manual.column_reference``) into Markdown. Nothing is written by hand, so
the manual cannot drift from what an experiment file may contain.

Used two ways: as an MkDocs hook (``mkdocs.yml``: ``hooks: [hugebench/manual/docgen.py]``), where a page line
``<!-- hugebench:NAME -->`` is replaced by the generated text ``NAME`` (one of :data:`SECTIONS`), and from a
shell: ``python -m hugebench.manual.docgen NAME`` prints it.
"""

from __future__ import annotations

import re
import sys

from hugebench import experiment as spec
from hugebench import knob_catalogue as catalogue
from hugebench import workloads
from hugebench.machine import allocators
from hugebench.machine.textpages import MODES as TEXT_MODES

MARKER = re.compile(r"^<!-- hugebench:([a-z-]+) -->$", re.MULTILINE)


def _cell(text: object) -> str:
    """Text safe inside a Markdown table cell."""
    return str(text).replace("|", "\\|").replace("\n", " ")


def _human(value: int) -> str:
    """An integer as written in a file: 67108864 -> 64Mi, 5000000 -> 5M (what parse_count reads back)."""
    for suffix, scale in (
        ("Gi", 2**30),
        ("Mi", 2**20),
        ("Ki", 2**10),
        ("G", 10**9),
        ("M", 10**6),
        ("k", 10**3),
    ):
        if value >= scale and value % scale == 0:
            return f"{value // scale}{suffix}"
    return str(value)


def _default(param: workloads.Param) -> str:
    value = param.default
    if value is None:
        return "—"
    if isinstance(value, bool) or not isinstance(value, int):
        return f"`{value}`"
    short = _human(value)
    return f"`{value}`" if short == str(value) else f"`{short}` ({value})"


def _keys_table(keys: dict, prefix: str = "") -> str:
    rows = ["| key | meaning |", "|---|---|"]
    rows += [f"| `{prefix}{key}` | {_cell(meaning)} |" for key, meaning in keys.items()]
    return "\n".join(rows)


def spec_keys() -> str:
    """Every key of an experiment file and of its nested blocks, as the spec validates them."""
    from hugebench.experiment.cluster import KEYS as CLUSTER_KEYS

    parts = [
        "**Top level** (`name` and `workload` are required; any other key is refused with file, line "
        "and key):",
        _keys_table(spec.TOP_KEYS),
        "**`repetitions: {auto: {...}}`**:",
        _keys_table(spec.AUTO_KEYS, "auto."),
        "**`expected:`**:",
        _keys_table(spec.EXPECTED_KEYS, "expected."),
        "**each of `expected.claims`**:",
        _keys_table(spec.CLAIM_KEYS),
        "**`cluster:`**:",
        _keys_table(CLUSTER_KEYS, "cluster."),
        f"**Axes** besides the workload's parameters: `allocator`, `{spec.TEXT_AXIS}` "
        f"({', '.join(f'`{m}`' for m in TEXT_MODES)}), `{spec.MEMORY_AXIS}` (`fresh`, `fragmented`, "
        f"`fragmented:P%`; see the aged-machine page), and every kernel knob (names starting with "
        f"{' or '.join(f'`{p}`' for p in spec.KNOB_PREFIXES)}; aliases: {catalogue.alias_note()}; `{catalogue.THP_ENABLED}` is one of "
        f"{', '.join(f'`{m}`' for m in spec.THP_MODES)}).",
    ]
    return "\n\n".join(parts)


def _params_table(workload: workloads.Workload) -> str:
    rows = ["| parameter | type | default | allowed | meaning |", "|---|---|---|---|---|"]
    for name, param in workload.params.items():
        allowed = ", ".join(f"`{c}`" for c in param.choices)
        if param.minimum is not None:
            allowed = (
                allowed
                or f"≥ {_human(param.minimum) if isinstance(param.minimum, int) else param.minimum}"
            )
        rows.append(
            f"| `{name}` | {param.type.__name__} | {_default(param)} | {allowed} | {_cell(param.help)} |"
        )
    return "\n".join(rows)


def _workload(workload: workloads.Workload) -> str:
    direction = "higher" if workload.better == "higher" else "lower"
    lines = [
        f"### `{workload.name}`",
        "",
        workload.doc,
        "",
        f"Timed phase: `{workload.timed_phase}`. Primary metric: `{workload.primary_metric}` "
        f"({direction} is better).",
    ]
    if workload.metrics:
        lines.append(
            "Report columns: "
            + ", ".join(f"`{m[0]}` ({_cell(m[1])})" for m in workload.metrics)
            + "."
        )
    if workload.open_params:
        lines.append(
            "Parameters of your own are allowed too: each is used as a `{field}` in `argv`, `env`, ... "
            "and can be an axis."
        )
    return "\n".join(lines) + "\n\n" + _params_table(workload)


def workload_reference() -> str:
    """Every workload with every parameter: type, default, allowed values and meaning."""
    return "\n\n".join(_workload(w) for w in workloads.WORKLOADS.values())


def allocator_reference() -> str:
    """The built-in allocators: library, environment, apt package."""
    rows = ["| name | library | environment | apt package | what it is |", "|---|---|---|---|---|"]
    for name, a in allocators.registry({}).items():
        env = " ".join(f"`{k}={v}`" for k, v in a.env.items())
        lib = (
            f"`{a.library}`"
            if a.library
            else ("none (harness only)" if a.mode == "void" else "glibc's malloc")
        )
        rows.append(f"| `{name}` | {lib} | {env} | {a.package or ''} | {_cell(a.description)} |")
    return "\n".join(rows)


def _text(text: str) -> str:
    """Plain text that may hold <placeholders>: not read as HTML tags."""
    return text.replace("<", "&lt;").replace(">", "&gt;")


def column_reference() -> str:
    """Every column of a results row (``load()``): meaning and unit, from hugebench.manual.column_reference."""
    from hugebench.manual.column_reference import reference

    parts = []
    for title, columns in reference().items():
        rows = ["| column | unit | meaning |", "|---|---|---|"]
        rows += [
            f"| `{_cell(c.pattern)}` | {_cell(c.unit)} | {_cell(_text(c.meaning))} |"
            for c in columns
        ]
        parts.append(f"### {title}\n\n" + "\n".join(rows))
    return "\n\n".join(parts)


SECTIONS = {
    "spec-keys": spec_keys,
    "workloads": workload_reference,
    "allocators": allocator_reference,
    "columns": column_reference,
}


def expand(markdown: str) -> str:
    """Replace every ``<!-- hugebench:NAME -->`` line with its generated section; an unknown NAME is an error."""

    def one(match: re.Match) -> str:
        name = match.group(1)
        if name not in SECTIONS:
            raise ValueError(f"unknown generated section {name!r}; known: {', '.join(SECTIONS)}")
        return SECTIONS[name]()

    return MARKER.sub(one, markdown)


def on_page_markdown(markdown: str, **_kwargs) -> str:
    """MkDocs hook: expand the generated sections of every page."""
    return expand(markdown)


if __name__ == "__main__":
    if len(sys.argv) != 2 or sys.argv[1] not in SECTIONS:
        sys.exit(f"usage: python -m hugebench.manual.docgen {{{'|'.join(SECTIONS)}}}")
    print(SECTIONS[sys.argv[1]]())
