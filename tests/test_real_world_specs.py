"""Real-world specs (issue 26): each class the sweep found, on a small inline spec.

A spec that can be read gives a server: what other tools (Swagger UI, Redocly,
openapi-generator) read is read, what cannot become a tool is left out with a located warning
naming it, and nothing valid reaches the catalogue check as a bug. The sweep over the real
specs is `benchmarks/sweep.py` and `tests/test_sweep.py` (slow).
"""

from __future__ import annotations

import base64
import copy
import json
import textwrap
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from mcpmint import ir
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, build, generate
from mcpmint.render.cases import build_cases
from mcpmint.render.templates import catalog
from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.server import build_server

pytestmark = pytest.mark.anyio

HEAD = """\
openapi: 3.0.3
info: {title: Shop, version: "1"}
servers: [{url: "https://api.example.com"}]
"""


def spec_file(tmp_path: Path, text: str, name: str = "openapi.yaml") -> Path:
    path = tmp_path / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text), encoding="utf-8")
    return path


def built(tmp_path: Path, paths: str, extra: str = "") -> tuple[ir.Server, DiagnosticSink]:
    spec = spec_file(tmp_path, HEAD + "paths:\n" + textwrap.indent(textwrap.dedent(paths), "  "))
    if extra:
        spec.write_text(spec.read_text() + textwrap.dedent(extra), encoding="utf-8")
    sink = DiagnosticSink()
    return build(spec, sink), sink


def tool(server: ir.Server, name: str) -> ir.Tool:
    [found] = [t for t in server.tools if t.name == name]
    return found


def req(found: ir.Tool) -> ir.Request:
    assert found.request is not None
    return found.request


def warnings(sink: DiagnosticSink) -> list[str]:
    return [d.message for d in sink.warnings]


async def call(
    server: ir.Server, name: str, arguments: dict[str, Any], schemes: set[str] | None = None
) -> httpx2.Request:
    """Call one tool of `server` through the runtime against a recording upstream, every
    credential configured (or those of `schemes`)."""
    seen: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={})

    # Writes ask the user first by default; here the request itself is under test.
    server = replace(server, tools=tuple(replace(t, confirmation="none") for t in server.tools))
    environ = {
        var: "secret"
        for s in server.security_schemes
        if schemes is None or s.name in schemes
        for _, var in s.env
    }
    mcp_server = build_server(
        load_catalog(catalog(server)), environ=environ, transport=httpx2.MockTransport(answer)
    )
    async with Client(mcp_server) as client:
        result = await client.call_tool(name, arguments)
    assert not result.is_error, result
    [request] = seen
    return request


# ------------------------------------------------------------------ operation-level $ref
def test_operation_ref_to_another_file_is_followed(tmp_path: Path) -> None:
    spec_file(
        tmp_path,
        """\
        operationId: listDroplets
        summary: List droplets
        parameters:
          - {name: per_page, in: query, schema: {type: integer}}
        responses: {"200": {description: ok}}
        """,
        "resources/droplets/list.yml",
    )
    spec_file(
        tmp_path,
        """\
        get: {$ref: "../resources/droplets/list.yml"}
        """,
        "paths/droplets.yml",
    )
    server, sink = built(
        tmp_path,
        """\
        /v2/droplets: {$ref: "paths/droplets.yml"}
        /v2/sizes:
          get: {$ref: "resources/droplets/list.yml"}
        """,
    )
    names = {req(t).path: t.name for t in server.tools}
    # One operationId at two paths: the key that sorts first keeps the name.
    assert names["/v2/droplets"] == "shop_list_droplets"
    assert names["/v2/sizes"].startswith("shop_list_droplets_")
    for found in server.tools:
        assert found.title == "List droplets"
        assert [p.name for p in req(found).parameters] == ["per_page"]
    assert not sink.errors


