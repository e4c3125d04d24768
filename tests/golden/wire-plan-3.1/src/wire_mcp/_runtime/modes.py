"""Tool modes (issue 8): which tools `tools/list` shows, and the three tools of dynamic mode.

- `all`: every tool is listed (the default).
- `dynamic`: a small fixed set is listed, `<ns>_search_tools` (words -> the best matching
  tools), `<ns>_describe_tool` (a name -> its schemas and annotations) and `<ns>_call_tool`
  (a name and its arguments), plus the core tools. A call through `call_tool` is unwrapped into
  an ordinary call of the named tool and goes through exactly the path a listed tool's call
  does (scopes, size, validation, value allowlists, rate limit, confirmation, audit).
- `groups`: the tools of the listed groups (by tag unless the config names groups), plus the
  core tools; `<PREFIX>_TOOL_GROUPS` (comma-separated group names) overrides the config's
  choice when set.

Modes decide what is *listed*; the operator's allowlists (`allowlist.py`) decide what
*exists*. A tool that is allowed but not listed can still be called by name (a model that read
it through `describe_tool` may call it directly), and it is checked like any other.
The modes travel in `tools.json` under `toolModes` (docs/tools-json.md).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from .projection import Projection, ProjectionError, load_projection
from .search import Document, SearchIndex
from .tokens import TOKEN_ARGUMENT

if TYPE_CHECKING:
    import mcp_types as types

    from .catalog import Catalog, Tool

__all__ = [
    "MODES",
    "ModesError",
    "ToolModes",
    "ToolRouter",
    "load_modes",
    "meta_names",
    "meta_tool_definitions",
]

MODES = ("all", "dynamic", "groups")
SEARCH_LIMIT = 8
MAX_SEARCH_LIMIT = 25
MAX_QUERY_CHARS = 500
_ONE_LINE = 160


class ModesError(ValueError):
    """`toolModes` in `tools.json`, or `<PREFIX>_TOOL_GROUPS`, is unusable."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(f"{pointer}: {message}" if pointer else message)
        self.pointer = pointer
        self.message = message


@dataclass(frozen=True)
class ToolModes:
    """The `toolModes` section of `tools.json`."""

    mode: str = "all"
    core: tuple[str, ...] = ()
    groups: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    listed_groups: tuple[str, ...] = ()
    tags: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    projections: Mapping[str, Projection] = field(default_factory=dict)


def load_modes(raw: Any, tool_names: Sequence[str]) -> ToolModes:
    """Check the `toolModes` section (absent: mode `all`) against the catalog's tools.

    Raises:
        ModesError: a key is malformed or names a tool or group that does not exist.
    """
    if raw is None:
        return ToolModes()
    p = "/toolModes"
    if not isinstance(raw, Mapping):
        raise ModesError(p, "must be an object")
    known = set(tool_names)
    mode = raw.get("mode", "all")
    if mode not in MODES:
        raise ModesError(f"{p}/mode", f"must be one of {', '.join(MODES)}")
    core = _names(raw.get("core", []), f"{p}/core", known)
    groups_raw = raw.get("groups", {})
    if not isinstance(groups_raw, Mapping):
        raise ModesError(f"{p}/groups", "must be an object")
    groups = {
        str(name): _names(members, f"{p}/groups/{name}", known)
        for name, members in groups_raw.items()
    }
    listed = raw.get("listedGroups", [])
    if not isinstance(listed, list) or any(g not in groups for g in listed):
        raise ModesError(f"{p}/listedGroups", "must be a list of group names")
    tags_raw = raw.get("tags", {})
    if not isinstance(tags_raw, Mapping):
        raise ModesError(f"{p}/tags", "must be an object")
    tags = {}
    for name, values in tags_raw.items():
        if not isinstance(values, list) or not all(isinstance(v, str) for v in values):
            raise ModesError(f"{p}/tags/{name}", "must be a list of strings")
        tags[str(name)] = tuple(values)
    projections = {}
    formats = raw.get("responseFormat", {})
    if not isinstance(formats, Mapping):
        raise ModesError(f"{p}/responseFormat", "must be an object")
    for name, spec in formats.items():
        where = f"{p}/responseFormat/{name}"
        if name not in known:
            raise ModesError(where, f"unknown tool {name!r}")
        if not isinstance(spec, Mapping):
            raise ModesError(where, "must be an object")
        try:
            projections[str(name)] = load_projection(spec)
        except ProjectionError as exc:
            raise ModesError(where, str(exc)) from None
    return ToolModes(
        mode=str(mode),
        core=core,
        groups=groups,
        listed_groups=tuple(listed),
        tags=tags,
        projections=projections,
    )


