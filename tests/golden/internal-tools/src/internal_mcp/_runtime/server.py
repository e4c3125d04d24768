"""The MCP server of a generated package, on the SDK's low-level `Server`.

A call goes: validate arguments, resolve the base URL, choose credentials, build the request,
ask the user to confirm (tools whose confirmation is required), add credentials, send, map the
response. Every step before sending can fail, and when one does nothing has left the process.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections import ChainMap
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

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
from .arguments import ArgumentValidator
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
from .catalog import Catalog, Tool
from .confirm import (
    TOKEN_ISSUED,
    TOKEN_REFUSED,
    Confirmer,
    ConfirmSettingsError,
    describe,
    load_fallback,
)
from .content_server import content_handlers
from .credentials import CredentialError, Credentials
from .hooks import HookError, Hooks, describe_handler_call
from .limits import LimitsError, RateLimiter, argument_bytes, is_read_only, load_limits
from .metrics import Metrics, classify, load_metrics
from .modes import ModesError, ToolRouter
from .projection import take_format
from .redaction import redact
from .request import ArgumentError, PreparedRequest, build_request, split_base_url
from .results import OutputValidator, error_result, upstream_result
from .store import MEMORY, StateStore, StoreError, StoreSettingsError, load_store
from .upstream import (
    UpstreamClient,
    UpstreamError,
    UpstreamResponse,
    UpstreamTimeout,
    resolve_base_url,
)
from .upstreams import BaseUrlError, named_base_url

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
    server: Server[dict[str, Any]] = Server(
        info.name,
        version=info.version,
        title=info.title or None,
        instructions=info.instructions or None,
        lifespan=runtime.lifespan,
        get_tool_input_schema=runtime.input_schema,
        on_list_tools=runtime.list_tools,
        on_call_tool=runtime.call_tool,
        **content_handlers(catalog, runtime.fetch_resource, lambda: runtime.hooks),
    )
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
        anyio.run(_serve_stdio, server)
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


async def _serve_stdio(server: Server[Any]) -> None:
    from mcp.server.stdio import stdio_server

    async with stdio_server() as (read, write):
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
        self._values = ValueAllowlist.from_environ(prefix, catalog.tools, environ)
        self._audit = load_audit(prefix, environ) if audit is None else audit
        # Tools the operator's allowlists leave out are not listed and are unknown when called.
        self._tools = {tool.name: tool for tool in catalog.tools if self._filter.allows(tool)}
        # The tool mode decides which of them tools/list shows (runtime/modes.py).
        self._router = ToolRouter(catalog, self._tools, environ)
        self._listed = self._router.meta_tools + [
            _mcp_tool(self._tools[name]) for name in self._router.listed_names
        ]
        self._arguments = {tool.name: ArgumentValidator(tool) for tool in catalog.tools}
        self._outputs = {
            tool.name: OutputValidator(tool.output_schema) if tool.output_schema else None
            for tool in catalog.tools
        }
        self._credentials = Credentials(catalog, environ)
        self.upstream_credentials: UpstreamCredentialsHook | None = None  # auth.py's hook
        self.hooks = Hooks()  # hooks.py's registry, set by build_server
        self._scopes = {tool.name: scope_alternatives(tool) for tool in catalog.tools}
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
        started = time.monotonic()
        # Dynamic mode: search and describe are answered here; `call_tool` becomes the named
        # tool's own call, which then takes exactly the path below.
        routed = self._router.route(params)
        if isinstance(routed, types.CallToolResult):
            # Search and describe (or a malformed `call_tool`) are calls too: metered like any.
            kind = "argument_error" if routed.is_error else "ok"
            self.metrics.record(params.name, kind, time.monotonic() - started)
            return routed
        params = routed
        caller = _caller()
        arguments: object = {} if params.arguments is None else params.arguments
        tool = self._tools.get(params.name)
        if tool is None:
            self._audit_record(caller, params.name, arguments, _Outcome("refused", "unknown tool"))
            self.metrics.record_unknown(params.name, time.monotonic() - started)
            raise MCPError(code=types.INVALID_PARAMS, message=f"Unknown tool: {params.name}")
        outcome = _Outcome()
        # The token fallback's reserved argument is not part of any schema: taken out here.
        arguments, outcome.token = self._confirmer.take_token(arguments)
        try:
            result = await self._checked_call(ctx, params, tool, arguments, caller, outcome)
        except StoreError as exc:  # every use of the store comes before anything is sent
            logger.warning("tool %s: %s", tool.name, exc)
            outcome.refuse("state store unavailable")
            result = error_result(f"{exc} This call needs it, so it was refused. Nothing was sent.")
        except Exception as exc:
            # Details stay in the log: an exception text could hold a secret or a response.
            logger.exception("tool %s failed", tool.name)
            outcome.decision, outcome.reason = "refused", f"internal error {type(exc).__name__}"
            result = error_result(
                f"Internal error in the MCP server ({type(exc).__name__}); the request may or "
                "may not have reached the upstream API."
            )
        seconds = time.monotonic() - started
        if isinstance(result, types.InputRequiredResult):
            self.metrics.record(tool.name, "input_required", seconds)
            return result  # the question; the retry that answers it is audited
        if outcome.decision != "allowed" or not is_read_only(tool):
            self._audit_record(caller, tool.name, arguments, outcome, started)
        kind = classify(outcome.decision, outcome.reason, outcome.status)
        self.metrics.record(tool.name, kind, seconds, reason=outcome.reason, status=outcome.status)
        return result

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

    async def _checked_call(
        self,
        ctx: ServerRequestContext[dict[str, Any]],
        params: types.CallToolRequestParams,
        tool: Tool,
        arguments: object,
        caller: str,
        outcome: _Outcome,
    ) -> types.CallToolResult | types.InputRequiredResult:
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
        return await self._call(ctx, params, tool, arguments, caller, outcome)

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

    async def _call(
        self,
        ctx: ServerRequestContext[dict[str, Any]],
        params: types.CallToolRequestParams,
        tool: Tool,
        arguments: object,
        caller: str,
        outcome: _Outcome,
    ) -> types.CallToolResult | types.InputRequiredResult:
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
        if tool.request is None:
            return await self._handler_call(ctx, params, tool, arguments, caller, outcome)
        try:
            base_url = self._base_url(tool)
            own = await caller_credentials(self.upstream_credentials, tool, get_access_token())
            plan = self._credentials.select(tool, own)
            request = build_request(tool, arguments, base_url)
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
            message = describe(
                tool,
                request,
                arguments,
                catalog=self._catalog,
                plan=plan,
                secrets=self._credentials.secrets(),
            )
            refusal = await self._confirmer.confirm(
                ctx, params, tool, arguments, message, caller=caller, token=outcome.token
            )
            if refusal is None:
                outcome.decision = "confirmed"
            elif isinstance(refusal, types.CallToolResult):
                logger.info("tool %s: not confirmed, nothing sent", tool.name)
                outcome.decision, outcome.reason = _confirmation_outcome(refusal)
                return refusal
            else:
                return refusal
        if limited and await self._rate.take(caller) > 0:
            outcome.refuse("rate limit")
            return await self._rate_refusal(caller)
        try:
            request = await self._credentials.apply(plan, request, base_url, self._send)
        except (UpstreamError, CredentialError) as exc:
            outcome.reason = "credentials failed"
            return error_result(redact(str(exc), self._credentials.secrets()))
        secrets = self._credentials.secrets()
        logger.debug("tool %s: %s %s", tool.name, request.method, redact(request.url, secrets))
        origin, _ = split_base_url(base_url)
        try:
            response = await self._upstream.send(request, origin=origin)
        except UpstreamError as exc:
            timed_out = isinstance(exc, UpstreamTimeout)
            outcome.reason = "upstream timeout" if timed_out else "upstream failed"
            return error_result(redact(str(exc), secrets))
        outcome.status = response.status
        logger.debug("tool %s: HTTP %s", tool.name, response.status)
        if response.status == 401:
            self._credentials.forget_tokens(plan)
        result = upstream_result(
            tool,
            response,
            self._outputs[tool.name],
            secrets,
            concise=projection if concise else None,
        )
        return await self.hooks.after(tool.name, arguments, result)

    async def _handler_call(
        self,
        ctx: ServerRequestContext[dict[str, Any]],
        params: types.CallToolRequestParams,
        tool: Tool,
        arguments: Mapping[str, Any],
        caller: str,
        outcome: _Outcome,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """A handler tool (hooks.py): the same rate limit and confirmation, no request."""
        limited = not is_read_only(tool)
        if limited and await self._rate.wait_time(caller) > 0:
            outcome.refuse("rate limit")
            return await self._rate_refusal(caller)
        if tool.needs_confirmation:
            message = describe_handler_call(tool, arguments)
            refusal = await self._confirmer.confirm(
                ctx, params, tool, arguments, message, caller=caller, token=outcome.token
            )
            if isinstance(refusal, types.CallToolResult):
                outcome.decision, outcome.reason = _confirmation_outcome(refusal)
                return refusal
            if refusal is not None:
                return refusal
            outcome.decision = "confirmed"
        if limited and await self._rate.take(caller) > 0:
            outcome.refuse("rate limit")
            return await self._rate_refusal(caller)
        result = await self.hooks.call_handler(tool, arguments, self._outputs[tool.name])
        return await self.hooks.after(tool.name, arguments, result)

    async def fetch_resource(
        self, reader: Tool, variables: Mapping[str, str]
    ) -> UpstreamResponse | str:
        """A resource's GET (runtime/content.py): the response, or a redacted error text."""
        try:
            base_url = self._base_url(reader)
            plan = self._credentials.select(reader)
            request = build_request(reader, variables, base_url)
            request = await self._credentials.apply(plan, request, base_url, self._send)
            return await self._upstream.send(request, origin=split_base_url(base_url)[0])
        except (ArgumentError, UpstreamError, CredentialError) as exc:
            return redact(str(exc), self._credentials.secrets())

    def _base_url(self, tool: Tool) -> str:
        """The tool's source's upstream: the first source's, or a named one (upstreams.py)."""
        if not tool.upstream:
            return resolve_base_url(self._catalog, self._environ)
        try:
            return named_base_url(self._catalog.upstreams[tool.upstream], self._environ)
        except BaseUrlError as exc:
            raise UpstreamError(str(exc)) from None

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

    def refuse(self, reason: str) -> None:
        self.decision, self.reason = "refused", reason


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
