"""Hooks and handler tools: the package owner's Python, called at fixed points of a call.

The generated package's user-owned `hooks.py` makes one `Hooks` registry and registers, with
decorators, handler functions (the tools a manifest marks `handler: true`), `before_call`
hooks (rewrite the arguments or refuse the call) and `after_call` hooks (rewrite the result),
for one tool or for all. The generated `server.py` passes that registry to `build_server`; the
runtime never imports the package itself.

Order of a call (docs/manifests.md): scopes, size, argument validation, value allowlists, then
`before_call` (all-tools hooks first, then the tool's own), the rewritten arguments validated
again, then confirmation, then the upstream request or the handler, then `after_call` (the
tool's own first, then all-tools hooks).
"""

from __future__ import annotations

import inspect
import json
import logging
import typing
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel, ValidationError

from .arguments import ArgumentValidator
from .catalog import Tool
from .request import without_nulls
from .results import OutputValidator, error_result

__all__ = [
    "ALL_TOOLS",
    "AfterCall",
    "BeforeCall",
    "Handler",
    "HookError",
    "Hooks",
    "Refusal",
    "describe_handler_call",
    "handler_result",
]

logger = logging.getLogger(__name__)

ALL_TOOLS = "*"
# Where a handler tool's stub is generated, and where it must be pasted to take effect.
STUBS_FILE = "_generated/handler_stubs.py"
HOOKS_FILE = "hooks.py"
_SHOWN_CHARS = 2000


@dataclass(frozen=True)
class Refusal:
    """Returned by a `before_call` hook: the call stops and the model reads `message`."""

    message: str


class HookError(ValueError):
    """The hooks registry does not fit the catalog (a hook for a tool that does not exist)."""


# A hook may be a plain function or a coroutine function.
BeforeCall = Callable[[str, dict[str, Any], str], "dict[str, Any] | Refusal | Awaitable[Any]"]
AfterCall = Callable[
    [str, dict[str, Any], types.CallToolResult],
    "types.CallToolResult | Awaitable[types.CallToolResult]",
]
Handler = Callable[..., Any]
_F = TypeVar("_F", bound=Callable[..., Any])