def _names(value: Any, pointer: str, known: set[str]) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ModesError(pointer, "must be a list of tool names")
    unknown = [v for v in value if v not in known]
    if unknown:
        raise ModesError(pointer, f"unknown tool {unknown[0]!r}")
    return tuple(value)


def meta_names(namespace: str) -> tuple[str, str, str]:
    """The names of dynamic mode's search, describe and call tools."""
    prefix = f"{namespace}_" if namespace else ""
    return f"{prefix}search_tools", f"{prefix}describe_tool", f"{prefix}call_tool"


def meta_tool_definitions(namespace: str, title: str = "") -> list[dict[str, Any]]:
    """Dynamic mode's three tools as `tools/list` sends them (the generator sizes them too)."""
    search, describe, call = meta_names(namespace)
    api = title or namespace or "this API"
    read_only = {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True}
    return [
        {
            "name": search,
            "title": "Search tools",
            "description": (
                f"Find the tools of {api} that match what you want to do, described in plain "
                f'words ("list the issues of a repository"). Returns the best matches\' '
                f"names, titles and one-line descriptions. Then use {describe} for a tool's "
                f"arguments and {call} to call it."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "minLength": 1,
                        "maxLength": MAX_QUERY_CHARS,
                        "description": "What you want to do, in a few words.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "maximum": MAX_SEARCH_LIMIT,
                        "default": SEARCH_LIMIT,
                        "description": "How many tools to return.",
                    },
                },
                "required": ["query"],
                "additionalProperties": False,
            },
            "annotations": {"title": "Search tools", **read_only, "openWorldHint": False},
        },
        {
            "name": describe,
            "title": "Describe a tool",
            "description": (
                f"The full definition of one tool of {api}, by name (from {search}): its "
                "description, input schema, output schema, annotations and whether the user "
                "must confirm each call."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {"name": {"type": "string", "minLength": 1, "maxLength": 128}},
                "required": ["name"],
                "additionalProperties": False,
            },
            "annotations": {"title": "Describe a tool", **read_only, "openWorldHint": False},
        },
        {
            "name": call,
            "title": "Call a tool",
            "description": (
                f"Call one tool of {api} by name, with its arguments as {describe} gives "
                "them. The call is checked exactly as a direct call would be; tools that "
                "change something may ask the user to confirm first."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 128},
                    "arguments": {"type": "object", "description": "The tool's arguments."},
                },
                "required": ["name"],
                "additionalProperties": False,
            },
            # The named tool may do anything its own annotations say: assume the worst here.
            "annotations": {
                "title": "Call a tool",
                "readOnlyHint": False,
                "destructiveHint": True,
                "idempotentHint": False,
                "openWorldHint": True,
            },
        },
    ]


