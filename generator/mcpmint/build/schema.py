"""OpenAPI schemas -> JSON Schema 2020-12 for a tool's `inputSchema` and `outputSchema`.

Two modes, because the two directions fail differently (see docs/schemas.md):

- `input` is strict: the runtime validates the model's arguments against it before anything is
  sent, so it says exactly what the API accepts (closed objects, no read-only properties).
- `output` is lenient: the MCP client rejects a result that does not match `outputSchema`, and
  real APIs (and mock servers) drift from their specs, so it describes the shape and asserts
  almost nothing.

The document is bundled: every `$ref` is a local JSON pointer. A `$ref` to a schema that is not
part of a reference cycle is inlined; one into a cycle becomes `#/$defs/<Name>` in the emitted
root, so recursive specs stay finite without losing their shape.

Converted schemas are built as fresh dicts and never mutated afterwards, so one converted body
can be shared by every place that inlines it. `SchemaRoot.convert` hands out a copy: a whole
one in input mode (frontends edit input schemas); in output mode only its top level, because
what lies below is finished, split and compacted once and shared by every output root that
holds it (nothing changes an output schema after the build).

One module, over 600 lines: the two modes share the reference graph, the memo of converted
bodies and the cycle handling, and each keyword's conversion is written once for both.
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import re
from collections.abc import Callable, Iterator, Mapping
from datetime import date, datetime, time
from typing import Any, Final, Literal

from referencing.exceptions import Unresolvable

from mcpmint import refs
from mcpmint.build.compact import Interner, compact, compact_within
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.jsontext import SCALAR_TYPES
from mcpmint.runtime.arguments import spec_validator
from mcpmint.runtime.patterns import linear_pattern

__all__ = ["MAX_BRANCHES", "MAX_DEPTH", "Mode", "SchemaConverter", "SchemaRoot"]

Mode = Literal["input", "output"]

# Limits (G13). Depth counts schema levels, including levels reached through inlined `$ref`s,
# so the conversion recursion is bounded whatever the spec does.
MAX_DEPTH: Final = 64
MAX_BRANCHES: Final = 1000

_DEFS_PREFIX: Final = "#/$defs/"
_TYPES: Final = ("array", "boolean", "integer", "null", "number", "object", "string")


def _words(text: str) -> tuple[str, ...]:
    return tuple(text.split())


# Where subschemas sit. The cycle analysis, the conversion and the finishing pass all use these
# tables, so they agree on what is a schema and what is data (a `default` is never a schema).
_SCHEMA_KEYS: Final = _words(
    "items additionalProperties unevaluatedProperties unevaluatedItems not if then else "
    "contains propertyNames contentSchema"
)
_SCHEMA_LIST_KEYS: Final = _words("allOf anyOf oneOf prefixItems")
_SCHEMA_MAP_KEYS: Final = _words("properties patternProperties dependentSchemas")
_COMPOSITION_KEYS: Final = frozenset(_words("allOf anyOf oneOf not if then else $ref"))
_UNCHECKABLE_PATTERN: Final = (
    "not a regular expression the server can check in linear time; dropped"
)
_UNCHECKED_PATTERN: Final = (
    "look-around or back-references, which the server does not check (no linear-time engine"
    " runs them); the upstream does"
)

# Keywords that describe rather than constrain. A node with only these next to a `$ref` does not
# need the referenced body merged in: `{"$ref": ..., "description": ...}` is valid 2020-12.
_ANNOTATIONS: Final = frozenset(
    _words("title description default examples deprecated readOnly writeOnly")
)
_STRING_KEYS: Final = frozenset(_words("title description format contentMediaType contentEncoding"))
_BOOL_KEYS: Final = frozenset(_words("deprecated readOnly writeOnly uniqueItems"))
_COUNT_KEYS: Final = frozenset(
    _words(
        "maxLength minLength maxItems minItems maxProperties minProperties maxContains minContains"
    )
)
# Read by `_node` itself rather than keyword by keyword.
_HANDLED_BY_NODE: Final = frozenset(
    _words("$ref allOf default example nullable x-nullable additionalItems")
)
# Removed without a word: OpenAPI-only keywords, and JSON Schema identifiers that would change
# how our `#/$defs/...` references resolve (`$defs` content is reached through `$ref`s).
_DROPPED: Final = frozenset(
    _words(
        "discriminator xml externalDocs "
        "$id $schema $anchor $dynamicAnchor $comment $vocabulary $defs definitions"
    )
)
# Output mode drops every keyword that only rejects: real responses break them all the time.
_VALIDATION_KEYS: Final = frozenset(
    _words(
        "pattern minLength maxLength minimum maximum exclusiveMinimum exclusiveMaximum "
        "multipleOf enum const uniqueItems minItems maxItems minProperties maxProperties "
        "not required dependentRequired dependentSchemas if then else "
        "contains minContains maxContains propertyNames"
    )
)
_COMPOSITION: Final = ("allOf", "anyOf", "oneOf", "$ref", "not", "const")


class SchemaConverter:
    """Converts the schemas of one bundled document, for as many tools as needed.

    The reference cycles and the `$defs` names are computed once, here; converted bodies of
    referenced schemas are memoised per mode and shared by every root.
    """

    def __init__(
        self,
        document: Mapping[str, Any],
        *,
        openapi: tuple[int, int],
        sink: DiagnosticSink,
        locate: Callable[[str], str],
    ) -> None:
        self._openapi = openapi
        self._sink = sink
        self._locate = locate
        self._reported: set[tuple[str, str, str]] = set()
        # Where every report was about, repeats included: a tool is reused from the previous
        # run (toolmemo.py) only when nothing was reported about what it is built from.
        self.reported_pointers: list[str] = []
        self.graph = RefGraph(document)
        self._modes = {
            "input": _ModeConverter(self, output=False),
            "output": _ModeConverter(self, output=True),
        }

    @property
    def openapi(self) -> tuple[int, int]:
        return self._openapi

    def reuse_flags(self, target: str) -> list[Any]:
        """How the conversion treats the `$ref` target `target` beyond its own text (JSON
        data; part of a reused tool's key, toolmemo.py): in a cycle, its `$defs` name, a bare
        reference loop, and which targets lie inside it (a node that is itself a target is
        converted through the shared memo)."""
        graph = self.graph
        return [
            target in graph.cyclic,
            graph.names.get(target),
            target in graph.loops,
            self.targets_under(target),
        ]

    def targets_under(self, pointer: str) -> list[str]:
        """The `$ref` targets strictly inside the node at `pointer`."""
        ordered = self.graph.ordered
        start = bisect.bisect_left(ordered, pointer + "/")
        end = bisect.bisect_left(ordered, pointer + "0")  # "0" follows "/"
        return ordered[start:end]

    def root(self, mode: Mode) -> SchemaRoot:
        """A new emitted root schema (one tool's input or output)."""
        return SchemaRoot(self._modes[mode])

    def report(self, level: Literal["error", "warning"], pointer: str, message: str) -> None:
        self.reported_pointers.append(pointer)
        # A component converted for many tools, in two modes, must not repeat its warnings.
        key = (level, pointer, message)
        if key in self._reported:
            return
        self._reported.add(key)
        if level == "error":
            self._sink.error(self._locate(pointer), message)
        else:
            self._sink.warning(self._locate(pointer), message)


class SchemaRoot:
    """Collects the schemas of one emitted root and the `$defs` they need."""

    def __init__(self, converter: _ModeConverter) -> None:
        self._converter = converter
        self._needed: set[str] = set()

    def convert(self, schema: Any, pointer: str) -> dict[str, Any]:
        """Convert `schema`, found at `pointer` in the document, for this root.

        The result is a fresh dict the caller may change. A top-level `$ref` is resolved one
        level even into a cycle, so a request body's properties can be seen (and flattened into
        tool arguments); deeper cyclic references stay `#/$defs/...` references.
        """
        raw, needed = self._converter.convert_top(schema, pointer)
        self._needed |= needed
        result = self._converter.finalize(raw)
        if isinstance(result, dict):
            return dict(result) if self._converter.output else result  # shared below the top
        return dict(_as_object(result))

    def finish(self, root: dict[str, Any]) -> dict[str, Any]:
        """`root` plus the `$defs` every converted piece needs (none when nothing is cyclic),
        compacted.

        In output mode the root describes `structuredContent`, which is always an object and
        never null, so `"null"` is taken off the root's own `type`.
        """
        return compact(self._finished(root), interner=self._converter.interner)

    def finish_within(self, root: dict[str, Any], max_bytes: int) -> tuple[dict[str, Any], bool]:
        """`finish(root)` cut to the deepest levels that fit in `max_bytes` of JSON
        (`compact.limit_depth`), and whether it was cut."""
        return compact_within(self._finished(root), max_bytes, interner=self._converter.interner)

    def _finished(self, root: dict[str, Any]) -> dict[str, Any]:
        result = dict(root)
        if self._converter.output:
            result = _drop_root_null(result)
        defs = self._converter.defs_for(self._needed)
        if defs:
            merged = {**result.get("$defs", {}), **defs}
            result["$defs"] = {name: merged[name] for name in sorted(merged)}
        split: dict[str, Any] = _split_type_lists(result, self._converter.split)
        return split


class RefGraph:
    """Which `$ref` targets take part in a reference cycle, and their `$defs` names."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        """The graph of `document`'s `$ref` targets."""
        self._document = document
        self._edges: dict[str, list[str]] = {}
        loops: set[str] = set()
        for target in sorted(ref_targets(document)):
            node = self.resolve(target)
            if node is None:
                continue
            self._edges[target] = sorted(_refs_in_schema(node))
            if _is_ref_loop(document, node, target):
                loops.add(target)
        self.targets = frozenset(self._edges)
        self.ordered = sorted(self._edges)
        # `A: {$ref: B}`, `B: {$ref: A}` describes nothing, and a validator would never return.
        self.loops = frozenset(loops)
        self.cyclic = frozenset(_cyclic_nodes(self._edges))
        self.names = _def_names(sorted(self.cyclic))
        self.by_name = {name: pointer for pointer, name in self.names.items()}

    def resolve(self, pointer: str) -> Any:
        """The node at a normalised `#/...` pointer, or None when there is none."""
        try:
            return refs.resolve_pointer(self._document, pointer)
        except refs.PointerError:
            return None


class _ModeConverter:
    """The conversion itself, for one mode; its memo is shared by every root of that mode."""

    def __init__(self, owner: SchemaConverter, *, output: bool) -> None:
        self._owner = owner
        self._graph = owner.graph
        self.output = output
        self._bodies: dict[str, tuple[Any, int, frozenset[str]]] = {}
        self._in_progress: set[str] = set()
        self._needs: list[set[str]] = []
        self._deepest = 0
        self._finalized_defs: dict[str, Any] = {}
        # Output mode: every node finished (`_finalize`) so far, by identity, with what
        # became of it. Both modes: every node split (`_split_type_lists`) and the
        # compaction's table of subschemas (compact.Interner). A response schema is mostly
        # components, inlined: GitHub's `repository` is in hundreds of them, and is finished,
        # split and compacted once; the `$defs` of a cycle (Elasticsearch's query DSL, in the
        # input of hundreds of tools) is finished, split and compacted once, not per tool.
        # Each entry holds its node, so the id is never reused; nothing after the build
        # changes a schema below its root (compaction and the budget cut build new objects;
        # the frontends edit the pieces `convert` gives, which are fresh in input mode, and
        # the roots before `finish`).
        self.finished: dict[int, tuple[Any, Any]] | None = {} if output else None
        self.split: dict[int, tuple[Any, Any]] | None = {}
        self.interner: Interner | None = Interner()

    # -- entry points ---------------------------------------------------------------------

    def convert_top(self, schema: Any, pointer: str) -> tuple[Any, set[str]]:
        """Convert a root piece; returns the raw result and the cyclic targets it refers to."""
        self._needs.append(set())
        try:
            target = _normalise(pointer)
            if target in self._graph.targets and self._graph.resolve(target) is schema:
                # A component converted directly: reuse (and fill) the memo.
                raw = self._through_aliases(self._inline(target, pointer, 0), pointer, 0)
            else:
                raw = self._node(schema, pointer, 0, unwrap=True)
            return ({} if raw is None else raw), self._needs[-1]
        finally:
            self._needs.pop()

    def defs_for(self, needed: set[str]) -> dict[str, Any]:
        """Finished `$defs` bodies for `needed` and everything they need, by name."""
        closure: set[str] = set()
        todo = sorted(needed)
        while todo:
            target = todo.pop()
            if target in closure:
                continue
            closure.add(target)
            self._needs.append(set())
            try:
                self._inline(target, target, 0)
            finally:
                self._needs.pop()
            todo.extend(sorted(self._bodies[target][2] - closure))
        self._refuse_left_recursion(closure)
        return {self._graph.names[t]: self._finalized_def(t) for t in closure}

    def _refuse_left_recursion(self, closure: set[str]) -> None:
        """`X: {anyOf: [{$ref: X}, ...]}` checks X against the same value again, forever: a
        validator never returns. A cycle must pass through a keyword that goes one level down
        into the data (properties, items, ...)."""
        edges = {
            target: sorted(
                self._graph.by_name[name] for name in _in_place_refs(self._bodies[target][0])
            )
            for target in sorted(closure)
        }
        # A schema that names itself in place (`X: {anyOf: [{$ref: X}, Y]}`): X or Y is Y,
        # X and Y is Y; the reference to itself is dropped (a warning), which says the same.
        for target in sorted(t for t in closure if t in edges.get(t, [])):
            own = _DEFS_PREFIX + self._graph.names[target]
            body, height, deps = self._bodies[target]
            self._bodies[target] = (_without_in_place(body, own), height, deps)
            self._finalized_defs.pop(target, None)
            edges[target] = [t for t in edges[target] if t != target]
            self._owner.report(
                "warning",
                target,
                "schema refers back to itself without going down into the data (through "
                "$ref, allOf, anyOf or oneOf only); that reference says nothing and is dropped",
            )
        for target in sorted(_cyclic_nodes(edges)):
            self._owner.report(
                "warning",
                target,
                "schema refers back to itself without going down into the data (through "
                "$ref, allOf, anyOf or oneOf only); no validator could finish, so it is emptied",
            )
            _, height, deps = self._bodies[target]
            self._bodies[target] = ({}, height, deps)
            self._finalized_defs.pop(target, None)

    def finalize(self, raw: Any) -> Any:
        return _finalize(raw, output=self.output, shared=self.finished)

    def _finalized_def(self, target: str) -> Any:
        # The same `$defs` body serves many tools; finish it once. Every root shares it, and
        # its split form (`split`): Stripe's 468 responses each carry the same 92-schema
        # cycle, and copying and splitting it per root was a fifth of the build; copying the
        # query DSL's closure into each of Elasticsearch's 452 inputs, and compacting each
        # copy anew, was most of a 93 s run.
        if target not in self._finalized_defs:
            self._finalized_defs[target] = self.finalize(self._bodies[target][0])
        return self._finalized_defs[target]

    # -- diagnostics ----------------------------------------------------------------------

    def _warn(self, pointer: str, message: str) -> None:
        self._owner.report("warning", pointer, message)

    def _error(self, pointer: str, message: str) -> None:
        self._owner.report("error", pointer, message)

    # -- references -----------------------------------------------------------------------

    def _inline(self, target: str, at: str, depth: int) -> Any:
        """The converted body of `target`, memoised; None while it is being converted."""
        memo = self._bodies.get(target)
        if memo is not None:
            body, height, deps = memo
            if depth + height > MAX_DEPTH:
                self._too_deep(at)
                return {}
            self._deepest = max(self._deepest, depth + height)
            self._needs[-1] |= deps
            return body
        if target in self._in_progress:
            return None
        self._in_progress.add(target)
        self._needs.append(set())
        outer_deepest, self._deepest = self._deepest, depth
        try:
            body = self._node(self._graph.resolve(target), target, depth, unwrap=False)
        finally:
            deps = frozenset(self._needs.pop())
            self._in_progress.discard(target)
        height = self._deepest - depth
        self._deepest = max(outer_deepest, self._deepest)
        if target in self._graph.cyclic:
            body = _without_self_reference(body, _DEFS_PREFIX + self._graph.names[target])
        self._bodies[target] = (body, height, deps)
        self._needs[-1] |= deps
        return body

    def _ref(self, value: Any, pointer: str, depth: int, *, unwrap: bool) -> Any:
        """A `$ref` (found at `pointer`): the inlined body, or a `#/$defs/...` reference."""
        at = refs.join(pointer, "$ref")
        if not isinstance(value, str) or not value.startswith("#"):
            self._error(at, f"$ref {value!r} is not a local reference; it was left unresolved")
            return {}
        target = _normalise(value)
        # Not a target the analysis saw (the caller built this `$ref` itself): nothing in the
        # document refers to it, so it is on no cycle and can be inlined if it exists.
        if target not in self._graph.targets and self._graph.resolve(target) is None:
            self._error(at, f"$ref {value!r} does not resolve to anything in the document")
            return {}
        if target in self._graph.loops:
            self._error(at, f"$ref {value!r} only leads to other $refs in a loop; no schema")
            return {}
        if target not in self._graph.cyclic:
            body = self._inline(target, at, depth)
            if body is None:  # only reachable if the cycle analysis missed a keyword
                self._error(at, f"$ref {value!r} refers back to itself")
                return {}
            return body
        if unwrap:
            body = self._inline(target, at, depth)
            if body is not None:
                return self._through_aliases(body, at, depth)
        self._needs[-1].add(target)
        return {"$ref": _DEFS_PREFIX + self._graph.names[target]}

    def _through_aliases(self, body: Any, at: str, depth: int) -> Any:
        """Resolve bodies that only name another cyclic schema (`Pet: {$ref: pet.yaml}`, common
        in multi-file specs): whoever asked for one level of resolution wants the schema."""
        for _ in range(MAX_DEPTH):  # alias loops were refused already; bounded all the same
            ref = body.get("$ref") if isinstance(body, dict) else None
            if not (isinstance(ref, str) and ref.startswith(_DEFS_PREFIX)):
                return body
            if any(key != "$ref" and key not in _ANNOTATIONS for key in body):
                return body
            inner = self._inline(self._graph.by_name[ref[len(_DEFS_PREFIX) :]], at, depth)
            if not isinstance(inner, dict):
                return body
            body = _merge({k: v for k, v in body.items() if k != "$ref"}, inner)
        return body

    # -- one schema node ------------------------------------------------------------------

    def _node(self, schema: Any, pointer: str, depth: int, *, unwrap: bool) -> Any:
        """Convert one schema object; returns a dict, or a boolean for a boolean schema."""
        if isinstance(schema, bool):
            # Output mode never forbids: `false` (nothing allowed) becomes `true`.
            return True if self.output else schema
        if not isinstance(schema, Mapping):
            self._warn(pointer, "a schema must be an object or a boolean; treated as {}")
            return {}
        if depth > MAX_DEPTH:
            self._too_deep(pointer)
            return {}
        self._deepest = max(self._deepest, depth)
        if not self._branch_counts_ok(schema, pointer):
            return {}
        own = self._own_keywords(schema, pointer, depth)
        node = self._merge_branches(own, schema, pointer, depth, unwrap=unwrap)
        if self._is_nullable(schema):
            node = _nullable(node)
        if "default" in schema:
            node = self._with_default(node, schema["default"], refs.join(pointer, "default"))
        return node

    def _too_deep(self, pointer: str) -> None:
        self._error(
            pointer,
            f"schema is nested more than {MAX_DEPTH} levels deep (limit {MAX_DEPTH}); "
            "it was cut off here",
        )

    def _branch_counts_ok(self, schema: Mapping[str, Any], pointer: str) -> bool:
        for key in ("allOf", "anyOf", "oneOf"):
            branches = schema.get(key)
            if isinstance(branches, list) and len(branches) > MAX_BRANCHES:
                self._error(
                    refs.join(pointer, key),
                    f"{key} has {len(branches)} branches, more than the limit of "
                    f"{MAX_BRANCHES}; the schema was not converted",
                )
                return False
        return True

    def _is_nullable(self, schema: Mapping[str, Any]) -> bool:
        if schema.get("nullable") is True:
            return True
        # Swagger 2.0 spells it as an extension.
        return self._owner.openapi[0] == 2 and schema.get("x-nullable") is True

    def _merge_branches(
        self,
        own: dict[str, Any],
        schema: Mapping[str, Any],
        pointer: str,
        depth: int,
        *,
        unwrap: bool,
    ) -> dict[str, Any]:
        """Merge `$ref` (as `allOf: [ref, siblings]`) and `allOf` branches into `own`."""
        ref = schema.get("$ref")
        all_of = schema.get("allOf")
        if all_of is not None and not (isinstance(all_of, list) and all_of):
            self._warn(refs.join(pointer, "allOf"), "allOf must be a non-empty list; dropped")
            all_of = None
        count = (ref is not None) + len(all_of or [])
        if count == 0:
            return own
        # A cyclic body is resolved one level only when it has to be merged with something that
        # constrains; next to mere annotations a `$defs` reference says the same thing.
        resolve = unwrap or count > 1 or any(key not in _ANNOTATIONS for key in own)
        branches: list[Any] = []
        if ref is not None:
            branches.append(self._ref(ref, pointer, depth, unwrap=resolve))
        for index, branch in enumerate(all_of or []):
            at = refs.join(pointer, "allOf", index)
            branches.append(self._node(branch, at, depth + 1, unwrap=resolve))
        return _merge_all(own, branches)

    def _own_keywords(self, schema: Mapping[str, Any], pointer: str, depth: int) -> dict[str, Any]:
        """Every keyword of `schema` except `$ref`, `allOf` and `default`, converted."""
        out: dict[str, Any] = {}
        for raw_key, value in schema.items():
            key = str(raw_key)
            if key in _HANDLED_BY_NODE or key in _DROPPED or key.startswith("x-"):
                continue
            if self.output and key in _VALIDATION_KEYS:
                continue
            self._keyword(out, key, value, schema, pointer, depth)
        if "example" in schema and "examples" not in schema:
            example = self._data(schema["example"], refs.join(pointer, "example"))
            if example is not _INVALID:
                out["examples"] = [example]
        return out

    def _keyword(
        self,
        out: dict[str, Any],
        key: str,
        value: Any,
        schema: Mapping[str, Any],
        pointer: str,
        depth: int,
    ) -> None:
        at = refs.join(pointer, key)
        if key == "type":
            self._set(out, key, self._type(value, at))
        elif key in _SCHEMA_MAP_KEYS:
            self._set(out, key, self._schema_map(key, value, at, depth))
        elif key in ("anyOf", "oneOf", "prefixItems"):
            self._schema_list(out, key, value, schema, at, depth)
        elif key == "items" and isinstance(value, list):
            self._tuple_items(out, value, schema, pointer, depth)
        elif key in _SCHEMA_KEYS:
            self._sub_schema(out, key, value, at, depth)
        elif key == "required":
            self._set(out, key, self._required(value, at))
        elif key == "dependentRequired":
            self._set(out, key, self._dependent_required(value, at))
        elif key == "enum":
            self._set(out, key, self._enum(value, at))
        elif key in ("const", "examples"):
            self._set(out, key, self._data_keyword(key, value, at))
        elif key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
            self._bound(out, key, value, schema, at)
        elif key == "multipleOf":
            self._set(out, key, self._positive_number(value, at))
        elif key in _COUNT_KEYS:
            self._set(out, key, self._count(value, at))
        elif key == "pattern":
            self._set(out, key, self._pattern(value, at))
        elif key in _STRING_KEYS:
            self._set(out, key, self._typed(value, str, "a string", at))
        elif key in _BOOL_KEYS:
            self._set(out, key, self._typed(value, bool, "true or false", at))
        elif key in ("$dynamicRef", "$recursiveRef", "$recursiveAnchor"):
            self._warn(at, f"{key} is not supported; dropped")
        else:
            self._warn(at, f"{key!r} is not a JSON Schema 2020-12 keyword; dropped")

    @staticmethod
    def _set(out: dict[str, Any], key: str, value: Any) -> None:
        if value is not _INVALID:
            out[key] = value

    # -- keyword values -------------------------------------------------------------------

    def _type(self, value: Any, at: str) -> Any:
        names = value if isinstance(value, list) else [value]
        kept: list[str] = []
        for name in names:
            if name not in _TYPES:
                self._warn(at, f"unknown type {name!r}; dropped")
            elif name not in kept:
                kept.append(name)
        if not kept:
            return _INVALID
        return kept[0] if len(kept) == 1 else kept

    def _schema_map(self, key: str, value: Any, at: str, depth: int) -> Any:
        if not isinstance(value, Mapping):
            self._warn(at, f"{key} must be an object; dropped")
            return _INVALID
        out: dict[str, Any] = {}
        for name, sub in value.items():
            if key == "patternProperties" and not _checkable(str(name)):
                self._warn(refs.join(at, str(name)), _UNCHECKABLE_PATTERN)
                continue
            out[str(name)] = self._node(sub, refs.join(at, str(name)), depth + 1, unwrap=False)
        return out

    def _schema_list(
        self,
        out: dict[str, Any],
        key: str,
        value: Any,
        schema: Mapping[str, Any],
        at: str,
        depth: int,
    ) -> None:
        if not (isinstance(value, list) and value):
            self._warn(at, f"{key} must be a non-empty list; dropped")
            return
        branches = [
            self._node(sub, refs.join(at, i), depth + 1, unwrap=False)
            for i, sub in enumerate(value)
        ]
        if self.output and key == "oneOf":
            # Lenient output: a response matching two branches is still a response.
            if "anyOf" in schema:
                out["allOf"] = [*out.get("allOf", []), {"anyOf": branches}]
                return
            key = "anyOf"
        if not self.output and key in ("anyOf", "oneOf"):
            branches = _discriminated(branches, value, schema.get("discriminator"))
        out[key] = branches

    def _tuple_items(
        self,
        out: dict[str, Any],
        value: list[Any],
        schema: Mapping[str, Any],
        pointer: str,
        depth: int,
    ) -> None:
        # Pre-2020 tuple form: `items: [..]` + `additionalItems` is `prefixItems` + `items`.
        self._warn(refs.join(pointer, "items"), "items as a list is read as prefixItems")
        self._schema_list(out, "prefixItems", value, schema, refs.join(pointer, "items"), depth)
        if "additionalItems" in schema:
            at = refs.join(pointer, "additionalItems")
            self._sub_schema(out, "items", schema["additionalItems"], at, depth)

    def _sub_schema(self, out: dict[str, Any], key: str, value: Any, at: str, depth: int) -> None:
        if self.output and value is False:
            return  # lenient output forbids nothing: `additionalProperties: false` goes
        out[key] = self._node(value, at, depth + 1, unwrap=False)

    def _required(self, value: Any, at: str) -> Any:
        if not isinstance(value, list):
            self._warn(at, "required must be a list of property names; dropped")
            return _INVALID
        names: list[str] = []
        for name in value:
            if not isinstance(name, str):
                self._warn(at, f"required entry {name!r} is not a string; dropped")
            elif name in names:
                self._warn(at, f"required lists {name!r} twice; deduplicated")
            else:
                names.append(name)
        return names if names else _INVALID

    def _dependent_required(self, value: Any, at: str) -> Any:
        if not isinstance(value, Mapping):
            self._warn(at, "dependentRequired must be an object; dropped")
            return _INVALID
        out: dict[str, Any] = {}
        for name, names in value.items():
            checked = self._required(names, refs.join(at, str(name)))
            out[str(name)] = [] if checked is _INVALID else checked
        return out

    def _enum(self, value: Any, at: str) -> Any:
        if not (isinstance(value, list) and value):
            self._warn(at, "enum must be a non-empty list; dropped")
            return _INVALID
        seen: set[str] = set()
        values: list[Any] = []
        for item in value:
            data = self._data(item, at)
            if data is _INVALID:
                continue
            key = json.dumps(data, sort_keys=True)
            if key in seen:
                self._warn(at, f"enum lists {data!r} twice; deduplicated")
                continue
            seen.add(key)
            values.append(data)
        return values if values else _INVALID

    def _data_keyword(self, key: str, value: Any, at: str) -> Any:
        if key == "examples" and not isinstance(value, list):
            self._warn(at, "examples must be a list; dropped")
            return _INVALID
        return self._data(value, at)

    def _data(self, value: Any, at: str) -> Any:
        try:
            return _json_value(value, 0)
        except _NotJson as exc:
            self._warn(at, f"value is not JSON data ({exc}); dropped")
            return _INVALID

    def _bound(
        self, out: dict[str, Any], key: str, value: Any, schema: Mapping[str, Any], at: str
    ) -> None:
        if isinstance(value, bool) and key.startswith("exclusive"):
            # OpenAPI 3.0: a flag on minimum/maximum, handled where that keyword is read.
            plain = "minimum" if key == "exclusiveMinimum" else "maximum"
            if value and plain not in schema:
                self._warn(at, f"{key}: true without {plain}; dropped")
            return
        number = self._number(value, at)
        if number is _INVALID:
            return
        if key in ("minimum", "maximum"):
            exclusive = "exclusiveM" + key[1:]
            if schema.get(exclusive) is True:
                out[exclusive] = number
                return
        out[key] = number

    def _number(self, value: Any, at: str) -> Any:
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or not math.isfinite(value)
        ):
            self._warn(at, f"{value!r} is not a finite number; dropped")
            return _INVALID
        return value

    def _positive_number(self, value: Any, at: str) -> Any:
        number = self._number(value, at)
        if number is not _INVALID and number <= 0:
            self._warn(at, f"multipleOf must be greater than 0, not {number!r}; dropped")
            return _INVALID
        return number

    def _count(self, value: Any, at: str) -> Any:
        if isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            self._warn(at, f"{value!r} is not a non-negative integer; dropped")
            return _INVALID
        return value

    def _pattern(self, value: Any, at: str) -> Any:
        if not isinstance(value, str) or not _compiles(value):
            # jsonschema's check of the schema would refuse it; the rest of the schema stays.
            self._warn(at, f"pattern {value!r} is not a valid regular expression; dropped")
            return _INVALID
        if linear_pattern(value) is None:
            # Look-around or back-references: kept for the model to read, but only a
            # backtracking engine runs them, so the server leaves them to the upstream (S27).
            self._warn(at, f"pattern {value!r}: {_UNCHECKED_PATTERN}")
        return value

    def _typed(self, value: Any, kind: type, what: str, at: str) -> Any:
        if not isinstance(value, kind):
            self._warn(at, f"{value!r} is not {what}; dropped")
            return _INVALID
        return value

    def _with_default(self, node: dict[str, Any], value: Any, at: str) -> dict[str, Any]:
        data = self._data(value, at)
        if data is _INVALID:
            return node
        if not _accepts(node, data):
            self._warn(at, f"default {data!r} does not match its own schema; dropped")
            return node
        return {**node, "default": data}


# -- cycle analysis -----------------------------------------------------------------------------


@functools.lru_cache(maxsize=65536)  # a large spec names the same few thousand targets
def _normalise(pointer: str) -> str:
    """One spelling per target: `#/a/b` with tokens escaped the canonical way."""
    try:
        tokens = refs.split(pointer)
    except refs.PointerError:
        return pointer
    return "#" + "".join("/" + refs.escape_token(token) for token in tokens)


def ref_targets(document: Any) -> set[str]:
    """Every local `$ref` target anywhere in the document (iterative: depth is unbounded)."""
    found: set[str] = set()
    stack = [document]
    while stack:
        node = stack.pop()
        kind = type(node)
        if kind in SCALAR_TYPES:  # most nodes; and the Mapping ABC check is slow
            continue
        if kind is dict or isinstance(node, Mapping):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith("#"):
                found.add(_normalise(ref))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _is_ref_loop(document: Any, node: Any, pointer: str) -> bool:
    """Whether following `$ref` after `$ref` from `node` comes back without meeting a schema."""
    seen = {pointer}
    while refs.is_ref(node):
        target = _normalise(node["$ref"])
        if target in seen:
            return True
        seen.add(target)
        try:
            node = refs.resolve_pointer(document, target)
        except refs.PointerError:
            return False
    return False


def _subschemas(node: Mapping[str, Any]) -> Iterator[Any]:
    """The direct subschemas of a schema object (not `$defs`: they are reached by `$ref`)."""
    for key in _SCHEMA_KEYS:
        if key in node:
            value = node[key]
            if isinstance(value, list):  # pre-2020 tuple `items`
                yield from value
            else:
                yield value
    if "additionalItems" in node:
        yield node["additionalItems"]
    for key in _SCHEMA_LIST_KEYS:
        value = node.get(key)
        if isinstance(value, list):
            yield from value
    for key in _SCHEMA_MAP_KEYS:
        value = node.get(key)
        if isinstance(value, Mapping):
            yield from value.values()


def _refs_in_schema(schema: Any) -> set[str]:
    """The `$ref` targets a schema uses, without following them."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if type(node) is not dict and not isinstance(node, Mapping):  # (the ABC check is slow)
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#"):
            found.add(_normalise(ref))
        stack.extend(_subschemas(node))
    return found


def _cyclic_nodes(edges: Mapping[str, list[str]]) -> set[str]:
    """Nodes on a cycle: strongly connected components (Tarjan, iterative) of size > 1, or with
    a self-loop."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cyclic: set[str] = set()

    def visit(node: str) -> Iterator[str]:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        return iter(edges[node])

    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, visit(start))]
        while work:
            node, successors = work[-1]
            for successor in successors:
                if successor not in edges:
                    continue
                if successor not in index:
                    work.append((successor, visit(successor)))
                    break
                if successor in on_stack:
                    low[node] = min(low[node], index[successor])
            else:
                work.pop()
                if work:
                    parent = work[-1][0]
                    low[parent] = min(low[parent], low[node])
                if low[node] == index[node]:
                    component = _pop_component(stack, on_stack, node)
                    if len(component) > 1 or node in edges[node]:
                        cyclic.update(component)
    return cyclic


