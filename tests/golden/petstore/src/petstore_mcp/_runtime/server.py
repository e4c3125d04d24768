"""The MCP server of a generated package, on the SDK's low-level `Server`.

A call goes: validate arguments, resolve the base URL, choose credentials, build the request,
ask the user to confirm (tools whose confirmation is required), add credentials, send, map the
response. Every step before sending can fail, and when one does nothing has left the process.

One module, over 600 lines: every way in (a tool call, dynamic mode's call tool, a resource
read) passes the one gate here (`_Runtime._gate`), and keeping the gate, the doors and the
transports together keeps the security review of a generated server to one file.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
import weakref
from collections import ChainMap
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlsplit

import anyio
import httpx2
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.request_state import RequestStateBoundary, RequestStateSecurity
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from .allowlist import AllowlistError, ToolFilter, ValueAllowlist
from .arguments import ArgumentValidator, coerce_variables
from .audit import AuditLog, load_audit
from .auth import (
    InboundAuth,
    ServingSettings,
    SettingsError,
    UpstreamCredentialsHook,
    admin_scopes,
    caller_credentials,
    is_loopback_host,
    lists_permitted_only,
    load_settings,
    permitted_tools,
    refused_scopes,
    scope_alternatives,
)
from .boundary import HttpGuard, RefusalAudit, guarded_stdio
from .catalog import Catalog, Tool
from .confirm import (
    TOKEN_ISSUED,
    TOKEN_REFUSED,
    Confirmer,
    ConfirmSettingsError,
    describe,
    load_fallback,
)
from .content import ResourceSpec
from .content_server import RESOURCE_NOT_FOUND, content_handlers
from .credentials import CredentialError, Credentials
from .hooks import HookError, Hooks, describe_handler_call
from .limits import LimitsError, RateLimiter, argument_bytes, is_read_only, load_limits
from .metrics import Metrics, classify, load_metrics
from .modes import ModesError, ToolRouter
from .projection import take_format
from .redaction import redact, redact_data
from .request import ArgumentError, PreparedRequest, build_request
from .results import OutputValidator, error_result, upstream_result
from .store import MEMORY, StateStore, StoreError, StoreSettingsError, load_store
from .upstream import (
    UpstreamClient,
    UpstreamError,
    UpstreamResponse,
    UpstreamTimeout,
    resolve_base_url,
)
from .upstreams import BaseUrlError, named_base_url, operation_base_url, split_base_url
from .visible import INVISIBLE, escape_invisible, strip_data, strip_invisible

__all__ = [
    "ConfigurationError",
    "build_server",
    "check_store",
    "http_app",
    "main",
    "state_security",
    "state_store",
]

logger = logging.getLogger(__name__)

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")
_MAX_RESOURCE_BYTES = 1024 * 1024
# Each server's runtime, for the transports' boundary (http_app, stdio).
_RUNTIMES: weakref.WeakKeyDictionary[Server[Any], _Runtime] = weakref.WeakKeyDictionary()
STATE_TTL_SECONDS = 600.0
MIN_STATE_KEY_BYTES = 32


class ConfigurationError(ValueError):
    """A run-time setting is unusable; the message names the variable, never its value."""


def build_server(
    catalog: Catalog,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
    environ: Mapping[str, str] | None = None,
    audit: AuditLog | None = None,
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    clock: Callable[[], float] = time.monotonic,
    metrics: Metrics | None = None,
    upstream_credentials: UpstreamCredentialsHook | None = None,
    hooks: Hooks | None = None,
    settings: bool = True,
    store: StateStore | None = None,
) -> Server[dict[str, Any]]:
    """A low-level MCP `Server` exposing the catalog's tools.

    Args:
        catalog: the loaded `tools.json`.
        transport: the upstream HTTP transport (tests pass an `httpx2.MockTransport`).
        environ: where base URL, credential, state-key, limit, allowlist and audit variables
            are read; `os.environ` by default.
        audit: where audit records go; by default as `<PREFIX>_AUDIT` says.
        sleep: waits between retries (tests pass a recorder).
        clock: monotonic seconds, for the write rate limit.
        metrics: call counts and latencies; by default as `<PREFIX>_METRICS_SUMMARY` says.
        upstream_credentials: the package's `auth.upstream_credentials` hook: per-caller
            upstream credentials over authenticated HTTP (docs/auth.md).
        settings: read mcpmint.yaml's `settings:` (in the catalog) after `environ`; the
            generated tests pass False: they test the tools, not one deployment's settings.
        store: used nonces and write-rate buckets (`store.py`); by default as
            `<PREFIX>_STATE_STORE` says.

    Raises:
        ConfigurationError: `<PREFIX>_STATE_KEY` is too short, or a limit or allowlist
            variable is unusable.
    """
    environ = os.environ if environ is None else environ
    environ = with_settings(catalog, environ) if settings else environ
    try:
        store = state_store(catalog, environ, clock) if store is None else store
        runtime = _Runtime(
            catalog, transport, environ, audit=audit, sleep=sleep, clock=clock, metrics=metrics
        )
        runtime.use_store(store)
    except (LimitsError, AllowlistError, ConfirmSettingsError, SettingsError, ModesError) as exc:
        raise ConfigurationError(str(exc)) from None
    runtime.upstream_credentials = upstream_credentials
    if hooks is not None:  # the package's hooks.py: handler tools, before/after_call
        try:
            hooks.check(catalog.tools, [resource.name for resource in catalog.resources])
        except HookError as exc:
            raise ConfigurationError(str(exc)) from None
        runtime.hooks = hooks
    info = catalog.server
    # Spec text the client shows or the model reads: without invisible characters (S20).
    server: Server[dict[str, Any]] = Server(
        strip_invisible(info.name),
        version=strip_invisible(info.version),
        title=strip_invisible(info.title) or None,
        instructions=strip_invisible(info.instructions) or None,
        lifespan=runtime.lifespan,
        get_tool_input_schema=runtime.input_schema,
        on_list_tools=runtime.list_tools,
        on_call_tool=runtime.call_tool,
        **content_handlers(catalog, runtime.read_resource),
    )
    # Every refusal below this point is audited once; malformed params are refused here (S21).
    server.middleware.append(RefusalAudit(runtime))
    _RUNTIMES[server] = runtime
    # 2026-07-28 confirmations travel in `request_state`, which the client echoes: the boundary
    # seals it (AES-GCM) and binds it to the tool, its arguments and the caller.
    server.middleware.append(
        RequestStateBoundary(state_security(catalog, environ), default_audience=info.name)
    )
    return server


def with_settings(catalog: Catalog, environ: Mapping[str, str]) -> Mapping[str, str]:
    """Where every setting is read: the environment first, then mcpmint.yaml's `settings:`."""
    if not catalog.settings:
        return environ
    return ChainMap(dict(environ), dict(catalog.settings))


