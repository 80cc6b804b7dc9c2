"""Reading an experiment file safely: bounded size, depth and alias expansion, and the line of every key.

A hostile or mistaken file (a billion-laughs alias bomb, 100 MB of YAML, nesting that would exhaust Python's
stack, non-UTF-8 bytes, non-string keys) is refused in bounded time and memory with a one-line error naming
the file and line. ``hugebench.experiment`` validates what this module reads.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from hugebench._util import open_regular
from hugebench.errors import SpecError

# Far above any real experiment, low enough that a hostile file is refused before anything is built.
MAX_FILE_BYTES = 1 << 20
MAX_NODES = 100_000  # values in the document with aliases expanded
MAX_DEPTH = 64  # nesting levels
MAX_MESSAGE = 800  # characters of an error message (a value echoed back is cut; a list of reserved names fits)


def read_text(path: str | Path) -> str:
    """The file's text: at most MAX_FILE_BYTES, UTF-8, or a SpecError naming the file (and line)."""
    path = Path(path)
    try:
        with open_regular(
            path, "experiment file"
        ) as handle:  # a FIFO or /dev/zero is refused, not read
            raw = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise SpecError(f"cannot read experiment file {path}: {exc.strerror}") from None
    except ValueError as exc:
        raise SpecError(f"cannot read experiment file {path}: {exc}") from None
    if len(raw) > MAX_FILE_BYTES:
        raise SpecError(
            f"{path}: larger than {MAX_FILE_BYTES // 1024} KiB, the limit for an experiment file "
            "(is it the right file?)"
        )
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SpecError(
            f"{path}:{line}: not UTF-8 text (byte {raw[exc.start]:#04x} at offset {exc.start}); "
            "save the file as UTF-8"
        ) from None


class _LineLoader(yaml.SafeLoader):
    """SafeLoader that refuses nesting deeper than MAX_DEPTH while composing (before Python's stack would)."""

    _depth = 0

    def compose_node(self, parent, index):
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"nested deeper than {MAX_DEPTH} levels",
                    self.peek_event().start_mark,
                )
            return super().compose_node(parent, index)
        finally:
            self._depth -= 1


def _scalar_constructor(construct):
    """Wrap a scalar constructor so a value it cannot read (!!int x, a 5000-digit int, 2020-13-45) is a
    YAML error with a line instead of a ValueError."""

    def checked(loader, node):
        try:
            return construct(loader, node)
        except (ValueError, KeyError, IndexError, OverflowError, AttributeError, TypeError) as exc:
            kind = node.tag.rsplit(":", 1)[-1]
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"cannot read {node.value[:40]!r} as {kind}: {str(exc)[:100]}",
                node.start_mark,
            ) from None

    return checked


for _tag in ("null", "bool", "int", "float", "timestamp", "binary", "str"):
    _tag = f"tag:yaml.org,2002:{_tag}"
    _LineLoader.add_constructor(_tag, _scalar_constructor(yaml.SafeLoader.yaml_constructors[_tag]))


def _where_text(source: str, line: int | None, path: tuple) -> str:
    key = ".".join(_printable(str(p)) for p in path) or "(top level)"
    if len(key) > 80:
        key = key[:77] + "..."
    return f"{source}:{line}: key '{key}'" if line else f"{source}: key '{key}'"


