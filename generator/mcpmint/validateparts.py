"""Validation of the changed path items only, where it finds what validating the whole
document would (issue #8: a one-operation change in a 1,000-operation spec).

openapi-spec-validator takes about a second on GitHub's spec, and a changed spec is validated
again. After a run whose document had no finding at all, its *shape* is kept in the stage
cache: a digest of each path item and one of everything else. When the next document differs
only in some path items (edited, added or removed), validating a document made of everything
else and those path items alone finds exactly the findings of the whole document, provided:

- everything but the path items is the clean document's (the digest of the rest is the same):
  the components, tags and the rest had no finding then and have none now, since each check of
  them reads only them (the document schema checks each path item and each component on its
  own; the library's checks of a Schema Object read that schema and what it references);
- no operation id is used twice in the document: the library's one check across path items;
- no schema has `allOf` with a `required` name that none of its properties defines: the
  library reports that only when it first reaches the schema from a place where it asks for
  the check (a component, a parameter or response schema, not a property), and it reaches each
  schema once, so that finding depends on the order of everything visited before;
- the library's walk of the components is left out (they were clean, and stay so), which is
  most of its time.

Each is checked on the new document; when one does not hold, or the previous document had
findings, or the version is not 3.0 or 3.1 (2.0 and 3.2 walk other places), the whole document
is validated as before. tests/test_validateparts.py compares both on edits of every kind.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import orjson

from . import refs

__all__ = ["OPERATIONS", "RequiredHolders", "changed_paths", "document_shape", "shape_with"]

# The keys of a path item that the library validates as operations (3.0 and 3.1).
OPERATIONS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_MAX_DEPTH = 64  # deeper `allOf`/`items` nesting than this is taken as a possible finding


def document_shape(data: Any, *, finite: bool) -> dict[str, Any] | None:
    """What a later run compares its document with: a digest of each path item and of the
    rest; None when the document has no `paths` object or holds what JSON cannot carry
    exactly: NaN or an infinity (`finite` is False: the loader found one, load.RawDocument),
    a set."""
    if not finite or not isinstance(data, dict) or not isinstance(data.get("paths"), dict):
        return None
    try:
        rest = _digest({key: value for key, value in data.items() if key != "paths"})
        paths = {path: _digest(item) for path, item in data["paths"].items()}
    except (TypeError, ValueError):
        return None
    return {"rest": rest, "paths": paths}


def shape_with(
    before: Mapping[str, Any], paths: Mapping[str, Any], changed: list[str]
) -> dict[str, Any] | None:
    """The shape of the document whose shape is `before` with its path items `changed`
    replaced by those of `paths` (the new document's path items; no path item added or
    removed); None when one holds what JSON cannot carry exactly (as `document_shape`)."""
    try:
        digests = {path: _digest(paths[path]) for path in changed}
    except (TypeError, ValueError):
        return None
    return {"rest": before["rest"], "paths": {**before["paths"], **digests}}


def _digest(value: Any) -> str:
    """The sha256 of `value`'s JSON text: orjson's (five times quicker: 0.06 -> 0.01 s on
    GitHub's spec; it writes NaN as null, hence `finite`), else the standard library's for
    what orjson refuses (an integer beyond 64 bits, a lone surrogate, a key that is not a
    string), in ASCII. Two texts are the same only for the same data, whichever wrote them."""
    try:
        data = orjson.dumps(value)
    except TypeError:  # orjson.JSONEncodeError
        data = json.dumps(value, allow_nan=False, separators=(",", ":")).encode("ascii")
    return hashlib.sha256(data).hexdigest()


def changed_paths(
    previous: Any,
    shape: Mapping[str, Any] | None,
    data: Any,
    holders: list[dict[str, Any]] | None = None,
) -> list[str] | None:
    """The path items of `data` (whose shape is `shape`) to validate, in document order, when
    validating them alone finds what validating all of `data` would; None when the whole
    document must be validated. `previous` is the shape of a document that had no finding.
    `holders`, when given: every object of `data` that holds both `allOf` and `required`
    (`RequiredHolders`, as the parser made them), which spares a walk over all of it."""
    if shape is None or not _is_shape(previous) or previous["rest"] != shape["rest"]:
        return None
    before = previous["paths"]
    changed = [path for path, digest in shape["paths"].items() if before.get(path) != digest]
    if not _operation_ids_unique(data["paths"]) or _may_report_required(data, holders):
        return None
    return changed


class RequiredHolders(list[dict[str, Any]]):
    """A JSON parser's `object_hook` that keeps every object holding both `allOf` and
    `required`: the only objects `_may_report_required` asks about. Collecting them as the
    parser makes each object costs nothing measurable; walking a parsed GitHub spec for them
    afterwards took 0.06-0.1 s of each patched run's validation (which holds none)."""

    def __call__(self, value: dict[str, Any]) -> dict[str, Any]:
        if "allOf" in value and "required" in value:
            self.append(value)
        return value


def _is_shape(value: Any) -> bool:
    return (
        isinstance(value, dict)
        and isinstance(value.get("rest"), str)
        and isinstance(value.get("paths"), dict)
    )


def _operation_ids_unique(paths: Mapping[str, Any]) -> bool:
    """No operation id twice (the library reports every repeat), and no path item the library
    would read elsewhere (a `$ref`) or that is not an object."""
    seen: set[Any] = set()
    for item in paths.values():
        if not isinstance(item, dict) or "$ref" in item:
            return False
        for method in OPERATIONS:
            operation = item.get(method)
            if not isinstance(operation, dict) or operation.get("operationId") is None:
                continue
            identifier = operation["operationId"]
            if not isinstance(identifier, str) or identifier in seen:
                return False
            seen.add(identifier)
    return True


def _may_report_required(data: Any, holders: list[dict[str, Any]] | None = None) -> bool:
    """Whether some object holds `allOf` and a `required` name defined by none of its
    properties, nor by those of its `allOf`, `anyOf`, `oneOf`, `items` and `not` subschemas
    (through references): the one finding of the library whose presence depends on the order
    of its walk (the module's docstring). Anything it cannot tell counts as a yes. `holders`:
    the objects of `data` holding both keys, when the parser collected them."""
    if holders is not None:
        return any(_undefined_required(data, node) for node in holders)
    stack: list[Any] = [data]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            if "allOf" in node and "required" in node and _undefined_required(data, node):
                return True
            stack.extend(v for v in node.values() if type(v) is dict or type(v) is list)
        elif type(node) is list:
            stack.extend(v for v in node if type(v) is dict or type(v) is list)
    return False


def _undefined_required(data: Any, schema: dict[str, Any]) -> bool:
    required, members, own = schema["required"], schema["allOf"], schema.get("properties", {})
    if "$ref" in schema or not isinstance(required, list) or not isinstance(members, list):
        return True  # (the library would read the referenced schema, not this one)
    if not isinstance(own, dict):
        return True
    # Its own properties, and everything its `allOf` members collect (not its `anyOf`...).
    defined = set(own)
    for member in members:
        found = _properties(data, member, 0)
        if found is None:
            return True
        defined |= found
    return not all(isinstance(name, str) and name in defined for name in required)


def _properties(data: Any, schema: Any, depth: int) -> set[str] | None:
    """The property names the library collects from `schema`; None when it cannot be told
    (an unresolvable reference, a cycle, a malformed keyword)."""
    if depth > _MAX_DEPTH:
        return None
    seen = 0
    while isinstance(schema, dict) and isinstance(schema.get("$ref"), str):
        seen += 1
        if seen > _MAX_DEPTH:
            return None
        try:
            schema = refs.resolve_pointer(data, schema["$ref"])
        except refs.PointerError:
            return None
    if not isinstance(schema, dict):
        return None
    names: set[str] = set()
    properties = schema.get("properties")
    if properties is not None:
        if not isinstance(properties, dict):
            return None
        names.update(properties)
    subschemas: list[Any] = []
    for keyword in ("allOf", "anyOf", "oneOf"):
        if keyword in schema:
            if not isinstance(schema[keyword], list):
                return None
            subschemas.extend(schema[keyword])
    subschemas.extend(schema[keyword] for keyword in ("items", "not") if keyword in schema)
    for subschema in subschemas:
        found = _properties(data, subschema, depth + 1)
        if found is None:
            return None
        names |= found
    return names
