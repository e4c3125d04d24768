"""Inbound auth over real HTTP (cases H1-H7 of the adversarial list, and key rotation).

Real RSA and EC keys, JWTs signed with pyjwt, a JWKS served by uvicorn on 127.0.0.1, the
runtime's server (`build_server` + `http_app`) under uvicorn on another loopback port, and
`mcp.Client` over streamable HTTP with an `Authorization` header.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx2
import jwt
import mcp_types as types
import pytest
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from mcp.shared.exceptions import MCPError
from runtime_support import (
    MCP_HEADERS,
    PING,
    Answer,
    Clock,
    Recorder,
    catalog_data,
    listening_socket,
    serve,
)
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpmint.runtime.auth import (
    Caller,
    InboundAuth,
    IntrospectionSettings,
    IntrospectionVerifier,
    JwtSettings,
    JwtVerifier,
    ScopeGate,
    UpstreamCredential,
    UpstreamCredentialsHook,
    load_settings,
    refused_scopes,
    scope_alternatives,
)
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.server import build_server, http_app, main

pytestmark = pytest.mark.anyio

ISSUER = "https://auth.example.com"
OTHER_AS = "https://login.example.org/tenant"
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "test", "version": "0"},
    },
}


def call(name: str, arguments: dict[str, Any] | None = None) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments or {}}
    return {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}


# ------------------------------------------------------------------------------ keys and tokens


@dataclass(frozen=True)
class Key:
    private: Any
    kid: str
    alg: str

    @property
    def jwk(self) -> dict[str, Any]:
        algorithm = (
            jwt.algorithms.RSAAlgorithm if self.alg == "RS256" else jwt.algorithms.ECAlgorithm
        )
        data: dict[str, Any] = json.loads(algorithm.to_jwk(self.private.public_key()))
        return data | {"kid": self.kid, "use": "sig", "alg": self.alg}

    @property
    def public_pem(self) -> bytes:
        return bytes(
            self.private.public_key().public_bytes(
                serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
            )
        )


@pytest.fixture(scope="module")
def rsa_key() -> Key:
    return Key(rsa.generate_private_key(public_exponent=65537, key_size=2048), "rsa-1", "RS256")


@pytest.fixture(scope="module")
def ec_key() -> Key:
    return Key(ec.generate_private_key(ec.SECP256R1()), "ec-1", "ES256")


@pytest.fixture(scope="module")
def attacker_key() -> Key:
    return Key(rsa.generate_private_key(public_exponent=65537, key_size=2048), "rsa-1", "RS256")


DROP = object()


def claims(resource: str, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    base: dict[str, Any] = {
        "iss": ISSUER,
        "aud": resource,
        "sub": "user-1",
        "client_id": "client-a",
        "iat": now,
        "exp": now + 300,
        "scope": "",
    }
    base.update(changes)
    return {k: v for k, v in base.items() if v is not DROP}


def sign(key: Key, payload: dict[str, Any], **headers: Any) -> str:
    return jwt.encode(payload, key.private, algorithm=key.alg, headers={"kid": key.kid} | headers)


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def handmade(header: dict[str, Any], payload: dict[str, Any], secret: bytes | None) -> str:
    """A JWT built by hand: pyjwt refuses to produce these two forgeries itself."""
    signing_input = f"{b64(json.dumps(header).encode())}.{b64(json.dumps(payload).encode())}"
    if secret is None:
        return signing_input + "."
    mac = hmac.new(secret, signing_input.encode(), hashlib.sha256).digest()
    return f"{signing_input}.{b64(mac)}"


# ------------------------------------------------------------------------------ servers


@dataclass
class Jwks:
    """A JWKS endpoint whose key set the test changes; counts every fetch."""

    keys: list[dict[str, Any]] = field(default_factory=list)
    hits: int = 0
    url: str = ""

    async def endpoint(self, request: Request) -> JSONResponse:
        self.hits += 1
        return JSONResponse({"keys": self.keys})


@pytest.fixture
async def jwks(rsa_key: Key, ec_key: Key) -> AsyncIterator[Jwks]:
    state = Jwks(keys=[rsa_key.jwk, ec_key.jwk])
    app = Starlette(routes=[Route("/jwks.json", state.endpoint)])
    async with serve(app, listening_socket()) as url:
        state.url = f"{url}/jwks.json"
        yield state


def auth_catalog(mode: str = "all") -> Catalog:
    """The runtime test catalog; deleting a pet needs `pets:write` (`pets_reports` needs
    `reports:read` and `a:b`; `pets_get_pet` needs nothing). `mode`: the tool mode."""
    data = catalog_data()
    for tool in data["tools"]:
        if tool["name"] == "pets_delete_pet":
            tool["security"] = [[{"scheme": "OAuth", "scopes": ["pets:write"]}]]
    if mode != "all":
        data["toolModes"] = {"mode": mode}
    return load_catalog(data)


@dataclass
class Stack:
    url: str
    resource: str
    upstream: Recorder
    auth: InboundAuth
    env: dict[str, str]

    @property
    def metadata_url(self) -> str:
        return self.url + "/.well-known/oauth-protected-resource/mcp"

    @asynccontextmanager
    async def client(
        self, token: str | None, mode: str = "auto", **kw: Any
    ) -> AsyncIterator[Client]:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with httpx2.AsyncClient(headers=headers, timeout=10) as http:
            transport = streamable_http_client(f"{self.url}/mcp", http_client=http)
            async with Client(transport, mode=mode, **kw) as client:
                yield client

    async def post(
        self, body: Any, token: str | None = None, *, query: str = "", **headers: str
    ) -> httpx2.Response:
        sent = MCP_HEADERS | headers
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        async with httpx2.AsyncClient(timeout=10) as http:
            return await http.post(f"{self.url}/mcp{query}", json=body, headers=sent)


def auth_env(env: dict[str, str], jwks_url: str, resource: str, **more: str) -> dict[str, str]:
    return (
        env
        | {
            "PETS_AUTH": "jwt",
            "PETS_JWKS_URL": jwks_url,
            "PETS_ISSUER": ISSUER,
            "PETS_RESOURCE_URL": resource,
            "PETS_AUTHORIZATION_SERVERS": f"{ISSUER},{OTHER_AS}",
            "PETS_ALGORITHMS": "RS256,ES256",
            "PETS_ADMIN_SCOPES": "admin",
            "PETS_ALLOWED_HOSTS": "mcp.example.com",
            "PETS_ALLOWED_ORIGINS": "https://app.example.com",
        }
        | more
    )


@asynccontextmanager
async def running(
    jwks: Jwks,
    upstream: Recorder,
    env: dict[str, str],
    adjust: Callable[[Starlette], None] | None = None,
    *,
    hook: UpstreamCredentialsHook | None = None,
    settings_env: Callable[[str], dict[str, str]] | None = None,
    tool_mode: str = "all",
    catalog: Catalog | None = None,
) -> AsyncIterator[Stack]:
    sock = listening_socket()
    resource = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    environ = auth_env(env, jwks.url, resource)
    if settings_env is not None:
        environ = env | settings_env(resource)
    settings = load_settings("PETS", environ)
    assert settings.inbound is not None
    catalog = auth_catalog(tool_mode) if catalog is None else catalog
    auth = InboundAuth(settings.inbound, catalog)
    server = build_server(
        catalog, transport=upstream.transport, environ=environ, upstream_credentials=hook
    )
    app = http_app(
        server,
        auth=auth,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
    )
    if adjust is not None:
        adjust(app)
    async with serve(app, sock) as url:
        yield Stack(url, resource, upstream, auth, environ)


@pytest.fixture
async def stack(jwks: Jwks, upstream: Recorder, env: dict[str, str]) -> AsyncIterator[Stack]:
    async with running(jwks, upstream, env) as s:
        yield s


def nothing_upstream(upstream: Recorder) -> None:
    assert upstream.requests == [] and upstream.token_requests == []


# ------------------------------------------------------------------------------ H1


async def test_H1_no_token_gets_401_with_resource_metadata(stack: Stack) -> None:
    response = await stack.post(PING)
    assert response.status_code == 401
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    assert f'resource_metadata="{stack.metadata_url}"' in challenge
    async with httpx2.AsyncClient(timeout=10) as http:
        prm = (await http.get(stack.metadata_url)).json()
    assert prm["resource"] == stack.resource
    assert prm["authorization_servers"] == [ISSUER, OTHER_AS]
    assert prm["scopes_supported"] == ["a:b", "admin", "pets:write", "reports:read"]
    assert prm["bearer_methods_supported"] == ["header"]


async def test_H1_sdk_settings_name_the_resource(stack: Stack) -> None:
    settings = stack.auth.auth_settings()
    assert str(settings.resource_server_url) == stack.resource
    assert settings.validate_token_resource is True
    assert settings.required_scopes is None


# ------------------------------------------------------------------------------ H2, H3


def _forgeries(resource: str, rsa_key: Key, attacker_key: Key) -> dict[str, str]:
    now = int(time.time())
    good = claims(resource)
    return {
        "expired": sign(rsa_key, claims(resource, exp=now - 120, iat=now - 600)),
        "not_yet_valid": sign(rsa_key, claims(resource, nbf=now + 600)),
        "bad_signature": sign(attacker_key, good),
        "embedded_attacker_jwk": sign(attacker_key, good, jwk=attacker_key.jwk),
        "wrong_issuer": sign(rsa_key, claims(resource, iss="https://evil.example")),
        "no_issuer": sign(rsa_key, claims(resource, iss=DROP)),
        "no_expiry": sign(rsa_key, claims(resource, exp=DROP)),
        "alg_none": handmade({"alg": "none", "kid": rsa_key.kid, "typ": "JWT"}, good, None),
        "hs256_with_public_key": handmade(
            {"alg": "HS256", "kid": rsa_key.kid, "typ": "JWT"}, good, rsa_key.public_pem
        ),
        "unknown_kid": sign(Key(rsa_key.private, "nope", "RS256"), good),
        "garbage": "not.a.jwt",
    }


FORGERIES = [
    "expired",
    "not_yet_valid",
    "bad_signature",
    "embedded_attacker_jwk",
    "wrong_issuer",
    "no_issuer",
    "no_expiry",
    "alg_none",
    "hs256_with_public_key",
    "unknown_kid",
    "garbage",
]


@pytest.mark.parametrize("case", FORGERIES)
async def test_H2_invalid_tokens_get_401_invalid_token(
    stack: Stack, rsa_key: Key, attacker_key: Key, case: str
) -> None:
    token = _forgeries(stack.resource, rsa_key, attacker_key)[case]
    response = await stack.post(call("pets_get_pet", {"petId": "1"}), token)
    assert response.status_code == 401, case
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{stack.metadata_url}"' in challenge
    nothing_upstream(stack.upstream)


@pytest.mark.parametrize("aud", ["https://other-service.example.com/mcp", DROP, ["https://x.y/"]])
async def test_H3_token_for_another_audience_or_none_gets_401(
    stack: Stack, rsa_key: Key, aud: Any
) -> None:
    token = sign(rsa_key, claims(stack.resource, aud=aud))
    response = await stack.post(PING, token)
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


async def test_H2_H3_valid_rsa_and_ec_tokens_are_accepted(
    stack: Stack, rsa_key: Key, ec_key: Key, mode: str
) -> None:
    for key in (rsa_key, ec_key):
        token = sign(key, claims(stack.resource))
        async with stack.client(token, mode) as client:
            result = await client.call_tool("pets_get_pet", {"petId": "1"})
        assert isinstance(result, types.CallToolResult) and not result.is_error
    assert len(stack.upstream.requests) == 2


# ------------------------------------------------------------------------------ H4


async def test_H4_missing_scope_gets_403_and_nothing_upstream(stack: Stack, rsa_key: Key) -> None:
    token = sign(rsa_key, claims(stack.resource, scope="reports:read"))
    response = await stack.post(call("pets_reports"), token)
    assert response.status_code == 403
    challenge = response.headers["www-authenticate"]
    assert challenge.startswith('Bearer error="insufficient_scope"')
    assert 'scope="a:b reports:read"' in challenge  # every needed scope, in one challenge
    assert f'resource_metadata="{stack.metadata_url}"' in challenge
    assert response.json()["error"] == "insufficient_scope"
    # A destructive tool: refused before the confirmation question, nothing sent.
    response = await stack.post(call("pets_delete_pet", {"petId": "5"}), token)
    assert response.status_code == 403
    assert 'scope="pets:write"' in response.headers["www-authenticate"]
    nothing_upstream(stack.upstream)


async def test_H4_a_call_through_dynamic_modes_dispatcher_needs_the_called_tools_scope(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key
) -> None:
    async with running(jwks, upstream, env, tool_mode="dynamic") as stack:
        token = sign(rsa_key, claims(stack.resource, scope="reports:read"))
        response = await stack.post(
            call("pets_call_tool", {"name": "pets_reports", "arguments": {}}), token
        )
        assert response.status_code == 403
        assert 'scope="a:b reports:read"' in response.headers["www-authenticate"]
        nothing_upstream(upstream)
        # With the scopes, the same dispatch goes through.
        token = sign(rsa_key, claims(stack.resource, scope="reports:read a:b"))
        async with stack.client(token) as client:
            result = await client.call_tool(
                "pets_call_tool", {"name": "pets_reports", "arguments": {}}
            )
        assert not result.is_error, result
    assert [r.url.path for r in upstream.requests] == ["/v1/reports"]


async def test_H4_refused_through_the_sdk_client(stack: Stack, rsa_key: Key, mode: str) -> None:
    token = sign(rsa_key, claims(stack.resource, scope="reports:read"))
    answer = Answer()
    async with stack.client(token, mode, elicitation_callback=answer) as client:
        # A tool that needs no scope works with this token ...
        assert not (await client.call_tool("pets_get_pet", {"petId": "1"})).is_error
        # ... one that does is refused at the HTTP layer.
        with pytest.raises(MCPError):
            await client.call_tool("pets_delete_pet", {"petId": "5"})
    assert answer.asked == []
    assert [r.url.path for r in stack.upstream.requests] == ["/v1/pets/1"]


@pytest.mark.parametrize(
    "scopes", [{"scope": "a:b reports:read"}, {"scp": ["reports:read", "a:b"]}]
)
async def test_H4_sufficient_token_succeeds(
    stack: Stack, ec_key: Key, mode: str, scopes: dict[str, Any]
) -> None:
    token = sign(ec_key, claims(stack.resource, **({"scope": DROP} | scopes)))
    async with stack.client(token, mode) as client:
        result = await client.call_tool("pets_reports", {})
    assert not result.is_error, result
    assert [r.url.path for r in stack.upstream.requests] == ["/v1/reports"]


async def test_H4_a_broader_admin_scope_satisfies_every_tool(
    stack: Stack, rsa_key: Key, mode: str
) -> None:
    token = sign(rsa_key, claims(stack.resource, scope="admin"))
    async with stack.client(token, mode, elicitation_callback=Answer()) as client:
        assert not (await client.call_tool("pets_reports", {})).is_error
        assert not (await client.call_tool("pets_delete_pet", {"petId": "5"})).is_error
    assert [r.method for r in stack.upstream.requests] == ["GET", "DELETE"]


async def test_H4_handler_refuses_too_when_the_gate_is_missing(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key
) -> None:
    def without_gate(app: Starlette) -> None:
        app.user_middleware[:] = [m for m in app.user_middleware if m.cls is not ScopeGate]

    async with running(jwks, upstream, env, adjust=without_gate) as stack:
        token = sign(rsa_key, claims(stack.resource, scope="reports:read"))
        async with stack.client(token) as client:
            result = await client.call_tool("pets_reports", {})
    assert result.is_error
    assert "lacks the scope" in result.content[0].text  # type: ignore[union-attr]
    assert "a:b reports:read" in result.content[0].text  # type: ignore[union-attr]
    nothing_upstream(upstream)


async def test_H4_duplicate_keys_cannot_hide_the_tool_name(stack: Stack, rsa_key: Key) -> None:
    token = sign(rsa_key, claims(stack.resource))
    raw = (
        '{"jsonrpc":"2.0","id":1,"method":"tools/call",'
        '"params":{"name":"pets_reports","name":"pets_get_pet","arguments":{}}}'
    )
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(
            f"{stack.url}/mcp",
            content=raw,
            headers=MCP_HEADERS | {"Authorization": f"Bearer {token}"},
        )
    assert response.status_code == 400
    nothing_upstream(stack.upstream)


def test_H4_scope_rules() -> None:
    tools = {t.name: t for t in auth_catalog().tools}
    assert scope_alternatives(tools["pets_get_pet"]) == ()
    assert scope_alternatives(tools["pets_create_pet"]) == ()  # API key only: no scopes
    assert scope_alternatives(tools["pets_reports"]) == (("a:b", "reports:read"),)
    alternatives = (("a", "b"), ("c",))
    assert refused_scopes(alternatives, ["c"]) == ()
    assert refused_scopes(alternatives, ["a", "b"]) == ()
    assert refused_scopes(alternatives, ["a"]) == ("a", "b")  # all scopes of the closest
    assert refused_scopes(alternatives, ["d"]) == ("c",)
    assert refused_scopes((("a",), ("c",)), []) == ("a",)  # first on a tie
    assert refused_scopes(alternatives, ["root"], admin=["root"]) == ()
    assert refused_scopes((), []) == ()


# ------------------------------------------------------------------------------ H5


async def test_H5_query_string_token_refused(stack: Stack, rsa_key: Key) -> None:
    token = sign(rsa_key, claims(stack.resource, scope="admin"))
    response = await stack.post(
        call("pets_get_pet", {"petId": "1"}), query=f"?access_token={token}"
    )
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]
    nothing_upstream(stack.upstream)


# ------------------------------------------------------------------------------ H6


async def test_H6_upstream_never_receives_the_inbound_token(
    stack: Stack, rsa_key: Key, mode: str
) -> None:
    rex = {"id": 1, "name": "Rex"}
    stack.upstream.respond = lambda r: httpx2.Response(
        200, json=[rex] if r.url.path == "/v1/pets" else rex
    )
    token = sign(rsa_key, claims(stack.resource, scope="admin"))
    async with stack.client(token, mode) as client:
        assert not (await client.call_tool("pets_get_pet", {"petId": "1"})).is_error
        assert not (await client.call_tool("pets_reports", {})).is_error
        assert not (await client.call_tool("pets_list_pets", {})).is_error
    sent = stack.upstream.requests + stack.upstream.token_requests
    assert len(stack.upstream.requests) == 3 and len(stack.upstream.token_requests) == 1
    signature = token.rsplit(".", 1)[1]
    for request in sent:
        everything = f"{request.url} {list(request.headers.items())} {request.content!r}"
        assert token not in everything and signature not in everything
    get_pet, reports, list_pets = stack.upstream.requests
    assert "authorization" not in get_pet.headers  # no security: no credential at all
    assert reports.headers["authorization"] == "Bearer fetched-token-1"  # its own OAuth token
    assert "api_key=" in str(list_pets.url)  # its own API key from PETS_QUERY_KEY


# ------------------------------------------------------------------------------ H7


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Origin": "https://evil.example"}, 403),
        ({"Host": "evil.example"}, 421),
        ({"Host": "mcp.example.com"}, 200),  # PETS_ALLOWED_HOSTS
        ({"Host": "mcp.example.com:8443"}, 200),
        ({"Host": "mcp.example.com", "Origin": "https://app.example.com"}, 200),
        ({}, 200),  # no Origin: not a browser, allowed
    ],
)
async def test_H7_host_and_origin_checks_with_auth(
    stack: Stack, rsa_key: Key, headers: dict[str, str], status: int
) -> None:
    token = sign(rsa_key, claims(stack.resource))
    response = await stack.post(INITIALIZE, token, **headers)
    assert response.status_code == status


def test_H7_refuses_public_host_without_auth(
    catalog: Catalog, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[dict[str, Any]] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(kw | {"app": app}))
    for host in ("0.0.0.0", "::", "192.0.2.10", "mcp.example.com"):
        assert main(catalog, ["--transport", "http", "--host", host], environ={}) == 2
        assert "PETS_AUTH=jwt" in capsys.readouterr().err
    none = {"PETS_AUTH": "none"}
    assert main(catalog, ["--transport", "http", "--host", "0.0.0.0"], environ=none) == 2
    assert served == []
    # Loopback needs no auth; a public address can be forced, with a warning.
    assert main(catalog, ["--transport", "http"], environ={}) == 0
    argv = ["--transport", "http", "--host", "0.0.0.0", "--allow-unauthenticated-public"]
    assert main(catalog, argv, environ={}) == 0
    assert "WARNING" in capsys.readouterr().err
    assert [s["host"] for s in served] == ["127.0.0.1", "0.0.0.0"]


def test_H7_public_host_with_jwt_auth_is_served(
    catalog: Catalog, monkeypatch: pytest.MonkeyPatch
) -> None:
    served: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: served.append(app))
    environ = {
        "PETS_AUTH": "jwt",
        "PETS_JWKS_URL": "https://auth.example.com/.well-known/jwks.json",
        "PETS_ISSUER": ISSUER,
        "PETS_RESOURCE_URL": "https://mcp.example.com/mcp",
    }
    assert main(catalog, ["--transport", "http", "--host", "0.0.0.0"], environ=environ) == 0
    (app,) = served
    paths = [getattr(r, "path", "") for r in app.routes]
    assert "/.well-known/oauth-protected-resource/mcp" in paths
    assert any(m.cls is ScopeGate for m in app.user_middleware)


INTROSPECTION_ENV = {
    "PETS_AUTH": "introspection",
    "PETS_INTROSPECTION_URL": "https://auth.example.com/introspect",
    "PETS_INTROSPECTION_CLIENT_ID": "mcp-server",
    "PETS_INTROSPECTION_CLIENT_SECRET": "s3cret",
}


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"PETS_AUTH": "introspection"}, "PETS_INTROSPECTION_URL"),
        (INTROSPECTION_ENV | {"PETS_INTROSPECTION_CLIENT_ID": ""}, "PETS_INTROSPECTION_CLIENT_ID"),
        (INTROSPECTION_ENV | {"PETS_INTROSPECTION_CLIENT_SECRET": ""}, "_CLIENT_SECRET must"),
        (INTROSPECTION_ENV | {"PETS_INTROSPECTION_URL": "http://a.b/i"}, "PETS_INTROSPECTION_URL"),
        (INTROSPECTION_ENV | {"PETS_INTROSPECTION_CACHE_SECONDS": "-1"}, "_CACHE_SECONDS"),
        (INTROSPECTION_ENV | {"PETS_ISSUER": ""}, "PETS_AUTHORIZATION_SERVERS"),
        ({"PETS_LIST_TOOLS": "some"}, "PETS_LIST_TOOLS"),
        ({"PETS_AUTH": "maybe"}, "PETS_AUTH"),
        ({"PETS_ISSUER": ""}, "PETS_ISSUER"),
        ({"PETS_JWKS_URL": ""}, "PETS_JWKS_URL"),
        ({"PETS_RESOURCE_URL": ""}, "PETS_RESOURCE_URL"),
        ({"PETS_JWKS_URL": "http://auth.example.com/jwks"}, "PETS_JWKS_URL"),  # not https
        ({"PETS_RESOURCE_URL": "https://mcp.example.com"}, "PETS_RESOURCE_URL"),  # no path
        ({"PETS_RESOURCE_URL": "https://mcp.example.com/mcp?x=1"}, "PETS_RESOURCE_URL"),
        ({"PETS_ISSUER": "https://user:pw@auth.example.com"}, "PETS_ISSUER"),
        ({"PETS_ALGORITHMS": "RS256,none"}, "PETS_ALGORITHMS"),
        ({"PETS_ALGORITHMS": "HS256"}, "PETS_ALGORITHMS"),
        ({"PETS_ALGORITHMS": "RS999"}, "PETS_ALGORITHMS"),
        ({"PETS_AUTHORIZATION_SERVERS": "ftp://x"}, "PETS_AUTHORIZATION_SERVERS"),
        ({"PETS_ALLOWED_HOSTS": "https://mcp.example.com"}, "PETS_ALLOWED_HOSTS"),
        ({"PETS_ALLOWED_ORIGINS": "app.example.com"}, "PETS_ALLOWED_ORIGINS"),
    ],
)
def test_H7_bad_settings_exit_2_naming_the_variable(
    catalog: Catalog, capsys: pytest.CaptureFixture[str], changes: dict[str, str], named: str
) -> None:
    environ = {
        "PETS_AUTH": "jwt",
        "PETS_JWKS_URL": "https://auth.example.com/jwks",
        "PETS_ISSUER": ISSUER,
        "PETS_RESOURCE_URL": "https://mcp.example.com/mcp",
    } | changes
    assert main(catalog, ["--transport", "http"], environ=environ) == 2
    error = capsys.readouterr().err
    assert named in error
    assert "user:pw" not in error


# ------------------------------------------------------------------------------ key rotation


@pytest.fixture
def clock() -> Iterator[Clock]:
    yield Clock()


async def test_key_rotation_unknown_kid_refetches_once(
    jwks: Jwks, rsa_key: Key, ec_key: Key, clock: Clock
) -> None:
    resource = "https://mcp.example.com/mcp"
    settings = JwtSettings(
        jwks_url=jwks.url, issuer=ISSUER, resource_url=resource, authorization_servers=(ISSUER,)
    )
    verifier = JwtVerifier(settings, clock=clock, min_refresh=10.0)
    jwks.keys = [rsa_key.jwk]
    assert await verifier.verify_token(sign(rsa_key, claims(resource))) is not None
    assert jwks.hits == 1
    assert await verifier.verify_token(sign(rsa_key, claims(resource))) is not None
    assert jwks.hits == 1  # cached

    # The authorization server rotates to a new key.
    rotated = Key(ec_key.private, "ec-2025", "ES256")
    jwks.keys = [rotated.jwk]
    clock.now += 30
    token = await verifier.verify_token(sign(rotated, claims(resource, scope="x y")))
    assert token is not None and token.scopes == ["x", "y"] and token.subject == "user-1"
    assert token.client_id == "client-a" and token.resource == resource
    assert jwks.hits == 2  # refetched once
    # Another unknown kid right away: no new fetch within the minimum interval.
    unknown = Key(ec_key.private, "ec-9999", "ES256")
    assert await verifier.verify_token(sign(unknown, claims(resource))) is None
    assert jwks.hits == 2
    # The old key is gone after the rotation.
    assert await verifier.verify_token(sign(rsa_key, claims(resource))) is None
    assert jwks.hits == 2


async def test_jwks_keys_must_match_the_algorithm(jwks: Jwks, ec_key: Key, clock: Clock) -> None:
    # A JWK whose `alg` says RS256 cannot verify an ES256 token, even with the right kid.
    resource = "https://mcp.example.com/mcp"
    settings = JwtSettings(
        jwks_url=jwks.url, issuer=ISSUER, resource_url=resource, authorization_servers=(ISSUER,)
    )
    jwks.keys = [ec_key.jwk | {"alg": "ES384"}]
    verifier = JwtVerifier(settings, clock=clock)
    assert await verifier.verify_token(sign(ec_key, claims(resource))) is None
    # `nbf` within the 60 s leeway is accepted.
    jwks.keys = [ec_key.jwk]
    clock.now += 60
    nbf = int(time.time()) + 30
    assert await verifier.verify_token(sign(ec_key, claims(resource, nbf=nbf))) is not None


# ------------------------------------------------------------------------------ introspection

INTROSPECTION_CLIENT = ("mcp-server", "introspection-secret:1")


@dataclass
class Introspection:
    """An RFC 7662 endpoint: answers from `answers` by token, inactive for anything else;
    refuses a caller without the server's client credentials; records every request."""

    answers: dict[str, dict[str, Any]] = field(default_factory=dict)
    forms: list[dict[str, str]] = field(default_factory=list)
    url: str = ""

    async def endpoint(self, request: Request) -> JSONResponse:
        user, secret = INTROSPECTION_CLIENT
        # RFC 6749 2.3.1: both parts form-encoded before Basic (the secret has a colon).
        pair = f"{user}:{secret.replace(':', '%3A')}".encode()
        if request.headers.get("authorization") != "Basic " + base64.b64encode(pair).decode():
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        form = {k: str(v) for k, v in (await request.form()).items()}
        self.forms.append(form)
        return JSONResponse(self.answers.get(form.get("token", ""), {"active": False}))


