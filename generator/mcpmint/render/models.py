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
of the generation time, so `output.result_models: auto` keeps them to handler tools there
(largeapi.result_models_for).

One module, over 600 lines: the plain-class writer and the library's run meet in one
module text, and the writer must stay beside the audit that checks what the library wrote.
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

from mcpmint import ir
from mcpmint.build import naming
from mcpmint.diagnostics import Diagnostic, DiagnosticSink
from mcpmint.forked import FORK_MIN_TOOLS, Beside, beside
from mcpmint.write.cache import StageCache, cache_key

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
# The only calls a models module makes (besides `model_rebuild`): pydantic's own, under the
# names a `from pydantic import` binds to them (`Field as Field_aliased`, the alias the library
# writes when a field is itself named `Field`) and nothing else binds.
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


def start_models(server: ir.Server, cache: StageCache | None, *, every_result: bool) -> Beside[str]:
    """`models_source`, begun (in a forked child on a large server)."""
    return beside(
        lambda sink: models_source(server, sink, cache, every_result=every_result),
        cache,
        fork=len(server.tools) >= FORK_MIN_TOOLS,
    )


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

    The plain classes are written here; one datamodel-code-generator run makes the others.
    Its output is a function of their structural schema alone (no descriptions, examples or
    bounds reach it), so `cache` reuses it whenever that schema is unchanged: a changed
    description, summary or bound costs no model generation.
    """
    location = server.source_file or "<spec>"
    document, names = _combined_schema(server, every_result)
    plain, left = plain_classes(document["$defs"], names)
    source = plain_module(plain)
    if left:
        tool_classes = {c for pair in names.values() for c in pair if c}
        generated = _tidied(_generated({"$defs": left}, cache, sink, location), tool_classes)
        source = _joined(plain, generated) if generated else ""
        if generated and not source:
            # A class the library named after a property is named like a plain class or
            # one of their imports: it makes every class instead, named apart in one run.
            generated = _generated(document, cache, sink, location)
            source = _tidied(generated, tool_classes)
        if not source:
            return ""  # the errors are in the sink
    defined = set(_CLASS_LINE.findall(source))
    missing = [c for pair in names.values() for c in pair if c and c not in defined]
    if missing:
        sink.error(location, f"typed models: classes missing: {missing[:5]}")
        return ""
    body = source.split("from __future__ import annotations", 1)[-1].rstrip("\n")
    return "from __future__ import annotations\n" + body + _registry(names, every_result)


def _generated(
    schema: dict[str, Any], cache: StageCache | None, sink: DiagnosticSink, location: str
) -> str:
    """datamodel-code-generator's module for `schema`, or "" with the errors in `sink`.

    Kept in `cache` under the schema's digest. A stored module is audited like a fresh one:
    the cache folder is not trusted more than the generator."""
    text = json.dumps(_unshadowing(schema), sort_keys=True)
    key = cache_key("models", hashlib.sha256(text.encode("utf-8")).hexdigest(), *_LIBRARIES)
    stored = cache.get("models", key) if cache is not None else None
    if isinstance(stored, str) and not audit(stored):
        return stored
    source, found = _generate(text, location)
    sink.extend(found)
    if source and cache is not None:
        cache.put("models", key, source)
    return source


def _tidied(source: str, keep: set[str]) -> str:
    """The library's module `source` with two renames, everywhere the module names them:

    - each class named like a field of some class (elbv2's `Actions: list[Action]` beside
      the field `Action: Literal[...]`: in that class body, `Action` is the field) becomes
      `<Name>Model` (`ActionModel`); the tools' own classes (`keep`) keep their names;
    - `typing.Dict`, which it writes in a typed map's `__annotations__` whatever its
      `use_standard_collections` says (ruff's UP006), becomes `dict`, and leaves the import.

    Only names change: each `Name` node (not a field's target), a renamed class's `class`
    line and the `typing` import, edited at the places `ast` gives, so the module's
    statements stay as they were."""
    if not source:
        return source
    tree = ast.parse(source)
    classes = [node for node in tree.body if isinstance(node, ast.ClassDef)]
    targets = [
        member.target
        for node in classes
        for member in node.body
        if isinstance(member, ast.AnnAssign) and isinstance(member.target, ast.Name)
    ]
    fields = {target.id for target in targets if isinstance(target, ast.Name)}
    clashing = sorted({node.name for node in classes} & fields - keep)
    taken = {node.name for node in classes} | fields | _MODULE_NAMES
    renames = {name: naming.unique(name + "Model", taken, separator="") for name in clashing}
    typing_import = next(
        (
            node
            for node in tree.body
            if isinstance(node, ast.ImportFrom)
            and node.module == "typing"
            and any(alias.name == "Dict" and alias.asname is None for alias in node.names)
        ),
        None,
    )
    if typing_import is not None:
        renames["Dict"] = "dict"
    if not renames:
        return source
    skipped = {id(target) for target in targets}
    lines = [line.encode("utf-8") for line in source.splitlines(keepends=True)]
    edits: list[tuple[int, int, int, str]] = []  # (line, start, end byte offsets, new text)
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in renames and id(node) not in skipped:
            assert node.end_col_offset is not None
            edits.append((node.lineno - 1, node.col_offset, node.end_col_offset, renames[node.id]))
        elif isinstance(node, ast.ClassDef) and node.name in renames:
            start = node.col_offset + len(b"class ")
            edits.append((node.lineno - 1, start, start + len(node.name), renames[node.name]))
    for line, start, end, text in sorted(edits, reverse=True):
        lines[line] = lines[line][:start] + text.encode("utf-8") + lines[line][end:]
    if typing_import is not None:
        kept = [
            f"{alias.name} as {alias.asname}" if alias.asname else alias.name
            for alias in typing_import.names
            if not (alias.name == "Dict" and alias.asname is None)
        ]
        first, last = typing_import.lineno - 1, (typing_import.end_lineno or 0) - 1
        for index in range(first, last + 1):
            lines[index] = b""
        if kept:
            lines[first] = f"from typing import {', '.join(kept)}\n".encode()
    return b"".join(lines).decode("utf-8")


# The names the library's modules import (folded: lower case, letters only). It names the
# class of an object in a property after the property, and a property named like one of these
# (`Field`, `config_dict`) can make a class that shadows the import, which the library then
# writes in annotations under the import's alias (`Field_aliased`): a broken module.
_SHADOWING = frozenset({"field", "any", "literal", "basemodel", "configdict", "rootmodel"})


def _unshadowing(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` (`{"$defs": ...}`) with each object in a property named like an import
    (`_SHADOWING`), or among the options of its `anyOf`/`oneOf`/`allOf`, moved to a `$defs`
    entry of its own, named `<Property>Model` (`FieldModel`), so that no class is named
    after such a property."""
    defs: dict[str, Any] = dict(schema["$defs"])
    taken = set(defs) | _MODULE_NAMES

    def walk(node: Any) -> Any:
        if isinstance(node, list):
            return [walk(item) for item in node]
        if not isinstance(node, dict):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key == "properties" and isinstance(value, dict):
                out[key] = {name: prop(name, sub) for name, sub in value.items()}
            elif key in ("enum", "const", "required"):
                out[key] = value
            else:
                out[key] = walk(value)
        return out

    def prop(name: str, sub: Any) -> Any:
        if re.sub(r"[^a-z]", "", name.lower()) not in _SHADOWING or not _makes_class(sub):
            return walk(sub)
        if "properties" not in sub:  # a composition: its objects are hoisted, it stays
            return {
                key: [prop(name, option) for option in value]
                if key in ("anyOf", "oneOf", "allOf") and isinstance(value, list)
                else walk(value)
                for key, value in sub.items()
            }
        hoisted = naming.unique(naming.pascal(name) + "Model", taken, separator="")
        defs[hoisted] = walk(sub)
        return {"$ref": f"#/$defs/{hoisted}"}

    walked = {name: walk(sub) for name, sub in schema["$defs"].items()}
    return {"$defs": {**defs, **walked}}


def _makes_class(schema: Any) -> bool:
    """Whether the library makes a class of `schema` or of an option of it (named after
    where it is): an object with properties, directly or in an `anyOf`/`oneOf`/`allOf`."""
    if not isinstance(schema, dict):
        return False
    if "properties" in schema:
        return True
    options = [schema.get(key) for key in ("anyOf", "oneOf", "allOf")]
    return any(_makes_class(o) for found in options if isinstance(found, list) for o in found)


def _joined(plain: Mapping[str, str], generated: str) -> str:
    """The `plain` classes and datamodel-code-generator's module `generated` as one module,
    or "" when a class of one is named like a class or an import of the other.

    Both are modules of the same layout, so one is put after the other, but for their
    imports: a module has one import block at the top (ruff's E402 and isort), made of both.
    """
    if not plain:
        return generated
    tree = ast.parse(generated)
    imports = plain_imports(plain)
    imported = {name for names in imports.values() for name in names}  # the names bound
    start = 0  # the generated module's statements start after its last import
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            for alias in statement.names:
                text = f"{alias.name} as {alias.asname}" if alias.asname else alias.name
                imports.setdefault(statement.module or "", set()).add(text)
                imported.add(alias.asname or alias.name)
            start = statement.end_lineno or start
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    if not classes.isdisjoint({*plain, *imported}) or not imported.isdisjoint(plain):
        return ""
    sections: list[list[str]] = [[], [], []]  # __future__, the standard library, the others
    for module, names in sorted(imports.items()):
        top = module.split(".")[0]
        section = 0 if top == "__future__" else 1 if top in sys.stdlib_module_names else 2
        sections[section].append(f"from {module} import {', '.join(sorted(names))}\n")
    head = "\n".join("".join(lines) for lines in sections if lines)
    statements = "".join(generated.splitlines(keepends=True)[start:]).strip()
    classes_text = "\n\n\n".join(text.rstrip() for text in plain.values())
    return head + "\n\n" + classes_text + "\n\n\n" + statements + "\n"


# --------------------------------------------------------------------- plain classes
# A tool's arguments are most often a closed object of plain fields, and its result an open
# one: strings, numbers, booleans, string enums, objects of plain fields, unions of those,
# lists and maps of them, a value or null (most classes of a large API, every class of most
# small ones). For such a class datamodel-code-generator's output is fixed text, which
# `plain_class` writes itself in a fraction of the library's time, the same text but for the
# names of nested classes; a server whose classes are all plain never imports the library.
# Reproducing its text ties this writer to one version: pyproject.toml pins it exactly, and
# tests/test_models.py compares both on every shape the grammar below allows and on every
# corpus spec.

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
    defs: Mapping[str, Any], names: Mapping[str, tuple[str, str]]
) -> tuple[dict[str, str], dict[str, Any]]:
    """Every tool class of `names` that `plain_class` can write from `defs`, and the classes
    of the objects in its fields, by name, as text; and `defs` without those tool classes
    (what datamodel-code-generator makes)."""
    written: dict[str, str] = {}
    left = dict(defs)
    taken = set(defs)  # the names of the classes datamodel-code-generator may make
    for pair in names.values():
        for class_name in pair:
            classes = plain_class(class_name, defs[class_name], taken) if class_name else None
            if classes is not None:
                written.update(classes)
                del left[class_name]
    return written, left


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
    is the same but for the nested classes' names: it names them after the property alone,
    numbered in the order it meets them in the whole run, which depends on every other class
    (`Owner`, `Owner1`), while these depend on the tool's class alone."""
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


def audit(source: str) -> str:
    """ "" when `source` is only imports, classes, annotated fields and constant data.

    A call is allowed only to pydantic's `Field` and `ConfigDict`, by a name their
    `from pydantic import` binds (their own, or the alias the library writes when a field
    is named like one: `Field as Field_aliased`) and that nothing else binds: neither the
    module (a class, an assignment, another import) nor the class whose body calls it."""
    try:
        tree = ast.parse(source)
    except SyntaxError as exc:
        return f"syntax error at line {exc.lineno}"
    callable_names = _pydantic_callables(tree)
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
            if name not in callable_names:
                return f"unexpected call at line {node.lineno}"
    for statement in tree.body:
        if isinstance(statement, ast.ClassDef):
            # A class body runs in order: a name its earlier statements bind (a field named
            # `Field`) is what a later call by that name would call.
            own: set[str] = set()
            for member in statement.body:
                for node in ast.walk(member):
                    called = node.func if isinstance(node, ast.Call) else None
                    if isinstance(called, ast.Name) and called.id in own:
                        return f"unexpected call at line {called.lineno}"
                own |= _bound_names([member])
    return ""


def _pydantic_callables(tree: ast.Module) -> set[str]:
    """The module-level names bound to pydantic's `Field` or `ConfigDict` by an import, and
    by nothing else in the module."""
    found: set[str] = set()
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom) and statement.module == "pydantic":
            for alias in statement.names:
                if alias.name in _ALLOWED_CALLS:
                    found.add(alias.asname or alias.name)
    bound: list[str] = []  # every module-level binding, once per binding
    for statement in tree.body:
        if isinstance(statement, ast.ImportFrom):
            bound.extend(alias.asname or alias.name for alias in statement.names)
        elif isinstance(statement, ast.ClassDef):
            bound.append(statement.name)
        else:
            bound.extend(_bound_names([statement]))
    return {name for name in found if bound.count(name) == 1}


