"""Inbound and outbound auth of a generated server, end to end (issue 4).

A small spec is generated into a package, and that package runs as its own process
(`python -m vault_mcp --transport http`, uvicorn inside) with `VAULT_AUTH=jwt`: RS256 tokens
signed here, a JWKS served on loopback, a real OAuth2 token endpoint on loopback for the
upstream's client credentials, and a recording upstream. Clients are `mcp.Client` over
streamable HTTP, the MCP Inspector CLI and raw HTTP (H8, H9).
"""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate

from .support import (
    Loopback,
    Seen,
    clean_env,
    free_port,
    loopback,
    node_tool,
    run,
    stop,
    wait_for_port,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]

ISSUER = "https://auth.example.com/realms/main"
KID = "e2e-rsa-1"
CC_LIFETIME = 6  # seconds: the client-credentials tokens' expires_in
SPEC = """\
openapi: 3.0.3
info: {title: Vault, version: 1.0.0}
servers: [{url: "http://127.0.0.1:9/v1"}]
paths:
  /items:
    get:
      operationId: listItems
      summary: List items
      security: [{ApiKeyAuth: []}]
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {type: array, items: {type: object}}}}
  /reports:
    get:
      operationId: getReports
      summary: Reports
      security: [{OAuth2: ["reports:read"]}]
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {type: object}}}
  /health:
    get:
      operationId: getHealth
      summary: Health
      security: []
      responses:
        "200":
          description: ok
          content: {application/json: {schema: {type: object}}}
components:
  securitySchemes:
    ApiKeyAuth: {type: apiKey, in: header, name: X-API-Key}
    OAuth2:
      type: oauth2
      flows:
        clientCredentials:
          tokenUrl: TOKEN_URL
          scopes: {"reports:read": read reports}
"""

# The user's own auth.py: a per-user key store for the API key scheme.
CUSTOM_AUTH = '''\
"""A per-user key store (test)."""

from __future__ import annotations

from ._runtime.auth import Caller, UpstreamCredential

KEYS = {"alice": "alice-upstream-key"}


async def upstream_credentials(caller: Caller, tool: str, scheme: str) -> UpstreamCredential | None:
    key = KEYS.get(caller.subject or "")
    if scheme == "ApiKeyAuth" and key is not None:
        return UpstreamCredential(value=key)
    return None
'''


# ------------------------------------------------------------------------------ loopback servers


@dataclass
class TokenEndpoint:
    """An OAuth2 token endpoint: client credentials for one client; numbered tokens."""

    server: Loopback
    issued: list[str] = field(default_factory=list)

    def answer(self, seen: Seen) -> tuple[int, Any]:
        form = {k: v[0] for k, v in parse_qs(seen.body.decode()).items()}
        if form.get("grant_type") != "client_credentials" or (
            form.get("client_id"),
            form.get("client_secret"),
        ) != ("vault-client", "vault-client-secret"):
            return 401, {"error": "invalid_client"}
        token = f"cc-token-{len(self.issued) + 1}"
        self.issued.append(token)
        return 200, {"access_token": token, "token_type": "Bearer", "expires_in": CC_LIFETIME}


@dataclass(frozen=True)
class World:
    folder: Path  # the generated package
    key: Any  # the authorization server's RSA private key
    jwks: Loopback
    tokens: TokenEndpoint
    upstream: Loopback


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    jwk = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(key.public_key()))
    jwk |= {"kid": KID, "use": "sig", "alg": "RS256"}
    holder: list[TokenEndpoint] = []
    with (
        loopback(lambda seen: (200, {"keys": [jwk]})) as jwks,
        loopback(lambda seen: holder[0].answer(seen)) as token_server,
        loopback(lambda seen: (200, [{"id": 1}] if seen.path == "/v1/items" else {"ok": 1})) as up,
    ):
        holder.append(TokenEndpoint(token_server))
        root = tmp_path_factory.mktemp("auth-e2e")
        spec = root / "vault.yaml"
        spec.write_text(SPEC.replace("TOKEN_URL", f"{token_server.url}/oauth/token"))
        out = root / "vault-mcp"
        sink = DiagnosticSink()
        generate(spec, GenerateOptions(output=out, namespace="vault"), sink)
        assert not sink.has_errors, [d.render() for d in sink]
        yield World(out, key, jwks, holder[0], up)


