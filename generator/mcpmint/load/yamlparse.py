"""YAML specs for the load stage (load.py): composed by libyaml, built into plain values here.

PyYAML only *composes* the text (no constructor runs, so no tag can execute code); the node
graph is turned into JSON-compatible values under the load's limits on aliases, depth and
expanded size, and every value keeps its line and column for messages. In a module of its
own, imported when a YAML file is read: a run on a JSON spec does not import PyYAML.
"""

from __future__ import annotations

from typing import Any

# PyYAML ships no type hints; `unused-ignore` keeps this clean once types-PyYAML is installed.
import yaml  # type: ignore[import-untyped, unused-ignore]
from yaml.constructor import SafeConstructor  # type: ignore[import-untyped, unused-ignore]
from yaml.nodes import (  # type: ignore[import-untyped, unused-ignore]
    MappingNode,
    Node,
    ScalarNode,
    SequenceNode,
)

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.common import (
    DEPTH_HINT,
    NODES_HINT,
    FileSource,
    Limits,
    Refused,
    depth_message,
    nodes_message,
)
from mcpmint.refs import escape_token

# libyaml's composer is several times faster than the pure-Python one, with the same marks.
_YAML_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

_STD = "tag:yaml.org,2002:"
_STR, _INT, _FLOAT, _BOOL, _NULL = (_STD + t for t in ("str", "int", "float", "bool", "null"))
_TIMESTAMP, _BINARY, _MERGE = _STD + "timestamp", _STD + "binary", _STD + "merge"
_SEQ, _MAP = _STD + "seq", _STD + "map"
_KEY_TAGS = frozenset({_STR, _INT, _FLOAT, _BOOL, _NULL, _TIMESTAMP})

_YAML_HINT = "fix the YAML at this position (indent with spaces, never tabs)"
_TAG_HINT = (
    "remove the tag: only plain YAML (mappings, lists, strings, numbers, booleans, null) "
    "is accepted, and tags are never executed"
)


def _pack(mark: Any) -> int:
    return (int(mark.line) + 1) << 32 | (int(mark.column) + 1)


def parse_yaml(
    text: str, display: str, limits: Limits, sink: DiagnosticSink
) -> tuple[Any, FileSource]:
    try:
        # compose() builds the node graph only: no constructor, no tag is ever acted on.
        root = yaml.compose(text, Loader=_YAML_LOADER)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        where = f"{display}:{mark.line + 1}:{mark.column + 1}" if mark else display
        context = f" ({exc.context})" if exc.context else ""
        raise Refused(where, f"YAML syntax error: {exc.problem}{context}", _YAML_HINT) from None
    except yaml.reader.ReaderError as exc:
        line = text.count("\n", 0, exc.position) + 1
        column = exc.position - (text.rfind("\n", 0, exc.position) + 1) + 1
        location = f"{display}:{line}:{column}"
        raise Refused(location, f"YAML error: {exc.reason}", _YAML_HINT) from None
    except yaml.YAMLError as exc:
        raise Refused(display, f"YAML error: {exc}", _YAML_HINT) from None
    except RecursionError:
        raise Refused(display, depth_message(limits), DEPTH_HINT) from None
    builder = _YamlBuilder(display, limits, sink)
    if root is None:
        return None, FileSource(display, builder.positions)
    builder.positions[""] = _pack(root.start_mark)
    value, _, _ = builder.build(root, "", 0)
    return value, FileSource(display, builder.positions)