def state_security(catalog: Catalog, environ: Mapping[str, str]) -> RequestStateSecurity:
    """A key shared through `<PREFIX>_STATE_KEY` (replicas behind one URL), else a fresh one."""
    variable = f"{catalog.server.env_prefix}_STATE_KEY"
    key = environ.get(variable, "")
    if not key:
        return RequestStateSecurity.ephemeral(ttl=STATE_TTL_SECONDS)
    if len(key.encode()) < MIN_STATE_KEY_BYTES:
        raise ConfigurationError(
            f"{variable} must hold at least {MIN_STATE_KEY_BYTES} bytes of secret randomness "
            "(for example the output of: python -c 'import secrets; print(secrets.token_hex(32))')"
        )
    return RequestStateSecurity(keys=[key], ttl=STATE_TTL_SECONDS)


def state_store(
    catalog: Catalog, environ: Mapping[str, str], clock: Callable[[], float] = time.monotonic
) -> StateStore:
    """The store `<PREFIX>_STATE_STORE` names (store.py); nothing is contacted yet.

    Raises:
        ConfigurationError: the variable, its timeout or the `redis` library is unusable.
    """
    try:
        return load_store(
            catalog.server.env_prefix, environ, namespace=catalog.server.name, monotonic=clock
        )
    except StoreSettingsError as exc:
        raise ConfigurationError(str(exc)) from None


async def check_store(store: StateStore) -> str | None:
    """None when the store answers, else what is wrong (start-up and `/readyz`)."""
    try:
        await store.check()
    except StoreError as exc:
        return str(exc)
    return None


def http_app(
    server: Server[Any],
    *,
    host: str = "127.0.0.1",
    auth: InboundAuth | None = None,
    allowed_hosts: Sequence[str] = (),
    allowed_origins: Sequence[str] = (),
    store: StateStore | None = None,
) -> Starlette:
    """The streamable HTTP app at `/mcp`, with Host and Origin checks on (DNS rebinding).

    Args:
        server: from `build_server`.
        host: the address the app is bound to; allowed as a Host header besides loopback.
        auth: inbound JWT auth (`<P>_AUTH=jwt`); `None` serves without authentication.
        allowed_hosts: more Host header values (`name` allows any port, `name:port` one).
            With `auth`, the resource URL's host is allowed too.
        allowed_origins: more Origin header values (`https://app.example.com`); a request
            without an Origin header (not from a browser) is always allowed.
        store: the server's state store, checked by `/readyz`.

    Besides `/mcp`, two probes answer GET without authentication and say nothing secret:
    `/healthz` (the process serves) and `/readyz` (and its state store answers: 503 if not).
    """
    hosts = [f"{name}:*" for name in _LOOPBACK_NAMES]
    origins = [f"http://{name}:*" for name in _LOOPBACK_NAMES]
    bracketed = f"[{host}]" if ":" in host else host
    extra_hosts = list(allowed_hosts)
    if bracketed not in _LOOPBACK_NAMES:
        extra_hosts.append(bracketed)
    if auth is not None:
        extra_hosts.append(urlsplit(auth.settings.resource_url).netloc)
    for name in extra_hosts:
        hosts.extend(_with_any_port(name))
    for origin in allowed_origins:
        origins.extend(_with_any_port(origin))
    app = server.streamable_http_app(
        streamable_http_path="/mcp",
        host=host,
        transport_security=TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=list(dict.fromkeys(hosts)),
            allowed_origins=list(dict.fromkeys(origins)),
        ),
        auth=None if auth is None else auth.auth_settings(),
        token_verifier=None if auth is None else auth.verifier,
    )
    if auth is not None:
        auth.install(app)
    app.router.routes.extend(_probes(store))
    runtime = _RUNTIMES.get(server)
    if runtime is not None:  # outermost: sees every HTTP refusal, answers unparseable bodies
        app.add_middleware(HttpGuard, refusals=runtime)
    return app