def _pop_component(stack: list[str], on_stack: set[str], root: str) -> list[str]:
    component: list[str] = []
    while True:
        member = stack.pop()
        on_stack.discard(member)
        component.append(member)
        if member == root:
            return component


def _def_names(pointers: list[str]) -> dict[str, str]:
    """`$defs` names: the last pointer token, sanitised; `_2`, `_3` on clashes, in pointer
    order, so a name only changes when the document does."""
    names: dict[str, str] = {}
    used: set[str] = set()
    for pointer in pointers:
        tokens = refs.split(pointer)
        base = re.sub(r"[^A-Za-z0-9_.-]", "_", tokens[-1] if tokens else "") or "schema"
        name, suffix = base, 2
        while name in used:
            name, suffix = f"{base}_{suffix}", suffix + 1
        used.add(name)
        names[pointer] = name
    return names


_IN_PLACE_KEYS: Final = _words("allOf anyOf oneOf not if then else")


def _in_place_refs(schema: Any) -> set[str]:
    """`$defs` names a schema refers to without going down into the data."""
    found: set[str] = set()
    stack = [schema]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict):
            continue
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
            found.add(ref[len(_DEFS_PREFIX) :])
        for key in _IN_PLACE_KEYS:
            value = node.get(key)
            stack.extend(value if isinstance(value, list) else [value])
    return found


