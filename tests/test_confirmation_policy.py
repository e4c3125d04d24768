"""The confirmation policy: decided by the generator from method-derived annotations only."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpmint import ir
from mcpmint.build.frontends.openapi import BuildOptions, build_server
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import load_document
from mcpmint.load.validate import validate_document
from mcpmint.render.templates import catalog
from mcpmint.runtime.catalog import CatalogError, load_catalog

# Every operation claims to be harmless in the ways specs (and vendors) spell it.
HINTS = {
    "x-readonly": True,
    "x-readOnly": True,
    "x-read-only": True,
    "x-safe": True,
    "x-destructive": False,
    "x-mcp-annotations": {"readOnlyHint": True, "destructiveHint": False},
    "x-confirmation": "none",
}
SPEC = {
    "openapi": "3.1.0",
    "info": {"title": "Users", "version": "1"},
    "servers": [{"url": "https://api.example.com"}],
    "paths": {
        "/users/{id}": {
            "parameters": [
                {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
            ],
            "get": {"operationId": "getUser", "responses": {"200": {"description": "ok"}}, **HINTS},
            "delete": {
                "operationId": "deleteUser",
                "responses": {"204": {"description": "gone"}},
                **HINTS,
            },
            "put": {"operationId": "putUser", "responses": {"200": {"description": "ok"}}, **HINTS},
            "patch": {
                "operationId": "patchUser",
                "responses": {"200": {"description": "ok"}},
                **HINTS,
            },
        },
        "/users": {
            "post": {
                "operationId": "createUser",
                "responses": {"201": {"description": "ok"}},
                **HINTS,
            }
        },
    },
}


def tools(tmp_path: Path, policy: ir.ConfirmationPolicy | None = None) -> dict[str, ir.Tool]:
    spec = tmp_path / "users.json"
    spec.write_text(json.dumps(SPEC), encoding="utf-8")
    sink = DiagnosticSink()
    document = load_document(spec, sink)
    assert document is not None
    version = validate_document(document, sink)
    assert version is not None
    options = BuildOptions() if policy is None else BuildOptions(confirmation=policy)
    server = build_server(document, version, options, sink)
    assert server is not None, [d.render() for d in sink]
    return {tool.name: tool for tool in server.tools}


def test_G15_spec_hints_never_make_a_tool_look_safer(tmp_path: Path) -> None:
    found = tools(tmp_path)
    delete = found["users_delete_user"]
    assert delete.annotations.destructive and not delete.annotations.read_only
    assert delete.confirmation == "required"
    for name in ("users_put_user", "users_patch_user", "users_create_user"):
        assert found[name].confirmation == "required", name
        assert not found[name].annotations.read_only, name
    assert found["users_get_user"].confirmation == "none"
    # And the runtime reads the same decision from tools.json.
    spec = tmp_path / "users.json"
    sink = DiagnosticSink()
    document = load_document(spec, sink)
    assert document is not None
    version = validate_document(document, sink)
    assert version is not None
    server = build_server(document, version, BuildOptions(), sink)
    assert server is not None
    runtime = {t.name: t for t in load_catalog(catalog(server)).tools}
    assert runtime["users_delete_user"].needs_confirmation
    assert not runtime["users_get_user"].needs_confirmation


@pytest.mark.parametrize(
    ("policy", "required"),
    [
        ("writes", {"create_user", "delete_user", "patch_user", "put_user"}),
        ("destructive", {"delete_user", "patch_user", "put_user"}),
        ("all", {"create_user", "delete_user", "get_user", "patch_user", "put_user"}),
        ("none", set()),
    ],
)
def test_policy_decides_which_tools_are_confirmed(
    tmp_path: Path, policy: ir.ConfirmationPolicy, required: set[str]
) -> None:
    found = tools(tmp_path, policy)
    assert {
        name.removeprefix("users_") for name, t in found.items() if t.confirmation == "required"
    } == required


def test_the_default_policy_is_writes() -> None:
    assert BuildOptions().confirmation == "writes"
    assert set(ir.CONFIRMATION_POLICIES) == {"none", "destructive", "writes", "all"}


def test_a_catalog_without_the_field_fails_safe() -> None:
    data = json.loads(json.dumps(catalog_data_minimal()))
    loaded = {t.name: t for t in load_catalog(data).tools}
    # readOnlyHint says true, but the method is DELETE: confirmation is still required.
    assert loaded["d"].needs_confirmation
    assert not loaded["g"].needs_confirmation
    bad = catalog_data_minimal()
    bad["tools"][0]["confirmation"] = "maybe"
    with pytest.raises(CatalogError, match="/tools/0/confirmation"):
        load_catalog(bad)


def catalog_data_minimal() -> dict[str, Any]:
    def tool(name: str, method: str) -> dict[str, object]:
        return {
            "name": name,
            "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
            "annotations": {"readOnlyHint": True},
            "request": {"method": method, "path": f"/{name}", "parameters": [], "accept": ""},
        }

    return {
        "format": 1,
        "server": {"name": "x-mcp", "envPrefix": "X"},
        "upstream": {"baseUrl": "https://api.example.com"},
        "tools": [tool("d", "DELETE"), tool("g", "GET")],
    }
