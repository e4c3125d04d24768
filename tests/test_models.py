"""Typed models (models.py): the plain classes written here are the text datamodel-code-generator
writes for them, its one run makes the others into the same module, and the stage cache
reuses that run whenever the structure it is made from is unchanged."""

from __future__ import annotations

import ast
import copy
import dataclasses
import json
import re
import sys
import tomllib
import types
from importlib.metadata import version
from pathlib import Path
from typing import Any

import pydantic
import pytest
import yaml

from mcpmint.diagnostics import Aborted, DiagnosticSink
from mcpmint.pipeline import build, build_with_inputs
from mcpmint.render import models
from mcpmint.write.cache import StageCache

from .conftest import CORPUS, REPO, corpus_rows


def _module(source: str) -> types.ModuleType:
    """`source` run as a module (pydantic resolves annotations through `sys.modules`)."""
    name = f"mcpmint_test_models_{len(sys.modules)}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, "<models>", "exec"), module.__dict__)  # audited model code
    return module


def _models(spec: dict[str, Any], folder: Path, cache: Path | None = None) -> str:
    """The models module of the server made from the OpenAPI document `spec` (written into
    `folder`), with the stage cache in `cache` (saved after the run) or none."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "spec.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    sink = DiagnosticSink()
    server = build(path, sink)
    stage_cache = StageCache(cache) if cache is not None else None
    source = models.models_source(server, sink, stage_cache)
    assert not sink.has_errors and source, sink.items
    if stage_cache is not None:
        stage_cache.save()
    return source


def _document(paths: dict[str, Any]) -> dict[str, Any]:
    return {
        "openapi": "3.1.0",
        "info": {"title": "Models", "version": "1"},
        "servers": [{"url": "https://models.example"}],
        "paths": paths,
    }


def _operation(operation_id: str, **parts: Any) -> dict[str, Any]:
    return {"operationId": operation_id, **parts, "responses": {"204": {"description": "done"}}}


def _body(properties: dict[str, Any]) -> dict[str, Any]:
    schema = {"type": "object", "properties": properties}
    return {"content": {"application/json": {"schema": schema}}}


def _query(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "in": "query", "schema": schema}


def _spec() -> dict[str, Any]:
    """Tools of plain arguments (query parameters), and tools whose bodies are not plain (a
    property name that is not an identifier), with inline objects of the same property names
    and different shapes, and a component they share."""
    paths: dict[str, Any] = {}
    for i in range(3):
        paths[f"/plain{i}"] = {
            "get": _operation(
                f"listPlain{i}",
                parameters=[_query("q", {"type": "string", "description": "what to look for"})],
            )
        }
        owner = {"type": "object", "properties": {f"f{i}": {"type": "integer"}, "x-y": {}}}
        body = {
            "owner": owner,
            "tags": {"type": "array", "items": {"$ref": "#/components/schemas/Tag"}},
        }
        paths[f"/things{i}"] = {"post": _operation(f"makeThing{i}", requestBody=_body(body))}
    document = _document(paths)
    tag = {"type": "object", "properties": {"name": {"type": "string"}}}
    document["components"] = {"schemas": {"Tag": tag}}
    return document


def _entries(cache: Path) -> set[str]:
    return {path.name for path in cache.glob("models-*.json")}


def test_the_module_is_made_again_from_the_cache_as_a_cold_run_makes_it(tmp_path: Path) -> None:
    """An edit that changes no structure the library models (a description, a plain tool's
    parameters) makes no new cache entry and the bytes of a cold run; a structural edit of a
    tool it models makes one."""
    cache = tmp_path / "cache"
    spec = _spec()
    assert _models(spec, tmp_path / "first", cache) == _models(spec, tmp_path / "cold")
    entries = _entries(cache)
    assert len(entries) == 1

    edits = ["description", "plain", "structure"]
    for number, edit in enumerate(edits):
        if edit == "description":
            spec["paths"]["/plain1"]["get"]["parameters"][0]["schema"]["description"] = "new"
            spec["paths"]["/things1"]["post"]["description"] = "Makes a thing."
        elif edit == "plain":
            spec["paths"]["/plain2"]["get"]["parameters"].append(
                _query("page", {"type": "integer"})
            )
        else:
            body = spec["paths"]["/things2"]["post"]["requestBody"]["content"]
            body["application/json"]["schema"]["properties"]["added"] = {"type": "boolean"}
        cold = _models(spec, tmp_path / f"cold-{number}")
        assert _models(spec, tmp_path / f"run-{number}", cache) == cold, edit
        if edit == "structure":
            assert len(_entries(cache) - entries) == 1
        else:
            assert _entries(cache) == entries, edit
    assert "page: int | None = None" in cold and "added: bool | None = None" in cold


def test_a_cached_module_that_fails_the_audit_is_made_again(tmp_path: Path) -> None:
    """The cache folder is not trusted more than the generator: a stored module is audited."""
    cache = tmp_path / "cache"
    spec = _spec()
    cold = _models(spec, tmp_path / "first", cache)
    (entry,) = cache.glob("models-*.json")
    stored = json.loads(entry.read_text(encoding="utf-8"))
    stored["value"] += "\nimport os\nos.system('echo owned')\n"
    entry.write_text(json.dumps(stored), encoding="utf-8")
    assert models.audit(stored["value"]) != ""

    assert _models(spec, tmp_path / "again", cache) == cold
    assert "os.system" not in json.loads(entry.read_text(encoding="utf-8"))["value"]


@pytest.mark.parametrize(
    "field",
    [
        # the library names an inline object after its property: a plain tool's class name
        # (a property named like an import, `literal`, never names a class: see
        # test_a_property_named_like_an_import_never_names_a_class)
        "list_pets_arguments",
    ],
)
def test_a_class_the_library_names_like_a_plain_one_makes_every_class_in_one_run(
    tmp_path: Path, field: str
) -> None:
    """The library names the objects in its classes after their properties, knowing nothing
    of the plain classes: on a clash with one of them, or with what they import, it makes
    every class itself, named apart, and the module holds no renamed copy of any class."""
    pets = [
        _query("filter", {"type": "object", "properties": {"tag": {"type": "string"}}}),
        _query("state", {"type": "string", "enum": ["open", "closed"]}),
    ]
    inline = {"type": "object", "properties": {"x-y": {"type": "integer"}}}
    spec = _document(
        {
            "/pets": {"get": _operation("listPets", parameters=pets)},
            "/things": {
                "post": _operation("makeThing", requestBody=_body({"not-plain": {}, field: inline}))
            },
        }
    )
    source = _models(spec, tmp_path)
    assert models.audit(source) == ""
    names = re.findall(r"^class (\w+)\(", source, re.MULTILINE)
    assert len(names) == len(set(names)) and names.count("ListPetsArguments") == 1
    assert "ListPetsArgumentsFilter" not in names  # the plain writer's name: not used
    assert not any(re.fullmatch(r"\w+G\d+", name) for name in names)
    module = _module(source)
    pets_class, thing = module.ARGUMENTS["models_list_pets"], module.ARGUMENTS["models_make_thing"]
    assert pets_class.model_validate({"filter": {"tag": "a"}, "state": "open"}).filter.tag == "a"
    for bad in ({"filter": {"tag": 1}}, {"state": "other"}, {"other": 1}):
        with pytest.raises(pydantic.ValidationError):
            pets_class.model_validate(bad)
    made = thing.model_validate({field: {"x-y": 3}})
    assert getattr(made, field).model_dump(by_alias=True) == {"x-y": 3}
    with pytest.raises(pydantic.ValidationError):
        thing.model_validate({field: {"x-y": "three"}})


def test_a_module_of_plain_and_generated_classes_imports_once_and_validates(
    tmp_path: Path,
) -> None:
    spec = _spec()
    source = _models(spec, tmp_path)
    assert models.audit(source) == ""
    tree = ast.parse(source)
    imports = [node for node in tree.body if isinstance(node, ast.ImportFrom)]
    assert tree.body[: len(imports)] == imports  # one import block, at the top
    modules = [node.module for node in imports]
    assert len(modules) == len(set(modules))
    assert "class ListPlain0Arguments(BaseModel):" in source  # written here
    module = _module(source)
    plain = module.ARGUMENTS["models_list_plain2"]
    assert plain.model_validate({"q": "x"}).q == "x"
    with pytest.raises(pydantic.ValidationError, match="extra"):
        plain.model_validate({"q": "x", "other": 1})
    thing = module.ARGUMENTS["models_make_thing1"]
    assert thing.model_validate({"owner": {"f1": 1}, "tags": [{"name": "t"}]}).tags[0].name == "t"
    for bad in ({"owner": {"f1": "one"}}, {"tags": [{"name": 4}]}):
        with pytest.raises(pydantic.ValidationError):
            thing.model_validate(bad)


def test_datamodel_code_generator_is_pinned_to_the_version_the_plain_writer_matches() -> None:
    """The plain writer reproduces the library's text, which a release may change: the
    dependency is pinned exactly, and the tests below compare both on this version."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    pins = [
        d for d in project["project"]["dependencies"] if d.startswith("datamodel-code-generator")
    ]
    assert pins == [f"datamodel-code-generator=={version('datamodel-code-generator')}"]


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
    """Every kind of field the plain grammar allows (`models._PlainWriter.members`), nested two
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


def _sample(shapes: list[Any]) -> list[Any]:
    """A few shapes of each kind, for the fast tier: the whole grid is for the slow one."""
    return shapes[:11] + shapes[11:-40:12] + shapes[-40::6]


@pytest.mark.parametrize(
    "select",
    [pytest.param(_sample, id="sample"), pytest.param(list, id="grid", marks=pytest.mark.slow)],
)
def test_every_plain_field_shape_is_what_datamodel_code_generator_writes(select: Any) -> None:
    shapes = select(_plain_shapes())
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
    assert len(shapes) > (150 if select is list else 20)  # not empty by accident


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
            marks=pytest.mark.slow,
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


def _cyclic_root(fields: dict[str, Any], order: tuple[str, ...]) -> dict[str, Any]:
    """A tool input whose `Node` and `Link` refer to each other, `Link` also to `Fields`."""
    entries = {
        "Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Link"}}},
        "Link": {
            "type": "object",
            "properties": {
                "back": {"$ref": "#/$defs/Node"},
                "fields": {"$ref": "#/$defs/Fields"},
            },
        },
        "Fields": fields,
    }
    return {
        "type": "object",
        "properties": {"query": {"$ref": "#/$defs/Node"}},
        "$defs": {name: entries[name] for name in order},
    }


def test_a_cycle_whose_member_differs_is_copied_once_per_shape_not_once_per_tool() -> None:
    """Two tools name a different `Fields` alike, so their `Node`/`Link` cycles differ as a
    whole; every later tool with either cycle, whatever order its entries come in, uses the
    classes already made for that shape."""
    a_map = {"type": "object", "additionalProperties": {"type": "string"}}
    a_list = {"type": "array", "items": {"type": "string"}}
    roots = [
        _cyclic_root(a_map, ("Node", "Link", "Fields")),
        _cyclic_root(a_list, ("Node", "Link", "Fields")),
        _cyclic_root(a_list, ("Fields", "Link", "Node")),
        _cyclic_root(a_map, ("Link", "Fields", "Node")),
        _cyclic_root(a_list, ("Link", "Node", "Fields")),
    ]
    server = build(REPO / "specs" / "petstore.yaml", DiagnosticSink())
    template = server.tools[0]
    tools = tuple(
        dataclasses.replace(template, name=f"t{i}", class_stem=f"T{i}", input_schema=root)
        for i, root in enumerate(roots)
    )
    document, _ = models._combined_schema(dataclasses.replace(server, tools=tools), False)
    defs = document["$defs"]
    assert sorted(name for name in defs if name.startswith(("ArgNode", "ArgLink", "ArgField"))) == [
        "ArgFields",
        "ArgFieldsV2",
        "ArgLink",
        "ArgLinkV2",
        "ArgNode",
        "ArgNodeV2",
    ]
    queries = [defs[f"T{i}Arguments"]["properties"]["query"]["$ref"] for i in range(5)]
    assert [query.rsplit("/", 1)[1] for query in queries] == [
        "ArgNode",
        "ArgNodeV2",
        "ArgNodeV2",
        "ArgNode",
        "ArgNodeV2",
    ]