def _without_in_place(node: Any, own: str) -> Any:
    """`node` without the references to `own` reached without going down into the data: a
    branch `{$ref: own}` of allOf, anyOf or oneOf is dropped (a branch list left empty goes
    too), and a `$ref: own` beside other keywords is dropped."""
    if not isinstance(node, dict):
        return node
    out = {key: value for key, value in node.items() if not (key == "$ref" and value == own)}
    for key in _IN_PLACE_KEYS:
        value = out.get(key)
        if isinstance(value, list):
            kept = [_without_in_place(v, own) for v in value if v != {"$ref": own}]
            if kept:
                out[key] = kept
            else:
                del out[key]
        elif isinstance(value, dict):
            out[key] = _without_in_place(value, own)
    return out


def _without_self_reference(body: Any, own: str) -> Any:
    """Drop a schema's reference to itself at its own top level.

    Only merging puts one there: in `A: allOf [B, ...]`, `B: allOf [A, ...]`, B's body refers
    to A, which is being converted, and A's merged body then says "A and ...". A and A is A,
    and leaving it would make every validator recurse forever.
    """
    if not isinstance(body, dict):
        return body
    out = {key: value for key, value in body.items() if not (key == "$ref" and value == own)}
    if isinstance(out.get("allOf"), list):
        kept = [branch for branch in out["allOf"] if branch != {"$ref": own}]
        if kept:
            out["allOf"] = kept
        else:
            del out["allOf"]
    return out