def _probes(store: StateStore | None) -> list[Route]:
    async def healthz(request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(request: Request) -> JSONResponse:
        if store is None:
            return JSONResponse({"status": "ok", "store": "memory"})
        problem = await check_store(store)
        body = {"status": "ok" if problem is None else "unavailable", "store": store.name}
        return JSONResponse(
            body if problem is None else {**body, "error": problem}, 200 if problem is None else 503
        )

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]


def _with_any_port(value: str) -> list[str]:
    """`value` itself, and `value:*` when it names no port (a Host or an Origin)."""
    netloc = value.split("://", 1)[-1]
    has_port = ":" in netloc.rsplit("]", 1)[-1]  # after an IPv6 literal's brackets
    return [value] if has_port else [value, f"{value}:*"]


def _version_line(catalog: Catalog) -> str:
    """`NAME VERSION (API version V)`: the installed distribution's version, when installed."""
    from importlib.metadata import PackageNotFoundError, version

    api = f"API version {catalog.server.version or '?'}"
    try:
        return f"{catalog.server.name} {version(catalog.server.name)} ({api})"
    except PackageNotFoundError:
        return f"{catalog.server.name} ({api}), run from its source tree: not installed"


def main(
    catalog: Catalog,
    argv: list[str] | None = None,
    *,
    environ: Mapping[str, str] | None = None,
    upstream_credentials: UpstreamCredentialsHook | None = None,
    hooks: Hooks | None = None,
) -> int:
    """Run the server over stdio (the default) or streamable HTTP; returns the exit code.

    Over HTTP, inbound auth is read from `<P>_AUTH` and its companions (`auth.load_settings`);
    stdio has no inbound auth (the client started the process).
    """
    environ = with_settings(catalog, os.environ if environ is None else environ)
    prog = catalog.server.name
    prefix = catalog.server.env_prefix
    parser = argparse.ArgumentParser(
        prog=prog,
        description=f"The MCP server {prog}, for {catalog.server.title or prog} (API version "
        f"{catalog.server.version or 'unknown'}).",
        epilog=f"Settings are environment variables: {prefix}_BASE_URL (the upstream API), "
        f"its credentials, {prefix}_AUTH for inbound auth over HTTP, and more; REFERENCE.md "
        "lists every one.",
    )
    parser.add_argument("--version", action="version", version=_version_line(catalog))
    parser.add_argument(
        "--transport",
        choices=("stdio", "http"),
        default="stdio",
        help="stdio (default), or streamable HTTP at http://HOST:PORT/mcp",
    )
    parser.add_argument(
        "--host",
        default="127.0.0.1",
        help=f"HTTP only; a non-loopback address requires inbound auth ({prefix}_AUTH=jwt)",
    )
    parser.add_argument("--port", type=int, default=8000, help="HTTP only")
    parser.add_argument(
        "--allow-unauthenticated-public",
        action="store_true",
        help="HTTP only; serve a non-loopback address without inbound auth (not recommended)",
    )
    args = parser.parse_args(argv)
    settings: ServingSettings | None = None
    if args.transport == "http":
        if not 0 <= args.port <= 65535:
            parser.error(f"invalid port {args.port}")
        try:
            settings = load_settings(catalog.server.env_prefix, environ)
        except SettingsError as exc:
            print(f"{prog}: {exc}", file=sys.stderr)
            return 2
        if settings.jwt is None and not is_loopback_host(args.host):
            if not args.allow_unauthenticated_public:
                print(
                    f"{prog}: refusing to listen on {args.host} without inbound authentication: "
                    f"set {catalog.server.env_prefix}_AUTH=jwt (see docs/auth.md), use a "
                    "loopback address such as 127.0.0.1, or pass "
                    "--allow-unauthenticated-public to accept the risk.",
                    file=sys.stderr,
                )
                return 2
            print(
                f"{prog}: WARNING: serving {args.host} without inbound authentication: anyone "
                "who can reach this port can call every tool with this server's credentials.",
                file=sys.stderr,
            )
    info = catalog.server
    metrics = load_metrics(info.name, info.version, info.env_prefix, environ)
    metrics.on_signal()  # `kill -USR1 <pid>` writes the summary while the server runs
    try:
        store = state_store(catalog, environ)
        server = build_server(
            catalog,
            environ=environ,
            metrics=metrics,
            upstream_credentials=upstream_credentials,
            hooks=hooks,
            store=store,
        )
    except ConfigurationError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 2
    # Start-up: a shared store must answer (the memory store always does).
    problem = None if store.name == MEMORY else anyio.run(_check_and_release, store)
    if problem is not None:
        print(
            f"{prog}: {problem} Set {info.env_prefix}_STATE_STORE (docs: deployment).",
            file=sys.stderr,
        )
        return 2
    if settings is None:
        anyio.run(_serve_stdio, server, _RUNTIMES[server])
        return 0
    # Imported here so that stdio mode never loads an HTTP server at all (H10).
    import uvicorn

    auth = None if settings.jwt is None else InboundAuth(settings.jwt, catalog)
    app = http_app(
        server,
        host=args.host,
        auth=auth,
        allowed_hosts=settings.allowed_hosts,
        allowed_origins=settings.allowed_origins,
        store=store,
    )
    uvicorn.run(app, host=args.host, port=args.port)
    return 0


