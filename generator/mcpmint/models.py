"""Typed models: pydantic classes for every tool's arguments, and for results.

datamodel-code-generator writes the classes from the tools' own (already converted) schemas,
not from the whole OpenAPI document: only what tools need is modelled. Spec text never
becomes code: the schemas handed over keep only structure (types, properties, items,
composition, enums), and the code that comes back is audited node by node before use.
A tool class that is a closed object of plain fields is written here instead (`plain_class`),
as the same text (but for the names of nested classes, made from the tool's class and the
property names): spec text reaches it only as checked identifiers and quoted enum values.

Result models are for every tool, or for handler tools only (`every_result=False`): a
handler returns its result model, while an HTTP tool's result is the upstream's JSON, which
no generated code parses. On a large API every result model is megabytes of code and most
of the generation time (GitHub: 1.7 MB and 15 of 17 s), so `output.result_models: auto`
keeps them to handler tools there (largeapi.result_models_for).
"""

from __future__ import annotations

import ast
import hashlib
import json
import keyword
import re
import sys
import warnings
from collections.abc import Mapping
from typing import Any

from . import ir, naming
from .background import Shared
from .cache import StageCache, cache_key
from .diagnostics import Diagnostic, DiagnosticSink
from .schema import ref_targets

# Keywords that shape a type. Everything else (descriptions, titles, examples, defaults,
# patterns, bounds) stays out of the models: it lives in tools.json, checked at run time.
_STRUCTURAL = frozenset(
    {
        "type",
        "properties",
        "required",
        "items",
        "prefixItems",
        "additionalProperties",
        "anyOf",
        "oneOf",
        "allOf",
        "$ref",
        "enum",
        "const",
    }
)
# The distributions whose code writes the models (they key the cache).
_LIBRARIES = ("datamodel-code-generator", "pydantic")
_CLASS_LINE = re.compile(r"^class (\w+)\(", re.MULTILINE)
_ALLOWED_CALLS = frozenset({"Field", "ConfigDict"})
_ALLOWED_NODES = (
    ast.Module,
    ast.ImportFrom,
    ast.alias,
    ast.ClassDef,
    ast.AnnAssign,
    ast.Assign,
    ast.Expr,
    ast.Name,
    ast.Attribute,
    ast.Subscript,
    ast.Tuple,
    ast.List,
    ast.Dict,  # `__annotations__ = {"__pydantic_extra__": dict[str, str]}` for typed maps
    ast.Constant,
    ast.Call,
    ast.keyword,
    ast.BinOp,
    ast.BitOr,
    ast.UnaryOp,
    ast.USub,
    ast.Load,
    ast.Store,
    ast.Pass,
)


# Servers with at least this many tools get their models from the second process while this
# one builds the test cases, the lock and the other files, then helps (background.Shared).
BACKGROUND_MIN_TOOLS = 200
# ... and in `GROUPS` groups from this many tools on: an edit makes one group again, and the
# runs together take less time than one (GitHub: 1.65 s in 16 runs, 1.85 s in one, measured
# before its plain classes were written here).
GROUP_MIN_TOOLS = 200
GROUPS = 16
# datamodel-code-generator's import and first run in a process take about as long as making
# this much of a group's schema text (0.15-0.18 s at 3.5-5.4 µs a byte: GitHub, Stripe and
# Asana, measured): this process, which has not imported it yet, makes none of the groups the
# second process has not started when they are less than that, and waits for them instead.
_IMPORT_AS_TEXT = 40_000


def models_source(
    server: ir.Server,
    sink: DiagnosticSink,
    cache: StageCache | None = None,
    *,
    every_result: bool = True,
) -> str:
    """Python source of the models module (unformatted), or "" when it cannot be made.

    `every_result`: a result model for every tool with an output schema; False: for handler
    tools only (the module says so above its `RESULTS` map).

    datamodel-code-generator's output is a function of the combined structural schema alone
    (no descriptions, examples or bounds reach it), so `cache` reuses it whenever that schema
    is unchanged: a changed description, summary or bound costs no model generation.
    """
    return PendingModels(server, cache, every_result=every_result).join(sink)