# -- merging (allOf, and $ref with siblings) -----------------------------------------------------


class _Conflict(Exception):
    """Two schemas that cannot be written as one; they stay in an `allOf`."""


_INVALID: Final = object()


def _discriminated(branches: list[Any], raw: list[Any], discriminator: Any) -> list[Any]:
    """OpenAPI's `discriminator` said in JSON Schema (input mode): each `$ref` branch of a
    `oneOf`/`anyOf` holds only with the discriminating property set to a value that names it
    (its `mapping` keys, else the referenced schema's name, OpenAPI 4.8.25). Without it a
    value of one branch that also fits another (`{"method": "link"}` taking the branch that
    does not need `email`) passes the tool and is refused by the API. A branch that is a
    `$defs` reference (a cycle) is left as it is. New dicts: converted bodies are shared."""
    if not isinstance(discriminator, Mapping) or not isinstance(
        discriminator.get("propertyName"), str
    ):
        return branches
    name = discriminator["propertyName"]
    mapping = discriminator.get("mapping")
    mapping = mapping if isinstance(mapping, Mapping) else {}
    out: list[Any] = []
    for branch, source in zip(branches, raw, strict=True):
        ref = source.get("$ref") if isinstance(source, Mapping) else None
        properties = branch.get("properties") if isinstance(branch, dict) else None
        if not isinstance(ref, str) or not isinstance(properties, dict):
            out.append(branch)
            continue
        schema_name = ref.rsplit("/", 1)[-1]
        values = [str(k) for k, v in mapping.items() if v in (ref, schema_name)] or [schema_name]
        own = properties.get(name, {})
        own = own if isinstance(own, dict) else {}
        allowed = [v for v in own.get("enum", values) if v in values] or values
        narrowed = {k: v for k, v in own.items() if k not in ("enum", "const")}
        required = list(branch.get("required", []))
        out.append(
            {
                **branch,
                "properties": {**properties, name: {**narrowed, "enum": allowed}},
                "required": required if name in required else [*required, name],
            }
        )
    return out


