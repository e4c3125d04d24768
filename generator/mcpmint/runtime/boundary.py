"""The request boundary (S21, S22): every request gets an answer, every refusal an audit line.

Three places see a request before the tools do, and each answers what it refuses with a
JSON-RPC error carrying the request's `id` and writes one audit record (caller, tool if known,
reason):

- `RefusalAudit`, the outermost of the server's own middleware (every transport): a request
  whose params hold a lone surrogate (which no JSON encoder can write back, so the answer
  would be lost) or nest deeper than `MAX_PARAMS_DEPTH` is refused before any handler; every
  other refusal raised below it (a tampered or mis-bound `request_state`, an unknown tool,
  resource or prompt, invalid params) is recorded once, and its message has no invisible
  characters;
- `guarded_stdio`: a line the SDK's parser refuses (lone surrogates in `\\u` escapes, nesting
  past its recursion limit, a malformed message) is read again with Python's `json` to find
  its `id`, and answered;
- `HttpGuard`, the outermost ASGI middleware: the same for an HTTP body, and one record for
  every HTTP-layer refusal (400, 401, 403, 404, 405, 406, 413, 415, 421...), the caller being
  the verified token's subject when there is one.
"""

from __future__ import annotations

import io
import json
import sys
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any, Protocol

import anyio
import mcp_types as types
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from .visible import escape_invisible

__all__ = [
    "MAX_PARAMS_DEPTH",
    "HttpGuard",
    "RefusalAudit",
    "Refusals",
    "guarded_stdio",
    "malformed_answer",
    "params_problem",
]

# Deeper than the argument validator's limit (64 below `arguments`), so that a deep but
# parseable argument still gets the validator's message naming it.
MAX_PARAMS_DEPTH = 100
PARSE_ERROR = -32700
_MAX_BODY = 4 * 1024 * 1024
_REFUSED_STATUSES = frozenset((400, 401, 403, 404, 405, 406, 409, 413, 415, 421, 422, 429))


class Refusals(Protocol):
    """Where refusals are recorded (`server._Runtime.audit_refusal`)."""

    def audit_refusal(
        self, caller: str, tool: str, reason: str, arguments: object = None
    ) -> None: ...


def params_problem(value: object) -> str | None:
    """Why `value` (a request's params) cannot be handled, or None: a lone surrogate in a
    string or key, or nesting deeper than `MAX_PARAMS_DEPTH`. Iterative: no depth is too deep.
    """
    stack: list[tuple[int, object]] = [(0, value)]
    while stack:
        depth, item = stack.pop()
        if depth > MAX_PARAMS_DEPTH:
            return f"params nested deeper than {MAX_PARAMS_DEPTH} levels"
        if isinstance(item, str):
            if _has_surrogate(item):
                return "a string holds a lone surrogate (not valid Unicode text)"
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if isinstance(key, str) and _has_surrogate(key):
                    return "a property name holds a lone surrogate (not valid Unicode text)"
                stack.append((depth + 1, child))
        elif isinstance(item, list | tuple):
            stack.extend((depth + 1, child) for child in item)
    return None


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _caller() -> str:
    token = get_access_token()
    if token is None:
        return "local"
    return getattr(token, "subject", None) or token.client_id or "authenticated"


def _target(method: str, params: object) -> str:
    """The tool (or resource, prompt) a request is about, for the audit; else its method."""
    if not isinstance(params, Mapping):
        return method
    key = {"tools/call": "name", "prompts/get": "name", "resources/read": "uri"}.get(method)
    value = params.get(key) if key else None
    if method == "tools/call" and isinstance(params.get("arguments"), Mapping):
        inner = params["arguments"].get("name")  # dynamic mode's call_tool names its tool
        value = f"{value}:{inner}" if isinstance(inner, str) and isinstance(value, str) else value
    if not isinstance(value, str):
        return method
    return escape_invisible(value.encode("utf-8", "replace").decode("utf-8"))[:200]


