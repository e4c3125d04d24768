"""Test support: a hand-written catalog and an upstream that records every request."""

from __future__ import annotations

import copy
import json
import socket
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import mcp_types as types
import uvicorn
from mcp.client import ClientRequestContext
from starlette.types import ASGIApp

from mcpmint.runtime.catalog import Catalog, load_catalog

BASE_URL = "https://api.example.com/v1"
TOKEN_URL = "https://auth.example.com/oauth/token"
MODES = ["auto", "legacy"]

ENV = {
    "PETS_API_KEY": "key-abc-123",
    "PETS_QUERY_KEY": "q&key=s3cr3t",
    "PETS_COOKIE_KEY": "cookie-secret-42",
    "PETS_BEARER": "bearer-token-xyz",
    "PETS_BASIC_USERNAME": "alice",
    "PETS_BASIC_PASSWORD": "wonder-land-pw",
    "PETS_OAUTH_CLIENT_ID": "client-1",
    "PETS_OAUTH_CLIENT_SECRET": "client-secret-9",
}

PET = {
    "type": "object",
    "properties": {"id": {"type": "integer"}, "name": {"type": "string"}},
    "required": ["id", "name"],
}


def _param(argument: str, name: str, where: str, **kw: Any) -> dict[str, Any]:
    style = {"path": "simple", "header": "simple"}.get(where, "form")
    return {
        "argument": argument,
        "name": name,
        "in": where,
        "style": kw.get("style", style),
        "explode": kw.get("explode", style == "form"),
        "required": kw.get("required", where == "path"),
    }


def _tool(
    name: str,
    method: str,
    path: str,
    properties: dict[str, Any],
    *,
    parameters: list[dict[str, Any]] | None = None,
    required: list[str] | None = None,
    body: dict[str, Any] | None = None,
    security: list[list[dict[str, Any]]] | None = None,
    output_schema: dict[str, Any] | None = None,
    wrap: str | None = None,
    accept: str = "application/json",
) -> dict[str, Any]:
    read_only = method == "GET"
    return {
        "name": name,
        "title": name.replace("_", " "),
        "description": f"{method} {path}",
        "inputSchema": {
            "type": "object",
            "properties": properties,
            "required": required or [],
            "additionalProperties": False,
        },
        "outputSchema": output_schema,
        "annotations": {
            "title": name,
            "readOnlyHint": read_only,
            "destructiveHint": method == "DELETE",
            "idempotentHint": method in ("GET", "PUT", "DELETE"),
            "openWorldHint": True,
        },
        "request": {
            "method": method,
            "path": path,
            "parameters": parameters or [],
            "body": body,
            "accept": accept,
        },
        "security": security or [],
        "output": {"wrap": wrap},
        "meta": {"operationId": name, "source": f"#/paths/{path}"},
        "confirmation": "none" if read_only else "required",
    }


def catalog_data() -> dict[str, Any]:
    """A catalog covering every parameter location, body shape and credential kind."""
    s = {"type": "string"}
    i = {"type": "integer"}
    return {
        "format": 1,
        "server": {
            "name": "pets-mcp",
            "namespace": "pets",
            "envPrefix": "PETS",
            "version": "1.2.3",
            "title": "Pets",
            "instructions": "Manage pets.",
        },
        "upstream": {"baseUrl": BASE_URL, "timeoutSeconds": 5.0},
        "securitySchemes": {
            "ApiKey": {
                "type": "apiKey",
                "in": "header",
                "name": "X-API-Key",
                "env": {"value": "PETS_API_KEY"},
            },
            "QueryKey": {
                "type": "apiKey",
                "in": "query",
                "name": "api_key",
                "env": {"value": "PETS_QUERY_KEY"},
            },
            "CookieKey": {
                "type": "apiKey",
                "in": "cookie",
                "name": "sid",
                "env": {"value": "PETS_COOKIE_KEY"},
            },
            "Bearer": {"type": "http", "scheme": "bearer", "env": {"token": "PETS_BEARER"}},
            "Basic": {
                "type": "http",
                "scheme": "basic",
                "env": {"username": "PETS_BASIC_USERNAME", "password": "PETS_BASIC_PASSWORD"},
            },
            "OAuth": {
                "type": "oauth2",
                "tokenUrl": TOKEN_URL,
                "env": {
                    "token": "PETS_OAUTH_ACCESS_TOKEN",
                    "clientId": "PETS_OAUTH_CLIENT_ID",
                    "clientSecret": "PETS_OAUTH_CLIENT_SECRET",
                },
            },
        },
        "tools": [
            _tool(
                "pets_get_pet",
                "GET",
                "/pets/{petId}",
                {
                    "petId": s,
                    "limit": i,
                    "q": s,
                    "tags": {"type": "array", "items": s},
                    "x_request_id": s,
                    "theme": s,
                },
                parameters=[
                    _param("petId", "petId", "path"),
                    _param("limit", "limit", "query"),
                    _param("q", "q", "query"),
                    _param("tags", "tags", "query"),
                    _param("x_request_id", "X-Request-Id", "header"),
                    _param("theme", "theme", "cookie"),
                ],
                required=["petId"],
                output_schema=PET,
            ),
            _tool(
                "pets_create_pet",
                "POST",
                "/pets",
                {"name": s, "body_id": i, "tag": {"type": ["string", "null"]}},
                required=["name"],
                body={
                    "mediaType": "application/json",
                    "required": True,
                    "argument": None,
                    "properties": {"name": "name", "body_id": "id", "tag": "tag"},
                },
                security=[[{"scheme": "ApiKey", "scopes": []}]],
                output_schema=PET,
            ),
            _tool(
                "pets_replace_tags",
                "PUT",
                "/pets/{petId}/tags",
                {"petId": s, "body": {"type": "array", "items": s}},
                parameters=[_param("petId", "petId", "path")],
                required=["petId", "body"],
                body={
                    "mediaType": "application/json",
                    "required": True,
                    "argument": "body",
                    "properties": {},
                },
                security=[[{"scheme": "Bearer", "scopes": []}]],
            ),
            _tool(
                "pets_delete_pet",
                "DELETE",
                "/pets/{petId}",
                {"petId": s},
                parameters=[_param("petId", "petId", "path")],
                required=["petId"],
                security=[[{"scheme": "Bearer", "scopes": []}]],
                accept="",
            ),
            _tool(
                "pets_list_pets",
                "GET",
                "/pets",
                {"limit": i},
                parameters=[_param("limit", "limit", "query")],
                security=[[{"scheme": "QueryKey", "scopes": []}]],
                output_schema={
                    "type": "object",
                    "properties": {"result": {"type": "array", "items": PET}},
                    "required": ["result"],
                },
                wrap="result",
            ),
            _tool(
                "pets_stats",
                "GET",
                "/admin/stats",
                {},
                security=[[{"scheme": "Basic", "scopes": []}]],
            ),
            _tool(
                "pets_reports",
                "GET",
                "/reports",
                {},
                security=[[{"scheme": "OAuth", "scopes": ["reports:read", "a:b"]}]],
            ),
            _tool(
                "pets_cookie_auth",
                "GET",
                "/session",
                {"theme": s},
                parameters=[_param("theme", "theme", "cookie")],
                security=[[{"scheme": "CookieKey", "scopes": []}]],
            ),
            _tool(
                "pets_either_auth",
                "GET",
                "/either",
                {},
                security=[
                    [{"scheme": "ApiKey", "scopes": []}, {"scheme": "Basic", "scopes": []}],
                    [{"scheme": "Bearer", "scopes": []}],
                ],
            ),
            _tool(
                "pets_optional_auth",
                "GET",
                "/optional",
                {},
                security=[[{"scheme": "Bearer", "scopes": []}], []],
            ),
        ],
    }


