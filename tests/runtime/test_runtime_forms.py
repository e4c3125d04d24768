"""Form, multipart and raw bodies (issue 7): Stripe's bracket encodings, written out literally.

Each request goes through the whole server to a recording `httpx2.MockTransport`, so what is
checked is the exact body the upstream receives.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from mcp import Client
from runtime_support import ENV, Answer, Recorder, one_tool_catalog

from mcpmint.runtime import request as request_module
from mcpmint.runtime.catalog import CatalogError, load_catalog
from mcpmint.runtime.server import build_server

pytestmark = pytest.mark.anyio
FORM = "application/x-www-form-urlencoded"


def form_catalog(
    properties: dict[str, str],
    *,
    media: str = FORM,
    encoding: dict[str, Any] | None = None,
    argument: str | None = None,
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "mediaType": media,
        "required": True,
        "argument": argument,
        "properties": properties,
    }
    if encoding is not None:
        body["encoding"] = encoding
    names = [argument] if argument else list(properties)
    data = one_tool_catalog([], {n: {} for n in names}, method="POST", body=body)
    data["tools"][0]["confirmation"] = "none"
    return data


async def send(data: dict[str, Any], arguments: dict[str, Any]) -> Recorder:
    recorder = Recorder()
    server = build_server(load_catalog(data), environ=ENV, transport=recorder.transport)
    async with Client(server, elicitation_callback=Answer()) as client:
        result = await client.call_tool("t", arguments)
    assert not result.is_error, result
    return recorder


STRIPE = {"metadata": "metadata", "items": "items", "expand": "expand", "customer": "customer"}
DEEP = {"style": "deepObject", "explode": True}
STRIPE_ENCODING = {"metadata": DEEP, "expand": DEEP, "items": DEEP}


async def test_stripe_metadata_key_equals_value() -> None:
    rec = await send(form_catalog(STRIPE, encoding=STRIPE_ENCODING), {"metadata": {"key": "value"}})
    assert rec.last.content == b"metadata[key]=value"
    assert rec.last.headers["content-type"] == FORM


async def test_stripe_items_0_price_equals_price_123() -> None:
    rec = await send(
        form_catalog(STRIPE, encoding=STRIPE_ENCODING),
        {"items": [{"price": "price_123", "quantity": 2}, {"price": "price_456"}]},
    )
    assert (
        rec.last.content
        == b"items[0][price]=price_123&items[0][quantity]=2&items[1][price]=price_456"
    )


async def test_stripe_expand_brackets_equals_customer() -> None:
    rec = await send(
        form_catalog(STRIPE, encoding=STRIPE_ENCODING),
        {"expand": ["customer", "invoice.subscription"], "customer": "cus_1"},
    )
    assert rec.last.content == b"expand[]=customer&expand[]=invoice.subscription&customer=cus_1"


async def test_nested_values_default_to_brackets_without_encoding() -> None:
    rec = await send(
        form_catalog(STRIPE),
        {
            "metadata": {"order id": "a&b=c", "nested": {"deep": True, "off": False}},
            "items": [{"price": "p", "tags": ["x", "y"]}],
            "expand": ["customer"],
        },
    )
    assert rec.last.content == (
        b"metadata[order%20id]=a%26b%3Dc&metadata[nested][deep]=true&metadata[nested][off]=false"
        b"&items[0][price]=p&items[0][tags][]=x&items[0][tags][]=y"
        b"&expand=customer"  # a top-level array of scalars: OpenAPI's default, repeated fields
    )


async def test_percent_encoding_of_keys_and_values_is_exact() -> None:
    rec = await send(
        form_catalog({"m": "meta data[x]"}, encoding={}),
        {"m": {"ключ/[]": "é +%&=", "e": ""}},
    )
    assert rec.last.content == (
        b"meta%20data%5Bx%5D[%D0%BA%D0%BB%D1%8E%D1%87%2F%5B%5D]=%C3%A9%20%2B%25%26%3D"
        b"&meta%20data%5Bx%5D[e]="
    )


async def test_form_style_encoding_is_followed() -> None:
    encoding = {"tags": {"style": "form", "explode": False}, "ids": {"style": "pipeDelimited"}}
    rec = await send(
        form_catalog({"tags": "tags", "ids": "ids"}, encoding=encoding),
        {"tags": ["a", "b,c"], "ids": [1, 2]},
    )
    assert rec.last.content == b"tags=a,b%2Cc&ids=1|2"


async def test_multipart_file_and_text_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(request_module, "new_boundary", lambda: "BOUNDARY")
    data = form_catalog(
        {"file": "file", "title": "title", "meta": "meta", "n": "n"}, media="multipart/form-data"
    )
    content = base64.b64encode(b"\x00\x01hello").decode()
    rec = await send(
        data,
        {
            "file": {"content_base64": content, "filename": 'a"b.png', "content_type": "image/png"},
            "title": "Été",
            "meta": {"k": [1]},
            "n": 3,
        },
    )
    assert rec.last.headers["content-type"] == "multipart/form-data; boundary=BOUNDARY"
    assert rec.last.content == (
        b"--BOUNDARY\r\n"
        b'Content-Disposition: form-data; name="file"; filename="a%22b.png"\r\n'
        b"Content-Type: image/png\r\n\r\n\x00\x01hello\r\n"
        b"--BOUNDARY\r\n"
        b'Content-Disposition: form-data; name="title"\r\n\r\n' + "Été".encode() + b"\r\n"
        b"--BOUNDARY\r\n"
        b'Content-Disposition: form-data; name="meta"\r\n'
        b'Content-Type: application/json\r\n\r\n{"k":[1]}\r\n'
        b"--BOUNDARY\r\n"
        b'Content-Disposition: form-data; name="n"\r\n\r\n3\r\n'
        b"--BOUNDARY--\r\n"
    )


async def test_multipart_boundary_is_random_by_default() -> None:
    data = form_catalog({"title": "title"}, media="multipart/form-data")
    first = (await send(data, {"title": "x"})).last.headers["content-type"]
    second = (await send(data, {"title": "x"})).last.headers["content-type"]
    assert first != second and first.startswith("multipart/form-data; boundary=mcpmint-")


async def test_octet_stream_body_is_decoded_from_base64() -> None:
    data = form_catalog({}, media="application/x-tar", argument="body")
    rec = await send(data, {"body": base64.b64encode(b"\xff\x00tar").decode()})
    assert rec.last.content == b"\xff\x00tar"
    assert rec.last.headers["content-type"] == "application/x-tar"


async def test_bad_base64_is_an_argument_error() -> None:
    data = form_catalog({}, media="application/octet-stream", argument="body")
    recorder = Recorder()
    server = build_server(load_catalog(data), environ=ENV, transport=recorder.transport)
    async with Client(server) as client:
        result = await client.call_tool("t", {"body": "not base64!"})
    assert result.is_error and "base64" in str(result.content)
    assert not recorder.requests


def test_catalog_refuses_bad_encodings_and_media_types() -> None:
    with pytest.raises(CatalogError, match="style"):
        load_catalog(form_catalog({"a": "a"}, encoding={"a": {"style": "matrix"}}))
    with pytest.raises(CatalogError, match="one argument"):
        load_catalog(form_catalog({"a": "a"}, media="application/octet-stream"))
    with pytest.raises(CatalogError, match="unsupported request media type"):
        load_catalog(form_catalog({}, media="not a media type", argument="b"))


# ------------------------------------------------------------------- the frontend's body choice

SPEC = """\
openapi: 3.0.3
info: {title: Forms, version: "1"}
servers: [{url: "https://api.example.com"}]
paths:
  /upload:
    post:
      operationId: upload
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema:
              type: object
              required: [file]
              properties:
                file: {type: string, format: binary, description: The image.}
                extra: {type: array, items: {type: string, format: binary}}
                note: {type: string}
      responses: {"204": {description: ok}}
  /attach:
    post:
      operationId: attach
      requestBody:
        content:
          multipart/form-data:
            schema:
              type: object
              required: [parent]
              properties:
                file: {type: string, format: binary}
                parent: {type: string}
      responses: {"204": {description: ok}}
  /raw:
    put:
      operationId: raw
      requestBody:
        content:
          application/x-tar: {schema: {type: string, format: binary}}
      responses: {"204": {description: ok}}
  /both:
    post:
      operationId: both
      requestBody:
        content:
          application/x-www-form-urlencoded: {schema: {type: object}}
          application/json: {schema: {type: object}}
      responses: {"204": {description: ok}}