class ToolRouter:
    """What `tools/list` shows, and the answers of dynamic mode's own tools."""

    def __init__(
        self, catalog: Catalog, allowed: Mapping[str, Tool], environ: Mapping[str, str]
    ) -> None:
        """`allowed`: the tools the operator's allowlists leave, by name.

        Raises:
            ModesError: `<PREFIX>_TOOL_GROUPS` names a group that does not exist.
        """
        import mcp_types as types  # here: the catalog, which imports this module, stays lean

        self._modes = modes = catalog.modes
        self._allowed = allowed
        names = [tool.name for tool in catalog.tools if tool.name in allowed]
        core = set(modes.core)
        self._meta: dict[str, types.Tool] = {}
        self._index: SearchIndex | None = None
        if modes.mode == "dynamic":
            definitions = meta_tool_definitions(catalog.server.namespace, catalog.server.title)
            self._meta = {d["name"]: types.Tool.model_validate(d) for d in definitions}
            self._search, self._describe, self._call = meta_names(catalog.server.namespace)
            self._index = SearchIndex(
                Document(
                    name=tool.name,
                    title=tool.title,
                    description=tool.description,
                    tags=modes.tags.get(tool.name, ()),
                    path="" if tool.request is None else tool.request.path,
                )
                for tool in catalog.tools
                if tool.name in allowed
            )
            self.listed_names = [name for name in names if name in core]
        elif modes.mode == "groups":
            chosen = _chosen_groups(catalog.server.env_prefix, modes, environ)
            members = {name for group in chosen for name in modes.groups[group]}
            self.listed_names = [name for name in names if name in core | members]
        else:
            self.listed_names = names

    @property
    def meta_tools(self) -> list[types.Tool]:
        """Dynamic mode's tools (none in the other modes)."""
        return list(self._meta.values())

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        meta = self._meta.get(name)
        return None if meta is None else meta.input_schema

    def route(
        self,
        params: types.CallToolRequestParams,
        may_call: Callable[[str], bool] = lambda name: True,
    ) -> types.CallToolResult | types.CallToolRequestParams:
        """A search or describe call's answer, or the parameters of the call to make: the
        named tool's, unwrapped from a `call_tool` call; anything else unchanged.
        `may_call`: whether the caller may call a tool; search and describe disclose only
        those (S26, `<P>_LIST_TOOLS=permitted`)."""
        if params.name not in self._meta:
            return params
        arguments = params.arguments or {}
        if params.name == self._call:
            name, inner = arguments.get("name"), arguments.get("arguments", {})
            extra = sorted(set(arguments) - {"name", "arguments", TOKEN_ARGUMENT})
            if not isinstance(name, str) or not name or not isinstance(inner, Mapping) or extra:
                return _error(
                    f"Invalid arguments for {self._call}: give `name` (a tool name, from "
                    f"{self._search}) and `arguments` (an object). Nothing was sent."
                )
            if name in self._meta:
                return _error(f"{name} cannot be called through {self._call}; call it directly.")
            inner = dict(inner)
            if TOKEN_ARGUMENT in arguments:  # the token fallback's, given beside `arguments`
                inner[TOKEN_ARGUMENT] = arguments[TOKEN_ARGUMENT]
            return params.model_copy(update={"name": name, "arguments": inner})
        allowed = self._meta[params.name].input_schema.get("properties", {})
        extra = sorted(set(arguments) - set(allowed))
        if extra:  # the schema says additionalProperties: false; the SDK checks nothing
            return _error(f"Unknown argument {extra[0]!r} for {params.name}.")
        if params.name == self._search:
            return self._search_result(arguments, may_call)
        return self._describe_result(arguments, may_call)

    def _search_result(
        self, arguments: Mapping[str, Any], may_call: Callable[[str], bool]
    ) -> types.CallToolResult:
        assert self._index is not None
        query, limit = arguments.get("query"), arguments.get("limit", SEARCH_LIMIT)
        if not isinstance(query, str) or not query.strip() or len(query) > MAX_QUERY_CHARS:
            return _error(f"`query` must be a non-empty string of at most {MAX_QUERY_CHARS}.")
        if isinstance(limit, bool) or not isinstance(limit, int):
            return _error("`limit` must be an integer.")
        limit = max(1, min(limit, MAX_SEARCH_LIMIT))
        permitted = [name for name in self._allowed if may_call(name)]
        found = [self._allowed[name] for name in self._index.search(query, limit, permitted)]
        matches = [
            {"name": tool.name, "title": tool.title, "description": _one_line(tool.description)}
            for tool in found
        ]
        hint = (
            f"Use {self._describe} for a tool's arguments, then {self._call}."
            if matches
            else "No tool matches these words; try other words (a noun and a verb)."
        )
        return _structured({"tools": matches, "hint": hint})

    def _describe_result(
        self, arguments: Mapping[str, Any], may_call: Callable[[str], bool]
    ) -> types.CallToolResult:
        name = arguments.get("name")
        tool = self._allowed.get(name) if isinstance(name, str) and may_call(name) else None
        if tool is None:
            return _error(f"Unknown tool: {name}. Use {self._search} to find tool names.")
        return _structured(
            {
                "name": tool.name,
                "title": tool.title,
                "description": tool.description,
                "inputSchema": dict(tool.input_schema),
                "outputSchema": None if tool.output_schema is None else dict(tool.output_schema),
                "annotations": dict(tool.annotations),
                "asksForConfirmation": tool.needs_confirmation,
                "call": f'{self._call} with {{"name": "{tool.name}", "arguments": {{...}}}}',
            }
        )


def _chosen_groups(prefix: str, modes: ToolModes, environ: Mapping[str, str]) -> tuple[str, ...]:
    variable = f"{prefix}_TOOL_GROUPS"
    raw = environ.get(variable)
    if raw is None:
        return modes.listed_groups
    chosen = tuple(g.strip() for g in raw.split(",") if g.strip())
    unknown = [g for g in chosen if g not in modes.groups]
    if unknown:
        raise ModesError(
            "",
            f"{variable} names an unknown group {unknown[0]!r}; the groups are: "
            + ", ".join(sorted(modes.groups)),
        )
    return chosen


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    sentence = line.split(". ", 1)[0]
    if len(sentence) > _ONE_LINE:
        return sentence[: _ONE_LINE - 3].rstrip() + "..."
    return sentence


def _structured(data: dict[str, Any]) -> types.CallToolResult:
    import mcp_types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=json.dumps(data, ensure_ascii=False))],
        structured_content=data,
    )


def _error(message: str) -> types.CallToolResult:
    import mcp_types as types

    return types.CallToolResult(
        content=[types.TextContent(type="text", text=message)], is_error=True
    )