class PendingModels:
    """The models module being made, in a forked second process on a large server
    (background.py); `join` gives what `models_source` returns.

    A large server's models are made in `GROUPS` groups of tools (by a digest of the tool's
    name), each group one datamodel-code-generator run over its tools' classes and what they
    use, cached on its own: an edit that changes one tool's structure makes that group again,
    not every model. The groups' modules are merged into one (`merge_modules`).
    """

    def __init__(
        self,
        server: ir.Server,
        cache: StageCache | None,
        *,
        every_result: bool = True,
    ) -> None:
        """Looks the groups up in `cache` and queues those to be made on the second process
        (background.py), when the server is large enough for that to pay."""
        document, self.names = _combined_schema(server, every_result)
        self.server, self.cache, self.every_result = server, cache, every_result
        # Plain classes are written here; datamodel-code-generator makes the others.
        self.plain, rest = plain_classes(document["$defs"], self.names)
        groups = GROUPS if len(server.tools) >= GROUP_MIN_TOOLS else 1
        texts = [json.dumps(part, sort_keys=True) for part in _split(document, rest, groups)]
        self.keys = [
            cache_key("models", hashlib.sha256(text.encode("utf-8")).hexdigest(), *_LIBRARIES)
            for text in texts
        ]
        stored = [cache.get("models", key) if cache is not None else None for key in self.keys]
        # A stored module is audited like a fresh one: the cache folder is not trusted more
        # than the generator. The merged module is not kept: merging the audited groups with
        # the plain classes again takes less than auditing it would (GitHub: 0.06 s against
        # 0.13 s, its 0.37 MB being mostly plain classes).
        self.sources: list[str | None] = [
            source if isinstance(source, str) and not audit(source) else None for source in stored
        ]
        self.missing = [i for i, source in enumerate(self.sources) if source is None]
        self.location = server.source_file or "<spec>"
        # One group of many (one tool's structure changed) is a tenth of a second: made here
        # at `join`, without the second process.
        worth_it = len(server.tools) >= BACKGROUND_MIN_TOOLS and (
            len(self.missing) > 1 or len(texts) == 1
        )
        # The largest groups first: the second process takes jobs from the front, this one
        # from the back, so the last ones, where the two meet, are the quickest.
        self.missing.sort(key=lambda i: (-len(texts[i]), i))
        jobs = [(texts[i], self.location) for i in self.missing]
        sizes = [len(text) for text, _ in jobs]

        def helps(unclaimed: range) -> bool:
            imported = "datamodel_code_generator" in sys.modules
            return imported or sum(sizes[i] for i in unclaimed) >= _IMPORT_AS_TEXT

        self._jobs = Shared(_generate, jobs, worth_it=worth_it, helps=helps) if jobs else None

    def join(self, sink: DiagnosticSink) -> str:
        """The module's source, or "" with the errors in `sink`."""
        if self._jobs is not None:
            made = self._jobs.results()
            self._jobs = None
            for index, (source, found) in zip(self.missing, made, strict=True):
                sink.extend(found)
                if source and self.cache is not None:
                    self.cache.put("models", self.keys[index], source)
                self.sources[index] = source
        sources = [source for source in self.sources if source]
        if len(sources) < len(self.sources):
            return ""  # the errors are in the sink
        if not sources:
            source = plain_module(self.plain)
        elif len(sources) == 1 and not self.plain:
            source = sources[0]
        else:
            source = merge_modules(sources, plain=self.plain)
        names = self.names
        defined = set(_CLASS_LINE.findall(source))
        missing = [c for pair in names.values() for c in pair if c and c not in defined]
        if missing:
            sink.error(
                self.server.source_file or "<spec>",
                f"typed models: classes missing: {missing[:5]}",
            )
            return ""
        body = source.split("from __future__ import annotations", 1)[-1].rstrip("\n")
        return "from __future__ import annotations\n" + body + _registry(names, self.every_result)


# --------------------------------------------------------------------- plain classes
# A tool's arguments are most often a closed object of plain fields (GitHub: 1,195 of 1,223),
# and its result an open one: strings, numbers, booleans, string enums, objects of plain
# fields, unions of those, lists and maps of them, a value or null (every class of 14 of the
# 21 corpus specs). For such a class datamodel-code-generator's output
# is fixed text, which `plain_class` writes itself, the same text but for the names of nested
# classes (tests/test_model_groups.py compares both on every corpus spec and on every shape the
# grammar below allows): a millisecond each instead of its run, most of the typed models' time
# on a large API, and its import (0.15 s) in a process that has no other class to make.