def test_swagger2_operation_ref_keeps_its_body(tmp_path: Path) -> None:
    spec_file(
        tmp_path,
        """\
        operationId: addPet
        consumes: [application/json]
        parameters:
          - name: body
            in: body
            required: true
            schema: {type: object, properties: {name: {type: string}}}
        responses: {"200": {description: ok}}
        """,
        "ops/add.yaml",
    )
    spec = spec_file(
        tmp_path,
        """\
        swagger: "2.0"
        info: {title: Pets, version: "1"}
        host: api.example.com
        paths:
          /pets:
            post: {$ref: "ops/add.yaml"}
        """,
    )
    server = build(spec, DiagnosticSink())
    [found] = server.tools
    assert req(found).body is not None
    assert "name" in found.input_schema["properties"]


def test_paths_given_as_a_list_of_refs_make_one_mapping(tmp_path: Path) -> None:
    spec_file(
        tmp_path,
        "/a:\n  get: {operationId: getA, responses: {'200': {description: ok}}}\n",
        "p/a.yaml",
    )
    spec_file(
        tmp_path,
        "/b:\n  get: {operationId: getB, responses: {'200': {description: ok}}}\n",
        "p/b.yaml",
    )
    spec = spec_file(tmp_path, HEAD + "paths:\n  - $ref: p/a.yaml\n  - $ref: p/b.yaml\n")
    sink = DiagnosticSink()
    server = build(spec, sink)
    assert sorted(t.name for t in server.tools) == ["shop_get_a", "shop_get_b"]
    assert any("`paths` is a list of references" in m for m in warnings(sink))


def test_a_file_local_pointer_that_means_the_entry_reads_the_entry(tmp_path: Path) -> None:
    spec_file(tmp_path, "Id: {name: id, in: path, required: true, type: string}\n", "params.yaml")
    spec_file(
        tmp_path,
        """\
        /things/{id}:
          get:
            parameters: [{$ref: "#/parameters/Id"}]
            responses: {"200": {description: ok}}
        """,
        "paths/things.yaml",
    )
    spec = spec_file(
        tmp_path,
        """\
        swagger: "2.0"
        info: {title: Things, version: "1"}
        host: api.example.com
        parameters:
          - $ref: params.yaml
        paths:
          - $ref: paths/things.yaml
        """,
    )
    sink = DiagnosticSink()
    server = build(spec, sink)
    [found] = server.tools
    assert [(p.location, p.name) for p in req(found).parameters] == [("path", "id")]
    assert any("read in the entry spec" in m for m in warnings(sink))


# ------------------------------------------------------------------ media types
@pytest.mark.parametrize(
    ("media", "schema", "sent", "raw"),
    [
        ("text/json", "{type: object, properties: {a: {type: string}}}", "text/json", False),
        ("application/vnd.api+json", "{type: object}", "application/vnd.api+json", False),
        ("datacenter-vnd-config-gtm.v1.1+json", "{type: object}", "application/json", False),
        ("'*/*'", "{type: object, properties: {a: {type: string}}}", "application/json", False),
        ("application/*+json", "{type: object}", "application/json", False),
        ("'*/*'", "{type: string, format: binary}", "application/octet-stream", True),
        ("image/*", "{type: string, format: binary}", "application/octet-stream", True),
        ("image/jpeg", "{type: string}", "image/jpeg", True),
        ("application/tar+gzip", "{type: string, format: binary}", "application/tar+gzip", True),
        ("application/octet-stream", "{type: string}", "application/octet-stream", True),
        (
            "'application/json, okta-version=1.0.0'",
            "{type: object}",
            "application/json; okta-version=1.0.0",
            False,
        ),
    ],
)
def test_media_types_json_when_the_schema_says_json_raw_bytes_otherwise(
    tmp_path: Path, media: str, schema: str, sent: str, raw: bool
) -> None:
    server, sink = built(
        tmp_path,
        f"""\
        /upload:
          post:
            operationId: upload
            requestBody:
              required: true
              content:
                {media}: {{schema: {schema}}}
            responses: {{"200": {{description: ok}}}}
        """,
    )
    assert not sink.errors
    [found] = server.tools
    body = req(found).body
    assert body is not None
    assert body.media_type == sent
    body_schemas = [s for s in found.input_schema["properties"].values() if isinstance(s, dict)]
    assert any(s.get("contentEncoding") == "base64" for s in body_schemas) is raw
    load_catalog(catalog(server))  # the runtime's own check accepts it


