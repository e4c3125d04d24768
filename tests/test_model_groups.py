"""Typed models in groups of tools (models.py): a large server's models are made by one
datamodel-code-generator run per group and merged into one module, so an edit makes one group
again. The merged module must behave like the one-run module, and a warm run must give the
bytes of a cold one."""

from __future__ import annotations

import ast
import copy
import json
import sys
import types
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from mcpmint import models
from mcpmint.diagnostics import Aborted, DiagnosticSink
from mcpmint.pipeline import build, build_with_inputs

from .conftest import CORPUS, corpus_rows
from .test_stage_cache import cold, run, tree_digest

OPERATIONS = 40


def _spec(operations: int = OPERATIONS, extra: bool = False) -> str:
    """Operations whose bodies hold inline objects under the same property names (`owner`,
    `content`) with different shapes, so separate runs invent clashing class names (a
    property name that is not an identifier keeps them from being plain classes)."""
    paths = {}
    for i in range(operations):
        fields = {f"field{i % 7}": {"type": "integer"}, "not-plain": {"type": "string"}}
        shape = {"type": "object", "properties": fields}
        body = {
            "type": "object",
            "required": ["owner"],
            "properties": {
                "owner": shape,
                "content": {
                    "type": "object",
                    "properties": {"text": {"type": "string"}, "n": shape},
                },
                "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
            },
        }
        parameters = [{"name": "limit", "in": "query", "schema": {"type": "integer"}}]
        if extra and i == operations // 3:
            parameters.append({"name": "added", "in": "query", "schema": {"type": "string"}})
        paths[f"/things{i}"] = {
            "post": {
                "operationId": f"makeThing{i}",
                "parameters": parameters,
                "requestBody": {"content": {"application/json": {"schema": body}}},
                "responses": {"204": {"description": "done"}},
            }
        }
    document = {
        "openapi": "3.1.0",
        "info": {"title": "Groups", "version": "1"},
        "servers": [{"url": "https://groups.example"}],
        "paths": paths,
        "components": {
            "schemas": {
                "Tag": {"type": "object", "properties": {"name": {"type": "string"}}},
            }
        },
    }
    return yaml.safe_dump(document, sort_keys=False)


def _module(source: str) -> types.ModuleType:
    """`source` run as a module (pydantic resolves annotations through `sys.modules`)."""
    name = f"mcpmint_test_models_{len(sys.modules)}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, "<models>", "exec"), module.__dict__)  # audited model code
    return module


