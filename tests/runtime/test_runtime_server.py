"""The server in memory, in both protocol eras, against an upstream that records every request."""

from __future__ import annotations

import base64
import io
import json
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import parse_qs

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from runtime_support import ENV, Answer, Recorder, catalog_data, json_body

from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.hooks import Hooks
from mcpmint.runtime.request import PreparedRequest
from mcpmint.runtime.server import build_server
from mcpmint.runtime.upstream import UpstreamClient, UpstreamError

pytestmark = pytest.mark.anyio


@asynccontextmanager
async def connect(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> AsyncIterator[Client]:
    # Writes need the user's confirmation (test_runtime_confirm.py): this user always agrees.
    server = build_server(catalog, transport=upstream.transport, environ=env)
    async with Client(server, mode=mode, elicitation_callback=Answer()) as client:
        yield client


async def call(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str, name: str, args: Any
) -> types.CallToolResult:
    async with connect(catalog, upstream, env, mode) as client:
        return await client.call_tool(name, args)


def text(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


# ------------------------------------------------------------------------------ listing


async def test_list_tools_passes_schemas_and_annotations_through(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    async with connect(catalog, upstream, env, mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    data = catalog_data()
    assert list(tools) == [t["name"] for t in data["tools"]]
    get = tools["pets_get_pet"]
    assert get.input_schema == data["tools"][0]["inputSchema"]
    assert get.output_schema == data["tools"][0]["outputSchema"]
    assert get.title == "pets get pet" and get.description == "GET /pets/{petId}"
    assert get.annotations is not None and get.annotations.read_only_hint is True
    delete = tools["pets_delete_pet"]
    assert delete.annotations is not None and delete.annotations.destructive_hint is True
    assert delete.output_schema is None


async def test_unknown_tool_is_a_protocol_error(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    async with connect(catalog, upstream, env, mode) as client:
        with pytest.raises(MCPError) as info:
            await client.call_tool("pets_drop_db", {})
    assert info.value.error.code == types.INVALID_PARAMS
    assert upstream.requests == []


# ------------------------------------------------------------------------------ requests


async def test_get_sends_path_query_header_and_cookie_exactly(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    args = {
        "petId": "p 1",
        "limit": 5,
        "q": "x",
        "tags": ["a", "b"],
        "x_request_id": "r-1",
        "theme": "dark",
    }
    result = await call(catalog, upstream, env, mode, "pets_get_pet", args)
    assert result.is_error is False
    assert result.structured_content == {"id": 1, "name": "Rex"}
    assert text(result) == '{"id": 1, "name": "Rex"}'
    [request] = upstream.requests
    assert request.method == "GET"
    assert request.url.host == "api.example.com" and request.url.scheme == "https"
    assert upstream.target == "/v1/pets/p%201?limit=5&q=x&tags=a&tags=b"
    assert request.headers["x-request-id"] == "r-1"
    assert request.headers["cookie"] == "theme=dark"
    assert request.headers["accept"] == "application/json"
    assert request.headers["user-agent"] == "pets-mcp/1.2.3"
    assert "authorization" not in request.headers
    assert request.content == b""


async def test_post_sends_the_flattened_body_with_wire_names_and_the_api_key(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    args = {"name": "Rex", "body_id": 7, "tag": None}
    result = await call(catalog, upstream, env, mode, "pets_create_pet", args)
    assert not result.is_error
    request = upstream.last
    assert (request.method, upstream.target) == ("POST", "/v1/pets")
    assert json_body(request) == {"name": "Rex", "id": 7, "tag": None}
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-api-key"] == "key-abc-123"


async def test_put_sends_the_whole_body_argument_with_a_bearer_token(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(200, json=["a", "b"])
    args = {"petId": "7", "body": ["a", "b"]}
    result = await call(catalog, upstream, env, mode, "pets_replace_tags", args)
    # An array without wrap and without an output schema is delivered as text only.
    assert not result.is_error and result.structured_content is None
    assert text(result) == '["a", "b"]'
    request = upstream.last
    assert (request.method, upstream.target) == ("PUT", "/v1/pets/7/tags")
    assert request.content == b'["a","b"]'
    assert request.headers["authorization"] == "Bearer bearer-token-xyz"


async def test_delete_with_204_says_done(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(204)
    result = await call(catalog, upstream, env, mode, "pets_delete_pet", {"petId": "7"})
    assert not result.is_error
    assert text(result) == "HTTP 204: done, no content"
    assert (upstream.last.method, upstream.target) == ("DELETE", "/v1/pets/7")


async def test_wrapped_array_output_is_structured_under_result(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    pets = [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
    upstream.respond = lambda request: httpx2.Response(200, json=pets)
    result = await call(catalog, upstream, env, mode, "pets_list_pets", {"limit": 2})
    assert not result.is_error
    assert result.structured_content == {"result": pets}


# ------------------------------------------------------------------------------ S1-S3


async def test_S1_wrong_type_names_argument_and_sends_nothing(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    args = {"petId": "1", "limit": "ten"}
    result = await call(catalog, upstream, env, mode, "pets_get_pet", args)
    assert result.is_error
    assert "limit: 'ten' is not of type 'integer'" in text(result)
    assert upstream.requests == []


async def test_S2_extra_property_refused(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    args = {"petId": "1", "admin": True}
    result = await call(catalog, upstream, env, mode, "pets_get_pet", args)
    assert result.is_error
    assert "admin: unknown argument" in text(result)
    assert upstream.requests == []


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        ({"petId": "1", "limit": True}, "limit: True is not of type 'integer'"),
        ({"petId": "1", "limit": "1"}, "limit: '1' is not of type 'integer'"),
        ({"petId": "1", "limit": 10**100}, "limit: integer outside the signed 64-bit range"),
        ({"petId": None}, "petId: None is not of type 'string'"),
        ({"limit": 1}, "petId: required argument is missing"),
    ],
    ids=["bool-for-int", "string-for-int", "10e100", "null-for-required", "missing-required"],
)
async def test_S3_strict_values_are_refused(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str],
    mode: str,
    args: dict[str, Any],
    expected: str,
) -> None:
    result = await call(catalog, upstream, env, mode, "pets_get_pet", args)
    assert result.is_error and expected in text(result)
    assert upstream.requests == []


# ------------------------------------------------------------------------------ S5-S8

S5_CASES = [
    ("../../admin", None),
    ("..", None),
    (".", None),
    ("%2e%2e", None),
    ("a/b", "/v1/pets/a%2Fb"),
    ("a%2Fb", "/v1/pets/a%252Fb"),
    ("a?x=1", "/v1/pets/a%3Fx%3D1"),
    ("a#f", "/v1/pets/a%23f"),
    ("\\..\\", None),
    ("//evil.com/x", "/v1/pets/%2F%2Fevil.com%2Fx"),
    ("http://169.254.169.254/", "/v1/pets/http%3A%2F%2F169.254.169.254%2F"),
]


@pytest.mark.parametrize(("value", "expected_target"), S5_CASES)
async def test_S5_path_parameter_is_refused_or_one_encoded_segment(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str],
    mode: str,
    value: str,
    expected_target: str | None,
) -> None:
    result = await call(catalog, upstream, env, mode, "pets_get_pet", {"petId": value})
    if expected_target is None:
        assert result.is_error and "Invalid argument petId" in text(result)
        assert upstream.requests == []
    else:
        assert not result.is_error
        assert upstream.target == expected_target
        assert upstream.last.url.host == "api.example.com"


@pytest.mark.parametrize("value", ["v\r\nX-Injected: 1", "v\nX-Injected: 1", "v\x00"])
async def test_S7_header_value_with_cr_lf_nul_is_refused_naming_the_parameter(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str, value: str
) -> None:
    args = {"petId": "1", "x_request_id": value}
    result = await call(catalog, upstream, env, mode, "pets_get_pet", args)
    assert result.is_error
    assert "x_request_id" in text(result) and "CR, LF or NUL" in text(result)
    assert upstream.requests == []


@pytest.mark.parametrize("name", ["Authorization", "Host", "authorization", "Cookie"])
async def test_S7_an_argument_cannot_set_a_reserved_header(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str, name: str
) -> None:
    result = await call(catalog, upstream, env, mode, "pets_get_pet", {"petId": "1", name: "x"})
    assert result.is_error and f"{name}: unknown argument" in text(result)
    assert upstream.requests == []


async def test_S8_query_value_with_ampersand_is_one_value(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    args = {"petId": "1", "q": "a&admin=true"}
    result = await call(catalog, upstream, env, mode, "pets_get_pet", args)
    assert not result.is_error
    assert upstream.target == "/v1/pets/1?q=a%26admin%3Dtrue"
    assert parse_qs(upstream.last.url.query.decode()) == {"q": ["a&admin=true"]}


# ------------------------------------------------------------------------------ credentials


async def test_G17_api_key_in_query_comes_from_env_and_is_redacted(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str],
    mode: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    secret = env["PETS_QUERY_KEY"]
    encoded = "q%26key%3Ds3cr3t"
    upstream.respond = lambda request: httpx2.Response(200, json=[])
    result = await call(catalog, upstream, env, mode, "pets_list_pets", {"limit": 1})
    assert not result.is_error
    assert upstream.target == f"/v1/pets?limit=1&api_key={encoded}"

    # The model cannot supply or override the key.
    result = await call(catalog, upstream, env, mode, "pets_list_pets", {"api_key": "mine"})
    assert result.is_error and "api_key: unknown argument" in text(result)
    assert len(upstream.requests) == 1

    # Neither an upstream echoing the URL nor a network failure leaks it.
    upstream.respond = lambda request: httpx2.Response(400, text=f"bad request {request.url}")
    echoed = await call(catalog, upstream, env, mode, "pets_list_pets", {})

    def fail(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError(f"cannot reach {request.url}", request=request)

    upstream.respond = fail
    failed = await call(catalog, upstream, env, mode, "pets_list_pets", {})
    for result in (echoed, failed):
        assert result.is_error
        assert secret not in text(result) and encoded not in text(result)
    assert "[REDACTED]" in text(echoed)
    assert "Could not connect to the upstream API" in text(failed)
    assert "api_key=[REDACTED]" in caplog.text
    assert secret not in caplog.text and encoded not in caplog.text


@pytest.mark.parametrize(
    ("tool", "unset", "needs"),
    [
        ("pets_create_pet", ["PETS_API_KEY"], "Set PETS_API_KEY in"),
        (
            "pets_stats",
            ["PETS_BASIC_PASSWORD"],
            "Set PETS_BASIC_PASSWORD in",
        ),
        (
            "pets_either_auth",
            ["PETS_API_KEY", "PETS_BEARER"],
            "Set PETS_API_KEY; or PETS_BEARER in",
        ),
        (
            "pets_reports",
            ["PETS_OAUTH_CLIENT_SECRET"],
            "Set PETS_OAUTH_ACCESS_TOKEN (or PETS_OAUTH_CLIENT_SECRET) in",
        ),
    ],
)
async def test_credentials_fail_closed_naming_the_variables(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str],
    mode: str,
    tool: str,
    unset: list[str],
    needs: str,
) -> None:
    for name in unset:
        del env[name]
    args = {"name": "Rex"} if tool == "pets_create_pet" else {}
    result = await call(catalog, upstream, env, mode, tool, args)
    assert result.is_error
    assert needs in text(result) and "No request was sent." in text(result)
    assert upstream.requests == [] and upstream.token_requests == []


async def test_no_credentials_at_all_names_every_alternative(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    result = await call(catalog, upstream, {}, mode, "pets_either_auth", {})
    assert result.is_error
    assert (
        "Set all of PETS_API_KEY, PETS_BASIC_USERNAME and PETS_BASIC_PASSWORD; or PETS_BEARER "
        "in the server's environment" in text(result)
    )
    assert upstream.requests == []


async def test_the_first_satisfied_alternative_is_used(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    await call(catalog, upstream, env, mode, "pets_either_auth", {})
    first = upstream.last.headers
    assert first["x-api-key"] == "key-abc-123"
    assert first["authorization"] == "Basic " + base64.b64encode(b"alice:wonder-land-pw").decode()
    del env["PETS_BASIC_USERNAME"]
    await call(catalog, upstream, env, mode, "pets_either_auth", {})
    second = upstream.last.headers
    assert second["authorization"] == "Bearer bearer-token-xyz" and "x-api-key" not in second


async def test_an_empty_alternative_means_no_credentials_needed(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    result = await call(catalog, upstream, {}, mode, "pets_optional_auth", {})
    assert not result.is_error and "authorization" not in upstream.last.headers
    await call(catalog, upstream, {"PETS_BEARER": "tok-1234"}, mode, "pets_optional_auth", {})
    assert upstream.last.headers["authorization"] == "Bearer tok-1234"


async def test_api_key_in_cookie_joins_the_cookie_parameters(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    await call(catalog, upstream, env, mode, "pets_cookie_auth", {"theme": "dark"})
    assert upstream.last.headers.get_list("cookie") == ["theme=dark; sid=cookie-secret-42"]


async def test_oauth2_client_credentials_token_is_fetched_once_and_reused(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    async with connect(catalog, upstream, env, mode) as client:
        for _ in range(3):
            result = await client.call_tool("pets_reports", {})
            assert not result.is_error
    [token_request] = upstream.token_requests
    assert token_request.method == "POST"
    assert token_request.headers["content-type"] == "application/x-www-form-urlencoded"
    assert parse_qs(token_request.content.decode()) == {
        "grant_type": ["client_credentials"],
        "client_id": ["client-1"],
        "client_secret": ["client-secret-9"],
        "scope": ["reports:read a:b"],
    }
    assert [r.headers["authorization"] for r in upstream.requests] == ["Bearer fetched-token-1"] * 3


async def test_oauth2_token_is_renewed_when_it_expires(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    issued = iter(["t-one", "t-two"])
    upstream.token_response = lambda request: httpx2.Response(
        200, json={"access_token": next(issued), "token_type": "bearer", "expires_in": 0}
    )
    async with connect(catalog, upstream, env, mode) as client:
        await client.call_tool("pets_reports", {})
        await client.call_tool("pets_reports", {})
    assert len(upstream.token_requests) == 2
    assert [r.headers["authorization"] for r in upstream.requests] == [
        "Bearer t-one",
        "Bearer t-two",
    ]


async def test_oauth2_token_is_forgotten_after_a_401(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    statuses = iter([401, 200])
    upstream.respond = lambda request: httpx2.Response(next(statuses), json={})
    async with connect(catalog, upstream, env, mode) as client:
        assert (await client.call_tool("pets_reports", {})).is_error
        assert not (await client.call_tool("pets_reports", {})).is_error
    assert len(upstream.token_requests) == 2


async def test_oauth2_preissued_token_skips_the_token_endpoint(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    env["PETS_OAUTH_ACCESS_TOKEN"] = "pre-issued-1"
    await call(catalog, upstream, env, mode, "pets_reports", {})
    assert upstream.token_requests == []
    assert upstream.last.headers["authorization"] == "Bearer pre-issued-1"


@pytest.mark.parametrize(
    "response",
    [
        httpx2.Response(401, json={"error": "invalid_client"}),
        httpx2.Response(200, json={"token_type": "bearer"}),
        httpx2.Response(200, text="<html>"),
    ],
)
async def test_oauth2_token_endpoint_failure_fails_closed(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str, response: httpx2.Response
) -> None:
    upstream.token_response = lambda request: response
    result = await call(catalog, upstream, env, mode, "pets_reports", {})
    assert result.is_error and "Could not obtain a token" in text(result)
    assert "client-secret-9" not in text(result)
    assert upstream.requests == []


# ------------------------------------------------------------------------------ results


@pytest.mark.parametrize(("status", "reason"), [(404, "Not Found"), (503, "Service Unavailable")])
async def test_error_statuses_give_status_reason_and_a_trimmed_body(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str, status: int, reason: str
) -> None:
    body = "\x1b[31mno such pet\x1b[0m " + "x" * 5000
    upstream.respond = lambda request: httpx2.Response(status, text=body)
    result = await call(catalog, upstream, env, mode, "pets_get_pet", {"petId": "9"})
    assert result.is_error and result.structured_content is None
    message = text(result)
    assert message.startswith(f"The upstream API answered HTTP {status} {reason}.\nno such pet ")
    assert "\x1b" not in message
    assert len(message) < 2200 and "more characters trimmed" in message


async def test_redirects_are_not_followed(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(
        302, headers={"Location": "http://169.254.169.254/latest/meta-data/"}
    )
    result = await call(catalog, upstream, env, mode, "pets_delete_pet", {"petId": "1"})
    assert result.is_error and "HTTP 302 Found" in text(result) and "not followed" in text(result)
    assert len(upstream.requests) == 1


async def test_timeouts_and_network_errors_are_plain_error_results(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    def read_timeout(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ReadTimeout("timed out", request=request)

    upstream.respond = read_timeout
    result = await call(catalog, upstream, env, mode, "pets_delete_pet", {"petId": "1"})
    assert result.is_error
    assert text(result) == (
        "The upstream API did not answer within 5 seconds (DELETE https://api.example.com)."
    )

    def broken(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.RemoteProtocolError("peer closed connection", request=request)

    upstream.respond = broken
    result = await call(catalog, upstream, env, mode, "pets_delete_pet", {"petId": "1"})
    assert result.is_error and "Network error" in text(result)
    assert "RemoteProtocolError" in text(result)


async def test_the_whole_exchange_has_a_deadline(upstream: Recorder, mode: str) -> None:
    data = catalog_data()
    data["upstream"]["timeoutSeconds"] = 0.05
    never = anyio.Event()

    async def hang(request: httpx2.Request) -> httpx2.Response:
        await never.wait()
        raise AssertionError("unreachable")

    slow = Recorder()
    slow.transport = httpx2.MockTransport(hang)
    result = await call(load_catalog(data), slow, {}, mode, "pets_get_pet", {"petId": "1"})
    assert result.is_error and "did not answer within 0.05 seconds" in text(result)


async def test_S15_output_schema_mismatch_says_the_call_succeeded(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    # Removing the bad `id` cannot help: the schema requires it, so the root cannot conform.
    upstream.respond = lambda request: httpx2.Response(200, json={"id": "one", "name": "Rex"})
    result = await call(catalog, upstream, env, mode, "pets_get_pet", {"petId": "1"})
    assert result.is_error and result.structured_content is None
    assert text(result) == (
        "The upstream API call SUCCEEDED (HTTP 200 OK) and has been carried out: do not repeat "
        "it. Its response does not match the tool's output schema ((root): 'id' is a required "
        "property), so it is returned here as text:\n"
        '{"id": "one", "name": "Rex"}'
    )


async def test_values_that_break_the_output_schema_are_left_out_of_structured_content(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    pets = [{"id": 1, "name": "Rex"}, {"id": 2, "name": None}]
    upstream.respond = lambda request: httpx2.Response(200, json=pets)
    result = await call(catalog, upstream, env, mode, "pets_list_pets", {})
    assert not result.is_error
    assert result.structured_content == {"result": [{"id": 1, "name": "Rex"}]}
    assert text(result).startswith(json.dumps({"result": pets}))
    # The null name goes first; the pet, still lacking a required name, goes next.
    assert "2 value(s) in this response do not match" in text(result)
    assert text(result).endswith("result[1].name, result[1]]")


async def test_non_json_success_is_text_or_a_mismatch_when_json_was_promised(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(200, text="all good")
    plain = await call(catalog, upstream, env, mode, "pets_stats", {})
    assert not plain.is_error and text(plain) == "all good" and plain.structured_content is None
    promised = await call(catalog, upstream, env, mode, "pets_get_pet", {"petId": "1"})
    assert promised.is_error
    assert "SUCCEEDED (HTTP 200 OK)" in text(promised) and "not JSON (text/plain" in text(promised)
    assert text(promised).endswith("as text:\nall good")


async def test_empty_success_for_a_tool_with_output_schema_is_flagged(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(204)
    result = await call(catalog, upstream, env, mode, "pets_get_pet", {"petId": "1"})
    assert result.is_error
    assert text(result).startswith("HTTP 204: done, no content. The upstream API call SUCCEEDED")


async def test_wrapped_output_mismatch_is_reported_under_result(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(200, json={"not": "a list"})
    result = await call(catalog, upstream, env, mode, "pets_list_pets", {})
    assert result.is_error and "SUCCEEDED" in text(result)
    assert "'result' is a required property" in text(result)


async def test_oversized_responses_are_truncated_with_a_note(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    # More than the 10 MiB counting bound: the note cannot say exactly how much was cut.
    upstream.respond = lambda request: httpx2.Response(200, content=b"x" * (10 * 1024 * 1024 + 1))
    result = await call(catalog, upstream, env, mode, "pets_stats", {})
    assert not result.is_error
    assert text(result).endswith(
        "the rest (more than 10 MiB in all) was cut, by this server's "
        "response size limit. Narrow the request (filters) to get a smaller response.]"
    )
    assert len(text(result)) < 1024 * 1024 + 500


async def test_response_cookies_are_not_kept_between_calls(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(
        200, headers={"Set-Cookie": "tracker=1; Path=/"}, json={"id": 1, "name": "a"}
    )
    async with connect(catalog, upstream, env, mode) as client:
        await client.call_tool("pets_get_pet", {"petId": "1"})
        await client.call_tool("pets_get_pet", {"petId": "2"})
    assert "cookie" not in upstream.last.headers


# ------------------------------------------------------------------------------ base URL


async def test_base_url_comes_from_the_environment_first(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    env["PETS_BASE_URL"] = "http://127.0.0.1:9000/api/"
    await call(catalog, upstream, env, mode, "pets_delete_pet", {"petId": "1"})
    assert str(upstream.last.url) == "http://127.0.0.1:9000/api/pets/1"


@pytest.mark.parametrize(
    ("base", "variable", "message"),
    [
        ("", "", "base URL is not configured: set PETS_BASE_URL"),
        ("", "/api", "PETS_BASE_URL is not usable"),
        ("/relative", "", "the spec's server URL is not usable"),
        ("ftp://x.example", "", "set PETS_BASE_URL to the API's absolute"),
    ],
)
async def test_a_missing_or_relative_base_url_fails_closed(
    upstream: Recorder, mode: str, base: str, variable: str, message: str
) -> None:
    data = catalog_data()
    data["upstream"]["baseUrl"] = base
    env = {"PETS_BASE_URL": variable} if variable else {}
    result = await call(load_catalog(data), upstream, env, mode, "pets_stats", {})
    assert result.is_error and message in text(result)
    assert upstream.requests == []


async def test_a_credential_with_a_line_break_is_refused_without_showing_it(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    env["PETS_BEARER"] = "token-part\r\nX-Injected: 1"
    result = await call(catalog, upstream, env, mode, "pets_delete_pet", {"petId": "1"})
    assert result.is_error and "PETS_BEARER" in text(result)
    assert "token-part" not in text(result)
    assert upstream.requests == []


async def test_upstream_client_refuses_a_request_off_its_origin(upstream: Recorder) -> None:
    settings = load_catalog(catalog_data()).upstream
    client = UpstreamClient(settings, user_agent="t/1", transport=upstream.transport)
    request = PreparedRequest("GET", "https://evil.example/v1/x", (), None)
    with pytest.raises(UpstreamError, match="does not stay on the upstream origin"):
        await client.send(request, origin="https://api.example.com")
    await client.aclose()
    assert upstream.requests == []


# -------------------------------------------------------------------- strict-mode handler tools
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
