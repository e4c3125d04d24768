"""Swagger 2.0 input: the conversion to the OpenAPI 3.0 shape, rule by rule, and end to end."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator import OpenAPIV30SpecValidator

from mcpmint.build.frontends.swagger2 import convert, convert_with_origins
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build

from .conftest import CORPUS, SPECS


def swagger(**extra: Any) -> dict[str, Any]:
    doc: dict[str, Any] = {
        "swagger": "2.0",
        "info": {"title": "T", "version": "1"},
        "paths": {},
    }
    doc.update(extra)
    return doc


def op(*parameters: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"parameters": list(parameters), "responses": {"200": {"description": "ok"}}, **extra}


def one_operation(doc: dict[str, Any], path: str = "/x", method: str = "post") -> dict[str, Any]:
    result: dict[str, Any] = convert(doc)["paths"][path][method]
    return result


# ---------------------------------------------------------------------------- document


def test_document_is_openapi_3_0_and_input_untouched() -> None:
    doc = swagger(
        host="api.example.com",
        basePath="/v1",
        schemes=["http"],
        consumes=["application/json"],
        paths={"/x": {"get": op({"name": "q", "in": "query", "type": "string"})}},
        definitions={"A": {"type": "object"}},
    )
    before = copy.deepcopy(doc)
    out = convert(doc)
    assert doc == before
    assert out["openapi"] == "3.0.3"
    for key in ("swagger", "host", "basePath", "schemes", "consumes", "definitions"):
        assert key not in out
    assert not list(OpenAPIV30SpecValidator(out).iter_errors())


@pytest.mark.parametrize(
    ("fields", "urls"),
    [
        ({"host": "h.io", "basePath": "/v1", "schemes": ["http"]}, ["http://h.io/v1"]),
        ({"host": "h.io", "schemes": ["http", "https"]}, ["https://h.io", "http://h.io"]),
        ({"host": "h.io", "basePath": "/api/"}, ["https://h.io/api"]),
        ({"basePath": "/v1.53"}, ["/v1.53"]),
        ({"host": "h.io", "schemes": ["ws"]}, ["https://h.io"]),
    ],
)
def test_host_base_path_and_schemes_become_servers(fields: dict[str, Any], urls: list[str]) -> None:
    out = convert(swagger(**fields))
    assert [s["url"] for s in out["servers"]] == urls


def test_no_host_and_no_base_path_gives_no_servers() -> None:
    assert "servers" not in convert(swagger())


def test_definitions_move_to_components_and_every_ref_follows() -> None:
    doc = swagger(
        definitions={
            "Pet": {"type": "object", "properties": {"tag": {"$ref": "#/definitions/Tag"}}},
            "Tag": {"type": "string", "x-nullable": True},
        },
        paths={
            "/x": {
                "get": {
                    "responses": {
                        "200": {"description": "ok", "schema": {"$ref": "#/definitions/Pet"}}
                    }
                }
            }
        },
        **{"x-mcpmint-files": {"other.yaml": {"Wrap": {"items": {"$ref": "#/definitions/Pet"}}}}},
    )
    out = convert(doc)
    schemas = out["components"]["schemas"]
    assert schemas["Pet"]["properties"]["tag"] == {"$ref": "#/components/schemas/Tag"}
    assert schemas["Tag"]["nullable"] is True
    response = out["paths"]["/x"]["get"]["responses"]["200"]
    assert response["content"] == {
        "application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}
    }
    mounted = out["x-mcpmint-files"]["other.yaml"]["Wrap"]
    assert mounted["items"] == {"$ref": "#/components/schemas/Pet"}
    assert "#/definitions/" not in json.dumps(out)


def test_root_parameters_and_responses_become_components_and_refs_are_inlined() -> None:
    doc = swagger(
        parameters={
            "limit": {"name": "limit", "in": "query", "type": "integer"},
            "pet": {"name": "pet", "in": "body", "schema": {"type": "object"}},
        },
        responses={"NotFound": {"description": "nf", "schema": {"type": "string"}}},
        paths={
            "/x": {
                "post": {
                    "parameters": [{"$ref": "#/parameters/limit"}, {"$ref": "#/parameters/pet"}],
                    "responses": {"404": {"$ref": "#/responses/NotFound"}},
                }
            }
        },
    )
    out = convert(doc)
    components = out["components"]
    assert components["parameters"] == {
        "limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}}
    }
    assert components["responses"]["NotFound"]["content"]["application/json"]["schema"] == {
        "type": "string"
    }
    operation = out["paths"]["/x"]["post"]
    assert operation["parameters"] == [
        {"name": "limit", "in": "query", "schema": {"type": "integer"}}
    ]
    assert operation["requestBody"]["content"]["application/json"]["schema"] == {"type": "object"}
    assert operation["responses"]["404"]["description"] == "nf"


def test_unknown_refs_and_odd_values_do_not_crash() -> None:
    doc = swagger(
        paths={
            "/x": {
                "parameters": "nonsense",
                "get": {
                    "parameters": [
                        {"$ref": "#/parameters/missing"},
                        7,
                        {"in": "query"},
                        {"name": "t", "in": "query", "type": ["string", "null"]},
                    ],
                    "responses": {"200": {"$ref": "#/responses/missing"}, "201": "text"},
                },
                "post": "not an operation",
            },
            "/y": None,
        },
        definitions={"A": {"type": ["object", "null"], "items": [{"type": "string"}]}},
        securityDefinitions={"weird": {"type": "oauth2", "flow": "telepathy"}, "x": 3},
        parameters=[1, 2],
        host=5,
        schemes="https",
    )
    before = copy.deepcopy(doc)
    out = convert(doc)
    assert doc == before
    assert out["openapi"] == "3.0.3"


# ---------------------------------------------------------------------------- bodies


def test_body_parameter_becomes_request_body_per_consumes() -> None:
    body = {
        "name": "pet",
        "in": "body",
        "required": True,
        "description": "the pet",
        "schema": {"$ref": "#/definitions/Pet"},
    }
    doc = swagger(
        consumes=["application/json", "application/xml"],
        paths={"/x": {"post": op(body)}},
        definitions={"Pet": {"type": "object"}},
    )
    request_body = one_operation(doc)["requestBody"]
    ref = {"$ref": "#/components/schemas/Pet"}
    assert request_body == {
        "content": {"application/json": {"schema": ref}, "application/xml": {"schema": ref}},
        "description": "the pet",
        "required": True,
    }
    assert "parameters" not in one_operation(doc)


def test_body_defaults_to_json_and_operation_consumes_overrides_root() -> None:
    body = {"name": "b", "in": "body", "schema": {"type": "string"}}
    doc = swagger(paths={"/x": {"post": op(body)}})
    assert list(one_operation(doc)["requestBody"]["content"]) == ["application/json"]
    assert "required" not in one_operation(doc)["requestBody"]
    doc = swagger(
        consumes=["application/json"],
        paths={"/x": {"post": op(body, consumes=["text/plain"])}},
    )
    assert list(one_operation(doc)["requestBody"]["content"]) == ["text/plain"]


def form_schema(operation: dict[str, Any], media: str) -> dict[str, Any]:
    schema: dict[str, Any] = operation["requestBody"]["content"][media]["schema"]
    return schema


def test_form_data_becomes_an_urlencoded_object_with_required_kept() -> None:
    doc = swagger(
        paths={
            "/x": {
                "post": op(
                    {"name": "token", "in": "formData", "type": "string", "required": True},
                    {"name": "n", "in": "formData", "type": "integer", "description": "count"},
                    {"name": "q", "in": "query", "type": "string"},
                    consumes=["application/x-www-form-urlencoded", "application/json"],
                )
            }
        }
    )
    operation = one_operation(doc)
    assert list(operation["requestBody"]["content"]) == ["application/x-www-form-urlencoded"]
    assert form_schema(operation, "application/x-www-form-urlencoded") == {
        "type": "object",
        "properties": {
            "token": {"type": "string"},
            "n": {"type": "integer", "description": "count"},
        },
        "required": ["token"],
    }
    assert operation["requestBody"]["required"] is True
    assert [p["name"] for p in operation["parameters"]] == ["q"]


def test_form_arrays_keep_their_collection_format_as_encoding() -> None:
    tags = {"name": "tags", "in": "formData", "type": "array", "items": {"type": "string"}}
    conversion = convert_with_origins(
        swagger(paths={"/x": {"post": op({**tags, "collectionFormat": "pipes"})}})
    )
    media = conversion.data["paths"]["/x"]["post"]["requestBody"]["content"][
        "application/x-www-form-urlencoded"
    ]
    assert media["encoding"] == {"tags": {"style": "pipeDelimited", "explode": False}}
    assert media["schema"]["properties"]["tags"] == {"type": "array", "items": {"type": "string"}}
    assert [pointer for pointer, _ in conversion.notes] == [
        "#/paths/~1x/post/parameters/0/collectionFormat"
    ]
    multi = convert_with_origins(
        swagger(paths={"/x": {"post": op({**tags, "collectionFormat": "multi"})}})
    )
    assert not multi.notes


def test_form_data_is_multipart_when_consumes_says_so_or_a_file_is_sent() -> None:
    text = {"name": "a", "in": "formData", "type": "string"}
    upload = {"name": "f", "in": "formData", "type": "file", "required": True}
    doc = swagger(paths={"/x": {"post": op(text, consumes=["multipart/form-data"])}})
    assert list(one_operation(doc)["requestBody"]["content"]) == ["multipart/form-data"]
    doc = swagger(paths={"/x": {"post": op(text, upload)}})
    operation = one_operation(doc)
    assert list(operation["requestBody"]["content"]) == ["multipart/form-data"]
    schema = form_schema(operation, "multipart/form-data")
    assert schema["properties"]["f"] == {"type": "string", "format": "binary"}


def test_path_level_body_and_form_parameters_reach_each_operation() -> None:
    doc = swagger(
        paths={
            "/x": {
                "parameters": [
                    {"name": "id", "in": "query", "type": "string"},
                    {"name": "b", "in": "body", "schema": {"type": "object"}},
                ],
                "post": op(),
                "put": op({"name": "b", "in": "body", "schema": {"type": "string"}}),
            }
        }
    )
    out = convert(doc)["paths"]["/x"]
    assert out["parameters"] == [{"name": "id", "in": "query", "schema": {"type": "string"}}]
    assert out["post"]["requestBody"]["content"]["application/json"]["schema"] == {"type": "object"}
    assert out["put"]["requestBody"]["content"]["application/json"]["schema"] == {"type": "string"}


# ---------------------------------------------------------------------------- parameters


def test_parameter_keywords_move_into_schema() -> None:
    param = {
        "name": "status",
        "in": "query",
        "description": "d",
        "required": True,
        "type": "string",
        "format": "byte",
        "enum": ["a", "b"],
        "default": "a",
        "maxLength": 3,
        "pattern": "^[ab]$",
        "x-nullable": True,
        "x-custom": 1,
    }
    (converted,) = one_operation(swagger(paths={"/x": {"get": op(param)}}), method="get")[
        "parameters"
    ]
    assert converted == {
        "name": "status",
        "in": "query",
        "description": "d",
        "required": True,
        "x-custom": 1,
        "schema": {
            "type": "string",
            "format": "byte",
            "default": "a",
            "maxLength": 3,
            "pattern": "^[ab]$",
            "enum": ["a", "b"],
            "nullable": True,
        },
    }


@pytest.mark.parametrize(
    ("location", "fmt", "style", "explode"),
    [
        ("query", None, "form", False),
        ("query", "csv", "form", False),
        ("query", "ssv", "spaceDelimited", False),
        ("query", "pipes", "pipeDelimited", False),
        ("query", "multi", "form", True),
        ("query", "tsv", "form", False),
        ("header", "csv", "simple", False),
        ("path", "csv", "simple", False),
    ],
)
def test_collection_format_becomes_style_and_explode(
    location: str, fmt: str | None, style: str, explode: bool
) -> None:
    param: dict[str, Any] = {
        "name": "ids",
        "in": location,
        "required": True,
        "type": "array",
        "items": {"type": "integer", "minimum": 1},
    }
    if fmt:
        param["collectionFormat"] = fmt
    conversion = convert_with_origins(swagger(paths={"/x/{ids}": {"get": op(param)}}))
    (converted,) = conversion.data["paths"]["/x/{ids}"]["get"]["parameters"]
    assert (converted["style"], converted["explode"]) == (style, explode)
    assert converted["schema"] == {"type": "array", "items": {"type": "integer", "minimum": 1}}
    assert "collectionFormat" not in converted
    assert bool(conversion.notes) == (fmt == "tsv")


# ---------------------------------------------------------------------------- responses


def test_response_schema_becomes_content_per_produces_with_examples_and_headers() -> None:
    response = {
        "description": "ok",
        "schema": {"type": "object"},
        "examples": {"application/json": {"a": 1}},
        "headers": {"X-Rate": {"type": "integer", "description": "left"}},
    }
    doc = swagger(
        produces=["application/json", "text/plain"],
        paths={"/x": {"get": {"responses": {"200": response}}}},
    )
    converted = one_operation(doc, method="get")["responses"]["200"]
    assert converted == {
        "description": "ok",
        "headers": {"X-Rate": {"description": "left", "schema": {"type": "integer"}}},
        "content": {
            "application/json": {"schema": {"type": "object"}, "example": {"a": 1}},
            "text/plain": {"schema": {"type": "object"}},
        },
    }


def test_response_defaults_to_json_and_file_becomes_binary() -> None:
    doc = swagger(
        paths={
            "/x": {
                "get": {
                    "produces": ["application/octet-stream"],
                    "responses": {"200": {"description": "f", "schema": {"type": "file"}}},
                },
                "put": {"responses": {"200": {"description": "j", "schema": {"type": "string"}}}},
            }
        }
    )
    out = convert(doc)["paths"]["/x"]
    assert out["get"]["responses"]["200"]["content"] == {
        "application/octet-stream": {"schema": {"type": "string", "format": "binary"}}
    }
    assert list(out["put"]["responses"]["200"]["content"]) == ["application/json"]


# ---------------------------------------------------------------------------- security


def test_security_definitions_become_security_schemes() -> None:
    scopes = {"read": "read things"}
    doc = swagger(
        securityDefinitions={
            "basic": {"type": "basic", "description": "b"},
            "key": {"type": "apiKey", "in": "header", "name": "X-Key"},
            "imp": {"type": "oauth2", "flow": "implicit", "authorizationUrl": "https://a"},
            "pwd": {"type": "oauth2", "flow": "password", "tokenUrl": "https://t"},
            "app": {
                "type": "oauth2",
                "flow": "application",
                "tokenUrl": "https://t",
                "scopes": scopes,
            },
            "code": {
                "type": "oauth2",
                "flow": "accessCode",
                "authorizationUrl": "https://a",
                "tokenUrl": "https://t",
                "scopes": scopes,
            },
        }
    )
    schemes = convert(doc)["components"]["securitySchemes"]
    assert schemes["basic"] == {"type": "http", "scheme": "basic", "description": "b"}
    assert schemes["key"] == {"type": "apiKey", "in": "header", "name": "X-Key"}
    assert schemes["imp"]["flows"] == {"implicit": {"authorizationUrl": "https://a", "scopes": {}}}
    assert schemes["pwd"]["flows"] == {"password": {"tokenUrl": "https://t", "scopes": {}}}
    assert schemes["app"]["flows"] == {
        "clientCredentials": {"tokenUrl": "https://t", "scopes": scopes}
    }
    assert schemes["code"]["flows"] == {
        "authorizationCode": {
            "authorizationUrl": "https://a",
            "tokenUrl": "https://t",
            "scopes": scopes,
        }
    }
    assert all(s["type"] == "oauth2" for k, s in schemes.items() if k not in ("basic", "key"))


# ---------------------------------------------------------------------------- locations


def test_converted_pointers_lead_back_to_the_swagger_document() -> None:
    doc = swagger(
        parameters={"limit": {"name": "limit", "in": "query", "type": "integer"}},
        paths={
            "/x": {
                "post": op(
                    {"$ref": "#/parameters/limit"},
                    {"name": "b", "in": "body", "schema": {"type": "object"}},
                    {"name": "q", "in": "query", "type": "string"},
                )
            },
            "/f": {"post": op({"name": "n", "in": "formData", "type": "string"})},
        },
    )
    conversion = convert_with_origins(doc)
    origin = conversion.origin
    assert origin("#/paths/~1x/post") == "#/paths/~1x/post"
    assert origin("#/paths/~1x/post/parameters/0/schema") == "#/parameters/limit"
    assert origin("#/paths/~1x/post/parameters/1/schema") == "#/paths/~1x/post/parameters/2"
    assert origin("#/paths/~1x/post/requestBody") == "#/paths/~1x/post/parameters/1"
    assert (
        origin("#/paths/~1x/post/requestBody/content/application~1json/schema/properties/a")
        == "#/paths/~1x/post/parameters/1/schema/properties/a"
    )
    assert (
        origin(
            "#/paths/~1f/post/requestBody/content/"
            "application~1x-www-form-urlencoded/schema/properties/n"
        )
        == "#/paths/~1f/post/parameters/0"
    )
    assert origin("#/components/schemas/Pet/properties/a") == "#/definitions/Pet/properties/a"
    assert origin("#/components/securitySchemes/k") == "#/securityDefinitions/k"


def test_lossy_conversions_are_warnings_at_the_swagger_line(tmp_path: Path) -> None:
    spec = tmp_path / "api.yaml"
    spec.write_text(
        "swagger: '2.0'\n"
        "info: {title: Tabs, version: '1'}\n"
        "host: api.example.com\n"
        "paths:\n"
        "  /x:\n"
        "    get:\n"
        "      operationId: listX\n"
        "      parameters:\n"
        "        - name: ids\n"
        "          in: query\n"
        "          type: array\n"
        "          items: {type: string}\n"
        "          collectionFormat: tsv\n"
        "      responses:\n"
        "        '200': {description: ok}\n",
        encoding="utf-8",
    )
    sink = DiagnosticSink()
    server = build(spec, sink)
    assert [t.name for t in server.tools] == ["tabs_list_x"]
    warnings = [f"{d.location} {d.message}" for d in sink.items if d.level == "warning"]
    assert any(w.startswith(f"{spec}:13:11 collectionFormat 'tsv'") for w in warnings), warnings


# ---------------------------------------------------------------------------- end to end


def test_petstore_v2_builds_like_its_3_0_twin() -> None:
    sink = DiagnosticSink()
    v2 = build(SPECS / "petstore-v2.yaml", sink)
    v3 = build(SPECS / "petstore.yaml", DiagnosticSink())
    assert not sink.has_errors
    assert [t.name for t in v2.tools] == [t.name for t in v3.tools]
    assert v2.base_url == "http://petstore.swagger.io/v1"
    by_name = {t.name: t for t in v2.tools}
    limit = by_name["petstore_list_pets"].input_schema["properties"]["limit"]
    assert limit["type"] == "integer"
    assert by_name["petstore_list_pets"].output_schema is not None


@pytest.mark.skipif(not CORPUS.exists(), reason="the shared corpus is not checked out")
def test_multi_file_swagger_with_a_root_folder() -> None:
    folder = CORPUS / "oai-petstore-separate-v2"
    sink = DiagnosticSink()
    server = build(folder / "spec" / "swagger.yaml", sink, root=folder)
    assert not sink.has_errors, sink.items
    tools = {t.name: t for t in server.tools}
    assert sorted(tools) == [
        "petstore_add_pet",
        "petstore_delete_pet",
        "petstore_find_pet_by_id",
        "petstore_find_pets",
    ]
    add = tools["petstore_add_pet"]
    assert add.request.body is not None and add.request.body.media_type == "application/json"
    assert set(add.input_schema["required"]) == {"id", "name"}  # allOf: Pet requires id
    find = tools["petstore_find_pets"]
    tags = next(p for p in find.request.parameters if p.name == "tags")
    assert (tags.style, tags.explode) == ("form", False)
    assert find.input_schema["properties"]["tags"]["type"] == "array"


def test_slack_style_form_operation(tmp_path: Path) -> None:
    spec = tmp_path / "chat.json"
    spec.write_text(
        json.dumps(
            swagger(
                host="chat.example.com",
                basePath="/api",
                schemes=["https"],
                securityDefinitions={
                    "auth": {
                        "type": "oauth2",
                        "flow": "accessCode",
                        "authorizationUrl": "https://chat.example.com/oauth",
                        "tokenUrl": "https://chat.example.com/token",
                        "scopes": {"chat:write": "post"},
                    }
                },
                paths={
                    "/chat.post": {
                        "post": op(
                            {
                                "name": "channel",
                                "in": "formData",
                                "type": "string",
                                "required": True,
                            },
                            {"name": "text", "in": "formData", "type": "string"},
                            consumes=["application/x-www-form-urlencoded", "application/json"],
                            operationId="chat.post",
                            security=[{"auth": ["chat:write"]}],
                        )
                    }
                },
            )
        ),
        encoding="utf-8",
    )
    sink = DiagnosticSink()
    server = build(spec, sink)
    assert not sink.has_errors, sink.items
    (tool,) = server.tools
    assert tool.request.body is not None
    assert tool.request.body.media_type == "application/x-www-form-urlencoded"
    assert tool.input_schema["required"] == ["channel"]
    assert server.base_url == "https://chat.example.com/api"
    assert [s.type for s in server.security_schemes] == ["oauth2"]