async def _check_and_release(store: StateStore) -> str | None:
    # Connections made in this event loop are closed: the server opens its own in its loop.
    try:
        return await check_store(store)
    finally:
        await store.aclose()


async def _serve_stdio(server: Server[Any], runtime: _Runtime) -> None:
    async with guarded_stdio(runtime) as (read, write):
        await server.run(read, write, server.create_initialization_options())


class _Runtime:
    """State shared by the handlers of one server."""

    def __init__(
        self,
        catalog: Catalog,
        transport: httpx2.AsyncBaseTransport | None,
        environ: Mapping[str, str],
        *,
        audit: AuditLog | None,
        sleep: Callable[[float], Awaitable[None]],
        clock: Callable[[], float],
        metrics: Metrics | None = None,
    ) -> None:
        self._catalog = catalog
        self._environ = environ
        prefix = catalog.server.env_prefix
        info = catalog.server
        self.metrics = (
            load_metrics(info.name, info.version, prefix, environ) if metrics is None else metrics
        )
        self._limits = load_limits(prefix, environ)
        self._filter = ToolFilter.from_environ(prefix, environ)
        readers = tuple(r.reader for r in catalog.resources if r.reader is not None)
        self._values = ValueAllowlist.from_environ(prefix, (*readers, *catalog.tools), environ)
        self._audit = load_audit(prefix, environ) if audit is None else audit
        # Tools the operator's allowlists leave out are not listed and are unknown when called.
        self._tools = {tool.name: tool for tool in catalog.tools if self._filter.allows(tool)}
        # The tool mode decides which of them tools/list shows (runtime/modes.py).
        self._router = ToolRouter(catalog, self._tools, environ)
        self._listed = [_visible_tool(t) for t in self._router.meta_tools] + [
            _mcp_tool(self._tools[name]) for name in self._router.listed_names
        ]
        self._arguments = {tool.name: ArgumentValidator(tool) for tool in catalog.tools}
        # A resource's GET is gated as the tool of its name (the OpenAPI `resources:`
        # selection), else as its own reader; absent when the operator's filter leaves it out.
        self._resource_tools: dict[str, Tool] = {}
        for resource in catalog.resources:
            reader = resource.reader
            if reader is None:
                continue
            if any(tool.name == reader.name for tool in catalog.tools):
                if reader.name in self._tools:
                    self._resource_tools[resource.name] = self._tools[reader.name]
            elif self._filter.allows(reader):
                self._resource_tools[resource.name] = reader
                self._arguments[reader.name] = ArgumentValidator(reader)
        self._outputs = {
            tool.name: OutputValidator(tool.output_schema) if tool.output_schema else None
            for tool in (*readers, *catalog.tools)
        }
        self._credentials = Credentials(catalog, environ)
        self.upstream_credentials: UpstreamCredentialsHook | None = None  # auth.py's hook
        self.hooks = Hooks()  # hooks.py's registry, set by build_server
        self._scopes = {tool.name: scope_alternatives(tool) for tool in (*readers, *catalog.tools)}
        self._admin_scopes = admin_scopes(catalog.server.env_prefix, environ)
        self._list_permitted = lists_permitted_only(prefix, environ)  # <P>_LIST_TOOLS
        self._fallback = load_fallback(prefix, environ)
        info = catalog.server
        self._upstream = UpstreamClient(
            catalog.upstream,
            user_agent=f"{info.name}/{info.version}",
            transport=transport,
            secrets=self._credentials.secrets,
            limits=self._limits,
            sleep=sleep,
        )
        self._sessions = 0

    def use_store(self, store: StateStore) -> None:
        """Where used nonces and write-rate buckets live (store.py)."""
        self._store = store
        self._rate = RateLimiter(self._limits.write_rate, store=store)
        # Confirmation tokens (the opt-in fallback) are keyed by <P>_STATE_KEY when it is set.
        self._confirmer = Confirmer(
            ttl=STATE_TTL_SECONDS,
            fallback=self._fallback,
            token_key=self._environ.get(f"{self._catalog.server.env_prefix}_STATE_KEY", "").encode()
            or None,
            store=store,
        )

    @asynccontextmanager
    async def lifespan(self, server: Server[dict[str, Any]]) -> AsyncIterator[dict[str, Any]]:
        # Entered once per stdio run or HTTP app, and once per in-memory client: the pool is
        # closed when the last one leaves.
        self._sessions += 1
        try:
            yield {}
        finally:
            self._sessions -= 1
            if self._sessions == 0:
                with anyio.CancelScope(shield=True):
                    await self._upstream.aclose()
                    await self._store.aclose()
                self.metrics.write_summary()

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        tool = self._tools.get(name)
        return self._router.input_schema(name) if tool is None else tool.input_schema

    async def list_tools(
        self, ctx: ServerRequestContext[dict[str, Any]], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        if self._list_permitted:
            token = get_access_token()
            listed = permitted_tools(self._listed, self._scopes, token, self._admin_scopes)
            return types.ListToolsResult(tools=listed)
        return types.ListToolsResult(tools=self._listed)

    async def call_tool(
        self, ctx: ServerRequestContext[dict[str, Any]], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        """The tools/call door (dynamic mode's `call_tool` included): through `_gate`."""
        started = time.monotonic()
        # Dynamic mode: search and describe are answered here; `call_tool` becomes the named
        # tool's own call, which then takes exactly the path below.
        routed = self._router.route(params, may_call=self._may_call)
        if isinstance(routed, types.CallToolResult):
            # Search and describe (or a malformed `call_tool`) are calls too: metered like any.
            kind = "argument_error" if routed.is_error else "ok"
            self.metrics.record(params.name, kind, time.monotonic() - started)
            if routed.is_error:
                self._audit_record(
                    _caller(),
                    params.name,
                    params.arguments or {},
                    _Outcome("refused", "invalid arguments"),
                )
            return self._outgoing(routed, None)
        params = routed
        caller = _caller()
        arguments: object = {} if params.arguments is None else params.arguments
        tool = self._tools.get(params.name)
        if tool is None:
            self._audit_record(caller, params.name, arguments, _Outcome("refused", "unknown tool"))
            self.metrics.record_unknown(params.name, time.monotonic() - started)
            raise audited(
                MCPError(
                    code=types.INVALID_PARAMS,
                    message=f"Unknown tool: {escape_invisible(params.name)}",
                )
            )
        outcome = _Outcome()
        # The token fallback's reserved argument is not part of any schema: taken out here.
        arguments, outcome.token = self._confirmer.take_token(arguments)
        try:
            result = await self._tool_call(ctx, params, tool, arguments, caller, outcome)
        except StoreError as exc:  # every use of the store comes before anything is sent
            logger.warning("tool %s: %s", tool.name, exc)
            outcome.refuse("state store unavailable")
            result = error_result(f"{exc} This call needs it, so it was refused. Nothing was sent.")
        except Exception as exc:
            result = self._internal_error(tool, exc, outcome)
        result = self._outgoing(result, tool)
        seconds = time.monotonic() - started
        if isinstance(result, types.InputRequiredResult):
            self.metrics.record(tool.name, "input_required", seconds)
            return result  # the question; the retry that answers it is audited
        if outcome.decision != "allowed" or not is_read_only(tool):
            self._audit_record(caller, tool.name, arguments, outcome, started)
        kind = classify(outcome.decision, outcome.reason, outcome.status)
        self.metrics.record(tool.name, kind, seconds, reason=outcome.reason, status=outcome.status)
        return result

    async def read_resource(
        self, resource: ResourceSpec, uri: str, variables: Mapping[str, str]
    ) -> types.ReadResourceResult:
        """The resources/read door: a template's GET goes through `_gate` as the tool it
        mirrors (same name: the OpenAPI `resources:` selection) or as its own reader, so a
        caller denied the tool cannot read the same data as a resource.

        Raises:
            MCPError: refused (audited), or the upstream failed.
        """
        started = time.monotonic()
        caller = _caller()
        if resource.reader is None:  # a hooks.py reader: no request, nothing to gate
            text = await self.hooks.read_resource(resource.name, uri, dict(variables))
            return self._resource_result(uri, resource.mime_type, text)
        tool = self._resource_tools.get(resource.name)
        if tool is None:
            self._audit_record(
                caller, resource.name, dict(variables), _Outcome("refused", "unknown tool")
            )
            raise audited(MCPError(code=RESOURCE_NOT_FOUND, message="Resource not found"))
        arguments = coerce_variables(variables, tool.input_schema)
        outcome = _Outcome()
        response: UpstreamResponse | types.CallToolResult | types.InputRequiredResult
        try:
            cleared = await self._gate(
                None, None, tool, arguments, caller, outcome, reader=resource.reader
            )
            if isinstance(cleared, _Cleared):
                response = await self._send_cleared(tool, cleared, outcome)
            else:
                response = cleared
        except Exception as exc:
            response = self._internal_error(tool, exc, outcome)
        if outcome.decision != "allowed" or not is_read_only(tool):
            self._audit_record(caller, tool.name, arguments, outcome, started)
        if isinstance(response, types.InputRequiredResult):  # not reachable: reads cannot ask
            raise audited(MCPError(code=types.INVALID_REQUEST, message="Confirmation needed"))
        if isinstance(response, types.CallToolResult):
            text = " ".join(c.text for c in response.content if isinstance(c, types.TextContent))
            code = types.INTERNAL_ERROR if outcome.decision == "allowed" else types.INVALID_PARAMS
            raise audited(MCPError(code=code, message=self._clean_text(text)))
        if not 200 <= response.status < 300:
            raise audited(
                MCPError(
                    code=types.INTERNAL_ERROR,
                    message=f"Reading {self._clean_text(uri)} failed: the upstream API answered "
                    f"HTTP {response.status} {self._clean_text(response.reason)}.",
                )
            )
        text = response.body[:_MAX_RESOURCE_BYTES].decode("utf-8", errors="replace")
        mime = response.content_type.split(";", 1)[0].strip() or resource.mime_type
        return self._resource_result(uri, mime, text)

    def _resource_result(self, uri: str, mime: str, text: str) -> types.ReadResourceResult:
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    # The URI asked for, with any invisible character percent-encoded.
                    uri=INVISIBLE.sub(lambda m: quote(m.group(), safe=""), uri),
                    mime_type=self._clean_text(mime),
                    text=self._clean_text(text),
                )
            ]
        )

    def _may_call(self, name: str) -> bool:
        """Whether the caller's token may call `name` (with `<P>_LIST_TOOLS=permitted`):
        what dynamic mode's search and describe may disclose."""
        token = get_access_token()
        if not self._list_permitted or token is None:
            return True
        return not refused_scopes(self._scopes.get(name, ()), token.scopes, self._admin_scopes)

    def _internal_error(
        self, tool: Tool, exc: Exception, outcome: _Outcome
    ) -> types.CallToolResult:
        # Details stay in the (redacted) log: an exception text could hold a secret.
        logger.exception("tool %s failed", tool.name)
        outcome.decision, outcome.reason = "refused", f"internal error {type(exc).__name__}"
        sent = "may or may not have reached" if outcome.sending else "did not reach"
        return error_result(
            f"Internal error in the MCP server ({type(exc).__name__}); the request {sent} "
            "the upstream API."
        )

    def _clean_text(self, text: str) -> str:
        return strip_invisible(redact(text, self._credentials.secrets()))

    def _outgoing(
        self, result: types.CallToolResult | types.InputRequiredResult, tool: Tool | None
    ) -> types.CallToolResult | types.InputRequiredResult:
        """Everything a tool call returns passes here (S19, S20): configured secrets, in their
        encodings, redacted, and invisible characters removed, in the text and in the
        structured content."""
        if not isinstance(result, types.CallToolResult):
            return result  # the question: built redacted and escaped by `confirm.describe`
        secrets = self._credentials.secrets()
        content = [
            c.model_copy(update={"text": strip_invisible(redact(c.text, secrets))})
            if isinstance(c, types.TextContent)
            else c
            for c in result.content
        ]
        structured = result.structured_content
        if structured is not None:
            cleaned = strip_data(redact_data(structured, secrets))
            output = None if tool is None else self._outputs.get(tool.name)
            if cleaned != structured and output is not None and output.first_error(cleaned):
                # The redaction broke the promised shape: the text (redacted) only.
                return error_result(
                    "The upstream API call SUCCEEDED, but its response held a secret of this "
                    "server and was redacted:\n"
                    + "\n".join(c.text for c in content if isinstance(c, types.TextContent))
                )
            structured = cleaned
        return result.model_copy(update={"content": content, "structured_content": structured})

    def _audit_record(
        self,
        caller: str,
        tool: str,
        arguments: object,
        outcome: _Outcome,
        started: float | None = None,
    ) -> None:
        elapsed = 0.0 if started is None else (time.monotonic() - started) * 1000.0
        self._audit.record(
            caller=caller,
            tool=tool,
            arguments=arguments,
            decision=outcome.decision,
            reason=outcome.reason,
            status=outcome.status,
            duration_ms=elapsed,
            secrets=self._credentials.secrets(),
            include_arguments=argument_bytes(arguments) <= self._limits.max_argument_bytes,
        )

    def audit_refusal(self, caller: str, tool: str, reason: str, arguments: object = None) -> None:
        """One record for a refusal outside the tool path (HTTP layer, SDK boundary)."""
        self._audit_record(caller, tool, arguments, _Outcome("refused", reason))

    async def _tool_call(
        self,
        ctx: ServerRequestContext[dict[str, Any]],
        params: types.CallToolRequestParams,
        tool: Tool,
        arguments: object,
        caller: str,
        outcome: _Outcome,
    ) -> types.CallToolResult | types.InputRequiredResult:
        cleared = await self._gate(ctx, params, tool, arguments, caller, outcome)
        if not isinstance(cleared, _Cleared):
            return cleared
        if cleared.request is None:
            result = await self.hooks.call_handler(
                tool, cleared.arguments, self._outputs[tool.name]
            )
            return await self.hooks.after(tool.name, cleared.arguments, result)
        response = await self._send_cleared(tool, cleared, outcome)
        if isinstance(response, types.CallToolResult):
            return response
        result = upstream_result(
            tool,
            response,
            self._outputs[tool.name],
            self._credentials.secrets(),
            concise=cleared.projection,
        )
        return await self.hooks.after(tool.name, cleared.arguments, result)

    async def _gate(
        self,
        ctx: ServerRequestContext[dict[str, Any]] | None,
        params: types.CallToolRequestParams | None,
        tool: Tool,
        arguments: object,
        caller: str,
        outcome: _Outcome,
        *,
        reader: Tool | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult | _Cleared:
        """The one gate of every door that can send an upstream request (S18): scopes, size,
        schema validation, value allowlists, before_call hooks, rate limit, confirmation and
        credentials, in this order. A refusal is an error result (or the question); nothing
        has left the process then. `ctx` and `params` are None for a door that cannot ask
        the user (resources/read): a tool that needs confirmation is refused there.
        `reader`: the tool whose request is built, when it is not `tool` (a resource's GET).
        """
        refusal = self._check_scopes(tool)
        if refusal is not None:
            outcome.refuse("insufficient scope")
            return refusal
        # Before validation: a huge argument object costs nothing more than its measurement.
        size = argument_bytes(arguments)
        if size > self._limits.max_argument_bytes:
            outcome.refuse("arguments too large")
            return error_result(
                f"The arguments are too large ({size} bytes as JSON; this server accepts at "
                f"most {self._limits.max_argument_bytes}). Nothing was sent."
            )
        # `response_format` (concise results) is the server's, never sent upstream.
        projection = self._catalog.modes.projections.get(tool.name)
        arguments, concise, problems = take_format(arguments, projection)
        problems += self._arguments[tool.name].errors(arguments)
        if problems or not isinstance(arguments, Mapping):
            outcome.refuse("invalid arguments")
            listed = "\n".join(f"- {p}" for p in problems)
            return error_result(f"Invalid arguments; nothing was sent:\n{listed}")
        not_allowed = self._values.refusal(tool, arguments)
        if not_allowed is not None:
            outcome.refuse("argument value not allowed")
            return error_result(not_allowed)
        hooked = await self.hooks.gate(tool, arguments, caller, self._arguments[tool.name])
        if isinstance(hooked, types.CallToolResult):
            outcome.refuse("refused by a before_call hook")
            return hooked
        arguments = hooked
        cleared = _Cleared(arguments, projection if concise else None)
        sender = reader or tool
        if sender.request is not None:
            try:
                cleared.base_url = self._base_url(sender)
                own = await caller_credentials(
                    self.upstream_credentials, sender, get_access_token()
                )
                cleared.plan = self._credentials.select(sender, own)
                cleared.request = build_request(sender, arguments, cleared.base_url)
            except ArgumentError as exc:
                outcome.refuse("invalid arguments")
                return error_result(
                    f"Invalid argument {exc.argument}: {exc.message}. Nothing was sent."
                )
            except (UpstreamError, CredentialError) as exc:
                outcome.refuse("not configured")
                return error_result(redact(str(exc), self._credentials.secrets()))
        limited = not is_read_only(tool)
        if limited and await self._rate.wait_time(caller) > 0:  # checked before asking the user
            outcome.refuse("rate limit")
            return await self._rate_refusal(caller)
        if tool.needs_confirmation:
            if ctx is None or params is None:
                outcome.refuse("no confirmation")
                return error_result(
                    f"{tool.name} needs the user's confirmation, which this request cannot "
                    "ask for: call the tool instead. Nothing was sent."
                )
            if cleared.request is None:
                message = describe_handler_call(tool, arguments)
            else:
                message = describe(
                    tool,
                    cleared.request,
                    arguments,
                    catalog=self._catalog,
                    plan=cleared.plan,
                    secrets=self._credentials.secrets(),
                )
            # What the user judges: every secret form redacted, every invisible shown (S20).
            message = escape_invisible(redact(message, self._credentials.secrets()))
            answer = await self._confirmer.confirm(
                ctx, params, tool, arguments, message, caller=caller, token=outcome.token
            )
            if isinstance(answer, types.CallToolResult):
                logger.info("tool %s: not confirmed, nothing sent", tool.name)
                outcome.decision, outcome.reason = _confirmation_outcome(answer)
                return answer
            if answer is not None:
                return answer  # the question (2026-07-28)
            outcome.decision = "confirmed"
        if limited and await self._rate.take(caller) > 0:
            outcome.refuse("rate limit")
            return await self._rate_refusal(caller)
        if cleared.request is not None:
            assert cleared.plan is not None
            try:
                cleared.request = await self._credentials.apply(
                    cleared.plan, cleared.request, cleared.base_url, self._send
                )
            except (UpstreamError, CredentialError) as exc:
                outcome.reason = "credentials failed"
                return error_result(redact(str(exc), self._credentials.secrets()))
        return cleared

    async def _send_cleared(
        self, tool: Tool, cleared: _Cleared, outcome: _Outcome
    ) -> UpstreamResponse | types.CallToolResult:
        """Send a request the gate cleared; a failure is an error result."""
        request = cleared.request
        assert request is not None and cleared.plan is not None
        secrets = self._credentials.secrets()
        logger.debug("tool %s: %s %s", tool.name, request.method, redact(request.url, secrets))
        origin, _ = split_base_url(cleared.base_url)
        outcome.sending = True
        try:
            response = await self._upstream.send(request, origin=origin)
        except UpstreamError as exc:
            timed_out = isinstance(exc, UpstreamTimeout)
            outcome.reason = "upstream timeout" if timed_out else "upstream failed"
            return error_result(redact(str(exc), secrets))
        outcome.status = response.status
        logger.debug("tool %s: HTTP %s", tool.name, response.status)
        if response.status == 401:
            self._credentials.forget_tokens(cleared.plan)
        return response

    def _check_scopes(self, tool: Tool) -> types.CallToolResult | None:
        """Inbound scopes, checked again here (HTTP answers 403 first, in `auth.ScopeGate`).

        Over stdio and in memory there is no verified caller, and nothing to check.
        """
        token = get_access_token()
        if token is None:
            return None
        needed = refused_scopes(self._scopes[tool.name], token.scopes, self._admin_scopes)
        if not needed:
            return None
        logger.info("tool %s: insufficient scope, nothing sent", tool.name)
        return error_result(
            f"Forbidden: the access token lacks the scope this tool requires "
            f"({' '.join(needed)}). Nothing was sent."
        )

    def _base_url(self, tool: Tool) -> str:
        """The tool's source's upstream: the first source's, or a named one (upstreams.py);
        then the operation's own server, if it has one (`operation_base_url`)."""
        server = tool.request.server if tool.request is not None else ""
        if not tool.upstream:
            base = resolve_base_url(self._catalog, self._environ)
            variable = f"{self._catalog.server.env_prefix}_BASE_URL"
            return operation_base_url(base, server, bool(self._environ.get(variable)))
        upstream = self._catalog.upstreams[tool.upstream]
        try:
            base = named_base_url(upstream, self._environ)
        except BaseUrlError as exc:
            raise UpstreamError(str(exc)) from None
        return operation_base_url(base, server, bool(self._environ.get(upstream.env)))

    async def _send(self, request: PreparedRequest, origin: str) -> UpstreamResponse:
        return await self._upstream.send(request, origin=origin)

    async def _rate_refusal(self, caller: str) -> types.CallToolResult:
        wait = max(1, int(await self._rate.wait_time(caller) + 0.999))
        return error_result(
            f"Rate limit: this server allows {self._limits.write_rate:g} calls per minute to "
            f"tools that change something. Retry in {wait} seconds. Nothing was sent."
        )


@dataclass
class _Outcome:
    """What the audit record of a call says."""

    decision: str = "allowed"
    reason: str = ""
    status: int | None = None
    token: str | None = None  # `_confirmation_token`, with the token fallback only
    sending: bool = False  # the request was handed to the upstream client

    def refuse(self, reason: str) -> None:
        self.decision, self.reason = "refused", reason


@dataclass
class _Cleared:
    """What the gate let through: the arguments to use and, for an HTTP tool, the request
    with its credentials, its plan and base URL."""

    arguments: Mapping[str, Any]
    projection: Any = None  # `response_format: concise`: the projection to apply
    request: PreparedRequest | None = None
    plan: Any = None
    base_url: str = ""


def audited(error: MCPError) -> MCPError:
    """`error`, marked as already recorded (the refusal audit does not record it again)."""
    error.mcpmint_audited = True  # type: ignore[attr-defined]
    return error


def _caller() -> str:
    """The token subject (or client id) over authenticated HTTP, else `local`."""
    token = get_access_token()
    if token is None:
        return "local"
    subject = getattr(token, "subject", None)
    return subject or token.client_id or "authenticated"


def _confirmation_outcome(refusal: types.CallToolResult) -> tuple[str, str]:
    text = " ".join(c.text for c in refusal.content if isinstance(c, types.TextContent))
    if text.startswith(TOKEN_ISSUED):
        return "pending", "confirmation token issued"
    if TOKEN_REFUSED in text:
        return "refused", "bad confirmation token"
    for words, reason in (
        ("declined by the user", "declined by the user"),
        ("cancelled by the user", "cancelled by the user"),
        ("confirm was not true", "not confirmed"),
    ):
        if words in text:
            return "declined", reason
    return "refused", "no confirmation"


def _mcp_tool(tool: Tool) -> types.Tool:
    """The tool as tools/list shows it: every string (schemas included) without invisible
    characters (S20)."""
    return _visible_tool(_listed_tool(tool))


def _visible_tool(tool: types.Tool) -> types.Tool:
    return types.Tool.model_validate(strip_data(tool.model_dump(by_alias=True, exclude_none=True)))


def _listed_tool(tool: Tool) -> types.Tool:
    return types.Tool(
        name=tool.name,
        title=tool.title or None,
        description=tool.description or None,
        input_schema=dict(tool.input_schema),
        output_schema=None if tool.output_schema is None else dict(tool.output_schema),
        annotations=types.ToolAnnotations.model_validate(dict(tool.annotations))
        if tool.annotations
        else None,
    )