async def test_a_text_json_body_is_sent_as_json(tmp_path: Path) -> None:
    server, _ = built(
        tmp_path,
        """\
        /points:
          post:
            operationId: addPoints
            requestBody:
              content:
                text/json: {schema: {type: object, properties: {n: {type: integer}}}}
            responses: {"200": {description: ok}}
        """,
    )
    request = await call(server, "shop_add_points", {"n": 3})
    assert request.headers["content-type"] == "text/json"
    assert json.loads(request.content) == {"n": 3}


async def test_a_wildcard_binary_body_is_sent_as_the_bytes_given(tmp_path: Path) -> None:
    server, _ = built(
        tmp_path,
        """\
        /blob:
          put:
            operationId: putBlob
            requestBody:
              content:
                "*/*": {schema: {type: string, format: binary}}
            responses: {"200": {description: ok}}
        """,
    )
    data = base64.b64encode(b"\x00\x01bytes").decode()
    request = await call(server, "shop_put_blob", {"body": data})
    assert request.headers["content-type"] == "application/octet-stream"
    assert request.content == b"\x00\x01bytes"


def test_an_empty_content_sends_no_body_with_a_warning(tmp_path: Path) -> None:
    server, sink = built(
        tmp_path,
        """\
        /ping:
          post:
            operationId: ping
            requestBody: {content: {}}
            responses: {"200": {description: ok}}
        """,
    )
    [found] = server.tools
    assert req(found).body is None
    assert any("POST /ping: the request body names no media type" in m for m in warnings(sink))


# ------------------------------------------------------------------ path keys, headers
async def test_a_path_key_with_a_query_string_gives_a_fixed_query_parameter(
    tmp_path: Path,
) -> None:
    server, sink = built(
        tmp_path,
        """\
        /responses?beta=true:
          post:
            operationId: createResponse
            responses: {"200": {description: ok}}
        /files/{file_id}#get_shared_link:
          get:
            operationId: getSharedLink
            parameters: [{name: file_id, in: path, required: true, schema: {type: string}}]
            responses: {"200": {description: ok}}
        """,
    )
    assert not sink.errors
    assert req(tool(server, "shop_create_response")).path == "/responses"
    assert req(tool(server, "shop_get_shared_link")).path == "/files/{file_id}"
    assert any("holds a query string or a fragment" in m for m in warnings(sink))
    request = await call(server, "shop_create_response", {"beta": "true"})
    assert str(request.url) == "https://api.example.com/responses?beta=true"
    request = await call(server, "shop_get_shared_link", {"file_id": "7"})
    assert str(request.url) == "https://api.example.com/files/7"


SECURED = """\
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Api-Key}
security: [{key: []}]
"""


def test_client_owned_and_credential_headers_are_left_out_with_a_warning(tmp_path: Path) -> None:
    server, sink = built(
        tmp_path,
        """\
        /write:
          post:
            operationId: write
            parameters:
              - {name: Content-Length, in: header, schema: {type: integer}}
              - {name: x-api-key, in: header, required: true, schema: {type: string}}
              - {name: X-Trace, in: header, schema: {type: string}}
            responses: {"200": {description: ok}}
        """,
        SECURED,
    )
    assert not sink.errors
    [found] = server.tools
    assert [p.name for p in req(found).parameters] == ["X-Trace"]
    assert any("'Content-Length' is left out" in m for m in warnings(sink))
    assert any("'x-api-key' is left out: the credential" in m for m in warnings(sink))
    load_catalog(catalog(server))


def test_a_style_a_location_cannot_have_falls_back_to_its_default(tmp_path: Path) -> None:
    server, sink = built(
        tmp_path,
        """\
        /q:
          get:
            operationId: q
            parameters:
              - {name: ids, in: query, style: simple, schema: {type: array, items: {type: string}}}
            responses: {"200": {description: ok}}
        """,
    )
    [found] = server.tools
    assert req(found).parameters[0].style == "form"
    assert any("style 'simple' is not one a query parameter can have" in m for m in warnings(sink))