def token(world: World, resource: str, **changes: Any) -> str:
    now = int(time.time())
    claims = {
        "iss": ISSUER,
        "aud": resource,
        "sub": "bob",
        "azp": "mcp-client",
        "iat": now,
        "exp": now + 600,
        "scope": "reports:read",
    } | changes
    return jwt.encode(claims, world.key, algorithm="RS256", headers={"kid": KID})


@dataclass
class Running:
    url: str  # the MCP endpoint
    log: Path

    @property
    def resource(self) -> str:
        return self.url

    def stderr(self) -> str:
        return self.log.read_text(errors="replace")[-3000:]


@contextmanager
def generated_server(world: World, **settings: str) -> Iterator[Running]:
    """The generated package as its own process, over streamable HTTP with JWT auth."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    env = clean_env(
        PYTHONPATH=str(world.folder / "src"),
        VAULT_BASE_URL=f"{world.upstream.url}/v1",
        VAULT_API_KEY_AUTH="env-upstream-key",
        VAULT_OAUTH2_CLIENT_ID="vault-client",
        VAULT_OAUTH2_CLIENT_SECRET="vault-client-secret",
        VAULT_AUTH="jwt",
        VAULT_ISSUER=ISSUER,
        VAULT_JWKS_URL=f"{world.jwks.url}/jwks.json",
        VAULT_RESOURCE_URL=url,
        VAULT_AUDIT="off",
        **settings,
    )
    log = Path(tempfile.mkstemp(suffix=".log")[1])
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [sys.executable, "-m", "vault_mcp", "--transport", "http", "--port", str(port)],
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    try:
        wait_for_port(port, process)
        yield Running(url, log)
    finally:
        stop(process)
        os.unlink(log)


@asynccontextmanager
async def client(running: Running, bearer: str | None) -> AsyncIterator[Client]:
    headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
    async with (
        httpx2.AsyncClient(headers=headers, timeout=30) as http,
        Client(streamable_http_client(running.url, http_client=http)) as connected,
    ):
        yield connected


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def reset(world: World) -> None:
    world.upstream.seen.clear()
    world.tokens.server.seen.clear()
    world.tokens.issued.clear()


# ------------------------------------------------------------------------------ the skeleton


def test_generated_package_has_a_user_owned_auth_py_that_regeneration_keeps(
    world: World, tmp_path: Path
) -> None:
    auth_py = world.folder / "src" / "vault_mcp" / "auth.py"
    text = auth_py.read_text(encoding="utf-8")
    assert "async def upstream_credentials(" in text and "return None" in text
    assert "Generated by mcpmint" not in text  # the user's file: no generated header
    readme = (world.folder / "README.md").read_text(encoding="utf-8")
    assert "## Running behind an authorization server" in readme
    assert "VAULT_RESOURCE_URL=https://mcp.example.com/mcp" in readme
    assert "## Extension points: `auth.py`" in readme
    # Regenerating into a copy whose auth.py was edited leaves the edit alone.
    copy = tmp_path / "copy"
    subprocess.run(["cp", "-r", str(world.folder), str(copy)], check=True)
    (copy / "src" / "vault_mcp" / "auth.py").write_text(CUSTOM_AUTH, encoding="utf-8")
    sink = DiagnosticSink()
    spec = world.folder.parent / "vault.yaml"
    generate(spec, GenerateOptions(output=copy, namespace="vault"), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    assert (copy / "src" / "vault_mcp" / "auth.py").read_text(encoding="utf-8") == CUSTOM_AUTH


# ------------------------------------------------------------------------------ the hook


async def test_auth_py_hook_sends_a_per_caller_key_and_never_the_callers_token(
    world: World,
) -> None:
    auth_py = world.folder / "src" / "vault_mcp" / "auth.py"
    original = auth_py.read_text(encoding="utf-8")
    auth_py.write_text(CUSTOM_AUTH, encoding="utf-8")  # what a user would write
    reset(world)
    try:
        with generated_server(world) as running:
            alice = token(world, running.resource, sub="alice")
            bob = token(world, running.resource, sub="bob")
            for bearer in (alice, bob):
                async with client(running, bearer) as connected:
                    result = await connected.call_tool("vault_list_items", {})
                assert not result.is_error, (result, running.stderr())
    finally:
        auth_py.write_text(original, encoding="utf-8")
    keys = [seen.headers.get("x-api-key") for seen in world.upstream.seen]
    assert keys == ["alice-upstream-key", "env-upstream-key"]  # bob: the environment's
    for seen in world.upstream.seen:
        assert alice not in seen.everything() and bob not in seen.everything()
        assert "authorization" not in seen.headers


# ------------------------------------------------------------------------------ client credentials


async def test_client_credentials_token_fetched_once_reused_and_refreshed_after_expiry(
    world: World,
) -> None:
    reset(world)
    with generated_server(world) as running:
        bearer = token(world, running.resource)
        async with client(running, bearer) as connected:
            for _ in range(2):
                result = await connected.call_tool("vault_get_reports", {})
                assert not result.is_error, (result, running.stderr())
            # Past the token's lifetime (a wait, not a timed assertion): a new token is fetched.
            time.sleep(CC_LIFETIME + 0.5)
            assert not (await connected.call_tool("vault_get_reports", {})).is_error
    assert world.tokens.issued == ["cc-token-1", "cc-token-2"]
    sent = [seen.headers.get("authorization") for seen in world.upstream.seen]
    assert sent == ["Bearer cc-token-1", "Bearer cc-token-1", "Bearer cc-token-2"]
    form = parse_qs(world.tokens.server.seen[0].body.decode())
    assert form["scope"] == ["reports:read"] and form["grant_type"] == ["client_credentials"]
    for seen in world.upstream.seen + world.tokens.server.seen:
        assert bearer not in seen.everything()
        assert bearer.rsplit(".", 1)[1] not in seen.everything()  # not even its signature


async def test_a_token_without_the_tools_scope_gets_403_and_nothing_is_fetched_or_sent(
    world: World,
) -> None:
    reset(world)
    with generated_server(world, VAULT_LIST_TOOLS="permitted") as running:
        bearer = token(world, running.resource, scope="")
        async with client(running, bearer) as connected:
            listed = {t.name for t in (await connected.list_tools()).tools}
            assert listed == {"vault_get_health", "vault_list_items"}  # LIST_TOOLS=permitted
            with pytest.raises(MCPError):
                await connected.call_tool("vault_get_reports", {})
    assert world.upstream.seen == [] and world.tokens.server.seen == []


# ------------------------------------------------------------------------------ MCP Inspector


def test_mcp_inspector_with_a_bearer_header_lists_and_calls_tools(
    world: World, tmp_path: Path
) -> None:
    reset(world)
    env = clean_env(MCP_CATALOG_PATH=str(tmp_path / "catalog.json"))

    def inspector(url: str, bearer: str | None, *call: str) -> subprocess.CompletedProcess[str]:
        header = ["--header", f"Authorization: Bearer {bearer}"] if bearer else []
        command = [str(node_tool("mcp-inspector")), "--cli", url, "--transport", "http"]
        return run([*command, *header, *call], env=env)

    with generated_server(world) as running:
        bearer = token(world, running.resource)
        listed = inspector(running.url, bearer, "--method", "tools/list")
        assert listed.returncode == 0, listed.stdout[-2000:] + listed.stderr[-2000:]
        names = sorted(t["name"] for t in json.loads(listed.stdout)["tools"])
        assert names == ["vault_get_health", "vault_get_reports", "vault_list_items"]
        called = inspector(
            running.url, bearer, "--method", "tools/call", "--tool-name", "vault_get_health"
        )
        assert called.returncode == 0, called.stdout[-2000:] + called.stderr[-2000:]
        assert json.loads(called.stdout)["structuredContent"] == {"ok": 1}
        refused = inspector(running.url, None, "--method", "tools/list")
        assert refused.returncode != 0
        # It read the 401 challenge and wants to run the OAuth flow (no TTY here to do it).
        assert "auth_required" in refused.stdout + refused.stderr
    assert [seen.path for seen in world.upstream.seen] == ["/v1/health"]


# ------------------------------------------------------------------------------ H8, H9


def mcp_headers(bearer: str, method: str, **more: str) -> dict[str, str]:
    return {
        "Authorization": f"Bearer {bearer}",
        "Accept": "application/json, text/event-stream",
        "Content-Type": "application/json",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": method,
    } | more


def modern_call(name: str, version: str = "2026-07-28") -> dict[str, Any]:
    meta = {
        "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    params = {"name": name, "arguments": {}, "_meta": meta}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


def b64_sentinel(text: str) -> str:
    return "=?base64?" + base64.b64encode(text.encode()).decode() + "?="


def rpc_error(response: httpx2.Response) -> int:
    return int(response.json()["error"]["code"])


@pytest.fixture(scope="module")
def served(world: World) -> Iterator[Running]:
    with generated_server(world) as running:
        yield running


async def post(running: Running, body: Any, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=30) as http:
        return await http.post(running.url, json=body, headers=headers)


async def test_H8_mcp_method_header_that_does_not_match_the_body_gets_400_32020(
    world: World, served: Running
) -> None:
    reset(world)
    bearer = token(world, served.resource)
    headers = mcp_headers(bearer, "tools/list", **{"Mcp-Name": "vault_get_health"})
    response = await post(served, modern_call("vault_get_health"), headers)
    assert response.status_code == 400 and rpc_error(response) == -32020
    assert world.upstream.seen == []


@pytest.mark.parametrize(
    "sent_name",
    ["vault_get_health", b64_sentinel("vault_get_health"), None],
    ids=["plain", "base64", "absent"],
)
async def test_H8_mcp_name_header_is_compared_after_base64_decoding(
    world: World, served: Running, sent_name: str | None
) -> None:
    reset(world)
    bearer = token(world, served.resource)
    extra = {} if sent_name is None else {"Mcp-Name": sent_name}
    # The header names one tool, the body another: refused whatever the header's encoding.
    response = await post(
        served, modern_call("vault_get_reports"), mcp_headers(bearer, "tools/call", **extra)
    )
    assert response.status_code == 400 and rpc_error(response) == -32020
    # Base64 of the body's own name matches once decoded.
    matching = b64_sentinel("vault_get_health") if sent_name is not None else "vault_get_health"
    response = await post(
        served,
        modern_call("vault_get_health"),
        mcp_headers(bearer, "tools/call", **{"Mcp-Name": matching}),
    )
    assert response.status_code == 200 and response.json()["result"]["isError"] is False
    assert [seen.path for seen in world.upstream.seen] == ["/v1/health"]


async def test_H8_a_header_mismatch_cannot_slip_a_scoped_call_past_the_scope_gate(
    world: World, served: Running
) -> None:
    reset(world)
    bearer = token(world, served.resource, scope="")  # lacks reports:read
    headers = mcp_headers(bearer, "tools/list", **{"Mcp-Name": "vault_get_health"})
    response = await post(served, modern_call("vault_get_reports"), headers)
    # The gate reads the body, never the headers: the call it carries is judged.
    assert response.status_code == 403
    assert 'scope="reports:read"' in response.headers["www-authenticate"]
    assert world.upstream.seen == [] and world.tokens.server.seen == []


async def test_H8_a_session_header_is_ignored_and_never_echoed(
    world: World, served: Running
) -> None:
    reset(world)
    bearer = token(world, served.resource)
    headers = mcp_headers(
        bearer, "tools/call", **{"Mcp-Name": "vault_get_health", "Mcp-Session-Id": "forged-1"}
    )
    response = await post(served, modern_call("vault_get_health"), headers)
    assert response.status_code == 200 and response.json()["result"]["isError"] is False
    assert "mcp-session-id" not in response.headers
    assert "forged-1" not in response.text


async def test_H8_unknown_protocol_version_in_meta_gets_32022(
    world: World, served: Running
) -> None:
    reset(world)
    bearer = token(world, served.resource)
    headers = mcp_headers(
        bearer,
        "tools/call",
        **{"Mcp-Name": "vault_get_health", "MCP-Protocol-Version": "2099-01-01"},
    )
    response = await post(served, modern_call("vault_get_health", "2099-01-01"), headers)
    assert response.status_code == 400 and rpc_error(response) == -32022
    assert "2026-07-28" in response.json()["error"]["data"]["supported"]
    assert world.upstream.seen == []


async def test_H9_post_with_text_plain_gets_400(world: World, served: Running) -> None:
    reset(world)
    bearer = token(world, served.resource)
    headers = mcp_headers(
        bearer, "tools/call", **{"Mcp-Name": "vault_get_health", "Content-Type": "text/plain"}
    )
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(
            served.url, content=json.dumps(modern_call("vault_get_health")), headers=headers
        )
    assert response.status_code in (400, 415)
    assert world.upstream.seen == []


@pytest.mark.parametrize("method", ["GET", "DELETE"])
async def test_H9_get_or_delete_to_the_endpoint_gets_405(
    world: World, served: Running, method: str
) -> None:
    bearer = token(world, served.resource)
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.request(method, served.url, headers=mcp_headers(bearer, "tools/list"))
        anonymous = await http.request(method, served.url)
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert anonymous.status_code == 401  # authentication first: nothing about the endpoint
