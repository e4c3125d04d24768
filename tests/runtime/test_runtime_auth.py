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
import socket
import time
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx2
import jwt
import mcp_types as types
import pytest
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError
from runtime_support import Answer, Recorder, catalog_data
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route
from starlette.types import ASGIApp

from mcpmint.runtime.auth import (
    InboundAuth,
    JwtSettings,
    JwtVerifier,
    ScopeGate,
    load_settings,
    refused_scopes,
    scope_alternatives,
)
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.server import build_server, http_app, main

pytestmark = pytest.mark.anyio

ISSUER = "https://auth.example.com"
OTHER_AS = "https://login.example.org/tenant"
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
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


def _listening_socket() -> socket.socket:
    # Bound and listening before uvicorn starts: connections wait in the backlog.
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@asynccontextmanager
async def serve(app: ASGIApp, sock: socket.socket) -> AsyncIterator[str]:
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        server.should_exit = True
    sock.close()


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
    async with serve(app, _listening_socket()) as url:
        state.url = f"{url}/jwks.json"
        yield state


def auth_catalog() -> Catalog:
    """The runtime test catalog; deleting a pet needs `pets:write` (`pets_reports` needs
    `reports:read` and `a:b`; `pets_get_pet` needs nothing)."""
    data = catalog_data()
    for tool in data["tools"]:
        if tool["name"] == "pets_delete_pet":
            tool["security"] = [[{"scheme": "OAuth", "scopes": ["pets:write"]}]]
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
) -> AsyncIterator[Stack]:
    sock = _listening_socket()
    resource = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
    environ = auth_env(env, jwks.url, resource)
    settings = load_settings("PETS", environ)
    assert settings.jwt is not None
    catalog = auth_catalog()
    auth = InboundAuth(settings.jwt, catalog)
    server = build_server(catalog, transport=upstream.transport, environ=environ)
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


@pytest.mark.parametrize(
    ("changes", "named"),
    [
        ({"PETS_AUTH": "introspection"}, "PETS_AUTH"),
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


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


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