@pytest.fixture
async def introspection() -> AsyncIterator[Introspection]:
    state = Introspection()
    app = Starlette(routes=[Route("/introspect", state.endpoint, methods=["POST"])])
    async with serve(app, listening_socket()) as url:
        state.url = f"{url}/introspect"
        yield state


def introspection_env(introspection: Introspection) -> Callable[[str], dict[str, str]]:
    def settings(resource: str) -> dict[str, str]:
        return {
            "PETS_AUTH": "introspection",
            "PETS_INTROSPECTION_URL": introspection.url,
            "PETS_INTROSPECTION_CLIENT_ID": INTROSPECTION_CLIENT[0],
            "PETS_INTROSPECTION_CLIENT_SECRET": INTROSPECTION_CLIENT[1],
            "PETS_ISSUER": ISSUER,
            "PETS_RESOURCE_URL": resource,
        }

    return settings


def active(resource: str, **changes: Any) -> dict[str, Any]:
    return {"active": True} | claims(resource, **changes)


async def test_introspection_accepts_an_active_opaque_token_and_caches_the_answer(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], introspection: Introspection
) -> None:
    async with running(jwks, upstream, env, settings_env=introspection_env(introspection)) as st:
        introspection.answers["opaque-1"] = active(st.resource, scope="a:b reports:read")
        async with st.client("opaque-1") as client:
            assert not (await client.call_tool("pets_reports", {})).is_error
            assert not (await client.call_tool("pets_get_pet", {"petId": "1"})).is_error
        async with httpx2.AsyncClient(timeout=10) as http:
            prm = (await http.get(st.metadata_url)).json()
    # One question for many requests; the server authenticated itself; the token went there.
    assert introspection.forms == [{"token": "opaque-1", "token_type_hint": "access_token"}]
    assert [r.url.path for r in upstream.requests] == ["/v1/reports", "/v1/pets/1"]
    assert prm["authorization_servers"] == [ISSUER] and prm["resource"] == st.resource
    for request in upstream.requests + upstream.token_requests:
        assert "opaque-1" not in f"{request.url} {list(request.headers.items())}"