def _printable(text: str) -> str:
    """The text with control characters escaped, so that an error stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _check_shape(
    node, source: str, path: tuple = (), depth: int = 1, memo: dict | None = None
) -> tuple:
    """(values, height) of ``node`` with aliases expanded; SpecError when the document is too big, too deep,
    recursive, or has a mapping key that is not a string or is given twice.

    Each node is measured once (aliases share nodes), so this is linear in the composed file, not in its
    expansion: a billion-laughs file is refused after a few thousand steps.
    """
    memo = {} if memo is None else memo
    where = _where_text(source, node.start_mark.line + 1, path)
    if id(node) in memo and memo[id(node)] is None:
        raise SpecError(f"{where}: an alias refers to a value that contains it")
    count, height = memo.get(id(node)) or (1, 1)
    if id(node) not in memo:
        memo[id(node)] = None
        for step, child in _children(node, source, path, depth):
            child_count, child_height = _check_shape(child, source, path + (step,), depth + 1, memo)
            count, height = count + child_count, max(height, child_height + 1)
            if count > MAX_NODES:
                raise SpecError(
                    f"{where}: holds more than {MAX_NODES} values with its aliases expanded; "
                    "an experiment file needs far fewer"
                )
        memo[id(node)] = (count, height)
    if depth + height - 1 > MAX_DEPTH:
        raise SpecError(f"{where}: nested deeper than {MAX_DEPTH} levels (aliases expanded)")
    return count, height


def _children(node, source, path, depth):
    """(key or index, child node) of a node; SpecError for a mapping key that is not a unique string."""
    if (
        depth >= MAX_DEPTH
        and isinstance(node, (yaml.SequenceNode, yaml.MappingNode))
        and node.value
    ):
        raise SpecError(
            f"{_where_text(source, node.start_mark.line + 1, path)}: nested deeper than "
            f"{MAX_DEPTH} levels (aliases expanded)"
        )
    if isinstance(node, yaml.SequenceNode):
        return list(enumerate(node.value))
    if not isinstance(node, yaml.MappingNode):
        return []
    children, seen = [], {}
    for key_node, value_node in node.value:
        line = key_node.start_mark.line + 1
        if (
            key_node.tag == "tag:yaml.org,2002:merge"
        ):  # `<<: *defaults`; explicit keys override merged ones
            children.append(("<<", value_node))
            continue
        if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != "tag:yaml.org,2002:str":
            shown = (
                repr(key_node.value[:40])
                if isinstance(key_node, yaml.ScalarNode)
                else f"a {key_node.id}"
            )
            raise SpecError(
                f"{_where_text(source, line, path)}: a mapping key ({_printable(shown)}) is not a "
                "string; keys are names (quote it if it is meant as one)"
            )
        if key_node.value in seen:
            raise SpecError(
                f"{_where_text(source, line, path + (key_node.value,))}: duplicate key "
                f"{key_node.value!r} (first at line {seen[key_node.value]})"
            )
        seen[key_node.value] = line
        children.append((key_node.value, value_node))
    return children


def _key_lines(node, prefix=()) -> dict[tuple, int]:
    """Map each key path (tuple) in a composed YAML node tree to its 1-based line.

    Only called after _check_shape, which bounds the depth and the number of paths.
    """
    lines = {}
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            path = prefix + (key_node.value,)
            lines[path] = key_node.start_mark.line + 1
            lines.update(_key_lines(value_node, path))
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            path = prefix + (i,)
            lines[path] = item.start_mark.line + 1
            lines.update(_key_lines(item, path))
    return lines


class Where:
    """Builds SpecErrors that name file, line and key."""

    def __init__(self, source: str, lines: dict[tuple, int], given: dict[str, str] | None = None):
        # given: top-level key -> the command-line option that replaced the file's value ("-r 40")
        self.source, self.lines, self.given = source, lines, given or {}

    def error(self, path: tuple, message: str, cls: type = SpecError) -> SpecError:
        if (
            path and path[0] in self.given
        ):  # the value came from the command line: name what was typed
            message = message[: MAX_MESSAGE - 3] + "..." if len(message) > MAX_MESSAGE else message
            return cls(f"{self.given[path[0]]} (for {self.source}): {_printable(message)}")
        line = None
        for n in range(len(path), 0, -1):
            line = self.lines.get(tuple(path[:n]))
            if line:
                break
        if len(message) > MAX_MESSAGE:
            message = message[: MAX_MESSAGE - 3] + "..."
        return cls(f"{_where_text(self.source, line, path)}: {_printable(message)}")


def read_yaml(text: str, source: str) -> tuple[Any, dict]:
    """The document and its key lines; the size and shape are checked before anything is built."""
    loader = None
    try:
        loader = _LineLoader(text)
        node = loader.get_single_node()
        if node is None:
            return None, {}
        _check_shape(node, source)
        return loader.construct_document(node), _key_lines(node)
    except yaml.reader.ReaderError as exc:  # a control character: the position is in characters
        line = text[: exc.position].count("\n") + 1
        raise SpecError(
            f"{source}:{line}: not valid YAML: character {exc.character:#06x} is not allowed "
            "in a YAML file"
        ) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f"{source}:{mark.line + 1}" if mark else source
        problem = _printable(str(getattr(exc, "problem", None) or exc))[:MAX_MESSAGE]
        raise SpecError(f"{at}: not valid YAML: {problem}") from None
    finally:
        if loader is not None:
            loader.dispose()
