"""Allowlists (S4) and the upstream origin (S6)."""

from __future__ import annotations

import io
import json
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from runtime_support import ENV, Answer, Recorder, catalog_data

from mcpmint.runtime.allowlist import AllowlistError, ToolFilter, ValueAllowlist, env_name
from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.server import ConfigurationError, build_server

pytestmark = pytest.mark.anyio


def server(catalog: Catalog, upstream: Recorder, env: dict[str, str], audit: io.StringIO) -> Any:
    return build_server(
        catalog, transport=upstream.transport, environ=env, audit=AuditLog(stream=audit)
    )


def text(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


@pytest.mark.parametrize(
    ("variables", "hidden"),
    [
        ({"PETS_TOOLS_DENY": "pets_delete_pet"}, "pets_delete_pet"),
        ({"PETS_TOOLS_ALLOW": "pets_get_*,pets_list_pets"}, "pets_delete_pet"),
        ({"PETS_TOOLS_ALLOW": "pets_*", "PETS_TOOLS_DENY": "*_delete_*"}, "pets_delete_pet"),
        ({"PETS_READ_ONLY": "1"}, "pets_create_pet"),
    ],
)
async def test_S4_hidden_tool_is_absent_and_unknown(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str],
    mode: str,
    variables: dict[str, str],
    hidden: str,
) -> None:
    env.update(variables)
    audit = io.StringIO()
    async with Client(server(catalog, upstream, env, audit), mode=mode) as client:
        names = [t.name for t in (await client.list_tools()).tools]
        with pytest.raises(MCPError) as info:
            await client.call_tool(hidden, {"petId": "1", "name": "x"})
    assert hidden not in names and names
    assert info.value.error.code == types.INVALID_PARAMS
    assert info.value.error.message == f"Unknown tool: {hidden}"
    assert upstream.requests == []
    [record] = [json.loads(line) for line in audit.getvalue().splitlines()]
    assert (record["tool"], record["decision"], record["reason"]) == (
        hidden,
        "refused",
        "unknown tool",
    )


def test_read_only_switch_keeps_only_explicitly_read_only_tools(catalog: Catalog) -> None:
    only = ToolFilter.from_environ("PETS", {"PETS_READ_ONLY": "true"})
    kept = [t.name for t in catalog.tools if only.allows(t)]
    assert "pets_get_pet" in kept
    assert not {"pets_create_pet", "pets_replace_tags", "pets_delete_pet"} & set(kept)
    with pytest.raises(AllowlistError, match="PETS_READ_ONLY"):
        ToolFilter.from_environ("PETS", {"PETS_READ_ONLY": "maybe"})


def test_variable_names_are_upper_case_with_underscores() -> None:
    assert env_name("PETS", "ALLOW", "pets.get-pet", "petId") == "PETS_ALLOW_PETS_GET_PET_PETID"


@pytest.mark.parametrize(
    ("rule", "allowed", "refused"),
    [
        ("1, 2,3", ["1", "3"], ["4", "12", "1,2"]),
        ("re:[a-z]+-[0-9]+", ["rex-1", "a-22"], ["Rex-1", "rex-1/../x", "rex-1\n"]),
    ],
)
async def test_S4_argument_values_outside_the_allowlist_are_refused(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str],
    mode: str,
    rule: str,
    allowed: list[str],
    refused: list[str],
) -> None:
    env["PETS_ALLOW_PETS_DELETE_PET_PETID"] = rule
    audit = io.StringIO()
    async with Client(
        server(catalog, upstream, env, audit), mode=mode, elicitation_callback=Answer()
    ) as client:
        for value in refused:
            result = await client.call_tool("pets_delete_pet", {"petId": value})
            assert result.is_error
            assert text(result) == (
                "The value of argument petId is not allowed for pets_delete_pet by the server's "
                "operator (PETS_ALLOW_PETS_DELETE_PET_PETID). Nothing was sent."
            )
        assert upstream.requests == []
        for value in allowed:
            assert not (await client.call_tool("pets_delete_pet", {"petId": value})).is_error
    assert len(upstream.requests) == len(allowed)
    reasons = [json.loads(line)["reason"] for line in audit.getvalue().splitlines()]
    assert reasons.count("argument value not allowed") == len(refused)


def test_value_allowlists_cover_arrays_numbers_and_null(catalog: Catalog) -> None:
    env = {"PETS_ALLOW_PETS_GET_PET_TAGS": "a,b", "PETS_ALLOW_PETS_GET_PET_LIMIT": "10,20"}
    rules = ValueAllowlist.from_environ("PETS", catalog.tools, env)
    get = catalog.tool("pets_get_pet")
    assert get is not None
    assert rules.refusal(get, {"petId": "x", "tags": ["a", "b"], "limit": 10}) is None
    assert "argument tags" in (rules.refusal(get, {"petId": "x", "tags": ["a", "c"]}) or "")
    assert "argument limit" in (rules.refusal(get, {"petId": "x", "limit": 30}) or "")
    assert "argument limit" in (rules.refusal(get, {"petId": "x", "limit": None}) or "")


def test_a_bad_pattern_is_a_configuration_error(catalog: Catalog) -> None:
    env = {"PETS_ALLOW_PETS_GET_PET_PETID": "re:("}
    with pytest.raises(ConfigurationError, match="PETS_ALLOW_PETS_GET_PET_PETID"):
        build_server(catalog, environ=env)


async def test_S6_redirect_to_another_origin_is_not_followed_and_carries_no_credential(
    upstream: Recorder, mode: str
) -> None:
    attacker: list[httpx2.Request] = []

    def respond(request: httpx2.Request) -> httpx2.Response:
        if request.url.host != "api.example.com":
            attacker.append(request)
            return httpx2.Response(200, json={"stolen": True})
        return httpx2.Response(307, headers={"Location": "https://evil.example/collect"})

    upstream.respond = respond
    env = dict(ENV)
    audit = io.StringIO()
    async with Client(
        server(load_catalog(catalog_data()), upstream, env, audit),
        mode=mode,
        elicitation_callback=Answer(),
    ) as client:
        result = await client.call_tool("pets_replace_tags", {"petId": "1", "body": ["a"]})
        listed = await client.call_tool("pets_list_pets", {})
    assert result.is_error and "not followed" in text(result)
    assert listed.is_error and "not followed" in text(listed)
    assert attacker == []
    assert [r.url.host for r in upstream.requests] == ["api.example.com"] * 2
    assert upstream.requests[0].headers["authorization"] == f"Bearer {ENV['PETS_BEARER']}"
    assert "s3cr3t" not in text(listed)
