"""Reuse of the previous run's tools: an operation whose inputs did not change is not rebuilt.

Building a tool (converting its parameter, body and response schemas, compacting them,
checking its examples) is the largest stage of a run on a large spec. A tool is a pure
function of what the frontend reads to build it: the operation and its path item's
parameters, every component they reach through `$ref` (transitively), how the reference
graph sees each of those (in a cycle or not, its `$defs` name), its name and namespace, and
the options and document-level settings every tool shares. `ToolKeys` digests exactly that,
so a key names one result.

The memo (`cache.Memo`, kept in the stage cache and passed to the frontend by the
pipeline) maps a key to the tool as JSON text. Only tools whose build reported nothing are
kept: a warning belongs to every run, and a reused tool cannot say it. A hit decodes to a
value equal to what the build would make (tests/test_toolmemo.py builds every test spec both
ways).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import types
import typing
from collections.abc import Callable
from typing import Any

import orjson

from mcpmint import ir, jsontext, refs
from mcpmint.build.schema import ref_targets
from mcpmint.jsontext import SCALAR_TYPES

__all__ = [
    "Reused",
    "ToolKeys",
    "decode_tool",
    "decoded",
    "encode",
    "encode_tool",
    "memo_text",
    "record_text",
]


def _refuse(value: Any) -> Any:
    raise TypeError(f"not JSON data: {type(value).__name__}")


@dataclasses.dataclass(frozen=True)
class Reused:
    """A memo value: the tool, and whether its output schema was cut to the budget."""

    tool: ir.Tool
    cut: bool


def decoded(found: Any) -> Reused | None:
    """A memo value, or None when `found` is absent or unreadable (a corrupt cache entry is a
    miss)."""
    if not isinstance(found, str):
        return None
    try:
        record = orjson.loads(found)  # three times faster than json; the same values
        return Reused(decode_tool(record["tool"]), record["cut"] is True)
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def memo_text(data: Any) -> str:
    """Compact JSON of `data` in its own key order (which decides output order); TypeError or
    ValueError when JSON cannot carry it exactly (a set, a date, NaN)."""
    return json.dumps(
        data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=_refuse
    )


def record_text(record: Any) -> str:
    """`memo_text` for JSON data made of dicts, lists and scalars only (an encoded tool): the
    same meaning, written by orjson, five times faster. Read back and compared, so whatever
    orjson writes that JSON cannot carry exactly (NaN as null, a date as a string) raises
    ValueError as `memo_text` does; what it refuses (a big integer, a set) raises TypeError."""
    return jsontext.exact(record).decode("utf-8")


class ToolKeys:
    """Digests of what each operation's tool is built from, for one document.

    `shared` is JSON data every tool's build reads (options, document-level security);
    `flags(target)` how the reference graph sees a `$ref` target (JSON data). TypeError or
    ValueError when `shared` is not JSON data.
    """

    def __init__(self, document: Any, shared: Any, flags: Callable[[str], Any]) -> None:
        self._document = document
        self._shared = memo_text(shared)
        self._flags = flags
        # target -> (digest of its node and flags, or "unresolved"; the targets it refers to)
        self._targets: dict[str, tuple[str, frozenset[str]]] = {}
        self._prefixes: dict[str, frozenset[str]] = {}  # a reported pointer -> its prefixes

    def key(self, parts: Any, roots: list[Any]) -> tuple[str, frozenset[str]] | None:
        """The digest of `parts` (JSON data naming the tool's own inputs) and of everything
        `roots` reach through `$ref`, and the targets reached; None when some input is not
        JSON data (then the tool is built each time)."""
        try:
            own = memo_text(parts)
            todo = sorted(ref_targets(roots))
            closure: set[str] = set()
            while todo:
                target = todo.pop()
                if target in closure:
                    continue
                closure.add(target)
                todo.extend(self._target(target)[1] - closure)
            reached = [[target, self._target(target)[0]] for target in sorted(closure)]
        except (TypeError, ValueError):
            return None
        text = f"[{self._shared},{own},{json.dumps(reached)}]"
        return hashlib.sha256(text.encode("utf-8")).hexdigest(), frozenset(closure)

    def _target(self, target: str) -> tuple[str, frozenset[str]]:
        found = self._targets.get(target)
        if found is None:
            try:
                node = refs.resolve_pointer(self._document, target)
            except refs.PointerError:
                found = ("unresolved", frozenset())
            else:
                text = memo_text([self._flags(target), node])
                digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
                found = (digest, frozenset(ref_targets(node)))
            self._targets[target] = found
        return found

    def reported_within(
        self, pointers: list[str], closure: frozenset[str], own: tuple[str, ...]
    ) -> bool:
        """Whether a diagnostic at one of `pointers` lies in one of the targets of `closure`
        or under one of the `own` pointers (the operation, its path item)."""
        for pointer in pointers:
            prefixes = self._prefixes.get(pointer)
            if prefixes is None:
                tokens = pointer.split("/")
                prefixes = frozenset("/".join(tokens[:end]) for end in range(1, len(tokens) + 1))
                self._prefixes[pointer] = prefixes
            if not prefixes.isdisjoint(closure) or not prefixes.isdisjoint(own):
                return True
        return False


# ---------------------------------------------------------------- ir.Tool <-> JSON data


def encode_tool(tool: ir.Tool) -> Any:
    """`tool` as JSON data (dataclasses as objects, tuples as arrays)."""
    return _encode(tool)


def encode(value: Any) -> Any:
    """Any IR value as JSON data, as `encode_tool` encodes a tool."""
    return _encode(value)


def _encode(value: Any) -> Any:
    kind = type(value)
    if kind is dict or kind is list or kind in SCALAR_TYPES:  # schemas and data: as they are
        return value
    if isinstance(value, tuple):
        return [_encode(item) for item in value]
    names = _FIELD_NAMES.get(kind)
    if names is None and dataclasses.is_dataclass(kind):
        names = _FIELD_NAMES[kind] = tuple(f.name for f in dataclasses.fields(kind))
    if names is not None:
        return {name: _encode(getattr(value, name)) for name in names}
    return value


_FIELD_NAMES: dict[type, tuple[str, ...]] = {}  # a dataclass -> its fields' names, in order


def decode_tool(data: Any) -> ir.Tool:
    """The `ir.Tool` that `encode_tool` gave `data` for. Types come from `ir`'s annotations,
    so a field added there is decoded without a change here."""
    tool = _decode(ir.Tool, data)
    assert isinstance(tool, ir.Tool)
    return tool


# One decoder per type hint, made on first use: decoding walks the hints once per type, not
# once per value (1,213 reused tools on a warm GitHub run).
_DECODERS: dict[Any, Callable[[Any], Any]] = {}


def _decode(hint: Any, data: Any) -> Any:
    return _decoder(hint)(data)


def _decoder(hint: Any) -> Callable[[Any], Any]:
    found = _DECODERS.get(hint)
    if found is None:
        found = _DECODERS[hint] = _make_decoder(hint)
    return found


def _as_is(data: Any) -> Any:
    return data  # str, bool, Literal, Any, dict (JSON Schemas): JSON data as they are


def _make_decoder(hint: Any) -> Callable[[Any], Any]:
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        cls = hint
        hints = typing.get_type_hints(cls, vars(ir))
        # Field decoders are looked up at call time: a dataclass may contain itself.
        return lambda data: cls(**{name: _decoder(hints[name])(v) for name, v in data.items()})
    origin = typing.get_origin(hint)
    if origin is tuple:
        items = typing.get_args(hint)
        if len(items) == 2 and items[1] is Ellipsis:
            item = items[0]
            return lambda data: tuple(_decoder(item)(value) for value in data)
        return lambda data: tuple(
            _decoder(item_hint)(value) for item_hint, value in zip(items, data, strict=True)
        )
    if origin in (typing.Union, types.UnionType):
        (other,) = [arg for arg in typing.get_args(hint) if arg is not type(None)]
        return lambda data: None if data is None else _decoder(other)(data)
    return _as_is