_PLAIN_TYPES: dict[str, str] = {
    "string": "str",
    "integer": "int",
    "number": "float",
    "boolean": "bool",
}
# datamodel-code-generator keeps a field's name as it is when it is an identifier of ASCII
# letters, digits and underscores that starts with a letter (camelCase and capitals too:
# Docker's `detachKeys`, `Data`); it renames others (`assigned_by.any`, `_id`) with aliases.
_PLAIN_NAME = re.compile(r"[A-Za-z][A-Za-z0-9_]*")
# Field names datamodel-code-generator renames (`str`, `dict`: `str_` with an alias), or that
# would shadow what the class body uses: pydantic's `BaseModel` attributes (besides `model_*`;
# a test keeps this list whole), the builtins the annotations name, the imports. Other
# builtins (`type`, `filter`, `all`, ...) are written as they are, by both.
_BASE_MODEL_NAMES = (
    "construct copy dict from_orm json parse_file parse_obj parse_raw schema schema_json "
    "update_forward_refs validate"
)
_ANNOTATION_NAMES = "str int float bool list dict None"
_IMPORTED_NAMES = "annotations Any Literal BaseModel ConfigDict Field RootModel"
_TAKEN_NAMES = frozenset(
    [*_BASE_MODEL_NAMES.split(), *_ANNOTATION_NAMES.split(), *_IMPORTED_NAMES.split()]
)
_PLAIN_HEADER = "from __future__ import annotations\n\n"
# How datamodel-code-generator closes an object (`additionalProperties: false`).
_CLOSED = ("    model_config = ConfigDict(", "        extra='forbid',", "    )")
# What a plain class may import beyond `BaseModel` and `ConfigDict`, by module, found in its
# text outside the quoted enum values (which hold no quote: `_plain_value`).
_QUOTED = re.compile(r"'[^']*'")
_WORD = re.compile(r"\w+")
_USES = {
    ("typing", "Any"): re.compile(r"\bAny\b"),
    ("typing", "Literal"): re.compile(r"\bLiteral\["),
    ("pydantic", "Field"): re.compile(r"= Field\("),
}


def plain_classes(
    defs: dict[str, Any], names: Mapping[str, tuple[str, str]]
) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """Every tool class in `defs` that `plain_class` can write, and the classes of the
    objects in its fields, by name, as text (the tool classes taken out of `defs`), and `names`
    with those tool classes left out (what datamodel-code-generator makes)."""
    written: dict[str, str] = {}
    rest: dict[str, tuple[str, str]] = {}
    taken = set(defs)  # the names of the classes datamodel-code-generator may make
    for tool, pair in names.items():
        kept = []
        for class_name in pair:
            classes = plain_class(class_name, defs[class_name], taken) if class_name else None
            if classes is None:
                kept.append(class_name)
            else:
                written.update(classes)
                del defs[class_name]
                kept.append("")
        rest[tool] = (kept[0], kept[1])
    return written, rest


def plain_imports(classes: Mapping[str, str]) -> dict[str, set[str]]:
    """What the plain `classes` import, by module."""
    imports = {"__future__": {"annotations"}, "pydantic": {"BaseModel", "ConfigDict"}}
    for text in classes.values():
        code = _QUOTED.sub("", text)
        for (module, name), used in _USES.items():
            if used.search(code):
                imports.setdefault(module, set()).add(name)
    return imports


def plain_module(classes: Mapping[str, str]) -> str:
    """The module of the plain `classes` ("" for none), as datamodel-code-generator would
    lay it out."""
    if not classes:
        return ""
    imports = plain_imports(classes)
    lines = [f"from pydantic import {', '.join(sorted(imports['pydantic']))}\n"]
    if "typing" in imports:
        lines.insert(0, f"from typing import {', '.join(sorted(imports['typing']))}\n\n")
    return _PLAIN_HEADER + "".join(lines) + "\n\n" + "\n\n".join(classes.values())


def plain_class(name: str, schema: Any, taken: set[str] | None = None) -> dict[str, str] | None:
    """The classes written for the closed object `schema`, or the open one with properties (a
    result; structural keywords only) as class `name`, when every field is plain, by name: the
    objects in its fields first, each named after where it is (`{name}{Field}`, then `Item`
    for a list's items, `Value` for a map's values; `2`, `3` on a clash with `taken`, which
    records the names given), `name` last. None when a field is not plain (and `taken` is left
    as it was).

    A class without nested objects is the text datamodel-code-generator writes; one with them
    is the same but for the nested classes' names (it names them after the property alone,
    which two groups' modules may both use for different shapes)."""
    if not name.isidentifier() or keyword.iskeyword(name):  # the tool's class: checked again
        return None
    writer = _PlainWriter(set() if taken is None else taken)
    if writer.object_class(name, schema):
        return writer.classes
    writer.taken.difference_update(writer.named)
    return None


