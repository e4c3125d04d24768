"""Small run-time follow-ups to issues 3, 4 and 8: each test here failed before its fix."""

from __future__ import annotations

import io
from typing import Any

import httpx2
import pytest
import uvicorn
from mcp import Client
from runtime_support import ENV, Recorder, catalog_data

from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.hooks import Hooks
from mcpmint.runtime.metrics import Metrics
from mcpmint.runtime.server import build_server, main

pytestmark = pytest.mark.anyio


def _dynamic_catalog() -> Any:
    data = catalog_data()
    data["toolModes"] = {"mode": "dynamic", "core": []}
    return load_catalog(data)


async def test_dynamic_modes_search_and_describe_calls_are_metered_like_any_tool(
    upstream: Recorder, mode: str
) -> None:
    metrics = Metrics("pets-mcp")
    server = build_server(
        _dynamic_catalog(),
        transport=upstream.transport,
        environ=ENV,
        audit=AuditLog(stream=io.StringIO()),
        metrics=metrics,
    )
    async with Client(server, mode=mode) as client:
        await client.call_tool("pets_search_tools", {"query": "list pets"})
        await client.call_tool("pets_search_tools", {"query": "find a pet"})
        await client.call_tool("pets_describe_tool", {"name": "pets_list_pets"})
        await client.call_tool("pets_describe_tool", {"name": "no_such_tool"})
        await client.call_tool("pets_call_tool", {"name": "pets_list_pets", "arguments": {}})
    tools = metrics.summary()["tools"]
    assert tools["pets_search_tools"]["outcomes"] == {"ok": 2}
    assert tools["pets_describe_tool"]["outcomes"] == {"argument_error": 1, "ok": 1}
    # A call through call_tool counts as a call of the tool it names, as before.
    assert tools["pets_list_pets"]["outcomes"] == {"ok": 1}
    assert "pets_call_tool" not in tools
    assert metrics.summary()["calls"] == 5


def _strict_handler_catalog(strict: bool) -> Any:
    """The test catalog plus a handler tool with strict-mode schemas (every property
    required, the optional one nullable), as `output: {strict_schemas: true}` writes it."""
    data = catalog_data()
    data["tools"].append(
        {
            "name": "pets_note",
            "title": "Note",
            "description": "Write a note about a pet.",
            "inputSchema": {
                "type": "object",
                "properties": {
                    "text": {"type": "string"},
                    "tag": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                    "extra": {
                        "anyOf": [
                            {
                                "type": "object",
                                "properties": {
                                    "mood": {"anyOf": [{"type": "string"}, {"type": "null"}]}
                                },
                                "required": ["mood"],
                                "additionalProperties": False,
                            },
                            {"type": "null"},
                        ]
                    },
                },
                "required": ["text", "tag", "extra"],
                "additionalProperties": False,
            },
            "outputSchema": None,
            "annotations": {"title": "Note", "readOnlyHint": True, "openWorldHint": False},
            "handler": True,
            "security": [],
            "output": {"wrap": None},
            "meta": {"source": "tools.yaml", **({"nullsAbsent": True} if strict else {})},
            "confirmation": "none",
        }
    )
    return load_catalog(data)


@pytest.mark.parametrize("strict", [True, False], ids=["strict", "lenient"])
async def test_a_strict_handler_tool_never_receives_the_nulls_of_optional_arguments(
    upstream: Recorder, strict: bool
) -> None:
    received: list[dict[str, Any]] = []
    hooks = Hooks()

    @hooks.handler("pets_note")
    def note(arguments: dict[str, Any]) -> str:
        received.append(arguments)
        return "noted"

    server = build_server(
        _strict_handler_catalog(strict),
        transport=upstream.transport,
        environ=ENV,
        audit=AuditLog(stream=io.StringIO()),
        hooks=hooks,
    )
    async with Client(server) as client:
        result = await client.call_tool(
            "pets_note", {"text": "fed", "tag": None, "extra": {"mood": None}}
        )
    assert not result.is_error, result
    expected = (
        {"text": "fed", "extra": {}}
        if strict
        else {
            "text": "fed",
            "tag": None,
            "extra": {"mood": None},
        }
    )
    assert received == [expected]
    assert upstream.requests == []


# Inbound auth given as mcpmint.yaml `settings:` (tools.json "settings"), not in the environment.
AUTH_SETTINGS = {
    "PETS_AUTH": "jwt",
    "PETS_JWKS_URL": "https://auth.example.com/.well-known/jwks.json",
    "PETS_ISSUER": "https://auth.example.com",
    "PETS_RESOURCE_URL": "https://mcp.example.com/mcp",
}


def _served_app(
    monkeypatch: pytest.MonkeyPatch, environ: dict[str, str], argv: list[str]
) -> tuple[int, list[Any]]:
    data = catalog_data()
    data["settings"] = AUTH_SETTINGS
    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    return main(load_catalog(data), ["--transport", "http", *argv], environ=environ), served


async def _resource_metadata(app: Any, host: str) -> dict[str, Any]:
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=f"https://{host}") as http:
        response = await http.get("/.well-known/oauth-protected-resource/mcp")
        unauthenticated = await http.post("/mcp", json={})
    assert response.status_code == 200, response.text
    assert unauthenticated.status_code == 401
    return dict(response.json())


async def test_auth_settings_from_the_config_protect_an_http_server(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A public address is refused without inbound auth: served, so the settings were read.
    status, served = _served_app(monkeypatch, {}, ["--host", "0.0.0.0"])
    assert status == 0
    (app,) = served
    metadata = await _resource_metadata(app, "mcp.example.com")
    assert metadata["resource"] == "https://mcp.example.com/mcp"
    assert metadata["authorization_servers"] == ["https://auth.example.com"]


async def test_the_environment_overrides_auth_settings_from_the_config(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    moved = {"PETS_RESOURCE_URL": "https://tools.example.org/mcp"}
    status, served = _served_app(monkeypatch, moved, ["--host", "0.0.0.0"])
    assert status == 0
    metadata = await _resource_metadata(served[0], "tools.example.org")
    assert metadata["resource"] == "https://tools.example.org/mcp"
    # PETS_AUTH=none in the environment turns the configured jwt off: public is refused again.
    status, served = _served_app(monkeypatch, {"PETS_AUTH": "none"}, ["--host", "0.0.0.0"])
    assert status == 2 and served == []
    assert "PETS_AUTH=jwt" in capsys.readouterr().err