# ------------------------------------------------------------------ security
def test_an_undefined_security_scheme_is_a_warning_and_the_plausible_one_is_used(
    tmp_path: Path,
) -> None:
    server, sink = built(
        tmp_path,
        """\
        /a:
          get:
            operationId: getA
            security: [{api_key: []}]
            responses: {"200": {description: ok}}
        /b:
          get:
            operationId: getB
            security: [{sessionToken: []}]
            responses: {"200": {description: ok}}
        """,
        """\
        components:
          securitySchemes:
            ApiKey: {type: apiKey, in: header, name: X-Api-Key}
        """,
    )
    assert not sink.errors
    assert tool(server, "shop_get_a").security == ((ir.SchemeUse("ApiKey", ()),),)
    assert tool(server, "shop_get_b").security == ()
    messages = warnings(sink)
    assert any("'api_key'; read as the scheme 'ApiKey'" in m for m in messages)
    assert any(
        "'sessionToken'; the operations that name it are generated without it" in m
        for m in messages
    )


TWO_OAUTH_FLOWS = """\
        /files:
          get:
            operationId: listFiles
            security: [{Oauth2: [files.read], Oauth2c: [files.read]}, {Key: []}]
            responses: {"200": {description: ok}}
        """
TWO_OAUTH_SCHEMES = """\
        components:
          securitySchemes:
            Oauth2:
              type: oauth2
              flows:
                implicit: {authorizationUrl: "https://a.example.com", scopes: {files.read: r}}
            Oauth2c:
              type: oauth2
              flows:
                authorizationCode:
                  authorizationUrl: "https://a.example.com"
                  tokenUrl: "https://a.example.com/t"
                  scopes: {files.read: r}
            Key: {type: apiKey, in: query, name: key}
        """


async def test_schemes_required_together_for_one_header_are_read_as_either(
    tmp_path: Path,
) -> None:
    """Google's specs (264 of APIs.guru's 299) require `{Oauth2, Oauth2c}` together: two
    bearer tokens in the one Authorization header. Read as written, the server refused every
    call (one token configured: the other missing; both: two Authorization headers)."""
    server, sink = built(tmp_path, TWO_OAUTH_FLOWS, TWO_OAUTH_SCHEMES)
    assert not sink.has_errors
    use = ir.SchemeUse
    assert tool(server, "shop_list_files").security == (
        (use("Oauth2", ("files.read",)),),
        (use("Oauth2c", ("files.read",)),),
        (use("Key", ()),),
    )
    assert [m for m in warnings(sink) if "required together" in m] == [
        "security schemes 'Oauth2' and 'Oauth2c' are required together but would set the same "
        "credential, which a request carries once; read as either one"
    ]
    # Configured with one of the two tokens (as an operator does), the call goes out with it.
    request = await call(server, "shop_list_files", {}, schemes={"Oauth2c"})
    assert request.headers["authorization"] == "Bearer secret"


def test_a_path_key_with_a_fragment_is_judged_as_its_own_operation(tmp_path: Path) -> None:
    """AWS's specs (APIs.guru) key operations `/#X-Amz-Target=Service.Action`: one request
    path for all of them. Each generated case names its own operation, not `#/paths/~1/post`,
    which no operation is (the generated tests then failed for every such tool)."""
    server, sink = built(
        tmp_path,
        """\
        /#X-Amz-Target=Ce.CreateMonitor:
          post:
            operationId: CreateMonitor
            parameters:
              - name: X-Amz-Target
                in: header
                required: true
                schema: {type: string, enum: [Ce.CreateMonitor]}
            responses: {"200": {description: ok}}
        /#X-Amz-Target=Ce.DeleteMonitor:
          post:
            operationId: DeleteMonitor
            parameters:
              - name: X-Amz-Target
                in: header
                required: true
                schema: {type: string, enum: [Ce.DeleteMonitor]}
            responses: {"200": {description: ok}}
        """,
    )
    assert not sink.has_errors
    cases = build_cases(server, sink)["calls"]
    assert {name: case["operation"] for name, case in cases.items()} == {
        "shop_create_monitor": "#/paths/~1#X-Amz-Target=Ce.CreateMonitor/post",
        "shop_delete_monitor": "#/paths/~1#X-Amz-Target=Ce.DeleteMonitor/post",
    }
    assert {case["request"]["url"] for case in cases.values()} == {"https://api.example.com/"}


