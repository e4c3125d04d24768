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

Over 600 lines: the section's checks (each key refused at its pointer) and the three meta
tools' answers (search results, describe's budgeted schema, the unwrapped call) read best
beside the modes they serve; the search itself is `search.py` and `semantic.py`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from .projection import Projection, ProjectionError, load_projection
from .search import Document, SearchIndex
from .semantic import MODEL, SemanticSearch, row_bytes
from .tokens import TOKEN_ARGUMENT

if TYPE_CHECKING:
    import mcp_types as types

    from .spec import ServerInfo, Tool

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
# The input schema describe_tool shows is cut to this many bytes of JSON (a few are 200 KB).
DESCRIBE_SCHEMA_BYTES = 6000
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
    # Semantic search (semantic.py): each tool's vector, its int8 bytes.
    vectors: Mapping[str, bytes] = field(default_factory=dict)


def _vectors(raw: Any, pointer: str, known: set[str]) -> dict[str, bytes]:
    """The `vectors` section: the model's name and each tool's vector (absent: none)."""
    if raw is None:
        return {}
    if not isinstance(raw, Mapping) or raw.get("model") != MODEL:
        raise ModesError(pointer, f"must be an object whose `model` is {MODEL!r}")
    tools = raw.get("tools")
    if not isinstance(tools, Mapping):
        raise ModesError(f"{pointer}/tools", "must be an object")
    vectors = {}
    for name, packed in tools.items():
        row = row_bytes(packed) if name in known and isinstance(packed, str) else None
        if row is None:
            raise ModesError(f"{pointer}/tools/{name}", "must be a known tool's vector")
        vectors[str(name)] = row
    return vectors


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
        vectors=_vectors(raw.get("vectors"), f"{p}/vectors", known),
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
                f"names, titles and a line about each. Then use {describe} for a tool's "
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
                f"One tool of {api}, by name (from {search}): its description, input schema "
                "with examples, an example call and whether the user must confirm each call. "
                "The output schema on request."
            ),
            "inputSchema": {
                "type": "object",
                "properties": {
                    "name": {"type": "string", "minLength": 1, "maxLength": 128},
                    "outputSchema": {
                        "type": "boolean",
                        "default": False,
                        "description": "Also give the schema of the tool's result.",
                    },
                },
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


class CatalogView(Protocol):
    """What the router reads of the catalogue (`catalog.Catalog`, which imports this module)."""

    @property
    def modes(self) -> ToolModes: ...

    @property
    def tools(self) -> tuple[Tool, ...]: ...

    @property
    def server(self) -> ServerInfo: ...


class ToolRouter:
    """What `tools/list` shows, and the answers of dynamic mode's own tools."""

    def __init__(
        self, catalog: CatalogView, allowed: Mapping[str, Tool], environ: Mapping[str, str]
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
        self._index: SearchIndex | SemanticSearch | None = None
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
                    parameters=_parameter_words(tool.input_schema),
                    namespace=catalog.server.namespace,
                    method="" if tool.request is None else tool.request.method,
                )
                for tool in catalog.tools
                if tool.name in allowed
            )
            if modes.vectors:
                self._index = SemanticSearch(self._index, modes.vectors)
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
        matches = []
        for tool in found:
            match = {"name": tool.name, "title": tool.title}
            line = _one_line(tool.description, tool.title)
            if line:
                match["about"] = line
            matches.append(match)
        hint = (
            f"Use {self._describe} for a tool's arguments, then {self._call}."
            if matches
            else "No tool matches these words; try other words (a noun and a verb)."
        )
        return _structured({"tools": matches, "hint": hint})

    def _describe_result(
        self, arguments: Mapping[str, Any], may_call: Callable[[str], bool]
    ) -> types.CallToolResult:
        name, output = arguments.get("name"), arguments.get("outputSchema", False)
        tool = self._allowed.get(name) if isinstance(name, str) and may_call(name) else None
        if tool is None:
            return _error(f"Unknown tool: {name}. Use {self._search} to find tool names.")
        if not isinstance(output, bool):
            return _error("`outputSchema` must be true or false.")
        schema, cut = fit_schema(tool.input_schema, DESCRIBE_SCHEMA_BYTES)
        examples = schema.get("examples")
        answer: dict[str, Any] = {
            "name": tool.name,
            "title": tool.title,
            "description": _after_title(tool.description, tool.title),
            "inputSchema": schema,
            "annotations": {k: v for k, v in tool.annotations.items() if k != "title"},
            "asksForConfirmation": tool.needs_confirmation,
        }
        # One call to copy: the first example's arguments, or none when none are required;
        # never made-up values (a placeholder teaches a wrong call).
        if isinstance(examples, list) and examples:
            example: Any = examples[0]
        elif not schema.get("required"):
            example = {}
        else:
            example = None
        if example is not None:
            answer["exampleCall"] = {
                "name": self._call,
                "arguments": {"name": tool.name, "arguments": example},
            }
        else:
            answer["call"] = (
                f'{self._call} with {{"name": "{tool.name}", "arguments": {{...}}}}, the '
                "arguments as inputSchema says"
            )
        if not answer["description"]:
            del answer["description"]  # it only repeated the title
        if cut:
            answer["note"] = cut
        if tool.output_schema is not None:
            if output:
                answer["outputSchema"] = dict(tool.output_schema)
            else:
                answer["more"] = (
                    f'{self._describe} with "outputSchema": true gives the result\'s schema.'
                )
        return _structured(answer)


