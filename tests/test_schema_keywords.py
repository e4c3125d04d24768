"""Every validation keyword of a request body's schema reaches the tool's input schema.

Mechanically, keyword by keyword (JSON Schema 2020-12's validation and applicator keywords,
OpenAPI's `discriminator`), on the body itself and on its members: a body the spec's schema
refuses for that keyword alone is refused by the tool's input schema too (whatever the
translation, compaction and flattening made of it), and the sample request the generated
tests send satisfies the spec's schema. A lost keyword is an argument the tool accepts and
the API refuses (the sweep's akamai sandboxes: a `minProperties: 1` body flattened into
arguments, and a sample `{}`).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build
from mcpmint.render.cases import build_cases

MEMBERS = {
    "x": {"type": "string"},
    "y": {"type": "integer"},
    "z": {"type": "array", "items": {"type": "integer"}},
}

# keyword -> (what the body's schema says besides MEMBERS, a body it refuses for that keyword)
ON_THE_BODY: dict[str, tuple[dict[str, Any], Any]] = {
    "minProperties": ({"minProperties": 1}, {}),
    "maxProperties": ({"maxProperties": 1}, {"x": "a", "y": 1}),
    "required": ({"required": ["y"]}, {"x": "a"}),
    "dependentRequired": ({"dependentRequired": {"x": ["y"]}}, {"x": "a"}),
    "dependentSchemas": ({"dependentSchemas": {"x": {"required": ["y"]}}}, {"x": "a"}),
    "propertyNames": ({"propertyNames": {"maxLength": 0}}, {"x": "a"}),
    "not": ({"not": {"required": ["x", "y"]}}, {"x": "a", "y": 1}),
    "if": ({"if": {"required": ["x"]}, "then": {"required": ["y"]}}, {"x": "a"}),
    "anyOf": ({"anyOf": [{"required": ["x"]}, {"required": ["y"]}]}, {"z": [1]}),
    "oneOf": ({"oneOf": [{"required": ["x"]}, {"required": ["y"]}]}, {"x": "a", "y": 1}),
    "allOf": ({"allOf": [{"required": ["x"]}]}, {"y": 1}),
    "enum": ({"enum": [{"x": "a"}]}, {"x": "b"}),
    "const": ({"const": {"x": "a"}}, {"x": "b"}),
}
# keyword -> (member, what that member's schema says besides its type, a value it refuses)
ON_A_MEMBER: dict[str, tuple[str, dict[str, Any], Any]] = {
    "minLength": ("x", {"minLength": 2}, "a"),
    "maxLength": ("x", {"maxLength": 1}, "ab"),
    "pattern": ("x", {"pattern": "^a+$"}, "b"),
    "enum": ("x", {"enum": ["a"]}, "b"),
    "const": ("x", {"const": "a"}, "b"),
    "minimum": ("y", {"minimum": 2}, 1),
    "maximum": ("y", {"maximum": 2}, 3),
    "exclusiveMinimum": ("y", {"exclusiveMinimum": 2}, 2),
    "exclusiveMaximum": ("y", {"exclusiveMaximum": 2}, 2),
    "multipleOf": ("y", {"multipleOf": 3}, 4),
    "minItems": ("z", {"minItems": 2}, [1]),
    "maxItems": ("z", {"maxItems": 1}, [1, 2]),
    "uniqueItems": ("z", {"uniqueItems": True}, [1, 1]),
    "contains": ("z", {"contains": {"const": 5}}, [1]),
    "minContains": ("z", {"contains": {"const": 5}, "minContains": 2}, [5]),
    "maxContains": ("z", {"contains": {"const": 5}, "maxContains": 1}, [5, 5]),
    "not": ("x", {"not": {"const": "b"}}, "b"),
}


def _operations() -> dict[str, tuple[dict[str, Any], Any]]:
    """operationId -> (the body's schema, a body it refuses)."""
    found: dict[str, tuple[dict[str, Any], Any]] = {}
    for keyword, (extra, bad) in ON_THE_BODY.items():
        found[f"body_{keyword}"] = ({"type": "object", "properties": MEMBERS, **extra}, bad)
    for keyword, (member, extra, value) in ON_A_MEMBER.items():
        members = {**MEMBERS, member: {**MEMBERS[member], **extra}}
        found[f"member_{keyword}"] = ({"type": "object", "properties": members}, {member: value})
    return found


OPERATIONS = _operations()


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, dict[str, Any]]:
    paths = {
        f"/{name}": {
            "post": {
                "operationId": name,
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": schema}},
                },
                "responses": {"204": {"description": "done"}},
            }
        }
        for name, (schema, _) in OPERATIONS.items()
    }
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "K", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": paths,
    }
    path = Path(tmp_path_factory.mktemp("keywords")) / "openapi.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    sink = DiagnosticSink()
    server = build(path, sink)
    assert server is not None and not sink.has_errors, [d.render() for d in sink]
    return server, build_cases(server, sink)


