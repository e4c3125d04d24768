"""The generated tests' oracle (docs/generated-package.md): what the package ships for it, and
the warning for a project whose own pyproject.toml predates it."""

from __future__ import annotations

import importlib.util
import json
import shutil
import warnings
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.render.cases import warn_without_oracle

from .conftest import SPECS
from .test_golden import GOLDEN


@pytest.mark.parametrize(
    ("golden", "source", "files"),
    [
        ("wire-plan-3.1", SPECS / "wire-plan-3.1", ["codes.json", "oas31.yaml", "shared.yaml"]),
        ("petstore-v2", SPECS, ["petstore-v2.yaml"]),
        ("mixed", SPECS, ["petstore.yaml"]),  # the OpenAPI source; the manifest has no oracle
    ],
)
def test_a_package_ships_every_file_of_its_openapi_spec_as_it_was(
    golden: str, source: Path, files: list[str]
) -> None:
    shipped = GOLDEN / golden / "tests" / "spec"
    assert sorted(p.relative_to(shipped).as_posix() for p in shipped.rglob("*")) == files
    for name in files:
        assert (shipped / name).read_bytes() == (source / name).read_bytes(), name


def test_a_swagger_2_package_also_ships_the_openapi_3_reading() -> None:
    tests = GOLDEN / "petstore-v2" / "tests"
    assert '"openapi": "3.0.3"' in (tests / "spec.openapi3.json").read_text(encoding="utf-8")
    assert '"document": "spec.openapi3.json"' in (tests / "generated_cases.json").read_text(
        encoding="utf-8"
    )


ORACLE = {"tests/spec_oracle.py": "..."}