class RefusalAudit:
    """Server middleware, outermost of ours: see the module's docstring."""

    def __init__(self, refusals: Refusals) -> None:
        self._refusals = refusals

    async def __call__(self, ctx: Any, call_next: Callable[[Any], Any]) -> Any:
        method, params = ctx.method, ctx.params
        problem = params_problem(params)
        if problem is not None:
            self._refusals.audit_refusal(
                _caller(), _target(method, params), f"malformed request: {problem}"
            )
            raise _marked(MCPError(code=types.INVALID_PARAMS, message=f"Invalid params: {problem}"))
        try:
            return await call_next(ctx)
        except MCPError as exc:
            if not getattr(exc, "mcpmint_audited", False):
                reason = f"{method} refused ({exc.error.code}): {exc.error.message}"
                arguments = params.get("arguments") if isinstance(params, Mapping) else None
                self._refusals.audit_refusal(
                    _caller(), _target(method, params), reason[:300], arguments
                )
            message = escape_invisible(exc.error.message)
            if message == exc.error.message:
                raise
            raise _marked(
                MCPError(code=exc.error.code, message=message, data=exc.error.data)
            ) from None
        except Exception as exc:  # the SDK's params validation; the SDK answers it
            kind = "invalid params" if type(exc).__name__ == "ValidationError" else "failed"
            reason = f"{method} refused: {kind} ({type(exc).__name__})"
            arguments = params.get("arguments") if isinstance(params, Mapping) else None
            self._refusals.audit_refusal(_caller(), _target(method, params), reason, arguments)
            raise


def _marked(error: MCPError) -> MCPError:
    error.mcpmint_audited = True  # type: ignore[attr-defined]
    return error


def malformed_answer(raw: str | bytes) -> tuple[dict[str, Any], str, str] | None:
    """For a message the SDK's parser refused: the JSON-RPC error answer to send (with the
    request's `id` when Python's more lenient `json` can find it), the target for the audit
    and the reason. None for a notification or a response (nothing to answer)."""
    text = raw.decode("utf-8", errors="replace") if isinstance(raw, bytes) else raw
    try:
        message = json.loads(text)
    except RecursionError:
        # Too deep for the parser: the top level's scalars (the id, the method) still count.
        message = _top_level_scalars(text)
        ident = message.get("id")
        if isinstance(ident, bool) or not isinstance(ident, str | int):
            ident = None
        method = message.get("method")
        answer = _error(
            ident,
            types.INVALID_PARAMS if ident is not None else PARSE_ERROR,
            "Invalid params: nested too deeply",
        )
        return answer, method if isinstance(method, str) else "", "nested too deeply"
    except ValueError:
        return _error(None, PARSE_ERROR, "Parse error: not JSON"), "", "not JSON"
    if not isinstance(message, dict):
        if isinstance(message, list):
            reason = "batches are not supported"
        else:
            reason = "not a JSON-RPC message"
        return _error(None, types.INVALID_REQUEST, f"Invalid request: {reason}"), "", reason
    method = message.get("method")
    ident = message.get("id")
    if "result" in message or "error" in message or (isinstance(method, str) and ident is None):
        return None  # a response or a notification: nothing to answer
    if isinstance(ident, bool) or not isinstance(ident, str | int) or _has_surrogate(str(ident)):
        return _error(None, types.INVALID_REQUEST, "Invalid request: bad id"), "", "bad id"
    if not isinstance(method, str):
        return _error(ident, types.INVALID_REQUEST, "Invalid request: no method"), "", "no method"
    params = message.get("params")
    problem = params_problem(params) or "params do not match the method's schema"
    target = _target(method, params)
    return _error(ident, types.INVALID_PARAMS, f"Invalid params: {problem}"), target, problem


def _top_level_scalars(text: str) -> dict[str, Any]:
    """The members of a JSON object's top level whose values are strings or numbers, found
    without recursion (for a document too deep to parse)."""
    found: dict[str, Any] = {}
    decoder = json.JSONDecoder()
    depth, i, key = 0, 0, None
    while i < len(text):
        c = text[i]
        if c == '"':
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                return found
            rest = text[end:].lstrip()
            if depth == 1 and key is None and rest.startswith(":"):
                key = value
                i = len(text) - len(rest) + 1
                continue
            if depth == 1 and key is not None:
                found.setdefault(key, value)
            key = None if depth == 1 else key
            i = end
            continue
        if c in "[{":
            depth += 1
        elif c in "]}":
            depth -= 1
        elif c == ",":
            key = None if depth == 1 else key
        elif depth == 1 and key is not None and (c == "-" or c.isdigit()):
            try:
                value, end = decoder.raw_decode(text, i)
            except ValueError:
                return found
            found.setdefault(key, value)
            key, i = None, end
            continue
        elif depth == 1 and key is not None and not c.isspace():
            key = None if c in "tfn" else key
        i += 1
    return found


def _error(ident: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}


def _raw_input(exc: Exception) -> str | None:
    """The raw text of a message the SDK could not parse (its pydantic `json_invalid`)."""
    errors = getattr(exc, "errors", None)
    if not callable(errors):
        return None
    try:
        found = errors()
    except Exception:
        return None
    for error in found:
        if not isinstance(error, dict) or error.get("type") != "json_invalid":
            continue
        raw = error.get("input")
        if isinstance(raw, str | bytes):
            return raw if isinstance(raw, str) else raw.decode("utf-8", errors="replace")
    return None


