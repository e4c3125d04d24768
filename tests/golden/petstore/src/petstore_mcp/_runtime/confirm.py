"""Asking the user before a tool acts: MCP form elicitation, in both protocol eras.

A tool whose catalog entry says `"confirmation": "required"` is confirmed after its arguments
are validated and its credentials chosen, and before anything leaves the process (not even an
OAuth2 token request). The user sees exactly what will be sent: the method, the resolved URL,
the key arguments and a short preview of the body, with secrets redacted and control, bidi and
zero-width characters made visible.

- 2025-11-25 and older: the server asks mid-call with `elicitation/create`.
- 2026-07-28: the handler returns an `InputRequiredResult`; its `request_state` names the tool,
  a digest of the canonical arguments, a nonce, the state store's epoch and an expiry, and is
  sealed (AES-GCM) by the SDK's `RequestStateBoundary`, which also binds it to the tool, the
  arguments and the caller. On the retry, the echoed state must match this tool and these
  arguments, must not have expired, and must not have been used before: the state store
  (`store.py`) spends its nonce once, for every replica that shares it.

Only an explicit `accept` with `confirm: true` runs the call. Anything else (decline, cancel,
`confirm: false`, no answer, a client without elicitation, a channel that cannot carry a
server request) is an error result, and nothing is sent.

A client that cannot elicit is refused, unless the operator opted in to the token fallback
(`<PREFIX>_CONFIRM_FALLBACK=token`, `tokens.py`): then the first call returns the question and
a single-use token bound to the caller, the tool and the arguments, and only the same call
repeated with that token in `_confirmation_token` goes through.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets as _secrets
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

import mcp_types as types
from mcp_types.version import is_version_at_least

from .catalog import Catalog, Tool
from .credentials import Plan
from .redaction import redact, redact_token_like
from .request import PreparedRequest
from .results import error_result
from .store import MemoryStore, StateStore
from .tokens import (
    FALLBACKS,
    TOKEN_ARGUMENT,
    ConfirmSettingsError,
    TokenError,
    Tokens,
    load_fallback,
)
from .visible import escape_invisible

__all__ = [
    "CONFIRM_KEY",
    "CONFIRM_SCHEMA",
    "FALLBACKS",
    "MODERN_ERA",
    "STATE_VERSION",
    "TOKEN_ARGUMENT",
    "ConfirmSettingsError",
    "Confirmer",
    "StateError",
    "argument_digest",
    "describe",
    "elicitation_supported",
    "load_fallback",
]

CONFIRM_KEY = "confirm"
CONFIRM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        CONFIRM_KEY: {
            "type": "boolean",
            "title": "Send this request?",
            "description": "true sends the request described above exactly once.",
        }
    },
    "required": [CONFIRM_KEY],
}
MODERN_ERA = "2026-07-28"
STATE_VERSION = 2

MAX_ARGUMENTS = 12
MAX_VALUE_CHARS = 120
MAX_BODY_CHARS = 400
REDACTED = "[REDACTED]"

# Names whose values are never shown, wherever they appear (arguments, body keys, query names).
_SENSITIVE_NAME = re.compile(
    r"password|passwd|passphrase|secret|token|api[-_]?key|apikey|authorization|credential|"
    r"private[-_]?key|session[-_]?id|cookie",
    re.IGNORECASE,
)
_REFUSED = "Nothing was sent."
# Markers the server's audit reads back from a result (`server._confirmation_outcome`).
TOKEN_ISSUED = "CONFIRMATION NEEDED"
TOKEN_REFUSED = "confirmation token was refused"


class StateError(ValueError):
    """An echoed `request_state` does not belong to this call."""


def argument_digest(tool_name: str, arguments: Mapping[str, Any]) -> str:
    """SHA-256 over the tool name and the canonical JSON of its arguments."""
    canonical = json.dumps(
        {"tool": tool_name, "arguments": arguments},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=True,
        allow_nan=False,
    )
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def elicitation_supported(capabilities: types.ClientCapabilities | None) -> bool:
    """Whether the client declared form elicitation (an empty `elicitation` object means form)."""
    if capabilities is None or capabilities.elicitation is None:
        return False
    elicitation = capabilities.elicitation
    return elicitation.form is not None or elicitation.url is None


def describe(
    tool: Tool,
    request: PreparedRequest,
    arguments: Mapping[str, Any],
    *,
    catalog: Catalog,
    plan: Plan,
    secrets: Iterable[str],
) -> str:
    """The confirmation message: what will be sent, with secrets redacted.

    Credentials are not added yet when the user is asked; the URL shows where a query API key
    will go as `name=[REDACTED]`, and the credential line names the schemes used.
    """
    secret_values = frozenset(secrets)
    url = _redact_query(request.url)
    credential_lines: list[str] = []
    query_keys: list[str] = []
    for requirement in plan.requirements:
        scheme = catalog.security_schemes[requirement.scheme]
        if scheme.type == "apiKey":
            where = f"{scheme.location} {scheme.param_name}"
            if scheme.location == "query":
                query_keys.append(f"{quote(scheme.param_name, safe='')}={REDACTED}")
        elif scheme.type == "http":
            where = f"{scheme.scheme} authorization"
        else:
            where = "bearer token"
        credential_lines.append(f"{_visible(scheme.name)} ({_visible(where)})")
    if query_keys:
        url += ("&" if "?" in url else "?") + "&".join(query_keys)
    lines = [
        f"Confirm {tool.name}: {tool.title}" if tool.title else f"Confirm {tool.name}",
        f"This will send: {request.method} {redact_token_like(redact(url, secret_values))}",
    ]
    if credential_lines:
        lines.append("Credentials: " + ", ".join(credential_lines) + f" (values {REDACTED})")
    if arguments:
        lines.append("Arguments:")
        shown = sorted(arguments.items())
        for name, value in shown[:MAX_ARGUMENTS]:
            lines.append(f"  {_visible(name)} = {_value(name, value, secret_values)}")
        if len(shown) > MAX_ARGUMENTS:
            lines.append(f"  ... and {len(shown) - MAX_ARGUMENTS} more")
    if request.body:
        lines.append(f"Body: {_body_preview(request, secret_values)}")
    annotations = tool.annotations
    if annotations.get("destructiveHint"):
        lines.append("This operation may change or delete existing data.")
    lines.append("Nothing is sent unless you confirm.")
    return "\n".join(lines)


class Confirmer:
    """Asks for confirmation in either era; spends 2026-07-28 states and tokens in the store."""

    def __init__(
        self,
        *,
        ttl: float = 600.0,
        clock: Callable[[], float] = time.time,
        fallback: str = "refuse",
        token_key: bytes | None = None,
        store: StateStore | None = None,
    ) -> None:
        self._ttl = ttl
        self._clock = clock
        self._store = MemoryStore(clock=clock) if store is None else store
        self.fallback = fallback
        self._tokens = (
            Tokens(token_key, ttl=ttl, clock=clock, store=self._store)
            if fallback == "token"
            else None
        )

    def take_token(self, arguments: object) -> tuple[object, str | None]:
        """The arguments without `_confirmation_token`, and its value (token fallback only).

        Without the fallback the argument is left in place, so that schema validation refuses
        it as unknown like any other. A non-string value counts as an empty (invalid) token.
        """
        if self._tokens is None or not isinstance(arguments, Mapping):
            return arguments, None
        if TOKEN_ARGUMENT not in arguments:
            return arguments, None
        rest = {k: v for k, v in arguments.items() if k != TOKEN_ARGUMENT}
        token = arguments[TOKEN_ARGUMENT]
        return rest, token if isinstance(token, str) else ""

    async def confirm(
        self,
        ctx: Any,
        params: types.CallToolRequestParams,
        tool: Tool,
        arguments: Mapping[str, Any],
        message: str,
        *,
        caller: str = "local",
        token: str | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult | None:
        """None when the user confirmed; otherwise what the handler returns instead.

        Args:
            ctx: the `ServerRequestContext` of the call.
            params: the call's parameters (the echoed state and answers, in 2026-07-28).
            tool: the catalog entry.
            arguments: the validated arguments (without `_confirmation_token`).
            message: from `describe`.
            caller: who calls (token subject or `local`); a confirmation token is bound to it.
            token: the `_confirmation_token` the call carried (token fallback only).
        """
        if not elicitation_supported(ctx.session.client_capabilities):
            if self._tokens is not None:
                return await self._token_fallback(tool, arguments, message, caller, token)
            return error_result(
                f"The tool {tool.name} needs the user's confirmation, and this client cannot "
                "ask the user (it did not declare the MCP elicitation capability, or this "
                "connection cannot carry server requests), so the call is refused. " + _REFUSED
            )
        digest = argument_digest(tool.name, arguments)
        if is_version_at_least(str(ctx.protocol_version), MODERN_ERA):
            return await self._modern(params, tool, digest, message)
        try:
            answer = await ctx.session.elicit_form(
                message, CONFIRM_SCHEMA, related_request_id=ctx.request_id
            )
        except Exception as exc:  # NoBackChannelError, a client error, a closed stream
            return error_result(
                f"The tool {tool.name} needs the user's confirmation, and asking failed "
                f"({type(exc).__name__}). " + _REFUSED
            )
        return _verdict(tool, answer)

    async def _token_fallback(
        self,
        tool: Tool,
        arguments: Mapping[str, Any],
        message: str,
        caller: str,
        token: str | None,
    ) -> types.CallToolResult | None:
        assert self._tokens is not None
        digest = argument_digest(tool.name, arguments)
        if token is None:
            issued = await self._tokens.issue(caller, tool.name, digest)
            # An error result: nothing happened yet, and a success without structured content
            # would be rejected by clients for a tool with an output schema.
            return error_result(
                f"{TOKEN_ISSUED}: nothing was sent. This client cannot ask the user, so "
                "show the user the request below and ask whether to send it. Only if the "
                f"user agrees, call {tool.name} again with exactly the same arguments plus "
                f'"{TOKEN_ARGUMENT}": "{issued}" (valid once, for {int(self._ttl // 60)} '
                "minutes, for these arguments only).\n\n" + message
            )
        try:
            await self._tokens.redeem(token, caller, tool.name, digest)
        except TokenError as exc:
            return error_result(
                f"Refused: the {TOKEN_REFUSED} ({exc}). " + _REFUSED + " Call the tool "
                f"without {TOKEN_ARGUMENT} to get a new one."
            )
        return None

    async def _modern(
        self,
        params: types.CallToolRequestParams,
        tool: Tool,
        digest: str,
        message: str,
    ) -> types.CallToolResult | types.InputRequiredResult | None:
        responses = params.input_responses or {}
        if params.request_state is None:
            if responses:
                return error_result(
                    f"An answer to a confirmation this server did not ask for was ignored: "
                    f"{tool.name} needs a fresh confirmation. " + _REFUSED
                )
            return await self.challenge(tool.name, digest, message)
        try:
            await self.redeem(params.request_state, tool.name, digest)
        except StateError as exc:
            return error_result(
                f"Refused: the confirmation state does not match this call ({exc}). " + _REFUSED
            )
        return _verdict(tool, responses.get(CONFIRM_KEY))

    async def challenge(
        self, tool_name: str, digest: str, message: str
    ) -> types.InputRequiredResult:
        """The 2026-07-28 question; its state is sealed by the `RequestStateBoundary`.

        Raises:
            StoreError: the state store did not give its epoch.
        """
        state = {
            "v": STATE_VERSION,
            "tool": tool_name,
            "args": digest,
            "nonce": _secrets.token_urlsafe(16),
            "store": await self._store.epoch(),
            "exp": self._clock() + self._ttl,
        }
        return types.InputRequiredResult(
            input_requests={
                CONFIRM_KEY: types.ElicitRequest(
                    params=types.ElicitRequestFormParams(
                        message=message, requested_schema=CONFIRM_SCHEMA
                    )
                )
            },
            request_state=json.dumps(state, sort_keys=True, separators=(",", ":")),
        )

    async def redeem(self, state_text: str, tool_name: str, digest: str) -> None:
        """Check an echoed (already unsealed) state against this call and use it up.

        A state is used up by any answer, yes or no, in the state store: once for every
        replica that shares it, and never after the store restarted (its epoch changed).

        Raises:
            StateError: malformed, for another tool or other arguments, expired, or used.
            StoreError: the state store did not answer.
        """
        try:
            state = json.loads(state_text)
        except ValueError:
            raise StateError("malformed state") from None
        if not isinstance(state, dict) or state.get("v") != STATE_VERSION:
            raise StateError("malformed state")
        nonce, expires, epoch = state.get("nonce"), state.get("exp"), state.get("store")
        if not isinstance(nonce, str) or not nonce or not isinstance(expires, int | float):
            raise StateError("malformed state")
        if not isinstance(epoch, str):
            raise StateError("malformed state")
        if state.get("tool") != tool_name:
            raise StateError("it was issued for another tool")
        if state.get("args") != digest:
            raise StateError("it was issued for other arguments")
        if not self._clock() < expires:  # before the store: an old state costs it nothing
            raise StateError("it has expired")
        refused = await self._store.spend("state", nonce, expires, epoch)
        if refused:
            raise StateError(refused)


def _verdict(tool: Tool, answer: object) -> types.CallToolResult | None:
    if not isinstance(answer, types.ElicitResult):
        return error_result(f"No confirmation was given for {tool.name}. " + _REFUSED)
    content = answer.content or {}
    if answer.action == "accept" and content.get(CONFIRM_KEY) is True:
        return None
    if answer.action == "accept":
        how = "not confirmed (confirm was not true)"
    elif answer.action == "decline":
        how = "declined by the user"
    else:
        how = "cancelled by the user"
    return error_result(f"The call to {tool.name} was {how}. " + _REFUSED)


def _visible(text: str) -> str:
    """`text` with invisible and reordering characters shown as `\\uXXXX` (visible.py)."""
    return escape_invisible(text)


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters]"


def _scrub(value: Any) -> Any:
    """A copy of a JSON value with the values of sensitive-looking keys replaced."""
    if isinstance(value, Mapping):
        return {
            k: REDACTED if isinstance(k, str) and _SENSITIVE_NAME.search(k) else _scrub(v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_scrub(v) for v in value]
    return value


def _value(name: str, value: Any, secrets: frozenset[str]) -> str:
    if _SENSITIVE_NAME.search(name):
        return REDACTED
    text = json.dumps(_scrub(value), ensure_ascii=False, sort_keys=True)
    return _visible(_trim(redact_token_like(redact(text, secrets)), MAX_VALUE_CHARS))


def _body_preview(request: PreparedRequest, secrets: frozenset[str]) -> str:
    raw = (request.body or b"").decode("utf-8", errors="replace")
    content_type = next((v for k, v in request.headers if k.lower() == "content-type"), "")
    try:
        text = json.dumps(_scrub(json.loads(raw)), ensure_ascii=False, sort_keys=True)
    except ValueError:
        text = _redact_form(raw) if "x-www-form-urlencoded" in content_type else raw
    preview = _visible(_trim(redact_token_like(redact(text, secrets)), MAX_BODY_CHARS))
    return f"({content_type}, {len(request.body or b'')} bytes) {preview}"


def _redact_query(url: str) -> str:
    base, sep, query = url.partition("?")
    return base + sep + _redact_form(query) if sep else url


def _redact_form(text: str) -> str:
    pairs = []
    for pair in text.split("&"):
        name, eq, _ = pair.partition("=")
        pairs.append(f"{name}={REDACTED}" if eq and _SENSITIVE_NAME.search(name) else pair)
    return "&".join(pairs)
