"""Mapping upstream outcomes to MCP tool results.

The SDK client validates `structuredContent` against the tool's `outputSchema` and raises on a
mismatch, which would lose a response whose request may already have changed something. So
the same check runs here first. Output schemas never require a property, so a value that
breaks the schema (a `null` where the spec promised an object, a number sent as a string) is
left out of the structured result, and the text says which values were left out and carries
the whole response. Only a response whose root does not match becomes an error result, one
that says the call succeeded.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from typing import Any

import mcp_types as types
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped, unused-ignore]
from jsonschema.protocols import Validator  # type: ignore[import-untyped, unused-ignore]

from .arguments import format_path, spec_validator
from .catalog import Tool
from .limits import pagination_arguments
from .projection import Projection, project
from .redaction import redact
from .upstream import UpstreamResponse
from .visible import INVISIBLE

__all__ = [
    "ERROR_BODY_CHARS",
    "OutputValidator",
    "error_result",
    "truncation_note",
    "upstream_result",
]

ERROR_BODY_CHARS = 2000
_TEXT_CHARS = 100_000
# ANSI escape sequences, C0/C1 controls other than tab and newline, and bidi overrides: upstream
# text must not be able to hide or reorder what the model and the user see.
_UNSAFE_TEXT = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|" + INVISIBLE.pattern)


class OutputValidator:
    """Checks structured content against a tool's output schema, as the SDK client will."""

    def __init__(self, schema: Mapping[str, Any]) -> None:
        self._schema = dict(schema)
        self._validator: Validator | None = None

    def first_error(self, instance: Any) -> str | None:
        """The mismatch the client would report (its `best_match`), or None when it conforms."""
        error = best_match(self._compiled().iter_errors(instance))
        if error is None:
            return None
        return f"{format_path(error.absolute_path, root='(root)')}: {error.message}"

    def conform(self, instance: Any) -> tuple[Any, list[str]]:
        """`instance` without the values that break the schema, and their paths.

        Removal stops at the root: if the root itself does not match, the returned instance
        still does not, and `first_error` says why.
        """
        removed: list[str] = []
        current = instance
        for _ in range(_MAX_CONFORM_PASSES):
            paths = sorted(
                {tuple(e.absolute_path) for e in self._compiled().iter_errors(current)},
                key=lambda p: (len(p), [str(t) for t in p]),
                reverse=True,
            )
            paths = [p for p in paths if p]
            if not paths:
                break
            if current is instance:
                current = copy.deepcopy(instance)
            for path in paths:
                if _remove(current, path):
                    removed.append(format_path(path, root="(root)"))
            if len(removed) > _MAX_REMOVED:
                break
        return current, removed

    def _compiled(self) -> Validator:
        if self._validator is None:
            Draft202012Validator.check_schema(self._schema)
            self._validator = spec_validator(self._schema)
        return self._validator