Handler = Callable[[httpx2.Request], httpx2.Response]


class Recorder:
    """An upstream that records every request and answers with a programmable response."""

    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self.token_requests: list[httpx2.Request] = []
        self.respond: Handler = lambda request: httpx2.Response(200, json={"id": 1, "name": "Rex"})
        self.token_response: Handler = lambda request: httpx2.Response(
            200,
            json={"access_token": "fetched-token-1", "token_type": "Bearer", "expires_in": 3600},
        )
        self.transport = httpx2.MockTransport(self._handle)

    def _handle(self, request: httpx2.Request) -> httpx2.Response:
        if str(request.url).startswith(TOKEN_URL):
            self.token_requests.append(request)
            return self.token_response(request)
        self.requests.append(request)
        return self.respond(request)

    @property
    def last(self) -> httpx2.Request:
        assert self.requests, "the upstream received no request"
        return self.requests[-1]

    @property
    def target(self) -> str:
        """The request target (raw path and query) of the last request, exactly as sent."""
        return self.last.url.raw_path.decode("ascii")


class Answer:
    """An elicitation callback that answers every question the same way and records them."""

    def __init__(self, action: str = "accept", confirm: object = True) -> None:
        self.action = action
        self.confirm = confirm
        self.asked: list[types.ElicitRequestParams] = []

    async def __call__(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        self.asked.append(params)
        content = None if self.confirm is None else {"confirm": self.confirm}
        return types.ElicitResult(action=self.action, content=content)  # type: ignore[arg-type]

    @property
    def messages(self) -> list[str]:
        return [p.message for p in self.asked]


def with_twin_delete() -> Catalog:
    """The test catalog plus a second DELETE tool taking the same arguments."""
    data = catalog_data()
    twin = copy.deepcopy(next(t for t in data["tools"] if t["name"] == "pets_delete_pet"))
    twin["name"] = "pets_purge_pet"
    twin["request"]["path"] = "/pets/{petId}/purge"
    data["tools"].append(twin)
    return load_catalog(data)


def json_body(request: httpx2.Request) -> Any:
    return json.loads(request.content)


def one_tool_catalog(
    parameters: list[dict[str, Any]],
    properties: dict[str, Any],
    *,
    method: str = "GET",
    path: str = "/items",
    body: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A catalog with one tool named `t`, for tests of request building and loading."""
    data = catalog_data()
    data["tools"] = [
        _tool("t", method, path, properties, parameters=parameters, body=body),
    ]
    return data


param = _param


def listening_socket() -> socket.socket:
    """A loopback socket, bound and listening before uvicorn starts: connections wait in the
    backlog, so there is nothing to poll for."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen()
    return sock


@asynccontextmanager
async def serve(app: ASGIApp, sock: socket.socket) -> AsyncIterator[str]:
    """`app` served by uvicorn on `sock` for the block; yields its base URL."""
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    async with anyio.create_task_group() as tg:
        tg.start_soon(server.serve, [sock])
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
        server.should_exit = True
    sock.close()


# Headers and a body for raw JSON-RPC over streamable HTTP (below the SDK client).
MCP_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
}
PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}


class Clock:
    """A clock that moves only when a test sets `now`."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now