def _merge_all(own: dict[str, Any], branches: list[Any]) -> dict[str, Any]:
    node = own
    residual: list[Any] = []
    for branch in branches:
        try:
            node = _merge(node, branch)
        except _Conflict:
            residual.append(branch)
    if residual:
        node = {**node, "allOf": [*node.get("allOf", []), *residual]}
    return node


def _merge(first: dict[str, Any], second: Any) -> dict[str, Any]:
    """One schema meaning `allOf: [first, second]`; raises `_Conflict` when there is none.

    Keys keep `first`'s order, so the node's own keywords (and its description) come first.
    """
    if second is True:
        return first
    if not isinstance(second, dict):
        raise _Conflict
    merged = dict(first)
    for key, value in second.items():
        if key not in merged:
            merged[key] = value
        elif merged[key] != value:
            merged[key] = _merge_keyword(key, merged[key], value)
    return merged


def _merge_keyword(key: str, a: Any, b: Any) -> Any:
    if key in ("properties", "patternProperties", "dependentSchemas"):
        return _merge_schema_maps(a, b)
    if key == "required":
        return [*a, *(name for name in b if name not in a)]
    if key == "type":
        return _intersect_types(a, b)
    if key == "enum":
        common = [value for value in a if value in b]
        if not common:
            raise _Conflict
        return common
    if key in ("additionalProperties", "unevaluatedProperties", "items", "unevaluatedItems"):
        return _merge_schemas(a, b)
    if key in ("minimum", "exclusiveMinimum") or (key.startswith("min") and key in _COUNT_KEYS):
        return max(a, b)
    if key in ("maximum", "exclusiveMaximum") or (key.startswith("max") and key in _COUNT_KEYS):
        return min(a, b)
    if key in ("readOnly", "writeOnly", "deprecated", "uniqueItems"):
        return bool(a or b)
    if key == "allOf":
        return [*a, *b]
    if key in _ANNOTATIONS or key in _STRING_KEYS:
        return a  # first wins: the node's own words, then the branches in order
    raise _Conflict  # pattern, const, anyOf, oneOf, not, $ref, ... that differ