@pytest.mark.parametrize(
    "case", ["inactive", "unknown", "expired", "not_yet_valid", "wrong_issuer", "wrong_audience"]
)
async def test_introspection_refuses_with_401(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], introspection: Introspection, case: str
) -> None:
    now = int(time.time())
    async with running(jwks, upstream, env, settings_env=introspection_env(introspection)) as st:
        introspection.answers.update(
            {
                "inactive": {"active": False, "scope": "admin", "aud": st.resource},
                "expired": active(st.resource, exp=now - 120),
                "not_yet_valid": active(st.resource, nbf=now + 600),
                "wrong_issuer": active(st.resource, iss="https://evil.example"),
                "wrong_audience": active(st.resource, aud=["https://other.example/mcp"]),
            }
        )
        response = await st.post(call("pets_get_pet", {"petId": "1"}), case)
    assert response.status_code == 401, case
    challenge = response.headers["www-authenticate"]
    assert 'error="invalid_token"' in challenge
    assert f'resource_metadata="{st.metadata_url}"' in challenge
    nothing_upstream(upstream)


async def test_introspection_scopes_drive_the_403_and_a_failed_endpoint_means_401(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], introspection: Introspection
) -> None:
    async with running(jwks, upstream, env, settings_env=introspection_env(introspection)) as st:
        # An answer without `iss`, `aud` or `exp` is accepted: checked where present.
        introspection.answers["few-scopes"] = {"active": True, "scope": "reports:read"}
        response = await st.post(call("pets_reports"), "few-scopes")
        assert response.status_code == 403
        assert 'scope="a:b reports:read"' in response.headers["www-authenticate"]
        introspection.url = introspection.url.replace("/introspect", "/gone")
    async with running(jwks, upstream, env, settings_env=introspection_env(introspection)) as st:
        response = await st.post(call("pets_get_pet", {"petId": "1"}), "few-scopes")
        assert response.status_code == 401
    nothing_upstream(upstream)