class _YamlBuilder:
    """Turns a composed node graph into JSON-compatible values.

    Aliased nodes are built once and shared, and each node's expanded size and height are
    memoised, so an alias bomb is measured, never expanded.
    """

    def __init__(self, display: str, limits: Limits, sink: DiagnosticSink) -> None:
        self.display = display
        self.limits = limits
        self.sink = sink
        self.positions: dict[str, int] = {}
        self.built: dict[int, tuple[Any, int, int]] = {}  # id(node) -> value, size, height
        self.open: set[int] = set()
        self.aliases = 0
        self.constructor = SafeConstructor()

    def at(self, node: Node) -> str:
        return f"{self.display}:{node.start_mark.line + 1}:{node.start_mark.column + 1}"

    def build(self, node: Node, pointer: str, depth: int) -> tuple[Any, int, int]:
        key = id(node)
        done = self.built.get(key)
        if done is not None:
            self.aliases += 1
            if self.aliases > self.limits.max_aliases:
                raise Refused(
                    self.at(node),
                    f"more than {self.limits.max_aliases} YAML aliases (max_aliases)",
                    "write the repeated parts out or use $ref instead of YAML anchors",
                )
            if depth + done[2] > self.limits.max_depth:
                raise Refused(self.at(node), depth_message(self.limits), DEPTH_HINT)
            return done
        if key in self.open:
            raise Refused(
                self.at(node),
                "recursive YAML alias: this node contains an alias to itself",
                "use $ref for recursive structures",
            )
        if isinstance(node, ScalarNode):
            result: tuple[Any, int, int] = (self.scalar(node), 1, 0)
        else:
            if depth >= self.limits.max_depth:
                raise Refused(self.at(node), depth_message(self.limits), DEPTH_HINT)
            self.open.add(key)
            if isinstance(node, SequenceNode):
                result = self.sequence(node, pointer, depth)
            elif isinstance(node, MappingNode):
                result = self.mapping(node, pointer, depth)
            else:  # the composer only makes scalars, sequences and mappings
                raise Refused(self.at(node), f"unexpected YAML node {type(node).__name__}")
            self.open.discard(key)
            if result[1] > self.limits.max_nodes:
                raise Refused(self.at(node), nodes_message(self.limits), NODES_HINT)
        self.built[key] = result
        return result

    def bad_tag(self, node: Node) -> Refused:
        tag = node.tag.replace(_STD, "!!")
        return Refused(self.at(node), f"YAML tag {tag} is not allowed", _TAG_HINT)

    def scalar(self, node: ScalarNode) -> Any:
        tag = node.tag
        if tag in (_STR, _TIMESTAMP, _BINARY):
            # Timestamps stay the text the author wrote: JSON has no date type.
            return node.value
        try:
            if tag == _INT:
                return self.constructor.construct_yaml_int(node)
            if tag == _FLOAT:
                return self.constructor.construct_yaml_float(node)
            if tag == _BOOL:
                return self.constructor.construct_yaml_bool(node)
        except (ValueError, KeyError, yaml.YAMLError):
            raise Refused(
                self.at(node), f"{node.value!r} is not a valid {tag.replace(_STD, '!!')}"
            ) from None
        if tag == _NULL:
            return None
        raise self.bad_tag(node)

    def sequence(self, node: SequenceNode, pointer: str, depth: int) -> tuple[Any, int, int]:
        if node.tag != _SEQ:
            raise self.bad_tag(node)
        items: list[Any] = []
        size, height = 1, 0
        positions = self.positions
        for index, child in enumerate(node.value):
            child_pointer = f"{pointer}/{index}"
            positions[child_pointer] = _pack(child.start_mark)
            value, child_size, child_height = self.build(child, child_pointer, depth + 1)
            items.append(value)
            size += child_size
            height = max(height, child_height)
        return items, size, height + 1

    def mapping(self, node: MappingNode, pointer: str, depth: int) -> tuple[Any, int, int]:
        if node.tag != _MAP:
            raise self.bad_tag(node)
        result: dict[str, Any] = {}
        merged: list[dict[str, Any]] = []
        size, height = 1, 0
        positions = self.positions
        for key_node, value_node in node.value:
            if not isinstance(key_node, ScalarNode):
                raise Refused(
                    self.at(key_node),
                    "a mapping key must be a plain string or number",
                    "OpenAPI documents are JSON: use simple keys",
                )
            if key_node.tag == _MERGE:
                value, child_size, child_height = self.build(value_node, pointer, depth + 1)
                merged.extend(self.merge_sources(value, value_node))
            else:
                if key_node.tag not in _KEY_TAGS:
                    raise self.bad_tag(key_node)
                # The text as written: `200:` is the string "200", as JSON and OpenAPI expect.
                key = key_node.value
                child_pointer = pointer + "/" + escape_token(key)
                if key in result:
                    self.sink.warning(
                        self.at(key_node),
                        f"duplicate key {key!r}: the last value wins",
                        "remove one of the duplicate keys",
                    )
                positions[child_pointer] = _pack(key_node.start_mark)
                value, child_size, child_height = self.build(value_node, child_pointer, depth + 1)
                result[key] = value
            size += 1 + child_size
            height = max(height, child_height)
        if merged:
            combined: dict[str, Any] = {}
            for source in merged:  # earlier sources win, as in PyYAML
                for key, value in source.items():
                    combined.setdefault(key, value)
            combined.update(result)  # the mapping's own keys override merged ones
            result = combined
        return result, size, height + 1

    def merge_sources(self, value: Any, node: Node) -> list[dict[str, Any]]:
        sources = value if isinstance(value, list) else [value]
        if not all(isinstance(source, dict) for source in sources):
            raise Refused(
                self.at(node),
                "a `<<` merge key needs a mapping or a list of mappings",
                "merge only mappings, e.g. `<<: *defaults`",
            )
        return sources