@asynccontextmanager
async def guarded_stdio(
    refusals: Refusals,
) -> AsyncIterator[tuple[Any, Any]]:
    """The SDK's stdio transport, with the messages it could not parse answered here."""
    from mcp.server.stdio import stdio_server

    # The SDK reads and parses the lines; this keeps the line it parsed last, so that a message
    # it refuses can be read again here (its errors carry the raw text only for invalid JSON).
    lines = _Lines(
        anyio.wrap_file(io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8", errors="replace"))
    )
    async with stdio_server(stdin=lines) as (read, write):  # type: ignore[arg-type]
        send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)

        async def forward() -> None:
            async with send:
                async for item in read:
                    if isinstance(item, Exception):
                        await _answer(item, write, refusals, lines.last)
                        continue
                    await send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(forward)
            yield receive, write
            tg.cancel_scope.cancel()


class _Lines:
    """The process's stdin lines, remembering the last one handed out."""

    def __init__(self, file: Any) -> None:
        self._file = file
        self.last = ""

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        async for line in self._file:
            self.last = line
            yield line


async def _answer(exc: Exception, write: Any, refusals: Refusals, last: str = "") -> None:
    # Sequential: the SDK's reader waits for this exception to be taken before its next line.
    raw = _raw_input(exc) or last or None
    if raw is None:
        answer = _error(None, PARSE_ERROR, "Parse error")
        target, reason = "", "unparseable message"
    else:
        found = malformed_answer(raw)
        if found is None:
            return
        answer, target, reason = found
    refusals.audit_refusal("local", target or "(unknown)", f"malformed request: {reason}")
    message = types.jsonrpc_message_adapter.validate_python(answer)
    await write.send(SessionMessage(message))


class HttpGuard:
    """ASGI middleware, outermost: see the module's docstring."""

    def __init__(self, app: Any, refusals: Refusals, path: str = "/mcp") -> None:
        self.app = app
        self._refusals = refusals
        self._path = path

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        body = bytearray()
        complete = False
        messages: list[Any] = []
        if scope.get("method") == "POST" and scope.get("path") == self._path:
            while True:
                message = await receive()
                messages.append(message)
                if message["type"] != "http.request":
                    break
                body.extend(message.get("body", b""))
                if not message.get("more_body", False):
                    complete = True
                    break
                if len(body) > _MAX_BODY:
                    break
        if complete and body:
            refused = self._unparseable(bytes(body))
            if refused is not None:
                answer, target, reason = refused
                self._refusals.audit_refusal(
                    _http_caller(scope), target or "(unknown)", f"malformed request: {reason}"
                )
                await _json_response(send, 400, answer)
                return

        async def replay() -> Any:
            return messages.pop(0) if messages else await receive()

        status: list[int] = []

        async def watch(message: Any) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        try:
            await self.app(scope, replay, watch)
        finally:
            if status and status[0] in _REFUSED_STATUSES:
                target = _body_target(bytes(body)) if complete else ""
                if not target:
                    target = _header(scope, b"mcp-name") or "(unknown)"
                reason = f"HTTP {status[0]} {scope.get('method', '')} {scope.get('path', '')}"
                self._refusals.audit_refusal(_http_caller(scope), target, reason)

    @staticmethod
    def _unparseable(body: bytes) -> tuple[dict[str, Any], str, str] | None:
        try:
            types.jsonrpc_message_adapter.validate_json(body, by_name=False)
        except Exception:
            found = malformed_answer(body)
            # Without an id to answer, the SDK's own answer (and the status audit) will do.
            if found is None or found[0]["id"] is None:
                return None
            return found
        return None


def _http_caller(scope: Any) -> str:
    user = scope.get("user")
    token = getattr(user, "access_token", None)
    if token is None:  # no verified token: who sent it is not known
        return "anonymous"
    return getattr(token, "subject", None) or token.client_id or "authenticated"


def _header(scope: Any, name: bytes) -> str:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return escape_invisible(value.decode("latin-1"))[:200]
    return ""


def _body_target(body: bytes) -> str:
    try:
        message = json.loads(body)
    except (ValueError, RecursionError):
        return ""
    if isinstance(message, dict) and isinstance(message.get("method"), str):
        return _target(message["method"], message.get("params"))
    return ""


async def _json_response(send: Any, status: int, answer: dict[str, Any]) -> None:
    body = json.dumps(answer).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(body)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})