# ------------------------------------------------------------------ names
def test_derived_name_collisions_are_told_apart_by_path_parameters(tmp_path: Path) -> None:
    server, sink = built(
        tmp_path,
        """\
        /info.0.json:
          get: {responses: {"200": {description: ok}}}
        /{comicId}/info.0.json:
          get:
            parameters: [{name: comicId, in: path, required: true, schema: {type: integer}}]
            responses: {"200": {description: ok}}
        """,
    )
    assert not sink.errors
    assert sorted(t.name for t in server.tools) == [
        "shop_list_info_0_json",
        "shop_list_info_0_json_by_comic_id",
    ]
    assert any("operations give the same tool name" in m for m in warnings(sink))


def test_duplicate_operation_ids_are_told_apart_the_same_way_in_any_order(tmp_path: Path) -> None:
    paths = [
        "/v1/rpc/Run:\n  post: {operationId: Run, responses: {'200': {description: ok}}}\n",
        "/rpc/Run:\n  post: {operationId: Run, responses: {'200': {description: ok}}}\n",
    ]
    names = []
    for order in (paths, paths[::-1]):
        server, sink = built(tmp_path, "".join(order))
        assert not sink.errors
        names.append({req(t).path: t.name for t in server.tools})
        assert any("duplicate operationId 'Run'" in m for m in warnings(sink))
    assert names[0] == names[1]
    assert names[0]["/rpc/Run"] == "shop_run"  # its key sorts first: it keeps the name
    assert names[0]["/v1/rpc/Run"].startswith("shop_run_")


# ------------------------------------------------------------------ files and YAML
def test_a_ref_to_a_markdown_file_or_code_sample_is_its_text(tmp_path: Path) -> None:
    spec_file(tmp_path, "# Pets\n\nEvery *pet*: a: b\n", "docs/pets.md")
    spec_file(tmp_path, "curl https://api.example.com/pets\n", "samples/list.sh")
    server, sink = built(
        tmp_path,
        """\
        /pets:
          get:
            operationId: listPets
            description: {$ref: "docs/pets.md"}
            x-codeSamples: [{lang: Shell, source: {$ref: "samples/list.sh"}}]
            responses: {"200": {description: ok}}
        """,
    )
    assert not sink.errors
    [found] = server.tools
    assert "Every *pet*: a: b" in found.description


def test_a_ref_to_a_file_without_a_suffix_that_is_not_yaml_is_its_text(tmp_path: Path) -> None:
    # akamai's examples/add-attachment: an HTTP request written out.
    spec_file(tmp_path, "POST /x HTTP/1.1\nContent-Type: text/plain\n\nkey: a: b\n", "add-it")
    server, sink = built(
        tmp_path,
        """\
        /x:
          post:
            operationId: addIt
            description: {$ref: "add-it"}
            responses: {"200": {description: ok}}
        """,
    )
    assert not sink.errors
    [found] = server.tools
    assert "POST /x HTTP/1.1" in found.description


def test_more_than_a_hundred_yaml_aliases_are_read(tmp_path: Path) -> None:
    anchors = "x-shared: &ok {'200': {description: ok}}\n"
    paths = "".join(f"/p{i}:\n  get: {{operationId: get{i}, responses: *ok}}\n" for i in range(150))
    spec = spec_file(tmp_path, HEAD + anchors + "paths:\n" + textwrap.indent(paths, "  "))
    server = build(spec, DiagnosticSink())
    assert len(server.tools) == 150