async def test_introspection_cache_is_bounded_by_max_ttl_and_exp(
    introspection: Introspection,
) -> None:
    now = [1000.0]
    wall = 1_700_000_000.0
    settings = IntrospectionSettings(
        introspection_url=introspection.url,
        client_id=INTROSPECTION_CLIENT[0],
        client_secret=INTROSPECTION_CLIENT[1],
        resource_url="https://mcp.example.com/mcp",
        authorization_servers=(ISSUER,),
        issuer=ISSUER,
        cache_seconds=100,
    )
    verifier = IntrospectionVerifier(
        settings, clock=lambda: now[0], wall_clock=lambda: wall + now[0] - 1000.0
    )
    resource = settings.resource_url
    introspection.answers["long"] = active(resource, exp=int(wall) + 3600, sub="alice")
    introspection.answers["short"] = active(resource, exp=int(wall) + 5)
    first = await verifier.verify_token("long")
    assert first is not None and first.subject == "alice" and first.resource == resource
    assert await verifier.verify_token("short") is not None
    now[0] += 30  # `long` is still cached; `short` was cached for its 5 s only
    assert await verifier.verify_token("long") is not None
    assert await verifier.verify_token("short") is not None  # asked again (within leeway)
    assert [f["token"] for f in introspection.forms] == ["long", "short", "short"]
    now[0] += 80  # past the 100 s maximum: `long` is asked again; `short` is long expired
    assert await verifier.verify_token("long") is not None
    assert await verifier.verify_token("short") is None
    assert [f["token"] for f in introspection.forms][3:] == ["long", "short"]
    # Inactive answers are never cached: a token activated later works at once.
    assert await verifier.verify_token("later") is None
    introspection.answers["later"] = active(resource, exp=int(wall) + 3600)
    assert await verifier.verify_token("later") is not None