def _bound_names(statements: list[ast.stmt]) -> set[str]:
    """The names the assignments among `statements` bind (a class body's fields)."""
    names: set[str] = set()
    for statement in statements:
        targets: list[ast.expr] = []
        if isinstance(statement, ast.AnnAssign):
            targets = [statement.target]
        elif isinstance(statement, ast.Assign):
            targets = list(statement.targets)
        for target in targets:
            names.update(n.id for n in ast.walk(target) if isinstance(n, ast.Name))
    return names


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
    shared = _SharedDefs(taken={name for tool in server.tools for name in class_names(tool)})
    names: dict[str, tuple[str, str]] = {}
    for tool in server.tools:
        arguments, result = class_names(tool)
        shared.defs[arguments] = shared.hoist(tool.input_schema, "Arg")
        if tool.output_schema is not None and (every_result or tool.handler):
            shared.defs[result] = shared.hoist(tool.output_schema, "")
            names[tool.name] = (arguments, result)
        else:
            names[tool.name] = (arguments, "")
    return {"$defs": dict(sorted(shared.defs.items()))}, names


class _SharedDefs:
    """The `$defs` every tool's models share, filled root by root.

    Two roots can use one local name for different schemas (compaction names hoisted
    subschemas after the property they first occur at), and such entries usually sit in a
    reference cycle: when one member differs, every member that reaches it differs too. So
    an entry keeps its class name when a class of that name has the same structure, and a
    cycle is matched as a whole: each local entry is matched to one of the classes of its
    name (`Name`, `NameV2`, ...) whose shape is its own and whose references go, position by
    position, to classes its own references match (the greatest such matching, as for a
    bisimulation). An entry that matches none gets the first free name of its family.
    """

    def __init__(self, taken: set[str]) -> None:
        self.defs: dict[str, Any] = {}
        self._taken = taken  # the tools' own class names
        # A class -> its shape (its structure, references blanked, as text) and the classes
        # its references name, in order; a family's base name -> its classes, oldest first.
        self._shapes: dict[str, tuple[str, tuple[str, ...]]] = {}
        self._families: dict[str, list[str]] = {}

    def hoist(self, root: Mapping[str, Any], prefix: str) -> Any:
        """The structural form of `root`, its own `$defs` matched to shared classes or added."""
        local = root.get("$defs", {})
        seen: set[str] = set()
        family = {name: naming.unique(_class_name(prefix, name), seen) for name in local}
        shapes = {name: _shape(schema, local) for name, schema in local.items()}
        matches = {
            name: [
                known
                for known in self._families.get(family[name], [])
                if self._shapes[known][0] == shapes[name][0]
                and len(self._shapes[known][1]) == len(shapes[name][1])
            ]
            for name in local
        }
        changed = True
        while changed:  # drop matches whose references do not match, until none is dropped
            changed = False
            for name, candidates in matches.items():
                kept = [
                    known
                    for known in candidates
                    if all(
                        target in matches[ref]
                        for ref, target in zip(shapes[name][1], self._shapes[known][1], strict=True)
                    )
                ]
                if len(kept) != len(candidates):
                    matches[name], changed = kept, True
        renames = {name: found[0] for name, found in matches.items() if found}
        used = set(renames.values())
        for name in local:
            if name not in renames:
                renames[name] = self._free_name(family[name], used)
                used.add(renames[name])
        for name, schema in local.items():
            if not matches[name]:
                added = renames[name]
                self.defs[added] = _structural(schema, renames)
                self._shapes[added] = (shapes[name][0], tuple(renames[r] for r in shapes[name][1]))
                self._families.setdefault(family[name], []).append(added)
        return _structural({k: v for k, v in root.items() if k != "$defs"}, renames)

    def _free_name(self, base: str, used: set[str]) -> str:
        wanted, number = base, 1
        while wanted in self.defs or wanted in self._taken or wanted in used:
            number += 1
            wanted = f"{base}V{number}"
        return wanted