def _tool(server: Any, name: str) -> Any:
    [tool] = [t for t in server.tools if t.operation_id == name]
    return tool


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_a_body_the_spec_refuses_for_one_keyword_is_refused_by_the_tool(
    name: str, generated: tuple[Any, dict[str, Any]]
) -> None:
    server, _ = generated
    schema, bad = OPERATIONS[name]
    assert not Draft202012Validator(schema).is_valid(bad)  # the case is right
    tool = _tool(server, name)
    body = tool.request.body
    # The arguments that send `bad`: the body whole, or its members as arguments.
    arguments = {body.argument: bad} if body.argument else dict(bad)
    wire = dict(body.properties)
    if not body.argument:
        arguments = {arg: bad[w] for arg, w in wire.items() if w in bad}
        if set(bad) - set(wire.values()):  # a member with no argument: refused as unknown
            return
    assert not Draft202012Validator(tool.input_schema).is_valid(arguments), (
        f"{name}: the tool takes {arguments}, which the spec's body schema refuses: "
        + json.dumps(tool.input_schema)
    )


@pytest.mark.parametrize("name", sorted(OPERATIONS))
def test_the_sample_request_satisfies_the_spec(
    name: str, generated: tuple[Any, dict[str, Any]]
) -> None:
    server, cases = generated
    schema, _ = OPERATIONS[name]
    for kind in ("calls", "wideCalls"):
        call = cases[kind].get(_tool(server, name).name)
        if call is None:
            continue
        body = json.loads(call["request"]["body"])
        errors = [e.message for e in Draft202012Validator(schema).iter_errors(body)]
        assert errors == [], f"{kind} {name}: sample body {body}: {errors}"


DISCRIMINATED = """
openapi: 3.0.3
info: {title: K, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  /flows:
    post:
      operationId: update
      requestBody:
        required: true
        content:
          application/json:
            schema:
              oneOf: [{$ref: "#/components/schemas/Link"}, {$ref: "#/components/schemas/Code"}]
              discriminator:
                propertyName: method
                mapping: {link: "#/components/schemas/Link"}
      responses: {"204": {description: done}}
components:
  schemas:
    Link:
      type: object
      required: [method, email]
      properties: {method: {type: string, enum: [link, code]}, email: {type: string}}
    Code:
      type: object
      required: [method]
      properties: {method: {type: string}, code: {type: string}}
"""


def test_a_discriminator_chooses_the_branch(tmp_path: Path) -> None:
    """OpenAPI's discriminator: `{"method": "link"}` is the Link branch, which needs `email`,
    though it fits Code's schema; Code is chosen by its schema's name (no mapping entry)."""
    path = tmp_path / "openapi.yaml"
    path.write_text(DISCRIMINATED, encoding="utf-8")
    sink = DiagnosticSink()
    server = build(path, sink)
    assert server is not None
    [tool] = server.tools
    accepts = Draft202012Validator(tool.input_schema).is_valid
    assert not accepts({"body": {"method": "link"}})
    assert accepts({"body": {"method": "link", "email": "a@example.com"}})
    assert accepts({"body": {"method": "Code", "code": "1"}})
    assert not accepts({"body": {"method": "code", "code": "1"}})  # `code` names no branch
    call = build_cases(server, sink)["calls"][tool.name]
    body = json.loads(call["request"]["body"])
    assert body["method"] in ("link", "Code")


def test_a_required_member_the_spec_gives_no_schema_for_is_still_required(tmp_path: Path) -> None:
    """figma's webhook update requires `team_id`, which its properties do not list: closing
    the object left it out, and the tool could never send what the API needs."""
    schema = {"type": "object", "properties": MEMBERS, "required": ["x", "team_id"]}
    spec = {
        "openapi": "3.1.0",
        "info": {"title": "K", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/hooks": {
                "put": {
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": schema}},
                    },
                    "responses": {"204": {"description": "done"}},
                }
            }
        },
    }
    path = tmp_path / "openapi.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    sink = DiagnosticSink()
    server = build(path, sink)
    assert server is not None
    [tool] = server.tools
    accepts = Draft202012Validator(tool.input_schema).is_valid
    assert accepts({"x": "a", "team_id": 7})
    assert not accepts({"x": "a"})
    call = build_cases(server, sink)["calls"][tool.name]
    assert Draft202012Validator(schema).is_valid(json.loads(call["request"]["body"]))