class _PlainWriter:
    """One tool class and the classes of the closed objects in it, as `plain_class` writes
    them."""

    def __init__(self, taken: set[str]) -> None:
        self.taken = taken
        self.named: list[str] = []  # the nested classes' names this writer took
        self.classes: dict[str, str] = {}

    def object_class(self, name: str, schema: Any) -> bool:
        """Writes class `name` for the closed object `schema`, or the open object with
        `properties` (a result), after the classes its fields need; False when it is neither,
        or a field is not plain."""
        closed = _closed_object(schema)
        if not closed and not (_open_object(schema) and "properties" in schema):
            return False
        properties = schema.get("properties", {})
        required = schema.get("required", [])
        if not isinstance(properties, dict) or not isinstance(required, list):
            return False
        if not set(required) <= set(properties) or len(set(required)) != len(required):
            return False
        # An open object is pydantic's default (extra keys ignored); one without fields is
        # an empty class body.
        lines = [f"class {name}(BaseModel):", *(_CLOSED if closed else ())]
        if not closed and not properties:
            lines.append("    pass")
        annotations: list[str] = []
        for field in sorted(properties):
            if not _plain_field_name(field):
                return False
            nested = len(self.named)
            members = self.members(properties[field], name + naming.pascal(field), field=True)
            if members is None:
                return False
            if len(self.named) > nested and not field[0].islower():
                # datamodel-code-generator names the class after the field (`Templating`),
                # then renames the field (`Templating_1`, with an alias): its own text.
                return False
            annotations.extend(members)
            # An empty closed object right in a field is an empty dict: it says so there.
            empty = _closed_object(properties[field]) and not properties[field].get("properties")
            if field in required:
                bound = " = Field(..., max_length=0)" if empty else ""
                lines.append(f"    {field}: {_union(members)}{bound}")
            else:
                bound = "Field(None, max_length=0)" if empty else "None"
                lines.append(f"    {field}: {_union((*members, 'None'))} = {bound}")
        # A field named like a class its annotations use would hide that class from pydantic
        # (`Owner: Owner | None = None`); datamodel-code-generator renames such a field.
        used = {word for text in annotations for word in _WORD.findall(_QUOTED.sub("", text))}
        if not used.isdisjoint(properties):
            return False
        self.classes[name] = "\n".join(lines) + "\n"
        return True

    def members(self, schema: Any, place: str, field: bool = False) -> tuple[str, ...] | None:
        """The members of a plain field's type, as datamodel-code-generator writes them
        (`"None"` for null), or None when the field is not plain. Plain is: `{"type": t}` for
        a string, integer, number or boolean; a string enum (`Literal['a', 'b']`); an open
        object, with `additionalProperties: true` or without it (`dict[str, Any]`); a closed
        or open object of plain fields (a class named after `place`), or of none (`dict[str,
        Any]` too: only a field says its length is 0); an array or a map of a plain value
        (`list[...]`, `dict[str, ...]`); the `anyOf` or `oneOf` of plain values, which it
        flattens into one union; as a `field`'s own type (not in a union, list or map), a
        nullable string enum (`_nullable_enum`)."""
        if not isinstance(schema, dict):
            return None
        keys = set(schema)
        kind = schema.get("type")
        if keys == {"type"}:
            if kind == "object":  # an open object without properties
                return ("dict[str, Any]",)
            scalar = _PLAIN_TYPES.get(kind) if isinstance(kind, str) else None
            return (scalar,) if scalar is not None else None
        if keys == {"type", "enum"} and kind == "string":
            values = schema["enum"]
            if isinstance(values, list) and values and all(_plain_value(v) for v in values):
                return ("Literal[" + ", ".join(repr(v) for v in values) + "]",)
            return None
        if _closed_object(schema) or (_open_object(schema) and "properties" in schema):
            if not schema.get("properties"):  # an empty dict (whose length only a field bounds)
                return ("dict[str, Any]",)
            name = naming.unique(place, self.taken, separator="")
            self.named.append(name)
            return (name,) if self.object_class(name, schema) else None
        if keys == {"type", "items"} and kind == "array":
            inner = self.members(schema["items"], place + "Item")
            return (f"list[{_union(inner)}]",) if inner is not None else None
        if keys == {"type", "additionalProperties"} and kind == "object":
            values = schema["additionalProperties"]
            if values is True:
                return ("dict[str, Any]",)
            inner = self.members(values, place + "Value") if isinstance(values, dict) else None
            return (f"dict[str, {_union(inner)}]",) if inner is not None else None
        if keys in ({"anyOf"}, {"oneOf"}):
            options = schema["anyOf" if "anyOf" in keys else "oneOf"]
            if not isinstance(options, list) or not options:
                return None
            found: list[str] = []
            for option in options:
                inner = ("None",) if option == {"type": "null"} else self.members(option, place)
                if inner is None:
                    return None
                found.extend(inner)
            return tuple(found) if set(found) != {"None"} else None
        if keys in ({"anyOf", "enum"}, {"oneOf", "enum"}) and field:
            # Only a field's own: in a union, a list or a map datamodel-code-generator drops
            # its `None`, or not, by rules of its own.
            return _nullable_enum(schema)
        return None