def _merge_schemas(a: Any, b: Any) -> Any:
    """Two subschemas that must both hold: merged, or an `allOf` of both."""
    if a is True:
        return b
    if b is True or a == b:
        return a
    if a is False or b is False:
        # `additionalProperties: false` on one side closes the merged object: the intent of
        # `allOf: [Base(closed), {extra properties}]` is one closed object with all of them.
        return False
    try:
        return _merge(a, b)
    except _Conflict:
        return {"allOf": [a, b]}


def _merge_schema_maps(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(a)
    for name, schema in b.items():
        out[name] = _merge_schemas(out[name], schema) if name in out else schema
    return out


def _intersect_types(a: Any, b: Any) -> Any:
    left = a if isinstance(a, list) else [a]
    right = b if isinstance(b, list) else [b]
    common: list[str] = []
    for name in left:
        if name in right:
            common.append(name)
        elif {name, *right} >= {"integer", "number"} and name in ("integer", "number"):
            common.append("integer")  # every integer is a number
    common = list(dict.fromkeys(common))
    if not common:
        raise _Conflict
    return common[0] if len(common) == 1 else common


# -- nullable, null, defaults -------------------------------------------------------------------


def _nullable(node: dict[str, Any]) -> dict[str, Any]:
    """OpenAPI 3.0 `nullable: true` in 2020-12 terms."""
    if any(key in node for key in _COMPOSITION):
        # Branches and references reject null themselves, so null becomes an alternative.
        core = {k: v for k, v in node.items() if k not in _ANNOTATIONS}
        notes = {k: v for k, v in node.items() if k in _ANNOTATIONS}
        if list(core) == ["anyOf"]:  # one more alternative, not an anyOf inside an anyOf
            return {**notes, "anyOf": [*core["anyOf"], {"type": "null"}]}
        return {**notes, "anyOf": [core, {"type": "null"}]}
    out = dict(node)
    if "type" in out:
        out["type"] = _with_null(out["type"])
    if "enum" in out and None not in out["enum"]:
        out["enum"] = [*out["enum"], None]
    return out


def _map_subschemas(node: dict[str, Any], change: Callable[[Any], Any]) -> dict[str, Any]:
    """`node` with `change` applied to each direct subschema (data keywords untouched)."""
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
            out[key] = {name: change(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LIST_KEYS and isinstance(value, list):
            out[key] = [change(sub) for sub in value]
        elif key in _SCHEMA_KEYS:
            out[key] = change(value)
        else:
            out[key] = value
    return out


# Keywords that only apply to instances of one type: they follow that type into its branch.
_KEYS_BY_TYPE: Final = {
    "string": frozenset(
        _words("minLength maxLength pattern format contentMediaType contentEncoding")
    ),
    "number": frozenset(_words("minimum maximum exclusiveMinimum exclusiveMaximum multipleOf")),
    "object": frozenset(
        _words(
            "properties patternProperties additionalProperties unevaluatedProperties required "
            "minProperties maxProperties propertyNames dependentRequired dependentSchemas"
        )
    ),
    "array": frozenset(
        _words("items prefixItems unevaluatedItems minItems maxItems uniqueItems contains")
        + _words("minContains maxContains")
    ),
}
_KEYS_BY_TYPE_INTEGER: Final = _KEYS_BY_TYPE["number"]


def _split_type_lists(node: Any, shared: dict[int, tuple[Any, Any]] | None = None) -> Any:
    """Every `type: [a, b]` as `anyOf: [{type: a, ...}, {type: b, ...}]`, recursively.

    Both are JSON Schema 2020-12, but clients that map tool schemas onto single-type dialects
    (and the MCP Inspector's strict mode) reject type lists; `anyOf` is understood everywhere.
    Keywords that apply to one type go into that type's branch; the rest stay outside.
    `shared` reuses (and records) the split form of each node by identity (output mode: the
    nodes are shared between roots, and the result may be too).
    """
    if not isinstance(node, dict):
        return node
    if shared is not None:
        found = shared.get(id(node))
        if found is not None and found[0] is node:
            return found[1]
    split = _split_node(node, shared)
    if shared is not None:
        shared[id(node)] = (node, split)
    return split


def _split_node(node: dict[str, Any], shared: dict[int, tuple[Any, Any]] | None) -> Any:
    out = _map_subschemas(node, lambda sub: _split_type_lists(sub, shared))
    if isinstance(out.get("$defs"), dict):
        out["$defs"] = {name: _split_type_lists(sub, shared) for name, sub in out["$defs"].items()}
    kinds = out.get("type")
    if not isinstance(kinds, list):
        return out
    if len(kinds) == 1:
        out["type"] = kinds[0]
        return out
    branches = []
    moved: set[str] = set()
    for kind in kinds:
        own = _KEYS_BY_TYPE_INTEGER if kind == "integer" else _KEYS_BY_TYPE.get(kind, frozenset())
        branch = {"type": kind, **{k: v for k, v in out.items() if k in own}}
        moved |= own & set(out)
        branches.append(branch)
    rest = {k: v for k, v in out.items() if k != "type" and k not in moved}
    if "anyOf" in rest:
        rest["allOf"] = [*rest.get("allOf", []), {"anyOf": branches}]
    else:
        rest["anyOf"] = branches
    return rest


def _with_null(value: Any) -> list[str]:
    names = value if isinstance(value, list) else [value]
    return names if "null" in names else [*names, "null"]


def _drop_root_null(root: dict[str, Any]) -> dict[str, Any]:
    names = root.get("type")
    if isinstance(names, list) and "null" in names and len(names) > 1:
        kept = [name for name in names if name != "null"]
        return {**root, "type": kept[0] if len(kept) == 1 else kept}
    return root


def _accepts(schema: dict[str, Any], value: Any) -> bool:
    try:
        return bool(spec_validator(schema).is_valid(value))
    except Unresolvable:
        # A default under a `#/$defs/...` reference cannot be checked before the root exists;
        # keep it rather than drop something that may well be right.
        return True


# -- finishing: copy, close objects, drop read-only / write-only properties ---------------------


def _finalize(node: Any, *, output: bool, shared: dict[int, tuple[Any, Any]] | None = None) -> Any:
    """A copy of a converted schema with the per-mode rules that must come after merging:
    input closes declared objects and drops read-only properties; output drops write-only
    properties. Without `shared` the copy is private; with it (output mode), each node's
    copy is made once and shared by whoever finishes that node again."""
    if not isinstance(node, dict):
        return node
    if shared is not None:
        found = shared.get(id(node))
        if found is not None and found[0] is node:
            return found[1]
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
            out[key] = {
                name: _as_object(_finalize(sub, output=output, shared=shared))
                for name, sub in value.items()
            }
        elif key in _SCHEMA_LIST_KEYS and isinstance(value, list):
            out[key] = [_as_object(_finalize(sub, output=output, shared=shared)) for sub in value]
        elif key in _SCHEMA_KEYS:
            out[key] = _finalize(value, output=output, shared=shared)
        else:
            out[key] = _copy_data(value)
    if output:
        _drop_flagged_properties(out, "writeOnly")
    else:
        _close(out)
        _drop_flagged_properties(out, "readOnly")
    if shared is not None:
        shared[id(node)] = (node, out)
    return out


def _as_object(schema: Any) -> Any:
    """Boolean schemas as objects where consumers look inside (a property, a branch); they stay
    booleans where they usually are (`additionalProperties: false`)."""
    if schema is True:
        return {}
    if schema is False:
        return {"not": {}}
    return schema


def _close(node: dict[str, Any]) -> None:
    """Strict input: an object with declared properties accepts nothing else, unless the spec
    says what else it accepts. An object with no properties is free-form and stays open.

    Declared properties without a `type` (Xero's, many converted specs') say an object: the
    typed models read them so, and JSON Schema alone would accept any string there, such as
    an example that is the object's JSON text, which the models then refuse."""
    if not node.get("properties"):
        return
    if "type" not in node and not _COMPOSITION_KEYS & node.keys():
        node["type"] = "object"
    if "additionalProperties" in node or "unevaluatedProperties" in node:
        return
    names = node.get("type", "object")
    if "object" in (names if isinstance(names, list) else [names]):
        # A required name the spec gives no schema for (figma's webhook `team_id`) is still
        # required: any value, rather than closed out, which no object could then satisfy.
        missing = [n for n in node.get("required", ()) if n not in node["properties"]]
        if missing:
            node["properties"] = {**node["properties"], **{name: {} for name in missing}}
        node["additionalProperties"] = False


def _drop_flagged_properties(node: dict[str, Any], flag: str) -> None:
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return
    dropped = [
        name for name, sub in properties.items() if isinstance(sub, dict) and sub.get(flag) is True
    ]
    if not dropped:
        return
    node["properties"] = {k: v for k, v in properties.items() if k not in dropped}
    if "required" in node:
        required = [name for name in node["required"] if name not in dropped]
        if required:
            node["required"] = required
        else:
            del node["required"]


# -- data values ---------------------------------------------------------------------------------


class _NotJson(ValueError):
    pass


_MAX_DATA_DEPTH: Final = 100


def _json_value(value: Any, depth: int) -> Any:
    """A JSON copy of spec data (default, example, enum, const). YAML gives dates and may give
    non-string keys; tools.json needs plain JSON."""
    if depth > _MAX_DATA_DEPTH:
        raise _NotJson(f"nested more than {_MAX_DATA_DEPTH} levels")
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise _NotJson(f"{value!r} is not a finite number")
        return value
    if isinstance(value, datetime | date | time):
        return value.isoformat()
    if isinstance(value, Mapping):
        return {str(k): _json_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_value(v, depth + 1) for v in value]
    raise _NotJson(f"a {type(value).__name__}")


def _copy_data(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _copy_data(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_data(v) for v in value]
    return value


def _checkable(pattern: str) -> bool:
    """Whether the server can check `pattern`: in linear time (runtime/patterns.py: no
    look-around, no back-references), and past jsonschema's own check of the schema."""
    return _compiles(pattern) and linear_pattern(pattern) is not None


def _compiles(pattern: str) -> bool:
    """Whether Python's `re` compiles `pattern`, as jsonschema's check of a schema does."""
    try:
        re.compile(pattern)
    except re.error:
        return False
    return True
