"""MCP resources, resource templates and prompts (`resources` and `prompts` in tools.json):
the catalog's side (reading and checking them; no MCP import, like the rest of the catalog).
The handlers that serve them are in `content_server.py`.

A resource is read through an HTTP GET (made by the same request, credential and upstream
code as a tool call, as a read-only tool without arguments beyond its template variables) or
by a handler in the package's hooks.py. A prompt's messages are its text with each `{name}`
placeholder replaced by the caller's value: plain substitution, never a template language
(`{{` and `}}` are literal braces). Reference: docs/manifests.md.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .spec import Tool

__all__ = [
    "ContentError",
    "PromptSpec",
    "ResourceSpec",
    "load_prompts",
    "load_resources",
    "render_text",
]

_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")
_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class ResourceSpec:
    name: str
    title: str
    description: str
    mime_type: str
    uri: str  # static, or ""
    uri_template: str  # or ""
    reader: Tool | None  # the read-only GET "tool" that reads it; None: a hooks.py handler

    def match(self, uri: str) -> dict[str, str] | None:
        """The template variables of `uri` (empty for the static URI), or None."""
        if self.uri:
            return {} if uri == self.uri else None
        pattern = _template_pattern(self.uri_template)
        found = pattern.fullmatch(uri)
        return None if found is None else dict(found.groupdict())


@dataclass(frozen=True)
class PromptArgumentSpec:
    name: str
    description: str
    required: bool


@dataclass(frozen=True)
class PromptSpec:
    name: str
    title: str
    description: str
    arguments: tuple[PromptArgumentSpec, ...]
    messages: tuple[tuple[str, str], ...]


class ContentError(ValueError):
    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.message = message


def _template_pattern(template: str) -> re.Pattern[str]:
    # Level 1: a variable matches one non-empty path segment's worth of characters.
    parts = re.split(r"(\{[A-Za-z_][A-Za-z0-9_]*\})", template)
    regex = "".join(
        f"(?P<{part[1:-1]}>[^/?#]+)" if _VARIABLE.fullmatch(part) else re.escape(part)
        for part in parts
    )
    return re.compile(regex)


def render_text(text: str, values: Mapping[str, str]) -> str:
    """`text` with each `{name}` replaced by `values[name]` ("" when absent); `{{` and `}}`
    are literal braces. Values are inserted as they are: never interpreted further."""

    def replace(match: re.Match[str]) -> str:
        token = match.group(0)
        if token in ("{{", "}}"):
            return token[0]
        return values.get(match.group(1) or "", "")

    return _TOKEN.sub(replace, text)


def load_resources(
    raw: Any,
    make_reader: Callable[[Mapping[str, Any], str, Sequence[str]], Tool],
) -> tuple[ResourceSpec, ...]:
    """Check `resources`; `make_reader(entry, pointer, variables)` builds the GET "tool"."""
    found: list[ResourceSpec] = []
    for p, entry, name in _named_entries(raw, "resources"):
        uri, template = _string(entry, "uri", p), _string(entry, "uriTemplate", p)
        if bool(uri) == bool(template):
            raise ContentError(p, "needs exactly one of uri and uriTemplate")
        variables = _VARIABLE.findall(template)
        if _VARIABLE.sub("", template).count("{") or _VARIABLE.sub("", template).count("}"):
            raise ContentError(f"{p}/uriTemplate", "only simple {name} expressions are allowed")
        handler = entry.get("handler", False)
        if not isinstance(handler, bool) or handler != (entry.get("request") is None):
            raise ContentError(p, "a resource has either a request or handler: true")
        reader = None if handler else make_reader(entry, p, variables)
        found.append(
            ResourceSpec(
                name=name,
                title=_string(entry, "title", p),
                description=_string(entry, "description", p),
                mime_type=_string(entry, "mimeType", p) or "application/json",
                uri=uri,
                uri_template=template,
                reader=reader,
            )
        )
    names = [r.name for r in found]
    if len(set(names)) != len(names):
        raise ContentError("/resources", "duplicate resource name")
    return tuple(found)


def load_prompts(raw: Any) -> tuple[PromptSpec, ...]:
    found: list[PromptSpec] = []
    for p, entry, name in _named_entries(raw, "prompts"):
        arguments = []
        for j, arg in enumerate(_list(entry.get("arguments", []), f"{p}/arguments")):
            q = f"{p}/arguments/{j}"
            if not isinstance(arg, Mapping) or not isinstance(arg.get("required", False), bool):
                raise ContentError(q, "must be an object with a boolean `required`")
            arguments.append(
                PromptArgumentSpec(
                    _string(arg, "name", q), _string(arg, "description", q), arg["required"]
                )
            )
        messages = []
        for j, message in enumerate(_list(entry.get("messages"), f"{p}/messages")):
            q = f"{p}/messages/{j}"
            if not isinstance(message, Mapping) or message.get("role") not in _ROLES:
                raise ContentError(q, "must be an object with role user or assistant")
            messages.append((str(message["role"]), _string(message, "text", q)))
        found.append(
            PromptSpec(
                name=name,
                title=_string(entry, "title", p),
                description=_string(entry, "description", p),
                arguments=tuple(arguments),
                messages=tuple(messages),
            )
        )
    return tuple(found)


def _named_entries(raw: Any, section: str) -> Iterator[tuple[str, Mapping[str, Any], str]]:
    """(pointer, entry, name) of each entry of the array `/section` (absent: none), checked
    one at a time, so the first bad entry is the one reported."""
    if raw is None:
        return
    if not isinstance(raw, list):
        raise ContentError(f"/{section}", "must be an array")
    for index, entry in enumerate(raw):
        p = f"/{section}/{index}"
        if not isinstance(entry, Mapping):
            raise ContentError(p, "must be an object")
        name = _string(entry, "name", p)
        if not _NAME.match(name):
            raise ContentError(f"{p}/name", f"{name!r} is not a valid name")
        yield p, entry, name


def _string(raw: Mapping[str, Any], key: str, p: str) -> str:
    value = raw.get(key, "")
    if not isinstance(value, str):
        raise ContentError(f"{p}/{key}", "must be a string")
    return value


def _list(value: Any, p: str) -> list[Any]:
    if not isinstance(value, list):
        raise ContentError(p, "must be an array")
    return value
