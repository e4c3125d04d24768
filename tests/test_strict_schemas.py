"""Strict-mode input schemas (issue 6): `output: {strict_schemas: true}` in mcpmint.yaml.

Every object lists all its properties as required; the optional ones become nullable, and the
generated server reads an explicit null as "not given", at every level.
"""

from __future__ import annotations

import importlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from jsonschema import Draft202012Validator
from mcp import Client

from mcpmint.build.strict import strict_schema

from .support import User, generate_plus_project, package_tests

CONFIG = """\
sources:
  - spec: petstore-plus.yaml
output:
  strict_schemas: true
"""


def test_every_property_becomes_required_and_the_optional_ones_nullable() -> None:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "description": "The name."},
            "tag": {"type": ["string", "null"]},
            "any": {"description": "Anything."},
            "owner": {
                "type": "object",
                "properties": {"id": {"type": "integer"}, "nick": {"type": "string"}},
                "required": ["id"],
                "additionalProperties": False,
            },
            "friend": {"$ref": "#/$defs/Friend"},
        },
        "required": ["name"],
        "additionalProperties": False,
        "$defs": {"Friend": {"type": "object", "properties": {"age": {"type": "integer"}}}},
    }

    strict = strict_schema(schema)

    assert strict["required"] == ["name", "tag", "any", "owner", "friend"]
    assert strict["properties"]["name"] == {"type": "string", "description": "The name."}
    assert strict["properties"]["tag"] == {"type": ["string", "null"]}  # null already
    assert strict["properties"]["any"] == {"description": "Anything."}  # anything already
    owner = strict["properties"]["owner"]
    assert owner["anyOf"][1] == {"type": "null"}
    assert owner["anyOf"][0]["required"] == ["id", "nick"]
    assert owner["anyOf"][0]["properties"]["nick"] == {
        "anyOf": [{"type": "string"}, {"type": "null"}]
    }
    assert strict["properties"]["friend"] == {
        "anyOf": [{"$ref": "#/$defs/Friend"}, {"type": "null"}]
    }
    assert strict["$defs"]["Friend"]["required"] == ["age"]
    Draft202012Validator.check_schema(strict)
    assert schema["required"] == ["name"], "the input is not changed"


@pytest.fixture(scope="module")
def strict_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """petstore-plus generated with strict schemas; yields the output folder."""
    folder = tmp_path_factory.mktemp("strict")
    generate_plus_project(folder, CONFIG)
    sys.path.insert(0, str(folder / "src"))
    try:
        yield folder
    finally:
        sys.path.remove(str(folder / "src"))
        for module in [m for m in sys.modules if m.startswith("petstore_mcp")]:
            del sys.modules[module]


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_the_generated_package_with_strict_schemas_passes_its_own_tests(
    strict_server: Path,
) -> None:
    done = package_tests(strict_server)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.anyio
async def test_explicit_nulls_are_sent_as_absent_by_the_generated_server(
    strict_server: Path,
) -> None:
    server_module = importlib.import_module("petstore_mcp.server")
    requests: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return httpx2.Response(200, json=[] if request.method == "GET" else {"id": 1})

    server = server_module.build_server(
        environ={"PETSTORE_API_KEY_AUTH": "k", "PETSTORE_RETRIES": "0"},
        transport=httpx2.MockTransport(answer),
    )
    async with Client(server, elicitation_callback=User()) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        listed = await client.call_tool("petstore_list_pets", {"limit": None, "status": "sold"})
        created = await client.call_tool(
            "petstore_create_pet",
            {
                "name": "Rex",
                "tag": None,
                "status": None,
                "owner": {"name": "Ann", "pets": None},
                "kind": None,
            },
        )
        missing = await client.call_tool("petstore_list_pets", {"status": "sold"})

    schema: dict[str, Any] = tools["petstore_list_pets"].input_schema
    assert schema["required"] == ["limit", "status"]
    assert {"type": "null"} in schema["properties"]["limit"]["anyOf"]
    assert not listed.is_error, listed
    assert not created.is_error, created
    # A strict client always sends every property: leaving one out is an error.
    assert missing.is_error and "limit: required argument is missing" in str(missing.content)
    assert [str(r.url) for r in requests] == [
        "http://127.0.0.1:8765/v2/pets?status=sold",
        "http://127.0.0.1:8765/v2/pets",
    ]
    assert json.loads(requests[1].content) == {"name": "Rex", "owner": {"name": "Ann"}}