def _nullable_enum(schema: dict[str, Any]) -> tuple[str, ...] | None:
    """The members of a nullable string enum (`type: [string, null]` with an `enum`, as the
    converter splits it: `{"anyOf": [string, null], "enum": [...]}`), as datamodel-code-
    generator writes them: `Literal[...]` and `None`; when `null` is one of the values, the
    `Literal` twice (`Literal['a'] | Literal['a'] | None`: its text, kept). None otherwise."""
    options = schema.get("anyOf", schema.get("oneOf"))
    values = schema["enum"]
    kinds = [{"type": "string"}, {"type": "null"}]
    if not isinstance(options, list) or options not in (kinds, kinds[::-1]):
        return None
    if not isinstance(values, list):
        return None
    strings = [value for value in values if value is not None]
    if not strings or not all(_plain_value(value) for value in strings):
        return None
    literal = "Literal[" + ", ".join(repr(value) for value in strings) + "]"
    return (f"{literal} | {literal}" if None in values else literal, "None")


def _closed_object(schema: Any) -> bool:
    """`{"type": "object", "additionalProperties": false}`, with `properties` and `required`
    or without, and no other keyword."""
    return (
        isinstance(schema, dict)
        and schema.get("type") == "object"
        and schema.get("additionalProperties") is False
        and not set(schema) - {"type", "properties", "required", "additionalProperties"}
    )


def _open_object(schema: Any) -> bool:
    """`{"type": "object"}` with `properties` and `required` or without, and no other
    keyword (extra keys allowed: a result's objects)."""
    return (
        isinstance(schema, dict)
        and schema.get("type") == "object"
        and not set(schema) - {"type", "properties", "required"}
    )


def _plain_field_name(name: str) -> bool:
    return (
        _PLAIN_NAME.fullmatch(name) is not None
        and not keyword.iskeyword(name)
        and not keyword.issoftkeyword(name)
        and not name.startswith("model_")
        and name not in _TAKEN_NAMES
    )


def _union(members: tuple[str, ...]) -> str:
    """`a | b`, each member once, in order, with `None` last."""
    unique = list(dict.fromkeys(members))
    if "None" in unique:
        unique.remove("None")
        unique.append("None")
    return " | ".join(unique)


def _plain_value(value: Any) -> bool:
    """A string whose repr is itself in quotes (no quote, backslash or unprintable character):
    written the same way by both."""
    return type(value) is str and value.isprintable() and not any(c in value for c in "'\"\\")


def _split(
    document: dict[str, Any], names: Mapping[str, tuple[str, str]], groups: int
) -> list[dict[str, Any]]:
    """The combined schema as `groups` documents: each holds the classes of the tools whose
    name falls in its group and every `$defs` entry they use (shared ones in several)."""
    if groups == 1:  # none when every class is plain: nothing for the generator to make
        return [document] if document["$defs"] else []
    defs: dict[str, Any] = document["$defs"]
    buckets: list[list[str]] = [[] for _ in range(groups)]
    for tool, pair in sorted(names.items()):
        digest = hashlib.sha256(tool.encode("utf-8")).digest()
        buckets[int.from_bytes(digest[:8], "big") % groups].extend(c for c in pair if c)
    parts = []
    for roots in buckets:
        needed: set[str] = set()
        todo = list(roots)
        while todo:
            name = todo.pop()
            if name not in needed:
                needed.add(name)
                todo.extend(_def_refs(defs[name]) - needed)
        if needed:
            parts.append({"$defs": {name: defs[name] for name in sorted(needed)}})
    return parts


def _def_refs(node: Any) -> set[str]:
    """The `$defs` names a structural schema refers to."""
    return {t[len("#/$defs/") :] for t in ref_targets(node) if t.startswith("#/$defs/")}