def _parameter_words(schema: Mapping[str, Any]) -> tuple[str, ...]:
    """Each argument's name and the first sentence of its description: what a tool can be
    asked for ("only running containers", "issues assigned to a user")."""
    words = []
    properties = schema.get("properties")
    for name, prop in (properties if isinstance(properties, Mapping) else {}).items():
        text = prop.get("description", "") if isinstance(prop, Mapping) else ""
        first = _SENTENCE.split(text, 1)[0] if isinstance(text, str) else ""
        words.append(f"{name} {first[:_ONE_LINE]}")
    return tuple(words)


def _after_title(description: str, title: str) -> str:
    """The description without a first paragraph that only repeats the title."""
    head, _, rest = description.partition("\n\n")
    if rest and head.strip().rstrip(".").lower() == title.strip().rstrip(".").lower():
        return rest
    return "" if description.strip().rstrip(".") == title.strip().rstrip(".") else description


def fit_schema(schema: Mapping[str, Any], budget: int) -> tuple[dict[str, Any], str]:
    """`schema` within `budget` bytes of JSON, and what was cut ("" if nothing).

    Unreachable `$defs` go first (they cost and say nothing); then, while too big, one example
    is kept, long descriptions are shortened, and what lies below a shrinking depth is
    replaced by its type and a mark; `$defs` no longer reached are pruned each time. The call
    is still checked against the whole schema.
    """
    whole = _size(schema)
    fitted = _prune_defs(dict(schema))
    if _size(fitted) <= budget:
        return fitted, ""
    if isinstance(fitted.get("examples"), list):
        fitted["examples"] = fitted["examples"][:1]
    fitted = _shorten(fitted, 160)
    depth = 8
    while _size(fitted) > budget and depth > 1:
        depth -= 1
        fitted = _prune_defs(_cut_below(fitted, depth))
    if _size(fitted) > budget:
        fitted = _prune_defs(_cut_below(fitted, 1, keep_examples=False))
    dropped = len(schema.get("$defs", {}) or {}) - len(fitted.get("$defs", {}) or {})
    note = (
        f"The input schema is cut to {_size(fitted):,} of its {whole:,} bytes: parts below depth "
        f"{depth} are summarised as `{_CUT}`"
        + (f" and {dropped} definitions left out" if dropped > 0 else "")
        + ". Calls are still checked against the whole schema; an error names the argument."
    )
    return fitted, note


_CUT = "(cut for size)"
_SCHEMA_KEYS = ("properties", "items", "additionalProperties", "$defs", "not", "if", "then", "else")
_SCHEMA_LISTS = ("allOf", "anyOf", "oneOf", "prefixItems")


def _size(value: Any) -> int:
    return len(json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))


def _refs(node: Any, found: set[str]) -> None:
    if isinstance(node, Mapping):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            found.add(ref[len("#/$defs/") :])
        for key, value in node.items():
            if key != "$defs":
                _refs(value, found)
    elif isinstance(node, list):
        for value in node:
            _refs(value, found)


def _prune_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """`schema` with only the `$defs` its body reaches (transitively)."""
    defs = schema.get("$defs")
    if not isinstance(defs, Mapping):
        return schema
    reached: set[str] = set()
    _refs(schema, reached)
    todo = list(reached)
    while todo:
        more: set[str] = set()
        _refs(defs.get(todo.pop()), more)
        for name in more - reached:
            reached.add(name)
            todo.append(name)
    kept = {name: value for name, value in defs.items() if name in reached}
    out = {k: v for k, v in schema.items() if k != "$defs"}
    if kept:
        out["$defs"] = kept
    return out


def _shorten(node: Any, length: int) -> Any:
    if isinstance(node, Mapping):
        out = {k: _shorten(v, length) for k, v in node.items()}
        text = out.get("description")
        if isinstance(text, str) and len(text) > length:
            out["description"] = text[: length - 1].rsplit(" ", 1)[0] + "…"
        return out
    if isinstance(node, list):
        return [_shorten(v, length) for v in node]
    return node


def _cut_below(node: Any, depth: int, keep_examples: bool = True) -> Any:
    """Schemas nested deeper than `depth` become their type and a mark; `$defs` entries count
    from their own top."""
    if not isinstance(node, Mapping):
        return node
    if depth <= 0:
        summary: dict[str, Any] = {"description": _CUT}
        if "type" in node:
            summary["type"] = node["type"]
        if "$ref" in node:
            summary["description"] = f"{_CUT}: see {node['$ref']}"
        return summary
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key == "examples" and not keep_examples:
            continue
        if key in ("$defs", "properties") and isinstance(value, Mapping):
            out[key] = {n: _cut_below(v, depth - 1, keep_examples) for n, v in value.items()}
        elif key in _SCHEMA_KEYS and isinstance(value, Mapping):
            out[key] = _cut_below(value, depth - 1, keep_examples)
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [_cut_below(v, depth - 1, keep_examples) for v in value]
        else:
            out[key] = value
    return out


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


def _one_line(text: str, title: str) -> str:
    """The description's first sentence that adds to the title ("" if none does), on one line
    and cut at a word's end."""
    said = set(_words(title))
    for sentence in _SENTENCE.split(" ".join(_after_title(text, title).split())):
        words = _words(sentence)
        if words and not set(words) <= said:
            if len(sentence) > _ONE_LINE:
                sentence = sentence[: _ONE_LINE - 1].rsplit(" ", 1)[0].rstrip(",;:") + "…"
            return sentence.rstrip(".")
    return ""


_SENTENCE = re.compile(r"(?<=[a-z0-9)`'\"])[.!?]\s+")


def _words(text: str) -> list[str]:
    return re.findall(r"[a-z0-9]+", text.lower())


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