"""


def test_multipart_raw_and_json_first_become_tools(tmp_path: Any) -> None:
    from mcpmint.diagnostics import DiagnosticSink
    from mcpmint.pipeline import build

    spec = tmp_path / "forms.yaml"
    spec.write_text(SPEC, encoding="utf-8")
    tools = {t.name: t for t in build(spec, DiagnosticSink()).tools}
    upload = tools["forms_upload"]
    assert upload.request.body is not None
    assert upload.request.body.media_type == "multipart/form-data"
    props = upload.input_schema["properties"]
    assert props["file"]["required"] == ["content_base64"]
    assert props["file"]["description"].startswith("The image.")
    assert "filename" in props["file"]["properties"]
    assert props["extra"]["items"]["properties"]["content_base64"]["contentEncoding"] == "base64"
    assert props["note"] == {"type": "string"}
    attach = tools["forms_attach"].input_schema["properties"]["body"]  # optional: not flattened
    assert attach["properties"]["file"]["required"] == ["content_base64"]
    assert attach["properties"]["parent"] == {"type": "string"}
    raw = tools["forms_raw"]
    assert raw.request.body is not None and raw.request.body.media_type == "application/x-tar"
    assert raw.input_schema["properties"]["body"]["contentEncoding"] == "base64"
    both = tools["forms_both"]
    assert both.request.body is not None and both.request.body.media_type == "application/json"
    assert "also accepts: application/x-www-form-urlencoded" in str(both.input_schema)