# ------------------------------------------------------------------------------ tools/list


@pytest.mark.parametrize(
    ("scope", "hidden"),
    [
        ("", {"pets_reports", "pets_delete_pet"}),
        ("pets:write", {"pets_reports"}),
        ("reports:read a:b", {"pets_delete_pet"}),
        ("admin", set()),
    ],
)
async def test_tools_list_shows_only_permitted_tools_when_asked(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key, scope: str, hidden: set[str]
) -> None:
    every = {t.name for t in auth_catalog().tools}
    async with running(jwks, upstream, env | {"PETS_LIST_TOOLS": "permitted"}) as st:
        token = sign(rsa_key, claims(st.resource, scope=scope))
        async with st.client(token) as client:
            listed = {t.name for t in (await client.list_tools()).tools}
            assert listed == every - hidden
            if hidden:  # hiding is not the defence: a hidden tool's call is still refused
                with pytest.raises(MCPError):
                    await client.call_tool(sorted(hidden)[0], {"petId": "1"})
    nothing_upstream(upstream)


async def test_tools_list_shows_every_tool_by_default(
    stack: Stack, rsa_key: Key, catalog: Catalog
) -> None:
    async with stack.client(sign(rsa_key, claims(stack.resource))) as client:
        listed = {t.name for t in (await client.list_tools()).tools}
    assert listed == {t.name for t in auth_catalog().tools}


