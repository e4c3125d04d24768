"""Concise results: `response_format`, a per-tool projection of a response (issue 8).

A tool opted in by the operator (`tools.response_format` in mcpmint.yaml) has an optional
`response_format` argument, `concise` or `detailed`. It never reaches the upstream API: it is
taken out of the arguments before the request is built. A concise result keeps only the
configured fields, each a dotted path (`user.login`) applied to the response object, or to
each item when the response (or a kept value) is an array; arrays are cut to `maxItems`. A
note says what was left out, and how to get everything.

Output schemas never require a property, so a projection of a valid response is still valid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ARGUMENT",
    "FORMATS",
    "Projection",
    "ProjectionError",
    "load_projection",
    "project",
    "take_format",
]

ARGUMENT = "response_format"
FORMATS = ("concise", "detailed")


class ProjectionError(ValueError):
    """A projection in `tools.json` is malformed; the message says which key."""


@dataclass(frozen=True)
class Projection:
    """What a concise result keeps: field paths (empty: all fields) and an array cap."""

    fields: tuple[str, ...]
    max_items: int
    default: str = "detailed"


def load_projection(raw: Mapping[str, Any]) -> Projection:
    """A projection from its `tools.json` form, `{"fields", "maxItems", "default"}`.

    Raises:
        ProjectionError: a key has the wrong type or value.
    """
    fields = raw.get("fields", [])
    if not isinstance(fields, list) or not all(isinstance(f, str) and f for f in fields):
        raise ProjectionError("fields must be a list of non-empty strings")
    cap = raw.get("maxItems", 20)
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:
        raise ProjectionError("maxItems must be a positive integer")
    default = raw.get("default", "detailed")
    if default not in FORMATS:
        raise ProjectionError(f"default must be one of {', '.join(FORMATS)}")
    return Projection(fields=tuple(fields), max_items=cap, default=str(default))


def take_format(arguments: object, projection: Projection | None) -> tuple[object, bool, list[str]]:
    """The arguments without `response_format`, whether the result is to be concise, and the
    problem with the argument's value, if any (in the argument validator's words).

    A tool without a projection has no such argument (the validator refuses one), so its
    arguments come back unchanged; so do arguments that are not an object.
    """
    if projection is None or not isinstance(arguments, Mapping):
        return arguments, False, []
    chosen = arguments.get(ARGUMENT, projection.default)
    rest = {k: v for k, v in arguments.items() if k != ARGUMENT}
    if chosen not in FORMATS:
        return rest, False, [f"{ARGUMENT}: {chosen!r} is not one of {', '.join(FORMATS)}"]
    return rest, chosen == "concise", []


def project(value: Any, projection: Projection, wrap: str | None = None) -> tuple[Any, str]:
    """The concise form of `value` and a note of what was left out ("" when nothing was).

    `wrap`: the property that carries a non-object response (`{"result": [...]}`); the
    fields then name the wrapped value's fields (its items', for an array).
    """
    counter = _Counter()
    tree = _tree(projection.fields)
    if wrap is not None and isinstance(value, dict) and set(value) == {wrap}:
        result: Any = {wrap: _apply(value[wrap], tree, projection.max_items, counter)}
    else:
        result = _apply(value, tree, projection.max_items, counter)
    parts = []
    if counter.dropped_fields:
        kept = ", ".join(projection.fields)
        parts.append(f"only the fields {kept} are kept ({counter.dropped_fields} left out)")
    if counter.dropped_items:
        parts.append(
            f"arrays are cut to {projection.max_items} items ({counter.dropped_items} items "
            "left out)"
        )
    if not parts:
        return result, ""
    note = (
        "[Concise result: "
        + "; ".join(parts)
        + f'. Call again with {ARGUMENT}: "detailed" for the whole response.]'
    )
    return result, note


@dataclass
class _Counter:
    dropped_fields: int = 0
    dropped_items: int = 0


# A field tree: {"user": {"login": {}}, "title": {}}; an empty tree keeps everything.
_Tree = dict[str, "_Tree"]


def _tree(fields: Sequence[str]) -> _Tree:
    tree: _Tree = {}
    for field in fields:
        node = tree
        for part in field.split("."):
            node = node.setdefault(part, {})
    return tree


def _apply(value: Any, tree: _Tree, cap: int, counter: _Counter) -> Any:
    if isinstance(value, list):
        counter.dropped_items += max(0, len(value) - cap)
        return [_apply(item, tree, cap, counter) for item in value[:cap]]
    if isinstance(value, dict):
        if not tree:
            return {k: _apply(v, tree, cap, counter) for k, v in value.items()}
        counter.dropped_fields += sum(1 for k in value if k not in tree)
        return {k: _apply(value[k], tree[k], cap, counter) for k in value if k in tree}
    return value