def merge_modules(sources: list[str], plain: Mapping[str, str] | None = None) -> str:
    """One module from several audited model modules (one per group), in order.

    A class defined the same way in an earlier module (a component two groups use) is kept
    once. A name an earlier module defines differently (datamodel-code-generator names a
    nested object after its property, so two groups may both have an `Owner`) is renamed,
    with every reference to it in its own module, until nothing clashes; only statements that
    mention a renamed class are rewritten (`ast.unparse`; the one ruff pass formats them).

    `plain` (`plain_classes`, by name) come first, as the first of `sources` would, without
    being parsed (a third of the merge on GitHub): they are distinct tool classes, so only a
    later module's class of the same name is ever compared with one, parsed then.
    """
    plain_defs = dict(plain or {})
    trees = [ast.parse(source) for source in sources]
    # Imported names are one namespace with the classes: a module without pydantic's `Field`
    # in use may call a class `Field`, which the merged module imports for the others.
    imports: dict[str, set[str]] = plain_imports(plain_defs) if plain_defs else {}
    imported = {name for names in imports.values() for name in names}
    for tree in trees:
        for statement in tree.body:
            if isinstance(statement, ast.ImportFrom):
                aliases = imports.setdefault(statement.module or "", set())
                aliases.update(_alias_text(alias) for alias in statement.names)
                imported.update(alias.asname or alias.name for alias in statement.names)
    if not imported.isdisjoint(plain_defs):  # a plain class to rename: merge it as parsed
        return merge_modules([plain_module(plain_defs), *sources])
    # Class name -> its definition, as kept (a plain class's text until it is compared).
    defined: dict[str, ast.stmt | str] = dict(plain_defs)
    classes_at: list[bool] = [True] * len(plain_defs)  # whether each piece of `body` is a class
    dumps: dict[str, str] = {}  # class name -> `ast.dump` of that, made when first compared

    def kept_dump(name: str) -> str:
        if name not in dumps:
            kept = defined[name]
            dumps[name] = ast.dump(ast.parse(kept).body[0] if isinstance(kept, str) else kept)
        return dumps[name]

    taken: set[str] = set(imported) | set(plain_defs)
    body: list[str] = [text.rstrip() for text in plain_defs.values()]
    first = 2 if plain_defs else 1  # the plain classes are the first module
    for index, (source, tree) in enumerate(zip(sources, trees, strict=True), start=first):
        lines = source.splitlines(keepends=True)
        texts = {id(node): _statement_text(node, lines) for node in tree.body}
        classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
        taken.update(node.name for node in classes)
        renames: dict[str, str] = {}
        settled = False
        while not settled:
            settled = True
            for node in classes:
                if node.name in renames:
                    continue
                clash = node.name in imported or (
                    node.name in defined
                    and kept_dump(node.name) != ast.dump(_renamed(node, renames, texts[id(node)]))
                )
                if clash:
                    renames[node.name] = naming.unique(f"{node.name}G{index}", taken)
                    settled = False
        for statement in tree.body:
            if isinstance(statement, ast.ImportFrom):
                continue
            final = _renamed(statement, renames, texts[id(statement)])
            name = final.name if isinstance(final, ast.ClassDef) else None
            if name is not None and name in defined:
                continue  # the same class, kept from an earlier module
            if name is not None:
                defined[name] = final
            if final is statement:  # top-level statements are whole lines: copied as written
                body.append(texts[id(statement)].rstrip())
            else:
                body.append(ast.unparse(final))
            classes_at.append(isinstance(final, ast.ClassDef))
    sections: list[list[str]] = [[], [], []]  # __future__, the standard library, the others
    for module, imported in sorted(imports.items()):
        top = module.split(".")[0]
        section = 0 if top == "__future__" else 1 if top in sys.stdlib_module_names else 2
        sections[section].append(f"from {module} import {', '.join(sorted(imported))}\n")
    head = "\n".join("".join(lines) for lines in sections if lines)
    # Two blank lines around a class; statements that follow each other (`X.model_rebuild()`)
    # stay on consecutive lines, as in one module.
    text = body[0] if body else ""
    for index in range(1, len(body)):
        together = not classes_at[index] and not classes_at[index - 1]
        text += ("\n" if together else "\n\n\n") + body[index]
    return head + "\n\n" + text + "\n"


def _alias_text(alias: ast.alias) -> str:
    return f"{alias.name} as {alias.asname}" if alias.asname else alias.name


def _statement_text(statement: ast.stmt, lines: list[str]) -> str:
    """A top-level statement's source: its whole lines, decorators included."""
    first = min(n.lineno for n in [statement, *getattr(statement, "decorator_list", [])])
    return "".join(lines[first - 1 : statement.end_lineno])