# ------------------------------------------------------------------------------ auth.py hook


@dataclass
class KeyStore:
    """An `upstream_credentials` hook: a per-user key store, recording what it was asked."""

    asked: list[tuple[Caller, str, str]] = field(default_factory=list)
    give_callers_token: bool = False

    async def __call__(self, caller: Caller, tool: str, scheme: str) -> UpstreamCredential | None:
        self.asked.append((caller, tool, scheme))
        if self.give_callers_token:
            return UpstreamCredential(value=caller.token)
        if scheme == "QueryKey":
            return UpstreamCredential(value=f"key-of-{caller.subject}")
        if scheme == "Basic":
            return UpstreamCredential(username=str(caller.subject), password="pw-of-user")
        return None  # every other scheme: the environment's credential


async def test_hook_credentials_reach_the_upstream_and_the_callers_token_never_does(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key
) -> None:
    hook = KeyStore()
    upstream.respond = lambda r: httpx2.Response(200, json=[{"id": 1, "name": "Rex"}])
    async with running(jwks, upstream, env, hook=hook) as st:
        token = sign(rsa_key, claims(st.resource, sub="alice", scope="x y"))
        async with st.client(token) as client:
            assert not (await client.call_tool("pets_list_pets", {})).is_error
            assert not (await client.call_tool("pets_stats", {})).is_error
            assert not (await client.call_tool("pets_cookie_auth", {})).is_error
    list_pets, stats, cookie = upstream.requests
    assert list_pets.url.params["api_key"] == "key-of-alice"
    assert stats.headers["authorization"] == "Basic " + base64.b64encode(
        b"alice:pw-of-user"
    ).decode("ascii")
    assert cookie.headers["cookie"] == "sid=cookie-secret-42"  # None: the environment's
    caller, tool, scheme = hook.asked[0]
    assert (tool, scheme) == ("pets_list_pets", "QueryKey")
    assert (caller.subject, caller.client_id, caller.scopes) == ("alice", "client-a", ("x", "y"))
    assert caller.claims["iss"] == ISSUER and token not in repr(caller)
    for request in upstream.requests:
        assert token not in f"{request.url} {list(request.headers.items())}"


