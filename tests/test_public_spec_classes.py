"""Classes of real public specs (from a sweep of APIs.guru's directory) that failed to
generate, each as a small spec of its own: names that are not identifiers, empty
operationIds, what the catalogue cannot carry (a path parameter described by `content`, a
header name with spaces, one header declared in two cases, an object sent as text), and
fields named like what the models module imports."""

from __future__ import annotations

import ast
import base64
import json
import re
import sys
import types
from pathlib import Path
from typing import Any
from xml.etree import ElementTree

import pytest

from mcpmint.build import naming
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import RenderOptions, build, render_server
from mcpmint.render import models
from mcpmint.runtime.catalog import load_catalog, load_catalog_text
from mcpmint.runtime.request import ArgumentError, build_request

from .support import BAR_COMMANDS, clean_env, run

BASE = "https://api.example.com"


def _document(paths: dict[str, Any], **components: Any) -> dict[str, Any]:
    document: dict[str, Any] = {
        "openapi": "3.0.3",
        "info": {"title": "Sweep", "version": "1"},
        "servers": [{"url": BASE}],
        "paths": paths,
    }
    if components:
        document["components"] = components
    return document


def _get(operation_id: str | None, **parts: Any) -> dict[str, Any]:
    found = {"responses": {"200": {"description": "ok"}}, **parts}
    return found if operation_id is None else {"operationId": operation_id, **found}


def _json_response(schema: dict[str, Any]) -> dict[str, Any]:
    return {"200": {"description": "ok", "content": {"application/json": {"schema": schema}}}}