def _renamed(node: ast.stmt, renames: Mapping[str, str], text: str) -> ast.stmt:
    """A copy of `node` (whose source is `text`) with the names in `renames` replaced (class
    names and references)."""
    if not any(name in text for name in renames):  # a name in the tree is in the text
        return node
    touched = any(
        (isinstance(item, ast.ClassDef) and item.name in renames)
        or (isinstance(item, ast.Name) and item.id in renames)
        for item in ast.walk(node)
    )
    if not touched:
        return node
    copy = ast.parse(ast.unparse(node)).body[0]
    for item in ast.walk(copy):
        if isinstance(item, ast.ClassDef) and item.name in renames:
            item.name = renames[item.name]
        elif isinstance(item, ast.Name) and item.id in renames:
            item.id = renames[item.id]
    return copy


def _generate(text: str, location: str) -> tuple[str, list[Diagnostic]]:
    """datamodel-code-generator over the combined schema `text`, audited: the source, or ""
    and the errors to report at `location` (a pure function: it may run in another process)."""
    sink = DiagnosticSink()
    try:
        from datamodel_code_generator import InputFileType, LiteralType, PythonVersion, generate
        from datamodel_code_generator.enums import DataModelType

        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            source = generate(
                text,
                input_file_type=InputFileType.JsonSchema,
                output_model_type=DataModelType.PydanticV2BaseModel,
                target_python_version=PythonVersion.PY_311,
                disable_timestamp=True,
                enum_field_as_literal=LiteralType.All,
                use_standard_collections=True,
                use_union_operator=True,
                use_schema_description=False,
                use_field_description=False,
                formatters=[],  # the one ruff pass at the end formats models.py with the rest
                class_name="AnyValue",
            )
    except Exception as exc:
        sink.error(
            location,
            f"typed models could not be generated: {type(exc).__name__}: {str(exc)[:300]}",
            "report this with the spec attached; meanwhile simplify the schema it names",
        )
        return "", sink.items
    if not isinstance(source, str):
        sink.error(location, "typed models: unexpected generator output")
        return "", sink.items
    problem = audit(source)
    if problem:
        sink.error(
            location,
            f"typed models failed the code audit ({problem}); nothing was written",
            "this is a bug in the model generator's escaping; report it with the spec",
        )
        return "", sink.items
    return source, []


def warm_up() -> None:
    """Make a tiny model: datamodel-code-generator imports most of itself on its first run
    (a fifth of a second), which the second process does while it would otherwise wait."""
    _generate(json.dumps({"$defs": {"Warm": {"type": "object"}}}), "<warm-up>")