class Hooks:
    """The registry `hooks.py` fills with decorators:

    hooks = Hooks()

    @hooks.handler("internal_score_lead")
    async def internal_score_lead(arguments: models.InternalScoreLeadArguments) -> ...:
        ...

    @hooks.before_call("internal_get_customer")
    def strip_prefix(tool: str, arguments: dict[str, Any], caller: str) -> ...:
        ...
    """

    def __init__(self) -> None:
        self._handlers: dict[str, Handler] = {}
        self._before: dict[str, list[BeforeCall]] = {}
        self._after: dict[str, list[AfterCall]] = {}
        self._resources: dict[str, Callable[..., Any]] = {}

    # ------------------------------------------------------------------ registering
    def handler(self, tool: str) -> Callable[[_F], _F]:
        """Register the function that answers handler tool `tool`.

        Its one parameter, `arguments`, gets the validated arguments: as the annotated
        pydantic model when it is annotated with one, else as a dict. It returns a pydantic
        model, a dict (the structured result), or a string (a text result).
        """

        def register(function: _F) -> _F:
            if tool in self._handlers:
                raise HookError(f"two handlers are registered for tool {tool!r}")
            self._handlers[tool] = function
            return function

        return register

    def resource(self, name: str) -> Callable[[_F], _F]:
        """Register `read(uri: str, variables: dict[str, str]) -> str` for resource `name`
        (a manifest resource with `handler: true`); it returns the resource's text."""

        def register(function: _F) -> _F:
            if name in self._resources:
                raise HookError(f"two readers are registered for resource {name!r}")
            self._resources[name] = function
            return function

        return register

    def before_call(self, tool: str = ALL_TOOLS) -> Callable[[_F], _F]:
        """Register `hook(tool, arguments, caller) -> arguments | Refusal` for one tool (or,
        without a name, for all): it may rewrite the arguments (they are validated again) or
        refuse the call with a message."""

        def register(function: _F) -> _F:
            self._before.setdefault(tool, []).append(function)
            return function

        return register

    def after_call(self, tool: str = ALL_TOOLS) -> Callable[[_F], _F]:
        """Register `hook(tool, arguments, result) -> result` for one tool (or all)."""

        def register(function: _F) -> _F:
            self._after.setdefault(tool, []).append(function)
            return function

        return register

    # ------------------------------------------------------------------ the runtime's side
    def check(self, tools: Iterable[Tool], resources: Iterable[str] = ()) -> None:
        """A hook or handler registered for a tool that does not exist is a typo that would
        silently never run: refuse to start instead."""
        by_name = {tool.name: tool for tool in tools}
        for name in sorted(set(self._resources) - set(resources)):
            raise HookError(f"{HOOKS_FILE} registers a reader for unknown resource {name!r}")
        for name in sorted({*self._handlers, *self._before, *self._after} - {ALL_TOOLS}):
            if name not in by_name:
                raise HookError(f"{HOOKS_FILE} registers a hook for unknown tool {name!r}")
        for name in sorted(self._handlers):
            if not by_name[name].handler:
                raise HookError(
                    f"{HOOKS_FILE} registers a handler for {name!r}, which is an HTTP tool; "
                    "use before_call/after_call hooks to change what it sends or returns"
                )

    async def gate(
        self, tool: Tool, arguments: Mapping[str, Any], caller: str, validator: ArgumentValidator
    ) -> Mapping[str, Any] | types.CallToolResult:
        """The `before_call` step of a call whose arguments are already valid: the arguments
        to go on with, or the error result that stops the call (a refusal, or rewritten
        arguments that no longer match the tool's schema)."""
        if not (self._before.get(tool.name) or self._before.get(ALL_TOOLS)):
            return arguments
        outcome = await self.before(tool.name, dict(arguments), caller)
        if isinstance(outcome, Refusal):
            return error_result(f"{outcome.message} (refused by this server; nothing was sent)")
        if outcome != arguments:
            problems = validator.errors(outcome)
            if problems:
                listed = "\n".join(f"- {p}" for p in problems)
                return error_result(
                    f"Internal error in the MCP server: a before_call hook of {tool.name} "
                    f"rewrote the arguments into ones its schema refuses; nothing was sent:\n"
                    f"{listed}"
                )
        return outcome

    async def before(
        self, tool: str, arguments: dict[str, Any], caller: str
    ) -> dict[str, Any] | Refusal:
        """Every `before_call` hook of `tool`, all-tools ones first; a refusal stops at once."""
        current = arguments
        for hook in [*self._before.get(ALL_TOOLS, ()), *self._before.get(tool, ())]:
            outcome = await _maybe_await(hook(tool, dict(current), caller))
            if isinstance(outcome, Refusal):
                return outcome
            if not isinstance(outcome, Mapping):
                raise TypeError(
                    f"before_call hook {_name(hook)} returned {type(outcome).__name__}, not the "
                    "arguments (a dict) or a Refusal"
                )
            current = dict(outcome)
        return current

    async def after(
        self, tool: str, arguments: Mapping[str, Any], result: types.CallToolResult
    ) -> types.CallToolResult:
        """Every `after_call` hook of `tool`, its own first, then the all-tools ones."""
        for hook in [*self._after.get(tool, ()), *self._after.get(ALL_TOOLS, ())]:
            outcome = await _maybe_await(hook(tool, dict(arguments), result))
            if not isinstance(outcome, types.CallToolResult):
                raise TypeError(
                    f"after_call hook {_name(hook)} returned {type(outcome).__name__}, not a "
                    "CallToolResult"
                )
            result = outcome
        return result

    async def read_resource(self, name: str, uri: str, variables: dict[str, str]) -> str:
        """The text of handler resource `name`; a missing reader is a clear protocol error."""
        return await _read_resource(self, name, uri, variables)

    async def call_handler(
        self, tool: Tool, arguments: Mapping[str, Any], output: OutputValidator | None
    ) -> types.CallToolResult:
        """Answer a handler tool. A missing or unfinished handler is an error result that says
        where to write it, never a crash."""
        function = self._handlers.get(tool.name)
        if function is None:
            return error_result(
                f"Tool {tool.name} is not implemented yet: copy its stub from "
                f"{STUBS_FILE} into {HOOKS_FILE} and fill it in."
            )
        if tool.meta.get("nullsAbsent") is True:
            # Strict-mode schemas: a null optional argument means "not given", as for a
            # request (request.build_request); the handler never sees the nulls.
            arguments = without_nulls(arguments)
        try:
            value = await _maybe_await(function(_typed(function, arguments)))
        except NotImplementedError:
            return error_result(
                f"Tool {tool.name} is not implemented yet: fill in {HOOKS_FILE}:{_name(function)}."
            )
        return handler_result(tool, value, output)


