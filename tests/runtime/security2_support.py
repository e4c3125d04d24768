"""Support of the round-two security tests (S18-S26): the doors, and a server that has them."""

from __future__ import annotations

import base64
import copy
import io
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import quote

import mcp_types as types
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.shared.exceptions import MCPError
from runtime_support import ENV, Answer, Recorder, catalog_data, param

from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.server import build_server

# Every way in that can send an upstream request.
DOORS = ["tools/call", "call_tool", "resources/read"]
TOOL = "pets_get_pet"
SECRET = ENV["PETS_API_KEY"]


def door_catalog(**changes: Any) -> Catalog:
    """The runtime test catalog in dynamic mode, with `pets_get_pet` also a resource template
    (`pets://pets/{petId}`, as mcpmint.yaml's `resources:` makes one), reading with the API
    key. `changes` are set on `pets_get_pet`'s catalog entry (`confirmation`, ...)."""
    data = catalog_data()
    data["toolModes"] = {"mode": "dynamic"}
    tool = next(t for t in data["tools"] if t["name"] == TOOL)
    tool["inputSchema"]["properties"]["petId"] = {"type": "string", "pattern": "^[0-9]+$"}
    tool["security"] = [[{"scheme": "ApiKey", "scopes": []}]]
    tool["outputSchema"] = None
    for key, value in changes.items():
        tool[key] = value
    data["resources"] = [
        {
            "name": TOOL,
            "title": "A pet",
            "description": "A pet, by id.",
            "mimeType": "application/json",
            "uriTemplate": "pets://pets/{petId}",
            "request": {
                "method": "GET",
                "path": "/pets/{petId}",
                "parameters": [param("petId", "petId", "path")],
                "body": None,
                "accept": "application/json",
            },
            "security": copy.deepcopy(tool["security"]),
        }
    ]
    return load_catalog(data)


class Outcome:
    """What a door answered: refused (an error result or a JSON-RPC error) and the text."""

    def __init__(self, refused: bool, text: str, structured: Any = None) -> None:
        self.refused = refused
        self.text = text
        self.structured = structured

    def __repr__(self) -> str:
        return f"Outcome(refused={self.refused}, text={self.text!r})"


async def knock(client: Client, door: str, pet_id: str) -> Outcome:
    """Ask for pet `pet_id` through `door`."""
    try:
        if door == "resources/read":
            read = await client.read_resource(f"pets://pets/{pet_id}")
            texts = [c.text for c in read.contents if isinstance(c, types.TextResourceContents)]
            return Outcome(False, "".join(texts))
        if door == "call_tool":
            result = await client.call_tool(
                "pets_call_tool", {"name": TOOL, "arguments": {"petId": pet_id}}
            )
        else:
            result = await client.call_tool(TOOL, {"petId": pet_id})
    except MCPError as exc:
        return Outcome(True, exc.error.message)
    text = "".join(c.text for c in result.content if isinstance(c, types.TextContent))
    return Outcome(bool(result.is_error), text, result.structured_content)


@asynccontextmanager
async def door_server(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str] | None = None,
    *,
    scopes: list[str] | None = None,
    answer: Answer | None = None,
) -> AsyncIterator[tuple[Client, io.StringIO]]:
    """An in-memory client of a server built from `catalog`, and its audit stream.
    `scopes`: play an authenticated HTTP caller holding these scopes (the verified token the
    SDK's auth middleware puts in context)."""
    audit = io.StringIO()
    server = build_server(
        catalog,
        transport=upstream.transport,
        environ=dict(ENV) | (env or {}),
        audit=AuditLog(stream=audit),
    )
    reset = None
    if scopes is not None:
        token = AccessToken(token="t", client_id="app", scopes=scopes, subject="mallory")
        reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        async with Client(server, mode="legacy", elicitation_callback=answer or Answer()) as c:
            yield c, audit
    finally:
        if reset is not None:
            auth_context_var.reset(reset)


def records(audit: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in audit.getvalue().splitlines()]


def encodings(secret: str) -> dict[str, str]:
    """`secret` as an upstream might echo it."""
    padded = base64.b64encode(f'{{"key": "{secret}", "n": 1}}'.encode()).decode()
    return {
        "raw": secret,
        "json-escaped": json.dumps(secret + "/x")[1:-1].replace("/", "\\/"),
        "url-encoded": quote(secret, safe=""),
        "base64": base64.b64encode(secret.encode()).decode(),
        "base64-inside": padded,
    }
