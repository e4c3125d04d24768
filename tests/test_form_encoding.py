"""Form bodies from a spec reach the wire the way Stripe documents them (issue 7)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build
from mcpmint.render.templates import catalog
from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.request import build_request

from .support import mcpmint, package_tests

SPEC = {
    "openapi": "3.0.3",
    "info": {"title": "Payments", "version": "1"},
    "servers": [{"url": "https://api.example.com"}],
    "paths": {
        "/v1/subscriptions": {
            "post": {
                "operationId": "PostSubscriptions",
                "requestBody": {
                    "required": True,
                    "content": {
                        "application/x-www-form-urlencoded": {
                            "encoding": {
                                "expand": {"style": "deepObject", "explode": True},
                                "items": {"style": "deepObject", "explode": True},
                                "metadata": {"style": "deepObject", "explode": True},
                            },
                            "schema": {
                                "type": "object",
                                "required": ["customer"],
                                "properties": {
                                    "customer": {"type": "string"},
                                    "expand": {"type": "array", "items": {"type": "string"}},
                                    "items": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "properties": {"price": {"type": "string"}},
                                        },
                                    },
                                    "metadata": {
                                        "type": "object",
                                        "additionalProperties": {"type": "string"},
                                    },
                                },
                            },
                        }
                    },
                },
                "responses": {"200": {"description": "ok"}},
            }
        }
    },
}


def test_stripe_style_form_body_is_encoded_as_documented(tmp_path: Path) -> None:
    spec = tmp_path / "payments.yaml"
    spec.write_text(yaml.safe_dump(SPEC), encoding="utf-8")
    server = build(spec, DiagnosticSink())
    tool = load_catalog(catalog(server)).tools[0]
    arguments = {
        "customer": "cus_1",
        "expand": ["customer"],
        "items": [{"price": "price_123"}],
        "metadata": {"key": "value"},
    }
    request = build_request(tool, arguments, "https://api.example.com")
    assert request.body == (
        b"customer=cus_1&expand[]=customer&items[0][price]=price_123&metadata[key]=value"
    )
    assert ("Content-Type", "application/x-www-form-urlencoded") in request.headers


MULTIPART_SPEC = """\
openapi: 3.0.3
info: {title: Files, version: "1"}
servers: [{url: "https://files.example.com"}]
paths:
  /files:
    post:
      operationId: uploadFile
      requestBody:
        required: true
        content:
          multipart/form-data:
            schema:
              type: object
              required: [purpose]
              properties:
                purpose: {type: string, example: docs}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {type: object, properties: {id: {type: string}}}
"""


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_a_multipart_tools_cases_are_byte_stable_and_its_generated_tests_pass(
    tmp_path: Path,
) -> None:
    # The server picks a fresh boundary per request; the recorded cases use a fixed one.
    (tmp_path / "spec.yaml").write_text(MULTIPART_SPEC, encoding="utf-8")
    cases = []
    for out in ("one", "two"):
        code, stdout, stderr = mcpmint("generate", "spec.yaml", "-o", out, cwd=tmp_path)
        assert code == 0, stdout + stderr
        cases.append((tmp_path / out / "tests/generated_cases.json").read_bytes())
    assert cases[0] == cases[1]
    assert b"boundary=mcpmint-generated-test-boundary" in cases[0]
    done = package_tests(tmp_path / "one")
    assert done.returncode == 0, done.stdout + done.stderr