class _RefOrder(dict[str, str]):
    """A renaming for `_structural` that blanks every local name and notes, in order, the
    local names it was asked for: the references of a schema, position by position."""

    def __init__(self, local: Mapping[str, Any]) -> None:
        super().__init__((name, "*") for name in local)
        self.order: list[str] = []

    def get(self, key: str, default: Any = None) -> Any:
        if key in self:
            self.order.append(key)
        return super().get(key, default)


def _shape(schema: Any, local: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """A local entry's structure with its references to other local entries blanked (as
    text), and those references in order."""
    order = _RefOrder(local)
    text = json.dumps(_structural(schema, order), sort_keys=True, separators=(",", ":"))
    return text, tuple(order.order)


# Names a `$defs` class may not take: what the module imports or defines besides the tools'
# classes (a class `Field` would shadow pydantic's), and the constants `pascal` can spell.
_MODULE_NAMES = frozenset({*_IMPORTED_NAMES.split(), "AnyValue", "None", "True", "False"})


def _class_name(prefix: str, name: str) -> str:
    """A plain identifier for a `$defs` entry: dots would make the model generator write
    one module per dotted prefix (`issuing.authorization`) instead of one module; a name
    the module uses itself (`_MODULE_NAMES`) gets `Model` after it (`FieldModel`)."""
    stem = naming.pascal(name) or "Schema"
    found = f"{prefix}{stem}" if stem[0].isalpha() else f"{prefix}M{stem}"
    return found + "Model" if found in _MODULE_NAMES else found


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