def audit(source: str) -> str:
    """ "" when `source` is only imports, classes, annotated fields and constant data."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error at line {exc.lineno}"
    for node in ast.walk(tree):
        if not isinstance(node, _ALLOWED_NODES):
            return f"unexpected {type(node).__name__} at line {getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.Dict) and not all(isinstance(k, ast.Constant) for k in node.keys):
            return f"unexpected dict at line {node.lineno}"
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else ""
            if isinstance(func, ast.Attribute) and func.attr == "model_rebuild":
                continue
            if name not in _ALLOWED_CALLS:
                return f"unexpected call at line {node.lineno}"
    return ""


def class_names(tool: ir.Tool) -> tuple[str, str]:
    return f"{tool.class_stem}Arguments", f"{tool.class_stem}Result"


def _combined_schema(
    server: ir.Server, every_result: bool = True
) -> tuple[dict[str, Any], dict[str, tuple[str, str]]]:
    """One JSON Schema document whose `$defs` hold every tool's models and their shared parts
    (result models for every tool, or with `every_result` False for handler tools only).

    Each tool root's own `$defs` are hoisted with a per-mode prefix, because the same
    component converts differently for arguments (strict) and results (lenient).
    """
    defs: dict[str, Any] = {}
    names: dict[str, tuple[str, str]] = {}
    taken = {tool_name for tool in server.tools for tool_name in class_names(tool)}
    for tool in server.tools:
        arguments, result = class_names(tool)
        defs[arguments] = _hoist(tool.input_schema, "Arg", defs, taken)
        if tool.output_schema is not None and (every_result or tool.handler):
            defs[result] = _hoist(tool.output_schema, "", defs, taken)
            names[tool.name] = (arguments, result)
        else:
            names[tool.name] = (arguments, "")
    return {"$defs": dict(sorted(defs.items()))}, names


def _hoist(root: Mapping[str, Any], prefix: str, defs: dict[str, Any], taken: set[str]) -> Any:
    """The structural form of `root`, its own `$defs` merged into the shared `defs`.

    A local name keeps `prefix + name` when that global name is free or already holds the very
    same structure; otherwise it gets `V2`, `V3`, ... Two roots can use one name for different
    schemas (compaction names hoisted subschemas after the property they first occur at), and
    renaming one entry changes the structure of those that refer to it, hence the loop.
    """
    local_defs = root.get("$defs", {})
    seen: set[str] = set()
    renames = {name: naming.unique(_class_name(prefix, name), seen) for name in local_defs}
    for _attempt in range(len(local_defs) + 2):
        bodies = {name: _structural(schema, renames) for name, schema in local_defs.items()}
        used = set(renames.values())
        clashes = [
            name
            for name in local_defs
            if renames[name] in taken
            or (renames[name] in defs and defs[renames[name]] != bodies[name])
        ]
        if not clashes:
            break
        for name in clashes:
            base, number = _class_name(prefix, name), 1
            while True:
                number += 1
                wanted = f"{base}V{number}"
                if wanted in used or wanted in taken:
                    continue
                if wanted not in defs or defs[wanted] == bodies[name]:
                    break
            used.discard(renames[name])
            renames[name] = wanted
            used.add(wanted)
    else:  # pragma: no cover - the loop above always settles
        raise RuntimeError("typed models: $defs names did not settle")
    for name, body in bodies.items():
        defs.setdefault(renames[name], body)
    return _structural({k: v for k, v in root.items() if k != "$defs"}, renames)


def argument_class(name: str, schema: Mapping[str, Any]) -> str | None:
    """The text of class `name` for a tool whose input schema is `schema`, as `plain_class`
    writes it into every whole run's module, when it is one class alone: no `$defs` (which
    `_hoist` would name against every other tool's), no object in a field (which would be a
    class named against the others: `taken`). Such a class is the same text whatever the
    other tools are, so a patched run (patch.py) may put it where the old one was; None for
    any other schema."""
    if "$defs" in schema:
        return None
    classes = plain_class(name, _structural(schema, {}), set())
    return classes[name] if classes is not None and list(classes) == [name] else None


def _class_name(prefix: str, name: str) -> str:
    """A plain identifier for a `$defs` entry: dots would make the model generator write
    one module per dotted prefix (`issuing.authorization`) instead of one module."""
    stem = naming.pascal(name) or "Schema"
    return f"{prefix}{stem}" if stem[0].isalpha() else f"{prefix}M{stem}"


def structure(schema: Any) -> Any:
    """What of a tool's schema its typed models are made from (`_combined_schema`): the
    structural keywords of the root and of each of its `$defs`; descriptions, examples and
    bounds are not. Two schemas with the same structure make the same classes."""
    if not isinstance(schema, Mapping):
        return schema
    defs = schema.get("$defs")
    local = {n: _structural(s, {}) for n, s in defs.items()} if isinstance(defs, Mapping) else defs
    return [_structural({k: v for k, v in schema.items() if k != "$defs"}, {}), local]


def _structural(node: Any, renames: Mapping[str, str]) -> Any:
    if isinstance(node, list):
        return [_structural(item, renames) for item in node]
    if not isinstance(node, Mapping):
        return node
    result: dict[str, Any] = {}
    for key, value in node.items():
        if key not in _STRUCTURAL:
            continue
        if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/"):
            result[key] = "#/$defs/" + renames.get(value[len("#/$defs/") :], value[8:])
        elif key == "properties" and isinstance(value, Mapping):
            result[key] = {name: _structural(sub, renames) for name, sub in value.items()}
        elif key in ("enum", "const", "required"):
            result[key] = value
        else:
            result[key] = _structural(value, renames)
    return result


def _registry(names: Mapping[str, tuple[str, str]], every_result: bool) -> str:
    """Maps from tool name to model class; names are checked identifiers, keys are repr()."""
    arguments = "".join(f"    {tool!r}: {pair[0]},\n" for tool, pair in sorted(names.items()))
    results = "".join(
        f"    {tool!r}: {pair[1]},\n" for tool, pair in sorted(names.items()) if pair[1]
    )
    scope = (
        ""
        if every_result
        else "# Handler tools only (`output.result_models` in mcpmint.yaml): the other tools'\n"
        "# results are the upstream's JSON, which no generated code parses.\n"
    )
    return (
        "\n\nARGUMENTS: dict[str, type[BaseModel]] = {\n"
        + arguments
        + "}\n\n"
        + scope
        + "RESULTS: dict[str, type[BaseModel]] = {\n"
        + results
        + "}\n"
    )