def warnings_for(folder: Path, pyproject: str | None) -> list[str]:
    if pyproject is not None:
        (folder / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    sink = DiagnosticSink()
    warn_without_oracle(folder, ORACLE, sink)
    return [d.render() for d in sink]


def test_a_project_whose_test_extra_lacks_openapi_core_is_warned(tmp_path: Path) -> None:
    golden = (GOLDEN / "petstore" / "pyproject.toml").read_text(encoding="utf-8")
    assert '"openapi-core>=0.23.1,<0.24"' in golden  # a new project's test extra names it
    assert warnings_for(tmp_path, golden) == []
    older = "".join(line for line in golden.splitlines(keepends=True) if "openapi-core" not in line)
    (warning,) = warnings_for(tmp_path, older)
    assert warning.startswith(f"{tmp_path / 'pyproject.toml'}: warning:")
    assert 'add "openapi-core>=0.23.1,<0.24" to [project.optional-dependencies] test' in warning


def test_no_warning_without_an_oracle_or_a_pyproject(tmp_path: Path) -> None:
    assert warnings_for(tmp_path, None) == []  # a first run: the scaffold brings it
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    sink = DiagnosticSink()
    warn_without_oracle(tmp_path, {}, sink)  # a manifest's package: no oracle
    assert list(sink) == []


# --- the oracle on its own: a spec, hand-made requests ------------------------------------

ORACLE_SPEC = """
openapi: 3.0.3
info: {title: O, version: "1"}
servers:
  - url: https://{region}.example.com/v1
    variables: {region: {default: eu, enum: [eu, us]}}
paths:
  /things:
    post:
      requestBody:
        required: true
        content:
          "application/merge-patch+json; okta-version=1.0.0":
            schema: {$ref: "#/components/schemas/Thing"}
          "application/json, okta-version=1.0.0":
            schema: {$ref: "#/components/schemas/Thing"}
          "application/tar+gzip": {schema: {type: string, format: binary}}
          "*/*": {schema: {$ref: "#/components/schemas/Thing"}}
      responses: {"204": {description: done}}
  /private/{id}:
    servers: [{url: /internal}]
    get:
      parameters:
        - {name: id, in: path, required: true, schema: {type: integer}}
        - {name: q, in: query, schema: {type: array, items: {type: integer}}}
      responses: {"204": {description: done}}
    delete:
      servers: [{url: "https://uploads.example.com/u"}]
      parameters: [{name: id, in: path, required: true, schema: {type: integer}}]
      responses: {"204": {description: done}}
  /odd:
    post:
      parameters: [{name: tags, in: query, schema: {type: array, items: string}}]
      requestBody:
        required: true
        content: {"thing-vnd.v1+json": {schema: {type: object}}}
      responses: {"204": {description: done}}
  /forms:
    post:
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema:
              allOf:
                - {$ref: "#/components/schemas/Thing"}
                - {properties: {n: {type: integer}, meta: {type: object}}, required: [n]}
      responses: {"204": {description: done}}
  /loose:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties: {x: {$ref: "#/components/schemas/Missing"}, y: {type: integer}}
      responses: {"204": {description: done}}
  /#X-Amz-Target=Svc.ListThings:
    post:
      parameters:
        - {name: MaxResults, in: query, schema: {type: string}}
        - {name: maxResults, in: query, schema: {type: integer}}
      responses: {"204": {description: done}}
  /resumable:
    get:
      parameters:
        - {name: resume, in: query, schema: {type: boolean, default: "true"}}
        - {name: n, in: query, schema: {type: integer}}
      responses: {"204": {description: done}}
  /books:
    get:
      security: [{Key: []}]
      parameters:
        - {name: api-key, in: query, schema: {type: string}}
        - {name: title, in: query, schema: {type: string}}
      responses: {"204": {description: done}}
  /letters:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema: {type: object, properties: {word: {type: string, pattern: "^\\\\p{L}+$"}}}
      responses: {"204": {description: done}}
  /setup:
    get:
      servers:
        - url: "{protocol}://{hostname}"
          variables: {hostname: {default: HOSTNAME}, protocol: {default: http}}
      responses: {"204": {description: done}}
  /render:
    post:
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              properties: {html: {type: string}, margin: {type: string, default: 0}}
          application/x-www-form-urlencoded:
            schema:
              type: object
              properties: {html: {type: string}, margin: {type: string, default: 0}}
      responses: {"204": {description: done}}
  /locations:
    post:
      parameters: [{name: id, in: query, schema: {$ref: "#/components/schemas/IdReadOnly"}}]
      requestBody:
        required: true
        content: {application/json: {schema: {$ref: "#/components/schemas/Location"}}}
      responses: {"204": {description: done}}
  /notes:
    post:
      requestBody:
        required: true
        content: {application/xml: {schema: {$ref: "#/components/schemas/Thing"}}}
      responses: {"204": {description: done}}
components:
  securitySchemes:
    Key: {type: apiKey, in: query, name: api-key}
  schemas:
    IdReadOnly: {type: string, readOnly: true}
    Location:
      type: object
      readOnly: true
      properties:
        id: {$ref: "#/components/schemas/IdReadOnly"}
        label: {type: string}
        ids: {type: array, items: {$ref: "#/components/schemas/IdReadOnly"}}
    Thing:
      type: object
      required: [a]
      properties: {a: {type: integer}}
"""


@pytest.fixture(scope="module")
def spec_oracle(tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The generated oracle (a golden's `tests/spec_oracle.py`) beside ORACLE_SPEC, as JSON
    holding an escape (a lone surrogate, klaviyo's) that openapi-core's YAML reader refuses."""
    folder = tmp_path_factory.mktemp("oracle")
    shutil.copy(GOLDEN / "petstore" / "tests" / "spec_oracle.py", folder / "spec_oracle.py")
    spec = yaml.safe_load(ORACLE_SPEC)
    spec["info"]["description"] = "\ud83d"  # JSON that YAML (openapi-core's reader) refuses
    (folder / "spec.json").write_text(json.dumps(spec), encoding="utf-8")
    cases = {"oracle": {"": {"document": "spec.json", "server": None}}, "calls": {}}
    (folder / "generated_cases.json").write_text(json.dumps(cases), encoding="utf-8")
    found = importlib.util.spec_from_file_location("lone_spec_oracle", folder / "spec_oracle.py")
    assert found is not None and found.loader is not None
    module = importlib.util.module_from_spec(found)
    found.loader.exec_module(module)
    return module


def judged(oracle: Any, method: str, url: str, operation: str, arguments: Any, **kw: Any) -> Any:
    return oracle.judge(httpx2.Request(method, url, **kw), "", operation, arguments)


THINGS = "#/paths/~1things/post"
PRIVATE = "#/paths/~1private~1{id}"


@pytest.mark.parametrize(
    "content_type",
    [
        "application/merge-patch+json; okta-version=1.0.0",
        "application/merge-patch+json;okta-version=1.0.0",
        "application/json; okta-version=1.0.0",  # the spec's key has a comma
        "application/vnd.thing+json",  # only */* matches: read as JSON, by its +json suffix
    ],
)
def test_a_json_body_is_read_as_json_whatever_its_media_type_parameters(
    spec_oracle: Any, content_type: str
) -> None:
    """RFC 6838: parameters take no part in matching a key; a +json suffix is JSON. Read as
    bytes, `{"a": 1}` was refused as not an object, and `{"a": "x"}` judged by nothing."""
    url, headers = "https://eu.example.com/v1/things", {"content-type": content_type}
    good = judged(spec_oracle, "POST", url, THINGS, {"a": 1}, content=b'{"a":1}', headers=headers)
    assert good == []
    bad = judged(
        spec_oracle, "POST", url, THINGS, {"a": "x"}, content=b'{"a":"x"}', headers=headers
    )
    assert any("InvalidRequestBody" in problem for problem in bad), bad


def test_a_binary_body_is_judged_as_the_string_its_schema_says(spec_oracle: Any) -> None:
    headers = {"content-type": "application/tar+gzip"}
    url = "https://eu.example.com/v1/things"
    problems = judged(
        spec_oracle, "POST", url, THINGS, {"body": "x"}, content=b"\x1f\x8b\x08", headers=headers
    )
    assert problems == []


@pytest.mark.parametrize(
    ("method", "url", "right"),
    [
        ("GET", "https://eu.example.com/internal/private/7", True),  # path item: relative
        ("GET", "https://us.example.com/internal/private/7", True),  # the variable's enum
        ("GET", "https://eu.example.com/v1/private/7", False),  # the document's server
        ("GET", "https://xx.example.com/internal/private/7", False),  # not in the enum
        ("DELETE", "https://uploads.example.com/u/private/7", True),  # the operation's own
        ("DELETE", "https://eu.example.com/internal/private/7", False),  # its path item's
        ("DELETE", "https://uploads.example.com/private/7", False),  # its base path dropped
    ],
)
def test_servers_are_found_by_the_openapi_rules(
    spec_oracle: Any, method: str, url: str, right: bool
) -> None:
    """An operation's servers over its path item's over the document's; relative ones
    against where the document is (the first absolute server); variables by their enum."""
    operation = f"{PRIVATE}/{method.lower()}"
    problems = judged(spec_oracle, method, url, operation, {"id": 7})
    assert (problems == []) is right, problems


def test_a_dangling_ref_is_not_judged_and_says_so_but_the_rest_is(spec_oracle: Any) -> None:
    url, operation = "https://eu.example.com/v1/loose", "#/paths/~1loose/post"
    headers = {"content-type": "application/json"}
    with pytest.warns(spec_oracle.NotJudged, match="Missing.*names nothing"):
        good = judged(
            spec_oracle,
            "POST",
            url,
            operation,
            {"x": [1], "y": 1},
            content=b'{"x":[1],"y":1}',
            headers=headers,
        )
    assert good == []
    with pytest.warns(spec_oracle.NotJudged):
        bad = judged(
            spec_oracle,
            "POST",
            url,
            operation,
            {"x": 1, "y": "no"},
            content=b'{"x":1,"y":"no"}',
            headers=headers,
        )
    assert any("InvalidRequestBody" in problem for problem in bad), bad


def test_an_operation_without_a_dangling_ref_judges_without_a_warning(spec_oracle: Any) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        problems = judged(
            spec_oracle,
            "GET",
            "https://eu.example.com/internal/private/7",
            f"{PRIVATE}/get",
            {"id": 7},
        )
    assert problems == []


def test_what_openapi_core_cannot_read_is_not_judged_and_said_the_rest_is(
    spec_oracle: Any,
) -> None:
    """`items: string` (not a schema) and a content key that is no media type: openapi-core
    fails on the spec there. Each is a `NotJudged` warning; the rest is judged (an
    undeclared query parameter is still found)."""
    url, operation = "https://eu.example.com/v1/odd?tags=a&tags=b", "#/paths/~1odd/post"
    sent = {"content": b"{}", "headers": {"content-type": "application/json"}}
    with pytest.warns(spec_oracle.NotJudged) as said:
        good = judged(spec_oracle, "POST", url, operation, {"tags": ["a", "b"], "body": {}}, **sent)
    assert good == []
    reasons = " ".join(str(w.message) for w in said)
    assert "tags" in reasons and "no key of its content is a media type" in reasons
    with pytest.warns(spec_oracle.NotJudged):
        bad = judged(spec_oracle, "POST", url + "&x=1", operation, {"tags": ["a", "b"]}, **sent)
    assert "query parameter x is not in the spec" in bad


def multipart(**parts: str) -> bytes:
    lines = []
    for name, value in parts.items():
        lines += ["--b", f'Content-Disposition: form-data; name="{name}"', "", value]
    return ("\r\n".join([*lines, "--b--", ""])).encode("utf-8")


def test_a_multipart_body_of_a_composed_schema_is_read_part_by_part(spec_oracle: Any) -> None:
    """openapi-core reads only the `allOf` branches that validate alone and have a `type`:
    lob's members went missing. Each part is read, typed by the branches' properties."""
    url, operation = "https://eu.example.com/v1/forms", "#/paths/~1forms/post"
    headers = {"content-type": "multipart/form-data; boundary=b"}
    body = multipart(a="1", n="2", meta="{}")
    good = judged(
        spec_oracle,
        "POST",
        url,
        operation,
        {"a": 1, "n": 2, "meta": {}},
        content=body,
        headers=headers,
    )
    assert good == []
    body = multipart(n="2")  # Thing's `a` is required
    bad = judged(spec_oracle, "POST", url, operation, {"n": 2}, content=body, headers=headers)
    assert any("InvalidRequestBody" in problem for problem in bad), bad


@pytest.mark.parametrize(("arguments", "right"), [({"q": []}, True), ({"q": [1]}, False)])
def test_an_empty_array_is_read_as_openapi_writes_it(
    spec_oracle: Any, arguments: dict[str, Any], right: bool
) -> None:
    """OpenAPI's style table writes the empty array `q=` (form, exploded or not), which
    openapi-core read as `[""]` (and then failed to cast to a number): meilisearch."""
    url = "https://eu.example.com/internal/private/7?q="
    problems = judged(spec_oracle, "GET", url, f"{PRIVATE}/get", {"id": 7, **arguments})
    assert (problems == []) is right, problems


def test_a_path_key_with_a_fragment_and_names_differing_in_case(spec_oracle: Any) -> None:
    """AWS (APIs.guru): operations keyed `/#X-Amz-Target=Svc.Action`, all sent to `/`, with
    both `MaxResults` and `maxResults`; each argument is judged against its own parameter."""
    url = "https://eu.example.com/v1/?MaxResults=a&maxResults=2"
    operation = "#/paths/~1#X-Amz-Target=Svc.ListThings/post"
    problems = judged(spec_oracle, "POST", url, operation, {"MaxResults": "a", "maxResults": 2})
    assert problems == []
    swapped = judged(spec_oracle, "POST", url, operation, {"MaxResults": "2", "maxResults": 2})
    assert any("MaxResults" in problem for problem in swapped), swapped


def test_a_pattern_python_cannot_read_is_not_judged_and_said(spec_oracle: Any) -> None:
    """`\\p{L}` is ECMA-262 (JSON Schema's dialect) but not Python's `re`, which openapi-core
    validates with: said, not a failure of the request."""
    url, headers = "https://eu.example.com/v1/letters", {"content-type": "application/json"}
    with pytest.warns(spec_oracle.NotJudged, match="pattern"):
        problems = judged(
            spec_oracle,
            "POST",
            url,
            "#/paths/~1letters/post",
            {"word": "abc"},
            content=b'{"word":"abc"}',
            headers=headers,
        )
    assert problems == []


def test_a_spec_default_that_misfits_its_schema_is_not_held_against_the_request(
    spec_oracle: Any,
) -> None:
    """exavault's `resume: {type: boolean, default: "true"}`: openapi-core applies the
    default to a request without the parameter, then refuses it. Not the request's fault:
    said, not judged; a value the request does send is still judged."""
    url, operation = "https://eu.example.com/v1/resumable", "#/paths/~1resumable/get"
    with pytest.warns(spec_oracle.NotJudged, match="resume"):
        assert judged(spec_oracle, "GET", url, operation, {}) == []
    with pytest.warns(spec_oracle.NotJudged):
        bad = judged(spec_oracle, "GET", url + "?n=x", operation, {"n": "x"})
    assert any("'n'" in problem for problem in bad), bad


def test_a_parameter_that_is_the_credential_is_not_asked_of_the_arguments(
    spec_oracle: Any,
) -> None:
    """nytimes declares its `api-key` both as a query parameter and as the apiKey scheme's
    name; the package sends it from the credential (G17), never from an argument."""
    url, operation = "https://eu.example.com/v1/books?title=x&api-key=k", "#/paths/~1books/get"
    assert judged(spec_oracle, "GET", url, operation, {"title": "x"}) == []
    wrong = judged(spec_oracle, "GET", url, operation, {"title": "y"})
    assert any("title" in problem for problem in wrong), wrong


def test_a_server_whose_scheme_is_a_variable_is_absolute(spec_oracle: Any) -> None:
    """GitHub Enterprise's `{protocol}://{hostname}` was read as a path relative to the
    document's server, so no request to it found its operation."""
    operation = "#/paths/~1setup/get"
    assert judged(spec_oracle, "GET", "http://hostname/setup", operation, {}) == []
    wrong = judged(spec_oracle, "GET", "http://hostname/setup/more", operation, {})
    assert any("no operation" in problem for problem in wrong), wrong


def test_a_property_default_that_misfits_its_schema_is_not_held_against_the_body(
    spec_oracle: Any,
) -> None:
    """exoapi's `margin: {type: string, default: 0}`: openapi-core filled in the default of
    the property the body leaves out, then refused it; a value the body sends is judged."""
    url, operation = "https://eu.example.com/v1/render", "#/paths/~1render/post"
    headers = {"content-type": "application/json"}
    good = judged(
        spec_oracle, "POST", url, operation, {"html": "x"}, content=b'{"html":"x"}', headers=headers
    )
    assert good == []
    arguments = {"html": "x", "margin": 1}
    body = json.dumps(arguments).encode()
    bad = judged(spec_oracle, "POST", url, operation, arguments, content=body, headers=headers)
    assert any("InvalidRequestBody" in problem for problem in bad), bad
    form = {"content-type": "application/x-www-form-urlencoded"}
    sent = judged(
        spec_oracle, "POST", url, operation, {"html": "x"}, content=b"html=x", headers=form
    )
    assert sent == []


def test_read_only_counts_only_on_a_property(spec_oracle: Any) -> None:
    """intellifi's `readOnly` on a whole body, a query parameter's schema and an array's
    items: OpenAPI 3.0 gives it meaning only on an object's property. Those values are
    still compared with the arguments, and a read-only property sent is still refused."""
    url, operation = "https://eu.example.com/v1/locations", "#/paths/~1locations/post"
    headers = {"content-type": "application/json"}
    body = {"label": "x", "ids": ["a", "b"]}
    content = json.dumps(body).encode()
    good = judged(
        spec_oracle,
        "POST",
        url + "?id=q",
        operation,
        {"id": "q", **body},
        content=content,
        headers=headers,
    )
    assert good == []
    other = judged(
        spec_oracle,
        "POST",
        url + "?id=q",
        operation,
        {"id": "r", **body},
        content=content,
        headers=headers,
    )
    assert any("for id, not argument id's" in problem for problem in other), other
    sent = json.dumps({"id": "a", "label": "x"}).encode()
    refused = judged(
        spec_oracle,
        "POST",
        url,
        operation,
        {"body_id": "a", "label": "x"},
        content=sent,
        headers=headers,
    )
    assert any("read-only" in problem for problem in refused), refused


def test_an_xml_body_is_read_as_xml_but_not_judged_by_its_schema(spec_oracle: Any) -> None:
    """mastercard's application/xml bodies: openapi-core judges the element tree it reads as
    the JSON object the schema describes, and refuses every one. A body that is no XML at
    all (the `hello` the generated example was) is still refused."""
    url, operation = "https://eu.example.com/v1/notes", "#/paths/~1notes/post"
    headers = {"content-type": "application/xml"}
    with pytest.warns(spec_oracle.NotJudged, match="read as XML"):
        good = judged(
            spec_oracle,
            "POST",
            url,
            operation,
            {"body": "PHRoaW5nLz4="},
            content=b"<thing/>",
            headers=headers,
        )
    assert good == []
    bad = judged(
        spec_oracle, "POST", url, operation, {"body": "aGVsbG8="}, content=b"hello", headers=headers
    )
    assert any("ParseError" in problem for problem in bad), bad