def _sources(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """The models module made in one run and in groups, for the same server."""
    spec = tmp_path / "groups.yaml"
    spec.write_text(_spec(), encoding="utf-8")
    server = build(spec, DiagnosticSink())
    sink = DiagnosticSink()
    single = models.models_source(server, sink)
    monkeypatch.setattr(models, "GROUP_MIN_TOOLS", 1)
    monkeypatch.setattr(models, "GROUPS", 4)
    grouped = models.models_source(server, sink)
    assert not sink.has_errors, sink.items
    return single, grouped


def test_the_merged_module_renames_clashing_classes_and_keeps_shared_ones_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    single, grouped = _sources(tmp_path, monkeypatch)
    assert models.audit(grouped) == ""
    assert grouped.count("class Tag(") == 1  # the same in every group: kept once
    renamed = [line for line in grouped.splitlines() if line.startswith("class Owner")]
    assert any("G" in line.split("(")[0] for line in renamed)  # a clash was renamed
    names = [line.split("(")[0] for line in grouped.splitlines() if line.startswith("class ")]
    assert len(names) == len(set(names))
    assert single != grouped


def _arguments(i: int, *, bad: str | None = None) -> dict[str, Any]:
    owner: dict[str, Any] = {f"field{i % 7}": 3}
    body: dict[str, Any] = {
        "owner": owner,
        "content": {"text": "hi", "n": dict(owner)},
        "tags": [{"name": "x"}],
    }
    if bad == "owner":
        owner[f"field{i % 7}"] = "three"
    elif bad == "nested":
        body["content"]["n"] = {f"field{i % 7}": "three"}
    elif bad == "tag":
        body["tags"] = [{"name": 4}]
    return {"body": body, "limit": 5}


def _accepts(module: types.ModuleType, tool: str, arguments: dict[str, Any]) -> bool:
    try:
        module.ARGUMENTS[tool].model_validate(arguments)
    except pydantic.ValidationError:
        return False
    return True


def test_the_merged_module_validates_like_the_one_run_module(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    single, grouped = map(_module, _sources(tmp_path, monkeypatch))
    assert single.ARGUMENTS.keys() == grouped.ARGUMENTS.keys()
    for i in range(OPERATIONS):
        tool = f"groups_make_thing{i}"
        assert _accepts(grouped, tool, _arguments(i)) and _accepts(single, tool, _arguments(i))
        for bad in ("owner", "nested", "tag"):
            assert not _accepts(grouped, tool, _arguments(i, bad=bad)), (tool, bad)
            assert not _accepts(single, tool, _arguments(i, bad=bad)), (tool, bad)


@pytest.fixture
def generator_runs(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Four groups from one tool on, and the text of every datamodel-code-generator run."""
    monkeypatch.setattr(models, "GROUP_MIN_TOOLS", 1)
    monkeypatch.setattr(models, "GROUPS", 4)
    runs: list[str] = []
    original = models._generate

    def recording(text: str, location: str) -> Any:
        runs.append(text)
        return original(text, location)

    monkeypatch.setattr(models, "_generate", recording)
    return runs


def test_one_changed_tool_makes_one_group_again_and_the_bytes_of_a_cold_run(
    tmp_path: Path, generator_runs: list[str]
) -> None:
    calls = generator_runs
    work = tmp_path / "work"
    work.mkdir()
    (work / "spec.yaml").write_text(_spec(), encoding="utf-8")
    run(work / "spec.yaml", work / "out")
    assert len(calls) == 4
    calls.clear()
    changed = _spec(extra=True)
    (work / "spec.yaml").write_text(changed, encoding="utf-8")
    run(work / "spec.yaml", work / "out")
    assert len(calls) == 1  # the group of the tool with the added parameter
    expected = cold(changed, tmp_path / "cold")
    assert tree_digest(work / "out") == expected

    # Nothing changed: every group comes from the cache, none is made.
    calls.clear()
    run(work / "spec.yaml", work / "out")
    assert calls == [] and tree_digest(work / "out") == expected


def test_the_plain_classes_merge_as_the_first_module_would() -> None:
    """The plain classes are merged without being parsed: the merge is the one of their
    module passed first, when a later module defines one of its classes the same
    way (kept once), differently (renamed) and when one of its names is imported elsewhere."""
    defs = {
        "PetArguments": {
            "type": "object",
            "properties": {"name": {"type": "string"}, "kind": {"enum": ["a"], "type": "string"}},
            "required": ["name"],
            "additionalProperties": False,
        },
        "OwnerArguments": {
            "type": "object",
            "properties": {"age": {"type": "integer"}},
            "additionalProperties": False,
        },
    }
    names = {"pet": ("PetArguments", ""), "owner": ("OwnerArguments", "")}
    plain, rest = models.plain_classes(dict(defs), names)
    assert rest == {"pet": ("", ""), "owner": ("", "")} and len(plain) == 2
    module = models.plain_module(plain)  # as datamodel-code-generator would lay it out
    same = (models.plain_class("OwnerArguments", defs["OwnerArguments"]) or {})["OwnerArguments"]
    header = (
        "from __future__ import annotations\n\nfrom pydantic import BaseModel, ConfigDict\n\n\n"
    )
    groups = [
        header + same + "\n\n" + "class Other(BaseModel):\n    owner: OwnerArguments\n",
        header + "class PetArguments(BaseModel):\n    name: int\n",
    ]
    merged = models.merge_modules(groups, plain=plain)
    assert merged == models.merge_modules([module, *groups])
    assert merged.count("class OwnerArguments(") == 1 and "class PetArgumentsG3(" in merged
    assert models.audit(merged) == ""
    imported = header.replace("BaseModel, ConfigDict", "BaseModel, ConfigDict, PetArguments")
    clash = [imported + "class Other(BaseModel):\n    x: int\n"]
    assert models.merge_modules(clash, plain=plain) == models.merge_modules([module, *clash])


def test_merge_modules_renames_through_references_until_nothing_clashes() -> None:
    first = (
        "from __future__ import annotations\n\nfrom pydantic import BaseModel, Field\n\n\n"
        "class Owner(BaseModel):\n    a: int = Field(1, ge=0)\n\n\n"
        "class Pet(BaseModel):\n    owner: Owner\n\n\n"
        "class Shared(BaseModel):\n    x: str\n"
    )
    # Owner differs, so Pet (which refers to it) differs too; Shared is the same class.
    second = (
        "from __future__ import annotations\n\nfrom typing import Any\n\n"
        "from pydantic import BaseModel\n\n\n"
        "class Owner(BaseModel):\n    b: str\n\n\n"
        "class Pet(BaseModel):\n    owner: Owner\n    extra: Any = None\n\n\n"
        "class Shared(BaseModel):\n    x: str\n\n\n"
        "class Other(BaseModel):\n    pet: Pet\n    label: Literal['Owner'] = 'Owner'\n\n\n"
        # A class named like what another module imports (pydantic's Field, used above).
        "class Field(BaseModel):\n    other: Other | None = None\n"
    )
    merged = models.merge_modules([first, second])
    assert models.audit(merged) == ""
    assert merged.count("class Shared(") == 1
    assert "class OwnerG2(" in merged and "class PetG2(" in merged
    assert "class FieldG2(" in merged and "from pydantic import BaseModel, Field\n" in merged
    module = _module(merged.replace("from typing import Any", "from typing import Any, Literal"))
    assert module.Other.model_validate({"pet": {"owner": {"b": "x"}}}).pet.owner.b == "x"
    assert module.Pet.model_validate({"owner": {"a": 1}}).owner.a == 1
    assert module.Other.model_fields["label"].default == "Owner"  # a string: not renamed
    assert module.Owner.model_validate({}).a == 1  # pydantic's Field, not the class
    assert module.FieldG2.model_validate({"other": {"pet": {"owner": {"b": "y"}}}}).other


# ------------------------------------------------------------------------- plain classes
_PLAIN_SCHEMAS: dict[str, Any] = {
    "EmptyArguments": {"type": "object", "additionalProperties": False, "properties": {}},
    "NoPropertiesArguments": {"type": "object", "additionalProperties": False},
    "ScalarsArguments": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "b": {"type": "boolean"},
            "a": {"type": "number"},
            "count": {"type": "integer"},
            "name": {"type": "string"},
        },
        "required": ["name", "a"],
    },
    "EnumsArguments": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "state": {"type": "string", "enum": ["open", "closed", "all", "open"]},
            "one": {"type": "string", "enum": ["x"]},
            "spaced": {"type": "string", "enum": ["a b", "ünï", "/docs"]},
        },
        "required": ["one"],
    },
    "ListsAndNullsArguments": {
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "tags": {"type": "array", "items": {"type": "string"}},
            "ids": {"type": "array", "items": {"type": "integer"}},
            "note": {"anyOf": [{"type": "string"}, {"type": "null"}]},
            "size": {"anyOf": [{"type": "number"}, {"type": "null"}]},
        },
        "required": ["ids", "note"],
    },
}


def _generator_classes(defs: dict[str, Any]) -> dict[str, str]:
    """Each class datamodel-code-generator writes for `defs`, by name, as text."""
    source, found = models._generate(json.dumps({"$defs": defs}, sort_keys=True), "test")
    assert found == [] and source
    blocks = (block.strip() for block in source.split("\n\n\n"))
    return {b.split("(", 1)[0][len("class ") :]: b + "\n" for b in blocks if b.startswith("class ")}


def test_plain_classes_are_what_datamodel_code_generator_writes() -> None:
    theirs = _generator_classes(_PLAIN_SCHEMAS)
    for name, schema in _PLAIN_SCHEMAS.items():
        assert models.plain_class(name, schema) == {name: theirs[name]}, name


def _plain_shapes() -> list[Any]:
    """Every kind of field the plain grammar allows (`models._plain_members`), nested two
    deep: scalars, enums, open maps, unions (nulls first, last and repeated, anyOf and oneOf,
    nested), lists and maps of each."""
    leaves: list[Any] = [{"type": kind} for kind in ("string", "integer", "number", "boolean")]
    leaves += [
        {"type": "string", "enum": ["a", "b c", "Any", "Literal[x]"]},
        {"type": "object", "additionalProperties": True},
        {"type": "object"},  # open too
        {"type": "object", "additionalProperties": False},  # a dict of length 0
    ]
    # Nullable enums, as the converter splits `type: [string, null]` with an `enum`: a field's
    # own only (in a union, a list or a map datamodel-code-generator may drop their `None`).
    nullable: list[Any] = [
        {"anyOf": [{"type": "string"}, {"type": "null"}], "enum": ["a", "b"]},
        {"oneOf": [{"type": "null"}, {"type": "string"}], "enum": ["a", None]},
        {"anyOf": [{"type": "null"}, {"type": "string"}], "enum": [None, "b c"]},
    ]
    null = {"type": "null"}
    unions: list[Any] = [
        {key: [a, b]}
        for key in ("anyOf", "oneOf")
        for a in [*leaves, null]
        for b in [*leaves, null]
        if not (a is null and b is null)
    ]
    unions += [
        {"anyOf": [leaves[0]]},
        {"anyOf": [*leaves, null]},
        {"anyOf": [{"oneOf": [leaves[0], leaves[1]]}, null]},
        {"oneOf": [{"anyOf": [leaves[2], null]}, leaves[2], leaves[3]]},
    ]
    values = [*leaves, *unions[::7], *unions[-4:]]
    containers: list[Any] = [{"type": "array", "items": value} for value in values]
    containers += [{"type": "object", "additionalProperties": value} for value in values]
    nested = [{"type": "array", "items": containers[0]}, {"anyOf": [containers[-1], null]}]
    nested += [{"oneOf": [container, null]} for container in containers[::5]]
    return [*leaves, *nullable, *unions, *containers, *nested]


def _expanded(source: str) -> dict[str, str]:
    """Each class of the model module `source`, as text with each class its annotations name
    written out in its place: two modules that name their nested classes differently give
    the same texts for the same shapes."""
    tree = ast.parse(source)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}
    done: dict[str, str] = {}

    def expand(name: str) -> str:
        if name not in done:
            done[name] = "..."  # a reference cycle (only datamodel-code-generator's own)
            parts = []
            for statement in classes[name].body:
                if isinstance(statement, ast.AnnAssign):
                    annotation = copy.deepcopy(statement.annotation)
                    for node in ast.walk(annotation):
                        if isinstance(node, ast.Name) and node.id in classes:
                            node.id = "{" + expand(node.id) + "}"
                    value = ast.unparse(statement.value) if statement.value else ""
                    parts.append(f"{ast.unparse(statement.target)}: {ast.unparse(annotation)}")
                    parts[-1] += f" = {value}" if value else ""
                else:
                    parts.append(ast.unparse(statement))
            done[name] = "; ".join(parts)
        return done[name]

    return {name: expand(name) for name in classes}


def test_every_plain_field_shape_is_what_datamodel_code_generator_writes() -> None:
    shapes = _plain_shapes()
    fields = {f"f{index:03}": shape for index, shape in enumerate(shapes)}
    builtin = {"type", "filter", "all", "object", "license", "id", "input", "format", "hash"}
    fields |= {name: {"type": "string"} for name in sorted(builtin)}
    # Names kept as they are: camelCase, capitals, a class of the module's (not used here).
    cased = {"Data", "detachKeys", "ID", "URL", "HTTPServer", "a1B2", "Config", "AnyValue"}
    fields |= {name: {"type": "integer"} for name in sorted(cased)}
    defs = {
        "RequiredArguments": {
            "type": "object",
            "additionalProperties": False,
            "properties": fields,
            "required": sorted(fields),
        },
        "OptionalArguments": {
            "type": "object",
            "additionalProperties": False,
            "properties": fields,
        },
    }
    theirs = _generator_classes(defs)
    for name, schema in defs.items():
        assert models.plain_class(name, schema) == {name: theirs[name]}, name
    assert len(shapes) > 150  # the grid is not empty by accident


def _closed(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema = {"type": "object", "additionalProperties": False, "properties": properties}
    return schema | ({"required": list(required)} if required else {})


def _assert_generator_writes_the_same(defs: dict[str, Any]) -> dict[str, str]:
    """Every class of `defs` is plain, and is what datamodel-code-generator writes for it but
    for the nested classes' names (written out in place); its classes, expanded."""
    source, found = models._generate(json.dumps({"$defs": defs}, sort_keys=True), "test")
    assert found == [] and source
    theirs = _expanded(source)
    taken = set(defs)
    for name, schema in defs.items():
        classes = models.plain_class(name, schema, taken)
        assert classes is not None and list(classes)[-1] == name, name
        assert _expanded(models.plain_module(classes))[name] == theirs[name], name
    return theirs


def test_closed_objects_in_fields_are_the_classes_datamodel_code_generator_writes() -> None:
    """A field holding a closed object is a class of its own, nested as deep as it goes, in
    lists, maps and unions: the same classes as datamodel-code-generator's but for their
    names."""
    inner = _closed({"id": {"type": "integer"}, "kind": {"type": "string", "enum": ["a"]}})
    deeper = _closed({"owner": inner, "tags": {"type": "array", "items": inner}}, ("owner",))
    null = {"type": "null"}
    fields: dict[str, Any] = {
        "one": inner,
        "two": deeper,
        "listed": {"type": "array", "items": deeper},
        "mapped": {"type": "object", "additionalProperties": inner},
        "maybe": {"anyOf": [inner, null]},
        "either": {"oneOf": [inner, _closed({"name": {"type": "string"}}, ("name",))]},
        "mixed": {"anyOf": [{"type": "string"}, {"type": "array", "items": inner}, null]},
    }
    defs = {
        "NestedArguments": _closed(fields, ("one", "either")),
        "ShallowArguments": _closed({"one": inner}),
    }
    theirs = _assert_generator_writes_the_same(defs)
    assert len(theirs) > 8  # nested classes were compared, not only flat fields


def _open(properties: dict[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties}
    return schema | ({"required": list(required)} if required else {})


def test_open_objects_are_the_classes_datamodel_code_generator_writes() -> None:
    """A result's objects are open (extra keys are the upstream's business): a class without
    `extra='forbid'`, nested as deep as it goes, closed ones inside; an open object without
    fields is an empty class at the top and a dict below it."""
    item = _open({"id": {"type": "integer"}, "tag": {"type": "string"}}, ("id",))
    null = {"type": "null"}
    fields: dict[str, Any] = {
        "result": {"type": "array", "items": item},
        "owner": _open({"name": {"type": "string"}, "pets": {"type": "array", "items": item}}),
        "meta": _open({}),
        "by_id": {"type": "object", "additionalProperties": item},
        "maybe": {"anyOf": [item, null]},
        "closed": _closed({"z": {"type": "string"}}),
        "Data": {"type": "string"},
    }
    defs = {
        "ListResult": _open(fields, ("result",)),
        "EmptyResult": _open({}),
        "FlatResult": _open({"id": {"type": "integer"}, "name": {"type": "string"}}, ("id",)),
    }
    _assert_generator_writes_the_same(defs)
    text = _generator_classes({n: defs[n] for n in ("EmptyResult", "FlatResult")})
    for name in ("EmptyResult", "FlatResult"):  # no nested class: the very text
        assert models.plain_class(name, defs[name]) == {name: text[name]}, name
    module = _module(
        models.plain_module(models.plain_class("ListResult", defs["ListResult"]) or {})
    )
    loose = module.ListResult.model_validate({"result": [{"id": 1, "extra": True}], "more": 1})
    assert loose.result[0].id == 1  # extra keys ignored, as in the upstream's answers


def test_nested_classes_are_named_after_where_they_are_and_never_clash() -> None:
    inner = _closed({"id": {"type": "integer"}})
    schema = _closed(
        {
            "pull_request": inner,
            "items": {"type": "array", "items": inner},
            "by_name": {"type": "object", "additionalProperties": inner},
            "either": {"anyOf": [inner, _closed({"n": {"type": "number"}})]},
        }
    )
    taken = {"ToolArguments", "ToolArgumentsPullRequest"}
    classes = models.plain_class("ToolArguments", schema, taken)
    assert classes is not None
    assert list(classes) == [
        "ToolArgumentsByNameValue",
        "ToolArgumentsEither",
        "ToolArgumentsEither2",
        "ToolArgumentsItemsItem",
        "ToolArgumentsPullRequest2",
        "ToolArguments",
    ]
    assert taken == {"ToolArguments", "ToolArgumentsPullRequest", *classes}
    module = _module(models.plain_module(classes))
    arguments = module.ToolArguments
    good = {"pull_request": {"id": 1}, "items": [{"id": 2}], "by_name": {"x": {"id": 3}}}
    assert arguments.model_validate(good).pull_request.id == 1
    with pytest.raises(pydantic.ValidationError, match="extra"):
        arguments.model_validate({"items": [{"id": 2, "extra": True}]})
    assert arguments.model_validate({"either": {"n": 1.5}}).either.n == 1.5
    # A class that is not plain after all gives back the names its nested classes took.
    broken = _closed({"a": inner, "b": {"type": "string", "const": "x"}})
    assert models.plain_class("OtherArguments", broken, taken) is None
    assert taken == {"ToolArguments", "ToolArgumentsPullRequest", *classes}


def test_a_plain_module_imports_what_its_classes_use_and_no_more() -> None:
    """`Any`, `Literal` and `Field` are imported when the classes use them, not when an enum
    value only spells them; an empty closed object right in a field is an empty dict."""
    spelled = {"type": "string", "enum": ["Any", "Literal[x]", "dict[str, Any]", "= Field("]}
    empty = {"type": "object", "additionalProperties": False}
    cases: list[tuple[Any, set[str], Any]] = [
        ({"type": "string"}, set(), "x"),
        (spelled, {"Literal"}, "= Field("),
        ({"type": "object", "additionalProperties": True}, {"Any"}, {"x": 1}),
        ({"anyOf": [{"type": "string", "enum": ["x"]}, {"type": "null"}]}, {"Literal"}, None),
        (empty, {"Any", "Field"}, {}),
        ({"type": "array", "items": empty}, {"Any"}, [{}]),
    ]
    for field, expected, value in cases:
        schema = {"type": "object", "additionalProperties": False, "properties": {"a": field}}
        classes = models.plain_class("ToolArguments", schema)
        assert classes is not None
        imports = models.plain_imports(classes)
        used = imports.get("typing", set()) | (imports["pydantic"] & {"Field"})
        assert used == expected, field
        arguments = _module(models.plain_module(classes)).ToolArguments
        assert arguments.model_validate({"a": value}).a == value
    classes = models.plain_class("EmptyArguments", _closed({"a": empty}))
    assert classes is not None
    with pytest.raises(pydantic.ValidationError, match="at most 0 items"):
        _module(models.plain_module(classes)).EmptyArguments.model_validate({"a": {"x": 1}})


@pytest.mark.parametrize(
    "field",
    [
        {"weird-name": {"type": "string"}},
        {"Ünïcode": {"type": "string"}},
        {"1st": {"type": "string"}},
        # named like the class of its neighbour: it would hide that class from pydantic
        {"ToolArgumentsOwner": {"type": "string"}, "owner": _closed({"a": {"type": "string"}})},
        # capitalized, with a class: datamodel-code-generator renames it (`Templating_1`)
        {"Templating": _closed({"Name": {"type": "string"}})},
        {"Mounts": {"type": "array", "items": _closed({"Source": {"type": "string"}})}},
        {"_private": {"type": "string"}},
        {"class": {"type": "string"}},
        {"match": {"type": "string"}},
        {"json": {"type": "string"}},
        {"copy": {"type": "string"}},
        {"model_name": {"type": "string"}},
        {"str": {"type": "string"}},
        {"Literal": {"type": "string"}},
        {"q": {"type": "string", "enum": ["it's"]}},
        {"q": {"type": "string", "enum": ['say "hi"']}},
        {"q": {"type": "string", "enum": ["back\\slash"]}},
        {"q": {"type": "string", "enum": ["new\nline"]}},
        {"q": {"type": "string", "enum": []}},
        {"q": {"type": "integer", "enum": [1, 2]}},
        {"q": {"type": "array"}},
        {"q": {"$ref": "#/$defs/Tag"}},
        {"q": {"type": "string", "const": "x"}},
        {"q": {"type": ["string", "null"]}},
        {"q": {"type": "null"}},
        {"q": {"anyOf": [{"type": "null"}, {"type": "null"}]}},
        {"q": {"anyOf": []}},
        {"q": {"anyOf": [{"type": "string"}], "oneOf": [{"type": "string"}]}},
        {"q": {"type": "array", "items": {"anyOf": [{"type": "string"}, {"const": 1}]}}},
        {"q": {"type": "object", "additionalProperties": False, "properties": {"A": {}}}},
        # a nullable enum in a union (datamodel-code-generator drops its None), or odd ones
        {"q": {"anyOf": [{"anyOf": [{"type": "string"}, {"type": "null"}], "enum": ["a"]}]}},
        {"q": {"anyOf": [{"type": "string"}, {"type": "null"}], "enum": [None]}},
        {
            "q": {
                "type": "array",
                "items": {"anyOf": [{"type": "string"}, {"type": "null"}], "enum": ["a"]},
            }
        },
        {"q": {"anyOf": [{"type": "integer"}, {"type": "null"}], "enum": [1]}},
        {
            "q": {
                "anyOf": [{"type": "string"}, {"type": "null"}, {"type": "integer"}],
                "enum": ["a"],
            }
        },
        {"type": {"type": "string"}, "str": {"type": "string"}},
        {"dict": {"type": "string"}},
        {"list": {"type": "integer"}},
        {"int": {"type": "integer"}},
        {"validate": {"type": "string"}},
    ],
    ids=repr,
)
def test_a_field_that_is_not_plain_leaves_the_class_to_datamodel_code_generator(
    field: dict[str, Any],
) -> None:
    schema = {"type": "object", "additionalProperties": False, "properties": field}
    assert models.plain_class("ToolArguments", schema) is None


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "additionalProperties": True, "properties": {}},
        {"type": "object"},  # no properties at all: not a class of fields
        {"type": "object", "properties": {"a": {"type": "string"}}, "minProperties": 1},
        {"type": "object", "additionalProperties": False, "required": ["missing"]},
        {"type": "object", "additionalProperties": False, "anyOf": [{"required": ["a"]}]},
        {"type": "array", "items": {"type": "string"}},
    ],
    ids=repr,
)
def test_a_class_that_is_not_a_closed_object_of_plain_fields_is_not_plain(schema: Any) -> None:
    assert models.plain_class("ToolArguments", schema) is None


def test_a_class_name_that_is_not_an_identifier_is_not_written() -> None:
    schema = _PLAIN_SCHEMAS["ScalarsArguments"]
    assert models.plain_class("ScalarsArguments", schema) is not None
    for name in ("Bad Name", "X(BaseModel):\n    pass\nclass Y", "class", "1Arguments"):
        assert models.plain_class(name, schema) is None


def test_every_name_of_pydantics_base_model_is_refused_as_a_field() -> None:
    public = {n for n in dir(pydantic.BaseModel) if not n.startswith(("_", "model_"))}
    assert public <= models._TAKEN_NAMES


def _corpus_cases() -> list[Any]:
    return [
        pytest.param(
            CORPUS / row["entry_file"],
            CORPUS / row["entry_file"].split("/")[0] if "/" in row["entry_file"] else None,
            id=row["name"],
            marks=[pytest.mark.slow] if int(row["size_bytes"]) > 1_000_000 else [],
        )
        for row in corpus_rows()
    ]


@pytest.mark.parametrize(("spec", "root"), _corpus_cases())
def test_every_plain_class_of_the_corpus_is_what_datamodel_code_generator_writes(
    spec: Path, root: Path | None
) -> None:
    try:
        server, _ = build_with_inputs(spec, DiagnosticSink(), root=root, allow_partial=True)
    except Aborted:  # a spec no tool can be made of has no models either
        return
    document, names = models._combined_schema(server, True)
    defs = document["$defs"]
    taken = set(defs)
    ours = {
        name: classes
        for pair in names.values()
        for name in pair
        if name and (classes := models.plain_class(name, defs[name], taken)) is not None
    }
    if not ours:
        return
    defs_text = json.dumps({"$defs": {n: defs[n] for n in ours}}, sort_keys=True)
    source, found = models._generate(defs_text, "test")
    assert found == [] and source
    theirs, text = _expanded(source), _generator_classes({name: defs[name] for name in ours})
    for name, classes in ours.items():
        if len(classes) == 1:  # no nested class: the very text
            assert classes == {name: text[name]}, name
        else:  # the same but for the nested classes' names
            assert _expanded(models.plain_module(classes))[name] == theirs[name], name


def test_a_changed_plain_tool_is_written_again_without_the_generator(
    tmp_path: Path, generator_runs: list[str]
) -> None:
    calls = generator_runs
    work = tmp_path / "work"
    work.mkdir()
    document = yaml.safe_load(_spec())
    for index in range(5):  # plain tools beside the others: only query parameters
        document["paths"][f"/plain{index}"] = {
            "get": {
                "operationId": f"listPlain{index}",
                "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}],
                "responses": {"204": {"description": "done"}},
            }
        }
    (work / "spec.yaml").write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    run(work / "spec.yaml", work / "out")
    models_py = next((work / "out").rglob("_generated/models.py")).read_text(encoding="utf-8")
    assert "class ListPlain3Arguments(BaseModel):" in models_py
    assert not any("ListPlain" in text for text in calls)  # written here, not generated
    calls.clear()

    added = {"name": "page", "in": "query", "schema": {"type": "integer"}}
    document["paths"]["/plain3"]["get"]["parameters"].append(added)
    changed = yaml.safe_dump(document, sort_keys=False)
    (work / "spec.yaml").write_text(changed, encoding="utf-8")
    run(work / "spec.yaml", work / "out")

    assert calls == []  # no group changed: the generator did not run
    models_py = next((work / "out").rglob("_generated/models.py")).read_text(encoding="utf-8")
    assert "page: int | None = None" in models_py
    assert tree_digest(work / "out") == cold(changed, tmp_path / "cold")