async def _read_resource(hooks: Hooks, name: str, uri: str, variables: dict[str, str]) -> str:
    function = hooks._resources.get(name)
    if function is None:
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message=f"Resource {name} is not implemented yet: register a reader with "
            f'@hooks.resource("{name}") in {HOOKS_FILE}.',
        )
    try:
        value = await _maybe_await(function(uri, dict(variables)))
    except NotImplementedError:
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message=f"Resource {name} is not implemented yet: fill in "
            f"{HOOKS_FILE}:{_name(function)}.",
        ) from None
    if not isinstance(value, str):
        raise MCPError(
            code=types.INTERNAL_ERROR,
            message=f"The reader of resource {name} returned {type(value).__name__}, not text.",
        )
    return value


def describe_handler_call(tool: Tool, arguments: Mapping[str, Any]) -> str:
    """The confirmation question for a handler tool: what runs, with which arguments."""
    shown = json.dumps(dict(arguments), ensure_ascii=False, sort_keys=True)
    if len(shown) > _SHOWN_CHARS:
        shown = shown[:_SHOWN_CHARS] + "..."
    return f"Run {tool.title or tool.name} ({tool.name}) with {shown}?"


def handler_result(tool: Tool, value: Any, output: OutputValidator | None) -> types.CallToolResult:
    """What a handler returned, as a tool result checked against the output schema."""
    if isinstance(value, types.CallToolResult):
        return value
    if isinstance(value, str) and tool.output_schema is None:
        return types.CallToolResult(content=[types.TextContent(type="text", text=value)])
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    structured = {"result": value} if tool.output_wrap == "result" else value
    try:
        text = json.dumps(structured, ensure_ascii=False)
    except (TypeError, ValueError):
        return error_result(
            f"Internal error in the MCP server: the handler of {tool.name} returned a "
            f"{type(value).__name__}, which is not JSON."
        )
    if not isinstance(structured, dict):
        return types.CallToolResult(content=[types.TextContent(type="text", text=text)])
    if output is not None:
        mismatch = output.first_error(structured)
        if mismatch is not None:
            logger.warning("handler of %s: result does not match the output schema", tool.name)
            return error_result(
                f"Internal error in the MCP server: the handler of {tool.name} returned a "
                f"result that does not match the tool's output schema ({mismatch})."
            )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def _typed(function: Handler, arguments: Mapping[str, Any]) -> Any:
    """The arguments as the handler's annotated pydantic model (already validated against
    the same schema, so this only converts), else as a plain dict."""
    try:
        hints = typing.get_type_hints(function)
    except Exception:  # an annotation that does not resolve: the handler gets a dict
        hints = {}
    model = hints.get("arguments")
    if isinstance(model, type) and issubclass(model, BaseModel):
        try:
            return model.model_validate(dict(arguments))
        except ValidationError:
            logger.warning("%s: arguments do not fit %s", _name(function), model.__name__)
    return dict(arguments)


async def _maybe_await(value: Any) -> Any:
    return await value if inspect.isawaitable(value) else value


def _name(function: Callable[..., Any]) -> str:
    return getattr(function, "__name__", repr(function))