# ------------------------------------------------------------------ examples
def test_an_example_given_as_a_ref_to_components_examples_is_resolved(tmp_path: Path) -> None:
    server, sink = built(
        tmp_path,
        """\
        /pets:
          post:
            operationId: addPet
            requestBody:
              required: true
              content:
                application/json:
                  schema:
                    type: object
                    properties: {name: {type: string}}
                    additionalProperties: false
                  examples:
                    rex: {$ref: "#/components/examples/Rex"}
            responses: {"200": {description: ok}}
        """,
        """\
        components:
          examples:
            Rex: {value: {name: Rex}}
        """,
    )
    assert not sink.errors
    [found] = server.tools
    assert found.examples == ({"name": "Rex"},)


OK = {"200": {"description": "ok"}}


def test_a_name_two_operations_give_stays_with_the_operation_that_had_it(tmp_path: Path) -> None:
    """Collisions are resolved through the lock: an operation added later with the same name
    (here one operationId at two paths, the new path sorting first) takes the suffixed name,
    and the tool the previous run made keeps its name, so nothing is renamed under users."""
    first = {
        "openapi": "3.0.3",
        "info": {"title": "Things", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {"/v2/things": {"get": {"operationId": "listThings", "responses": OK}}},
    }
    spec = tmp_path / "spec.json"
    out = tmp_path / "out"
    spec.write_text(json.dumps(first), encoding="utf-8")
    sink = DiagnosticSink()
    generate(spec, GenerateOptions(output=out), sink)
    assert not sink.has_errors
    old = json.loads((out / "tools.lock.json").read_text(encoding="utf-8"))["tools"]
    assert list(old) == ["things_list_things"]
    second = copy.deepcopy(first)
    second["paths"]["/v1/things"] = {"get": {"operationId": "listThings", "responses": OK}}
    spec.write_text(json.dumps(second), encoding="utf-8")
    sink = DiagnosticSink()
    report = generate(spec, GenerateOptions(output=out), sink)
    assert not report.blocked and not sink.has_errors  # only an addition: nothing renamed
    new = json.loads((out / "tools.lock.json").read_text(encoding="utf-8"))["tools"]
    assert new["things_list_things"]["path"] == "/v2/things"
    (added,) = set(new) - set(old)
    assert new[added]["path"] == "/v1/things" and added.startswith("things_list_things_")
    assert any("same tool name" in d.message for d in sink.warnings)
    # Without the lock (a cold run), the path that sorts first keeps the name.
    sink = DiagnosticSink()
    generate(spec, GenerateOptions(output=tmp_path / "cold"), sink)
    cold = json.loads((tmp_path / "cold" / "tools.lock.json").read_text(encoding="utf-8"))
    assert cold["tools"]["things_list_things"]["path"] == "/v1/things"


def test_an_example_the_server_would_refuse_is_left_out_at_generation(tmp_path: Path) -> None:
    """Examples are checked with the server's own validator (formats, ECMA patterns, strict
    integers): a spec example that is no `uuid` never reaches the model as a valid call."""
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Tasks", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/tasks/{taskId}": {
                "get": {
                    "operationId": "getTask",
                    "parameters": [
                        {
                            "name": "taskId",
                            "in": "path",
                            "required": True,
                            "schema": {"type": "string", "format": "uuid"},
                            "example": "00000000-0000-0000-000-000000000000",
                        }
                    ],
                    "responses": OK,
                }
            }
        },
    }
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(document), encoding="utf-8")
    sink = DiagnosticSink()
    server = build(spec, sink)
    (tool,) = server.tools
    examples = tool.input_schema.get("examples", [])
    assert all(e["taskId"] != "00000000-0000-0000-000-000000000000" for e in examples)
    for example in examples:  # a value built from the format instead: one the server takes
        assert len(example["taskId"]) == 36 and example["taskId"].count("-") == 4
    assert any("does not match its schema" in d.message for d in sink.warnings)


# --- operation and path item `servers` ------------------------------------------------------

OWN_SERVERS = """\
/files/{id}:
  servers: [{url: /private}]
  get:
    operationId: getFile
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    responses: {"204": {description: done}}
  put:
    operationId: uploadFile
    servers:
      - url: "https://{zone}.uploads.example.com/u/"
        variables: {zone: {default: eu, enum: [eu, us]}}
    parameters: [{name: id, in: path, required: true, schema: {type: string}}]
    responses: {"204": {description: done}}
/plain:
  get:
    operationId: plain
    servers: [{url: "https://api.example.com"}]
    responses: {"204": {description: done}}
"""