def _json_body(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _write(document: dict[str, Any], folder: Path) -> Path:
    path = folder / "spec.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    return path


def _render(document: dict[str, Any], folder: Path) -> tuple[dict[str, str], DiagnosticSink]:
    """The generated files of `document` (models and catalogue checked, formatted), and what
    the run reported; raises `Aborted` where it cannot generate."""
    sink = DiagnosticSink()
    server = build(_write(document, folder), sink)
    tree = render_server(server, RenderOptions("spec.json"), sink)
    return tree.generated, sink


def _module(source: str) -> types.ModuleType:
    name = f"mcpmint_test_sweep_models_{len(sys.modules)}"
    module = types.ModuleType(name)
    sys.modules[name] = module
    exec(compile(source, "<models>", "exec"), module.__dict__)  # audited model code
    return module


def _models(files: dict[str, str]) -> types.ModuleType:
    (path,) = [p for p in files if p.endswith("_generated/models.py")]
    return _module(files[path])


def _catalog(files: dict[str, str]) -> Any:
    (path,) = [p for p in files if p.endswith("_generated/tools.json")]
    return load_catalog_text(files[path])


def _warnings_at(sink: DiagnosticSink, suffix: str) -> list[str]:
    return [d.message for d in sink.warnings if d.location.endswith(suffix)]


# ------------------------------------------------------------------- 1. model class names
def test_g9_model_class_names_are_identifiers_and_unique_whatever_the_operation_ids(
    tmp_path: Path,
) -> None:
    """operationIds that start with a digit (wmata's `5476365e...`, channel4's `4oDFeed`,
    vtex's `1Createanewtransaction`), a keyword, non-ASCII words, and names that differ only
    in punctuation (`get_user_2`, `getUser2`: one PascalCase stem) each get classes of
    their own; before, the first kind made classes named `4oDFeedArguments`, which the model
    generator renamed, and the run failed with "classes missing"."""
    query = [{"name": "q", "in": "query", "schema": {"type": "string"}}]
    ids = ["4oDFeed", "58acde292109180bdcacc40c", "1Create a new transaction", "class"]
    ids += ["für Über", "get_user_2", "getUser2", "getUser2V2", "___"]
    paths = {
        f"/p{index}": {
            "get": _get(
                operation_id,
                parameters=query,
                responses=_json_response({"type": "object", "properties": {"n": {}}}),
            )
        }
        for index, operation_id in enumerate(ids)
    }
    files, sink = _render(_document(paths), tmp_path)
    assert not sink.has_errors
    module = _models(files)
    classes = {name: (module.ARGUMENTS[name], module.RESULTS[name]) for name in module.ARGUMENTS}
    assert len(classes) == len(ids)
    every = [cls.__name__ for pair in classes.values() for cls in pair]
    assert len(every) == len(set(every)), every  # no two tools share a class
    assert all(name.isidentifier() and name.isascii() for name in every)
    assert classes["sweep_4o_d_feed"][0].__name__ == "Tool4oDFeedArguments"
    assert classes["sweep_get_user2"][0].__name__ == "GetUser2Arguments"
    # `getUser2V2` wants its stem as it is: the later `get_user_2` is told apart past it.
    assert classes["sweep_get_user2_v2"][0].__name__ == "GetUser2V2Arguments"
    assert classes["sweep_get_user_2"][0].__name__ == "GetUser2V3Arguments"
    assert classes["sweep_get_user2"][0].model_validate({"q": "x"}).q == "x"


def test_class_stems_start_with_a_letter_and_are_told_apart_in_order() -> None:
    wanted = ["4oDFeed", "", "GetUser2", "GetUser2", "GetUser2V2", "GetUser2", "Class"]
    assert naming.class_stems(wanted) == [
        "Tool4oDFeed",
        "Tool",
        "GetUser2",
        "GetUser2V3",  # `GetUser2V2` is wanted as it is by another tool
        "GetUser2V2",
        "GetUser2V4",
        "Class",
    ]
    assert naming.class_stems(wanted) == naming.class_stems(wanted)  # stable


def test_classes_named_like_what_the_module_imports_shadow_nothing(tmp_path: Path) -> None:
    """Components named `Field`, `BaseModel`, `Any`, `None` and objects in properties named
    like an import (`Field`, `config_dict`): no class may take such a name, or the module
    annotates with pydantic's `Field` function (a broken module, before)."""
    inline = {"type": "object", "properties": {"q": {"type": "integer"}}}
    result = {
        "type": "object",
        "properties": {
            "Field": inline,
            "config_dict": inline,
            "Any": {"anyOf": [inline, {"type": "string"}]},
            "field_ref": {"$ref": "#/components/schemas/Field"},
            "base": {"$ref": "#/components/schemas/BaseModel"},
            "none": {"$ref": "#/components/schemas/None"},
        },
    }
    schemas = {
        "Field": {"type": "object", "properties": {"Field": {"type": "string"}, "f": inline}},
        "BaseModel": {"type": "object", "properties": {"BaseModel": {"type": "string"}}},
        "None": {"type": "object", "properties": {"Field": {"$ref": "#/components/schemas/None"}}},
    }
    paths = {"/r": {"get": _get("getThing", responses=_json_response(result))}}
    files, sink = _render(_document(paths, schemas=schemas), tmp_path)
    assert not sink.has_errors
    source = next(text for path, text in files.items() if path.endswith("models.py"))
    tree = ast.parse(source)
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    assert not classes & {"Field", "BaseModel", "Any", "None", "ConfigDict", "Literal"}
    thing = _models(files).RESULTS["sweep_get_thing"]
    made = thing.model_validate(
        {"Field": {"q": 1}, "config_dict": {"q": 2}, "Any": "text", "none": {"Field": {}}}
    )
    assert made.Field.q == 1 and made.config_dict.q == 2 and made.Any == "text"


def test_a_class_named_like_a_field_of_the_class_using_it_is_renamed(tmp_path: Path) -> None:
    """elbv2's fixed query `Action: Literal["CreateRule"]` beside `Actions`, a list of
    objects the model generator names `Action` (singular): in that class body `Action` is
    the field, so `list[Action]` named a variable (mypy: "not valid as a type"). The class
    is renamed `ActionModel` wherever the module names it."""
    item = {"type": "object", "properties": {"Type": {"type": "string"}}}
    body = {
        "type": "object",
        "properties": {
            "Action": {"type": "string", "enum": ["CreateRule"]},
            "Actions": {"type": "array", "items": item},
            "x-y": {"type": "integer"},  # not a plain field: the library writes this class
        },
        "required": ["Action", "Actions"],  # (the library aliases an optional one itself)
    }
    paths = {"/": {"post": _get("createRule", requestBody=_json_body(body))}}
    files, sink = _render(_document(paths), tmp_path)
    assert not sink.has_errors
    source = next(text for path, text in files.items() if path.endswith("models.py"))
    tree = ast.parse(source)
    classes = {node.name for node in tree.body if isinstance(node, ast.ClassDef)}
    assert "ActionModel" in classes and "Action" not in classes
    assert "list[ActionModel]" in source
    rule = _models(files).ARGUMENTS["sweep_create_rule"]  # a required body: one argument
    made = rule.model_validate({"body": {"Action": "CreateRule", "Actions": [{"Type": "a"}]}})
    assert made.body.Actions[0].Type == "a"


def test_a_typed_map_is_annotated_with_the_standard_dict(tmp_path: Path) -> None:
    """appcenter's objects with properties and typed `additionalProperties`: the model
    generator annotates their extras `Dict[str, X]` from `typing` whatever it is told, which
    ruff refuses (UP006, UP035); the module says `dict` and imports no `Dict`."""
    extra = {"type": "object", "properties": {"q": {"type": "integer"}}}
    body = {
        "type": "object",
        "properties": {"a": {"type": "string"}, "x-y": {"type": "string"}},
        "additionalProperties": extra,
    }
    paths = {"/m": {"post": _get("putMap", requestBody={**_json_body(body), "required": True})}}
    files, sink = _render(_document(paths), tmp_path)
    assert not sink.has_errors
    source = next(text for path, text in files.items() if path.endswith("models.py"))
    assert '"__pydantic_extra__": dict[str, ' in source
    assert not re.search(r"\bDict\b", source)
    arguments = _models(files).ARGUMENTS["sweep_put_map"]
    made = arguments.model_validate({"body": {"a": "x", "other": {"q": 1}}})
    assert made.body.model_extra["other"].q == 1


# ------------------------------------------------------------------- 2. empty operationId
def test_an_empty_operation_id_is_read_as_absent_with_a_warning_at_it(tmp_path: Path) -> None:
    """apacta's `operationId: ""` (and one of spaces) names the tool from its method and
    path, as a missing operationId does; before, the spec was refused."""
    paths = {
        "/reports": {"get": _get("")},
        "/reisezentren/{id}": {
            "get": _get("  ", parameters=[{"name": "id", "in": "path", "required": True}])
        },
        "/items": {"get": _get(None)},
    }
    files, sink = _render(_document(paths), tmp_path)
    assert not sink.has_errors
    tools = {tool.name: tool for tool in _catalog(files).tools}
    assert sorted(tools) == ["sweep_get_reisezentren", "sweep_list_items", "sweep_list_reports"]
    assert tools["sweep_list_reports"].meta["operationId"] == ""
    for pointer in ("#/paths/~1reports/get/operationId", "~1reisezentren~1{id}/get/operationId"):
        (message,) = _warnings_at(sink, pointer)
        assert "the operationId is empty; read as absent" in message


# ------------------------------------------------------------------- 3. what a catalogue carries
def test_a_path_parameter_described_by_content_is_sent_as_one_json_segment(
    tmp_path: Path,
) -> None:
    """stream-io's `in: path` parameters with `content: application/json`: serialised in
    that media type, as OpenAPI says, like a query one, as one percent-encoded segment (the
    catalogue had no JSON style in a path: an internal error before)."""
    content = {"application/json": {"schema": {"type": "string"}}}
    obj = {"application/json": {"schema": {"type": "object"}}}
    parameters = [
        {"name": "name", "in": "path", "required": True, "content": content},
        {"name": "where", "in": "path", "required": True, "content": obj},
        {"name": "filter", "in": "query", "content": content},
    ]
    paths = {"/blocklists/{name}/{where}": {"get": _get("getBlockList", parameters=parameters)}}
    files, sink = _render(_document(paths), tmp_path)
    assert not sink.has_errors
    (tool,) = _catalog(files).tools
    assert {p.name: p.style for p in tool.request.parameters} == {
        "name": "json",
        "where": "json",
        "filter": "json",
    }
    arguments = {"name": "my/list", "where": {"a": [1]}, "filter": "a"}
    request = build_request(tool, arguments, BASE)
    assert request.url == (
        f"{BASE}/blocklists/%22my%2Flist%22/%7B%22a%22%3A%5B1%5D%7D?filter=%22a%22"
    )
    # JSON text is never a dot segment (a string is quoted): one encoded segment (S5).
    dots = build_request(tool, {**arguments, "name": ".."}, BASE)
    assert dots.url.startswith(f"{BASE}/blocklists/%22..%22/")
    with pytest.raises(ArgumentError):
        build_request(tool, {**arguments, "name": None}, BASE)


def test_s7_an_api_key_whose_header_name_cannot_be_sent_leaves_its_scheme_out(
    tmp_path: Path,
) -> None:
    """rapidapi's apiKey scheme `name: ADVICEment API Key` (a description, not a header
    name): no request can carry it, so the scheme is left out with a warning at its `name`
    (an internal error before); a name with a line break is no token either."""
    schemes = {
        "Adv-Security-Token": {"type": "apiKey", "in": "header", "name": "ADVICEment API Key"},
        "Broken": {"type": "apiKey", "in": "cookie", "name": "sid\n"},
        "Good": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
    }
    paths = {
        "/a": {"get": _get("getA", security=[{"Adv-Security-Token": []}])},
        "/b": {"get": _get("getB", security=[{"Broken": []}, {"Good": []}])},
    }
    files, sink = _render(_document(paths, securitySchemes=schemes), tmp_path)
    assert not sink.has_errors
    loaded = _catalog(files)
    assert sorted(loaded.security_schemes) == ["Good"]
    tools = {tool.name: tool for tool in loaded.tools}
    assert tools["sweep_get_a"].security == ()
    assert [[r.scheme for r in alt] for alt in tools["sweep_get_b"].security] == [["Good"]]
    (message,) = _warnings_at(sink, "/securitySchemes/Adv-Security-Token/name")
    assert "'ADVICEment API Key' is not a valid header name" in message
    assert "generated without credentials" in message
    assert _warnings_at(sink, "/securitySchemes/Broken/name")


def test_the_oracle_is_told_which_schemes_the_package_sends(tmp_path: Path) -> None:
    """The generated tests' oracle judges a request by the spec, whose `security` names a
    scheme the package cannot send (left out above): `sentSchemes` says which it sends."""
    schemes = {
        "Adv": {"type": "apiKey", "in": "header", "name": "My API Key"},
        "Good": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
    }
    paths = {"/a": {"get": _get("getA", security=[{"Adv": []}, {"Good": []}])}}
    files, sink = _render(_document(paths, securitySchemes=schemes), tmp_path)
    assert not sink.has_errors
    cases = json.loads(files["tests/generated_cases.json"])
    assert cases["oracle"][""]["sentSchemes"] == ["Good"]


def test_header_parameters_whose_names_cannot_be_sent(tmp_path: Path) -> None:
    """An optional header parameter named `My Header` is left out with a warning; a required
    one leaves its operation out (no call of it could succeed), not the whole spec."""
    optional = {"name": "My Header", "in": "header", "schema": {"type": "string"}}
    required = {**optional, "required": True}
    paths = {
        "/a": {"get": _get("getA", parameters=[optional])},
        "/b": {"get": _get("getB", parameters=[required])},
    }
    files, sink = _render(_document(paths), tmp_path)
    assert not sink.has_errors
    (tool,) = _catalog(files).tools
    assert tool.name == "sweep_get_a" and tool.request.parameters == ()
    (optional_left_out,) = _warnings_at(sink, "~1a/get/parameters/0/name")
    assert "the optional parameter is left out" in optional_left_out
    (required_left_out,) = _warnings_at(sink, "~1b/get/parameters/0/name")
    assert "the parameter is required" in required_left_out


def test_one_header_in_two_cases_is_one_parameter(tmp_path: Path) -> None:
    """codeartifact's path item declares `X-Amz-Content-Sha256` and its operation
    `x-amz-content-sha256`: one header (names compare in any case), so the operation's
    replaces the path item's, as OpenAPI says; before, the catalogue had both (internal
    error). Two in one list: the later is used, with a warning."""
    string = {"type": "string"}
    item = {
        "parameters": [{"name": "X-Amz-Content-Sha256", "in": "header", "schema": string}],
        "post": _get(
            "publish",
            parameters=[
                {"name": "x-amz-content-sha256", "in": "header", "required": True, "schema": string}
            ],
        ),
        "get": _get(
            "fetch",
            parameters=[
                {"name": "X-Trace", "in": "header", "schema": string},
                {"name": "x-trace", "in": "header", "schema": string},
            ],
        ),
    }
    files, sink = _render(_document({"/v": item}), tmp_path)
    assert not sink.has_errors
    tools = {tool.name: tool for tool in _catalog(files).tools}
    (publish,) = tools["sweep_publish"].request.parameters[-1:]
    assert [p.name for p in tools["sweep_publish"].request.parameters] == ["x-amz-content-sha256"]
    assert publish.required and publish.argument == "x_amz_content_sha256"
    fetch = tools["sweep_fetch"].request.parameters
    assert [p.name for p in fetch] == ["X-Amz-Content-Sha256", "x-trace"]
    (message,) = _warnings_at(sink, "~1v/get/parameters/1")
    assert "header parameter 'x-trace' is declared twice" in message
    assert not _warnings_at(sink, "~1v/post/parameters/0")


def test_an_object_body_declared_as_text_is_sent_as_json(tmp_path: Path) -> None:
    """appcenter's `text/plain` body whose schema is an object: text cannot carry it (the
    catalogue refused the tool: internal error); it is sent as JSON, with a warning at the
    schema. A string schema stays text."""
    obj = {"type": "object", "properties": {"notes": {"type": "string"}}}
    paths = {
        "/releases": {
            "patch": _get("update", requestBody={"content": {"text/plain": {"schema": obj}}}),
            "put": _get(
                "note", requestBody={"content": {"text/plain": {"schema": {"type": "string"}}}}
            ),
        }
    }
    files, sink = _render(_document(paths), tmp_path)
    assert not sink.has_errors
    tools = {tool.name: tool for tool in _catalog(files).tools}
    update = build_request(tools["sweep_update"], {"notes": "hi"}, BASE)
    assert ("Content-Type", "application/json") in update.headers
    assert json.loads(update.body or b"") == {"notes": "hi"}
    note = build_request(tools["sweep_note"], {"body": "hi"}, BASE)
    assert ("Content-Type", "text/plain") in note.headers and note.body == b"hi"
    (message,) = _warnings_at(sink, "~1releases/patch/requestBody/content/text~1plain/schema")
    assert "the body is sent as JSON" in message


# ------------------------------------------------------------------- 4. the models' audit
def test_g11_fields_named_like_pydantic_helpers_pass_the_audit(tmp_path: Path) -> None:
    """elbv2's `Field` properties: the model generator imports `Field as Field_aliased` and
    calls that (the audit refused the call: "unexpected call"); the module now passes, and
    the aliases are pydantic's own."""
    config = {"type": "object", "properties": {"TargetGroupArn": {"type": "string"}}}
    body = {
        "type": "object",
        "properties": {
            "Field": {"type": "string"},
            "ConfigDict": {"type": "string"},
            "ForwardConfig": {"$ref": "#/components/schemas/ForwardConfig"},
        },
    }
    paths = {"/rules": {"post": _get("createRule", requestBody=_json_body(body))}}
    files, sink = _render(_document(paths, schemas={"ForwardConfig": config}), tmp_path)
    assert not sink.has_errors
    thing = _models(files).ARGUMENTS["sweep_create_rule"]
    made = thing.model_validate({"Field": "host", "ForwardConfig": {"TargetGroupArn": "a"}})
    assert made.Field == "host"


@pytest.mark.parametrize(
    "source",
    [
        # a name bound to something else than pydantic's function
        "from os import system as Field\nclass A:\n    x: int = Field('id')\n",
        "from pydantic import Field\nclass Field:\n    pass\nclass A:\n    x: int = Field()\n",
        "from pydantic import Field as F\nF = print\nclass A:\n    x: int = F('id')\n",
        # a field of the class, bound before the call, is what the call would call
        "from pydantic import Field\nclass A:\n    Field: int = 1\n    x: int = Field()\n",
        "from pydantic import BaseModel\nclass A:\n    x: int = BaseModel()\n",
    ],
)
def test_g11_the_audit_refuses_a_call_to_anything_but_pydantics_helpers(source: str) -> None:
    assert models.audit(source).startswith("unexpected call")


def test_g11_the_audit_allows_pydantics_helpers_under_their_aliases() -> None:
    source = (
        "from pydantic import BaseModel, ConfigDict, Field as Field_aliased\n"
        "class A(BaseModel):\n"
        "    model_config = ConfigDict(extra='forbid')\n"
        "    ConfigDict: str | None = None\n"
        "    Field: str | None = None\n"
        "    x: int = Field_aliased(1, alias='X')\n"
    )
    assert models.audit(source) == ""


# ------------------------------------------------------------------- the bar, on all of it
@pytest.mark.slow  # a package's ruff, mypy --strict and own tests: seconds
def test_a_package_of_every_class_meets_our_bar(tmp_path: Path) -> None:
    inline = {"type": "object", "properties": {"q": {"type": "integer"}}}
    content = {"application/json": {"schema": {"type": "string"}}}
    paths = {
        "/a/{name}": {
            "get": _get(
                "4oDFeed",
                parameters=[
                    {"name": "name", "in": "path", "required": True, "content": content},
                    {"name": "Bad Header", "in": "header", "schema": {"type": "string"}},
                ],
                responses=_json_response(
                    {"type": "object", "properties": {"Field": inline, "ConfigDict": inline}}
                ),
            )
        },
        "/b": {
            "post": _get(
                "",
                requestBody={"content": {"text/plain": {"schema": inline}}},
                responses=_json_response({"$ref": "#/components/schemas/Field"}),
            )
        },
        # A scheme no request can carry: generated without it; the oracle does not hold the
        # request to it (a NotJudged warning), but still to the scheme that is sent.
        # (Its query parameter is still read and compared with the argument given.)
        "/c": {
            "get": _get(
                "get_user_2",
                security=[{"Adv": []}],
                parameters=[{"name": "q", "in": "query", "schema": {"type": "string"}}],
            )
        },
        "/d": {"get": _get("getUser2", security=[{"Adv": []}, {"Good": []}])},
    }
    schemas = {"Field": {"type": "object", "properties": {"Field": {"type": "string"}}}}
    folder = tmp_path / "out"
    schemes = {
        "Adv": {"type": "apiKey", "in": "header", "name": "My API Key"},
        "Good": {"type": "apiKey", "in": "header", "name": "X-Api-Key"},
    }
    spec = _write(_document(paths, schemas=schemas, securitySchemes=schemes), tmp_path)
    done = run(
        [sys.executable, "-m", "mcpmint", "generate", str(spec), "-o", str(folder)],
        cwd=tmp_path,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    env = clean_env(PYTHONPATH=str(folder / "src"), MYPYPATH=str(folder / "src"))
    for command in [*BAR_COMMANDS, ["-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"]]:
        checked = run([sys.executable, *command], cwd=folder, env=env)
        assert checked.returncode == 0, checked.stdout[-4000:] + checked.stderr[-2000:]
    assert load_catalog(json.loads((next(folder.rglob("tools.json"))).read_text()))


def test_a_server_host_written_in_capitals_is_expected_as_sent(tmp_path: Path) -> None:
    """GitHub Enterprise's `{protocol}://{hostname}` with `hostname: HOSTNAME`: the HTTP
    client sends the host in lower case (RFC 3986 compares it so); the case expected the
    capitals, and the package's own test failed."""
    document = _document({"/a": {"get": _get("getA")}})
    variables = {"protocol": {"default": "http"}, "hostname": {"default": "HOSTNAME"}}
    document["servers"] = [{"url": "{protocol}://{hostname}/API", "variables": variables}]
    files, sink = _render(document, tmp_path)
    assert not sink.has_errors
    cases = json.loads(files["tests/generated_cases.json"])
    assert cases["calls"]["sweep_get_a"]["request"]["url"] == "http://hostname/API/a"


def test_a_raw_xml_body_is_given_an_xml_example(tmp_path: Path) -> None:
    """mastercard's application/xml bodies are sent as the bytes given (base64); their
    example was `hello`, which no XML reader (the upstream's, the tests' oracle) reads."""
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    body = {"content": {"application/xml": {"schema": schema}}}
    files, sink = _render(_document({"/x": {"post": _get("postX", requestBody=body)}}), tmp_path)
    assert not sink.has_errors
    (tool,) = _catalog(files).tools
    (example,) = tool.input_schema["properties"]["body"]["examples"]
    assert ElementTree.fromstring(base64.b64decode(example)).tag == "example"
    cases = json.loads(files["tests/generated_cases.json"])
    assert cases["wideCalls"]["sweep_post_x"]["request"]["body"] == "<example/>"