def error_result(message: str) -> types.CallToolResult:
    """An `isError` result the model can read and act on."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )


def upstream_result(
    tool: Tool,
    response: UpstreamResponse,
    output: OutputValidator | None,
    secrets: Iterable[str] = (),
    *,
    concise: Projection | None = None,
) -> types.CallToolResult:
    """The tool result for an upstream response; `concise`: the projection to apply
    (`response_format: concise`), whose note of what was left out ends the text."""
    status = f"HTTP {response.status} {response.reason}".strip()
    if 300 <= response.status < 400:
        location = _clean(response.location)[:500] or "no location"
        return error_result(
            redact(
                f"The upstream API answered {status}, a redirect ({location}); redirects are not "
                "followed.",
                secrets,
            )
        )
    if not 200 <= response.status < 300:
        return error_result(
            redact(f"The upstream API answered {status}.{_body_excerpt(response)}", secrets)
        )
    if response.truncated:
        return _truncated_result(tool, response, status, secrets)
    if not response.body.strip():
        done = f"HTTP {response.status}: done, no content"
        if tool.output_schema is None:
            return _text_result(done)
        return error_result(
            f"{done}. {_succeeded(status)} The tool's output schema expects a JSON response, "
            "so this is reported as an error."
        )
    data = _json(response)
    if data is _NOT_JSON:
        text = _clean(response.body.decode("utf-8", errors="replace"))
        if tool.output_schema is None:
            return _text_result(_trim(text, _TEXT_CHARS))
        kind = response.content_type or "no content type"
        return error_result(
            redact(
                f"{_succeeded(status)} The response is not JSON ({kind}), but the tool's output "
                f"schema expects JSON; here it is as text:\n{_trim(text, ERROR_BODY_CHARS)}",
                secrets,
            )
        )
    # S15: strings in structured content are cleaned like the text (ANSI, controls, bidi).
    structured = _clean_data({"result": data} if tool.output_wrap == "result" else data)
    note = ""
    if concise is not None:
        structured, note = project(structured, concise, tool.output_wrap)
    text = _clean(json.dumps(structured, ensure_ascii=False)) + (f"\n\n{note}" if note else "")
    mismatch: str | None = None
    if not isinstance(structured, dict):
        if output is None:
            return _text_result(text)
        mismatch = "(root): the response is not a JSON object"
    elif output is not None:
        structured, removed = output.conform(structured)
        mismatch = output.first_error(structured)
        if mismatch is None and removed:
            text += (
                f"\n\n[{len(removed)} value(s) in this response do not match the tool's output "
                "schema and are left out of the structured result; they are in the JSON above: "
                + ", ".join(removed[:20])
                + (" ..." if len(removed) > 20 else "")
                + "]"
            )
    if mismatch is not None:
        return error_result(
            redact(
                f"{_succeeded(status)} Its response does not match the tool's output schema "
                f"({_trim(mismatch, 500)}), so it is returned here as text:\n"
                f"{_trim(text, ERROR_BODY_CHARS)}",
                secrets,
            )
        )
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)], structured_content=structured
    )


def truncation_note(tool: Tool, response: UpstreamResponse) -> str:
    """What was cut, and how to ask for less (the tool's pagination-like arguments)."""
    kept = len(response.body)
    if response.truncated < 0:
        cut = "the rest (more than 10 MiB in all) was cut"
    else:
        cut = f"{response.truncated} bytes were cut"
    note = (
        f"[The response was truncated: only its first {kept} bytes are shown above; {cut}, "
        "by this server's response size limit."
    )
    names = pagination_arguments(tool)
    if names:
        note += " Ask for less with " + ", ".join(f"`{n}`" for n in names) + "."
    else:
        note += " Narrow the request (filters) to get a smaller response."
    return note + "]"


def _truncated_result(
    tool: Tool, response: UpstreamResponse, status: str, secrets: Iterable[str]
) -> types.CallToolResult:
    # A cut JSON document does not parse, so it cannot be structured content: the text result
    # carries the partial body and the note. With an output schema the SDK client would
    # reject a result without structured content, so there it is an error result.
    text = _clean(response.body.decode("utf-8", errors="replace"))
    note = truncation_note(tool, response)
    if tool.output_schema is None:
        return _text_result(redact(f"{text}\n\n{note}", secrets))
    return error_result(redact(f"{_succeeded(status)} {note.strip('[]')}\n{text}", secrets))


_NOT_JSON = object()
_MAX_CONFORM_PASSES = 20
_MAX_REMOVED = 1000


def _remove(document: Any, path: tuple[Any, ...]) -> bool:
    """Delete the value at `path` (deepest first, so array indexes stay valid)."""
    parent = document
    for token in path[:-1]:
        try:
            parent = parent[token]
        except (KeyError, IndexError, TypeError):
            return False
    last = path[-1]
    if isinstance(parent, dict) and last in parent:
        del parent[last]
        return True
    if isinstance(parent, list) and isinstance(last, int) and 0 <= last < len(parent):
        del parent[last]
        return True
    return False


def _json(response: UpstreamResponse) -> Any:
    essence = response.content_type.split(";", 1)[0].strip().lower()
    # A missing content type is common for JSON APIs; a declared non-JSON one is believed.
    if essence and essence != "application/json" and not essence.endswith("+json"):
        return _NOT_JSON
    try:
        return json.loads(response.body)
    except ValueError:
        return _NOT_JSON


def _succeeded(status: str) -> str:
    return f"The upstream API call SUCCEEDED ({status}) and has been carried out: do not repeat it."


def _text_result(text: str) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


def _body_excerpt(response: UpstreamResponse) -> str:
    text = _clean(response.body.decode("utf-8", errors="replace")).strip()
    return f"\n{_trim(text, ERROR_BODY_CHARS)}" if text else ""


def _clean(text: str) -> str:
    return _UNSAFE_TEXT.sub("", text)


def _clean_data(value: Any) -> Any:
    """A parsed JSON value with every string (keys too) cleaned by `_clean`."""
    if isinstance(value, str):
        return _clean(value)
    if isinstance(value, list):
        return [_clean_data(item) for item in value]
    if isinstance(value, dict):
        return {_clean(str(k)): _clean_data(v) for k, v in value.items()}
    return value


def _trim(text: str, limit: int) -> str:
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... [{len(text) - limit} more characters trimmed]"