def test_an_operation_or_path_item_with_its_own_servers_sends_there(tmp_path: Path) -> None:
    """OpenAPI: an operation's `servers` override its path item's, which override the
    document's (the sweep's pagerduty and influxdata; GitHub's release asset upload). The
    generator ignored both: requests went to the document's server."""
    server, sink = built(tmp_path, OWN_SERVERS)
    assert not sink.has_errors, [d.render() for d in sink]
    assert req(tool(server, "shop_get_file")).server == "/private"
    assert req(tool(server, "shop_upload_file")).server == "https://eu.uploads.example.com/u"
    assert req(tool(server, "shop_plain")).server == ""  # the document's own: nothing to say
    cases = build_cases(server, sink)["calls"]
    assert (
        cases["shop_get_file"]["request"]["url"] == "https://api.example.com/private/files/string"
    )
    assert cases["shop_upload_file"]["request"]["url"] == (
        "https://eu.uploads.example.com/u/files/string"
    )
    loaded = load_catalog(catalog(server))
    assert {t.name: t.request.server for t in loaded.tools if t.request}[
        "shop_get_file"
    ] == "/private"


def test_G16_an_operation_server_at_a_metadata_address_leaves_the_operation_out(
    tmp_path: Path,
) -> None:
    """Checked as the document's servers are; the operation cannot become a tool, and the
    run goes on (a located warning names it), as for any operation that cannot."""
    spec = OWN_SERVERS.replace("https://{zone}.uploads.example.com/u/", "http://169.254.169.254/x")
    server, sink = built(tmp_path, spec)
    said = [d.render() for d in sink]
    assert any(":14:11: warning: server URL" in d and "cloud metadata address" in d for d in said)
    assert any("PUT /files/{id} cannot become a tool" in d for d in said), said
    assert server is not None
    assert "shop_upload_file" not in {t.name for t in server.tools}


def test_response_content_given_as_a_ref_is_followed_not_taken_for_a_media_type(
    tmp_path: Path,
) -> None:
    """lob writes `content: {$ref: "#/components/mediaTypes/..."}`: the tool sent
    `Accept: $ref` and had no output schema."""
    paths = """\
    /campaigns:
      post:
        operationId: createCampaign
        responses:
          "200":
            description: created
            content: {$ref: "#/components/mediaTypes/campaign"}
    """
    extra = """\
    components:
      mediaTypes:
        campaign:
          application/json:
            schema: {type: object, properties: {id: {type: string}}}
    """
    server, _ = built(tmp_path, paths, extra)
    found = tool(server, "shop_create_campaign")
    assert req(found).accept == "application/json"
    assert found.output_schema is not None and "id" in found.output_schema["properties"]


def test_a_server_url_with_its_scheme_s_default_port_is_read_without_it(tmp_path: Path) -> None:
    """data2crm (APIs.guru) writes `https://...:443/v1`; a request's URL never carries the
    default port, so the generated cases and the requests sent disagreed (974 generated tests
    of its package failed). An explicit other port stays."""
    spec = HEAD.replace("https://api.example.com", "https://api.example.com:443/v1")
    paths = (
        '  /things:\n    get: {operationId: listThings, responses: {"200": {description: ok}}}\n'
    )
    path = spec_file(tmp_path, spec + "paths:\n" + paths)
    server = build(path, DiagnosticSink(), namespace="shop")
    assert server.base_url == "https://api.example.com/v1"
    [case] = build_cases(server, DiagnosticSink())["calls"].values()
    assert case["request"]["url"] == "https://api.example.com/v1/things"
    other = spec_file(tmp_path, spec.replace(":443", ":8443") + "paths:\n" + paths, "b.yaml")
    assert build(other, DiagnosticSink(), namespace="shop").base_url == (
        "https://api.example.com:8443/v1"
    )