async def test_hook_returning_the_callers_own_token_is_refused(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key
) -> None:
    async with running(jwks, upstream, env, hook=KeyStore(give_callers_token=True)) as st:
        token = sign(rsa_key, claims(st.resource))
        async with st.client(token) as client:
            result = await client.call_tool("pets_optional_auth", {})
    assert result.is_error
    assert "caller's own access token" in result.content[0].text  # type: ignore[union-attr]
    nothing_upstream(upstream)


async def test_hook_failure_sends_nothing(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key
) -> None:
    async def broken(caller: Caller, tool: str, scheme: str) -> UpstreamCredential | None:
        raise RuntimeError("key store down: secret-detail")

    async with running(jwks, upstream, env, hook=broken) as st:
        token = sign(rsa_key, claims(st.resource))
        async with st.client(token) as client:
            result = await client.call_tool("pets_list_pets", {})
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and "auth.py hook: RuntimeError" in text
    assert "secret-detail" not in text
    nothing_upstream(upstream)


async def test_hook_is_not_called_without_a_verified_caller(
    catalog: Catalog, upstream: Recorder, env: dict[str, str]
) -> None:
    hook = KeyStore()
    upstream.respond = lambda r: httpx2.Response(200, json=[{"id": 1, "name": "Rex"}])
    server = build_server(
        catalog, transport=upstream.transport, environ=env, upstream_credentials=hook
    )
    async with Client(server) as client:
        assert not (await client.call_tool("pets_list_pets", {})).is_error
    assert hook.asked == []
    assert upstream.last.url.params["api_key"] == env["PETS_QUERY_KEY"]


# -------------------------------------------------------------- auth settings from mcpmint.yaml
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


# ------------------------------------------------------------------------------ S21


async def test_S21_http_refusals_are_each_recorded(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    async with running(jwks, upstream, env | {"PETS_AUDIT": str(audit)}) as stack:
        token = sign(rsa_key, claims(stack.resource, scope="reports:read", sub="carol"))
        statuses = [
            (await stack.post(call("pets_get_pet", {"petId": "1"}))).status_code,  # no token
            (await stack.post(PING, "not-a-jwt")).status_code,  # a bad token
            (await stack.post(call("pets_reports"), token)).status_code,  # a missing scope
            (await stack.post(PING, token, Host="evil.example")).status_code,  # rebinding
        ]
        big = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "ping",
            "pad": "x" * DEFAULT_MAX_REQUEST_BODY_SIZE,
        }
        statuses.append((await stack.post(big, token)).status_code)  # too large
    assert statuses[:3] == [401, 401, 403] and statuses[3] in (400, 421) and statuses[4] == 413
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert len(records) == len(statuses), records
    assert [r["decision"] for r in records] == ["refused"] * len(statuses)
    assert [r["reason"].split()[1] for r in records] == [str(s) for s in statuses]
    assert (records[0]["tool"], records[0]["caller"]) == ("pets_get_pet", "anonymous")
    assert records[1]["caller"] == "anonymous"
    assert (records[2]["tool"], records[2]["caller"]) == ("pets_reports", "carol")
    assert upstream.requests == []


async def test_S18_a_resource_read_needs_its_tools_scope_over_http(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key, tmp_path: Path
) -> None:
    from security2_support import door_catalog

    catalog = door_catalog(security=[[{"scheme": "OAuth", "scopes": ["pets:read"]}]])
    audit = tmp_path / "audit.jsonl"
    async with running(jwks, upstream, env | {"PETS_AUDIT": str(audit)}, catalog=catalog) as st:
        read = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "resources/read",
            "params": {"uri": "pets://pets/7"},
        }
        token = sign(rsa_key, claims(st.resource, scope="other", sub="dave"))
        response = await st.post(read, token)
        assert response.status_code == 403
        assert 'scope="pets:read"' in response.headers["www-authenticate"]
    nothing_upstream(upstream)
    [record] = [json.loads(line) for line in audit.read_text().splitlines()]
    assert (record["tool"], record["caller"]) == ("pets://pets/7", "dave")
