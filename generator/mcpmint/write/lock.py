"""The tool-surface lock (`tools.lock.json`) and the classification of its changes.

The lock is what a model sees of a server, summarised per tool, with a canonical hash per tool
and one over the whole surface. It is generated on every run and committed, so that every
change to the tool surface shows up in code review. `diff_locks` compares two locks and
classifies every change (docs/regeneration.md):

- **breaking**: a tool removed or renamed, an argument removed or newly required, a type
  narrowed (a type or an enum value removed), an output field removed;
- **review**: a description, title, annotation, scope or confirmation changed, or any other
  change to a schema (a description that changes silently is how a tool gets poisoned);
- **additive**: a new tool, a new optional argument, an output field or an enum value added.

Pure functions: no files, no printing.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from mcpmint import ir
from mcpmint.jsontext import compact, pretty
from mcpmint.render.templates import catalog

LOCK_FILE = "tools.lock.json"
LOCK_FORMAT = 1
Kind = Literal["breaking", "review", "additive"]
KINDS: tuple[Kind, ...] = ("breaking", "review", "additive")
# The parts of a tools.json entry that make up a tool's definition, as far as a model or a
# client can tell; `confirmation` and `scopes` count when the entry has them.
_DEFINITION_KEYS = (
    "name",
    "title",
    "description",
    "inputSchema",
    "outputSchema",
    "annotations",
    "confirmation",
    "scopes",
)


# The parts of the `toolModes` section of tools.json that decide which tools are listed.
_TOOL_MODE_KEYS = ("mode", "core", "listedGroups")
# mcpmint.yaml `settings:` (suffixes) that change a safety control (docs/safety.md,
# docs/auth.md): who may call, which tools are offered, what needs the user's yes, where
# requests and credentials go. Recorded in the lock, so that a change to one is reviewed.
SAFETY_SETTINGS = frozenset(
    {
        "AUTH",
        "AUDIT",
        "BASE_URL",
        "CONFIRM_FALLBACK",
        "INTROSPECTION_URL",
        "ISSUER",
        "JWKS_URL",
        "LIST_TOOLS",
        "READ_ONLY",
        "RESOURCE_URL",
        "TOOLS_ALLOW",
        "TOOLS_DENY",
        "TOOL_GROUPS",
        "WRITE_RATE",
    }
)
_SAFETY_FAMILIES = ("ALLOW_", "SERVER_")  # value allowlists; server URL variables
SERVER = "(server)"  # the `tool` of a change to the server section, not to one tool


class LockError(ValueError):
    """A document that is not a readable tools lock."""


def canonical(data: Any) -> str:
    """The one JSON text of `data` that hashes are taken over: `json.dumps` with sorted keys,
    no spaces and no escapes beyond JSON's own (jsontext.compact writes it faster)."""
    return compact(data)


def digest(data: Any) -> str:
    """The sha256 of `data`'s canonical JSON text (what the lock's hashes are)."""
    return hashlib.sha256(canonical(data).encode("utf-8")).hexdigest()


def _scopes(tool: ir.Tool) -> list[str]:
    """Every scheme a tool may use and every scope it asks for: `scheme` or `scheme:scope`."""
    found: set[str] = set()
    for alternative in tool.security:
        for use in alternative:
            if use.scopes:
                found.update(f"{use.scheme}:{scope}" for scope in use.scopes)
            else:
                found.add(use.scheme)
    found.update(tool.scopes)  # a manifest's own inbound scopes
    return sorted(found)


def tool_summary(tool: ir.Tool, entry: Mapping[str, Any]) -> dict[str, Any]:
    """One tool's lock entry; `entry` is the tool's `tools.json` entry (render.catalog)."""
    definition = {key: entry[key] for key in _DEFINITION_KEYS if key in entry}
    summary: dict[str, Any] = {
        "hash": digest(definition),
        "description": entry["description"],
        "annotations": entry["annotations"],
        "inputSchema": entry["inputSchema"],
        "outputSchema": entry["outputSchema"],
        "scopes": _scopes(tool),
        "method": tool.endpoint[0],
        "path": tool.endpoint[1],
    }
    if "confirmation" in entry:
        summary["confirmation"] = entry["confirmation"]
    return summary


def server_summary(server: ir.Server) -> dict[str, Any]:
    """What mcpmint.yaml decides, beyond the tools, about what a model sees and may do.

    The tool mode (which tools are listed) and the run-time `settings:` that weaken or
    strengthen a safety control. Empty for a server with neither, which keeps its lock as it
    was before these were recorded.
    """
    summary: dict[str, Any] = {}
    modes = server.tool_modes
    if modes is not None:
        summary["toolMode"] = {key: modes.get(key) for key in _TOOL_MODE_KEYS}
        if modes.get("mode") == "groups":  # only there do the groups decide what is listed
            summary["toolMode"]["groups"] = modes.get("groups")
    settings = {
        key: value
        for key, value in server.settings
        if key in SAFETY_SETTINGS or key.startswith(_SAFETY_FAMILIES)
    }
    if settings:
        summary["settings"] = settings
    return summary


def lock_document(server: ir.Server) -> dict[str, Any]:
    """The lock of `server`'s tool surface."""
    entries = {entry["name"]: entry for entry in catalog(server)["tools"]}
    tools = {tool.name: tool_summary(tool, entries[tool.name]) for tool in server.tools}
    document = {
        "format": LOCK_FORMAT,
        "generator": "mcpmint",
        "tools": tools,
        "hash": digest(tools),
    }
    summary = server_summary(server)
    if summary:
        document["server"] = summary
    return document


def lock_text(server: ir.Server) -> str:
    """`tools.lock.json` as written: sorted keys, two-space indent, a trailing newline."""
    return dump(lock_document(server))


def dump(document: Mapping[str, Any]) -> str:
    return pretty(document) + "\n"  # json.dumps(indent=2, sort_keys=True), 10x faster


def is_lock(data: Any) -> bool:
    return isinstance(data, dict) and data.get("generator") == "mcpmint" and "tools" in data


def parse_lock(text: str) -> dict[str, Any]:
    """A lock document from its text; `LockError` says what is wrong with it."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise LockError(f"not JSON: {exc}") from None
    if not is_lock(data):
        raise LockError("not a tools lock: expected an object with generator 'mcpmint' and tools")
    if data.get("format") != LOCK_FORMAT:
        raise LockError(f"unsupported lock format {data.get('format')!r}; expected {LOCK_FORMAT}")
    tools = data["tools"]
    if not isinstance(tools, dict) or not all(isinstance(t, dict) for t in tools.values()):
        raise LockError("tools must be an object of tool summaries")
    return dict(data)


@dataclass(frozen=True)
class PreviousLock:
    """An output folder's `tools.lock.json` as a run found it, read once: its text and
    document (both None when there is none), or why it cannot be read."""

    text: str | None = None
    document: dict[str, Any] | None = None
    problem: str = ""

    def names(self) -> dict[str, str]:
        """Each tool name with its "METHOD /path": names stay stable across regenerations."""
        tools = self.document["tools"] if self.document is not None else {}
        return {
            name: f"{summary.get('method', '')} {summary.get('path', '')}"
            for name, summary in tools.items()
        }


def read_previous_lock(folder: Path | None) -> PreviousLock:
    """The lock in `folder` (none for no folder)."""
    path = folder / LOCK_FILE if folder is not None else None
    if path is None or not path.is_file():
        return PreviousLock()
    try:
        text = path.read_text(encoding="utf-8")
        return PreviousLock(text, parse_lock(text))
    except (OSError, UnicodeDecodeError, LockError) as exc:
        return PreviousLock(problem=str(exc))


# ---------------------------------------------------------------------------- changes


@dataclass(frozen=True, order=True)
class Change:
    kind: Kind
    tool: str
    what: str  # a short, stable label: "tool removed", "argument removed", ...
    detail: str  # for a person: which argument, which values, old and new

    def to_json(self) -> dict[str, str]:
        return {"kind": self.kind, "tool": self.tool, "what": self.what, "detail": self.detail}

    def render(self) -> str:
        return f"{self.kind}: {self.tool}: {self.what}: {self.detail}"


def has_breaking(changes: Iterable[Change]) -> bool:
    return any(change.kind == "breaking" for change in changes)


def needs_attention(changes: Iterable[Change]) -> bool:
    """Breaking or review changes: what `mcpmint diff` exits 1 for."""
    return any(change.kind != "additive" for change in changes)


def diff_locks(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Every change from `old` to `new`, classified; sorted by tool, then kind and label."""
    old_tools: Mapping[str, Any] = old.get("tools") or {}
    new_tools: Mapping[str, Any] = new.get("tools") or {}
    changes: list[Change] = []
    removed = sorted(set(old_tools) - set(new_tools))
    added = sorted(set(new_tools) - set(old_tools))
    by_endpoint = {_endpoint(new_tools[name]): name for name in added}
    for name in removed:
        renamed = by_endpoint.pop(_endpoint(old_tools[name]), None)
        if renamed is not None:
            added.remove(renamed)
            changes.append(
                Change(
                    "breaking",
                    name,
                    "tool renamed",
                    f"now {renamed} ({_endpoint_text(old_tools[name])}); "
                    "clients calling the old name fail",
                )
            )
            changes.extend(_tool_changes(renamed, old_tools[name], new_tools[renamed]))
        else:
            changes.append(
                Change(
                    "breaking",
                    name,
                    "tool removed",
                    f"{_endpoint_text(old_tools[name])} is no longer a tool",
                )
            )
    for name in added:
        changes.append(
            Change(
                "additive", name, "tool added", f"new tool for {_endpoint_text(new_tools[name])}"
            )
        )
    for name in sorted(set(old_tools) & set(new_tools)):
        if old_tools[name] != new_tools[name]:  # an unchanged summary has nothing to report
            changes.extend(_tool_changes(name, old_tools[name], new_tools[name]))
    changes.extend(_server_changes(old.get("server") or {}, new.get("server") or {}))
    return sorted(changes, key=lambda c: (c.tool, KINDS.index(c.kind), c.what, c.detail))


def _endpoint(summary: Mapping[str, Any]) -> tuple[str, str]:
    return (str(summary.get("method", "")), str(summary.get("path", "")))


def _endpoint_text(summary: Mapping[str, Any]) -> str:
    return " ".join(_endpoint(summary))


def _quote(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False)


def _tool_changes(name: str, old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    changes: list[Change] = []

    def review(what: str, detail: str) -> None:
        changes.append(Change("review", name, what, detail))

    if old.get("description") != new.get("description"):
        review(
            "description changed",
            f"{_quote(old.get('description'))} -> {_quote(new.get('description'))}; the model "
            "reads this text as instructions: check it says nothing it should not",
        )
    old_hints: Mapping[str, Any] = old.get("annotations") or {}
    new_hints: Mapping[str, Any] = new.get("annotations") or {}
    for key in sorted(set(old_hints) | set(new_hints)):
        if old_hints.get(key) != new_hints.get(key):
            what = "title changed" if key == "title" else "annotation changed"
            label = "" if key == "title" else f"{key}: "
            review(what, f"{label}{_quote(old_hints.get(key))} -> {_quote(new_hints.get(key))}")
    if old.get("scopes") != new.get("scopes"):
        review("scopes changed", f"{_quote(old.get('scopes'))} -> {_quote(new.get('scopes'))}")
    if old.get("confirmation") != new.get("confirmation"):
        review(
            "confirmation changed",
            f"{_quote(old.get('confirmation'))} -> {_quote(new.get('confirmation'))}",
        )
    if _endpoint(old) != _endpoint(new):
        review("endpoint changed", f"{_endpoint_text(old)} -> {_endpoint_text(new)}")
    changes.extend(_input_changes(name, old.get("inputSchema"), new.get("inputSchema")))
    changes.extend(_output_changes(name, old.get("outputSchema"), new.get("outputSchema")))
    if not changes and old.get("hash") != new.get("hash"):
        review("definition changed", "the tool's canonical hash changed")
    return changes


def _server_changes(old: Mapping[str, Any], new: Mapping[str, Any]) -> list[Change]:
    """Tool-mode and safety-setting changes: always for a person to review."""
    changes: list[Change] = []
    # No `tools` section is mode all with nothing else chosen: compared as such.
    old_mode = {**_DEFAULT_TOOL_MODE, **(old.get("toolMode") or {})}
    new_mode = {**_DEFAULT_TOOL_MODE, **(new.get("toolMode") or {})}
    for key in sorted(set(old_mode) | set(new_mode)):
        if old_mode.get(key) != new_mode.get(key):
            changes.append(
                Change(
                    "review",
                    SERVER,
                    "tool mode changed",
                    f"tools.{_MODE_OPTION.get(key, key)}: {_quote(old_mode.get(key))} -> "
                    f"{_quote(new_mode.get(key))}; it changes which tools a model is offered",
                )
            )
    old_settings, new_settings = old.get("settings") or {}, new.get("settings") or {}
    for key in sorted(set(old_settings) | set(new_settings)):
        before, after = old_settings.get(key), new_settings.get(key)
        if before != after:
            unset = " (null: not set, the built-in default)" if None in (before, after) else ""
            changes.append(
                Change(
                    "review",
                    SERVER,
                    "safety setting changed",
                    f"settings.{key}: {_quote(before)} -> {_quote(after)}{unset}",
                )
            )
    return changes


_MODE_OPTION = {"listedGroups": "listed_groups"}  # as mcpmint.yaml spells it
_DEFAULT_TOOL_MODE: dict[str, Any] = {"mode": "all", "core": [], "listedGroups": []}


def _object(schema: Any) -> tuple[dict[str, Any], set[str], dict[str, Any]]:
    """(properties, required, the rest) of an object schema."""
    if not isinstance(schema, dict):
        return {}, set(), {}
    properties = schema.get("properties")
    required = schema.get("required")
    rest = {k: v for k, v in schema.items() if k not in ("properties", "required")}
    return (
        dict(properties) if isinstance(properties, dict) else {},
        set(required) if isinstance(required, list) else set(),
        rest,
    )


def _types(schema: Any) -> set[str]:
    """The types a schema admits, following `anyOf` branches; "any" when unconstrained."""
    if not isinstance(schema, dict):
        return {"any"}
    if isinstance(schema.get("anyOf"), list):
        found: set[str] = set()
        for branch in schema["anyOf"]:
            found |= _types(branch)
        return found
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind}
    if "$ref" in schema:
        return {f"$ref {schema['$ref']}"}
    if "enum" in schema or "const" in schema:
        return {"enum"}
    return {"any"}


def _enum(schema: Any) -> set[str] | None:
    """Canonical enum values across `anyOf` branches; None when no value list limits it."""
    if not isinstance(schema, dict):
        return None
    if isinstance(schema.get("anyOf"), list):
        values: set[str] = set()
        limited = False
        for branch in schema["anyOf"]:
            if isinstance(branch, dict) and branch.get("type") == "null":
                continue
            branch_values = _enum(branch)
            if branch_values is None:
                return None
            values |= branch_values
            limited = True
        return values if limited else None
    if isinstance(schema.get("enum"), list):
        return {canonical(value) for value in schema["enum"]}
    return None


def _residual(schema: Any) -> Any:
    """A schema without what `_types` and `_enum` compare: what is left to review."""
    if not isinstance(schema, dict):
        return schema
    rest = {k: v for k, v in schema.items() if k not in ("type", "enum", "anyOf")}
    if isinstance(schema.get("anyOf"), list):
        branches = [_residual(branch) for branch in schema["anyOf"]]
        if any(branches):
            rest["anyOf"] = branches
    return rest


def _input_changes(name: str, old: Any, new: Any) -> list[Change]:
    changes: list[Change] = []
    old_props, old_required, old_rest = _object(old)
    new_props, new_required, new_rest = _object(new)
    for argument in sorted(set(old_props) - set(new_props)):
        changes.append(Change("breaking", name, "argument removed", argument))
    for argument in sorted(set(new_props) - set(old_props)):
        if argument in new_required:
            changes.append(Change("breaking", name, "required argument added", argument))
        else:
            changes.append(Change("additive", name, "optional argument added", argument))
    for argument in sorted(set(old_props) & set(new_props)):
        if argument in new_required and argument not in old_required:
            changes.append(Change("breaking", name, "argument newly required", argument))
        if argument in old_required and argument not in new_required:
            changes.append(Change("review", name, "argument no longer required", argument))
        changes.extend(
            _value_changes(name, f"argument {argument}", old_props[argument], new_props[argument])
        )
    if old_rest != new_rest:
        changes.append(
            Change("review", name, "input schema changed", _changed_keys(old_rest, new_rest))
        )
    return changes


def _output_changes(name: str, old: Any, new: Any) -> list[Change]:
    if old is None and new is None:
        return []
    if old is None:
        return [Change("additive", name, "output schema added", "results are now structured")]
    if new is None:
        return [Change("breaking", name, "output schema removed", "no structured result any more")]
    changes: list[Change] = []
    old_props, old_required, old_rest = _object(old)
    new_props, new_required, new_rest = _object(new)
    for field in sorted(set(old_props) - set(new_props)):
        changes.append(Change("breaking", name, "output field removed", field))
    for field in sorted(set(new_props) - set(old_props)):
        changes.append(Change("additive", name, "output field added", field))
    for field in sorted(set(old_props) & set(new_props)):
        if old_props[field] != new_props[field]:
            changes.append(
                Change(
                    "review",
                    name,
                    "output field changed",
                    f"{field}: {_changed_keys(old_props[field], new_props[field])}",
                )
            )
    if old_required != new_required:
        changes.append(
            Change(
                "review",
                name,
                "output required fields changed",
                f"{sorted(old_required)} -> {sorted(new_required)}",
            )
        )
    if old_rest != new_rest:
        changes.append(
            Change("review", name, "output schema changed", _changed_keys(old_rest, new_rest))
        )
    return changes


def _value_changes(name: str, label: str, old: Any, new: Any) -> list[Change]:
    """Type and enum changes of one argument, then anything else about its schema."""
    changes: list[Change] = []
    old_types, new_types = _types(old), _types(new)
    lost = old_types - new_types if "any" not in old_types else {"any"}
    if "any" not in new_types and lost:
        changes.append(
            Change(
                "breaking",
                name,
                "type narrowed",
                f"{label}: {sorted(old_types)} -> {sorted(new_types)}",
            )
        )
    elif new_types - old_types and "any" not in old_types:
        changes.append(
            Change(
                "review",
                name,
                "type widened",
                f"{label}: {sorted(old_types)} -> {sorted(new_types)}",
            )
        )
    old_enum, new_enum = _enum(old), _enum(new)
    if old_enum is not None and new_enum is not None:
        if old_enum - new_enum:
            changes.append(
                Change(
                    "breaking",
                    name,
                    "enum value removed",
                    f"{label}: {', '.join(sorted(old_enum - new_enum))}",
                )
            )
        if new_enum - old_enum:
            changes.append(
                Change(
                    "additive",
                    name,
                    "enum value added",
                    f"{label}: {', '.join(sorted(new_enum - old_enum))}",
                )
            )
    elif old_enum is None and new_enum is not None:
        changes.append(
            Change("breaking", name, "type narrowed", f"{label}: now limited to an enum")
        )
    elif old_enum is not None and new_enum is None:
        changes.append(Change("review", name, "enum dropped", f"{label}: any value is accepted"))
    if _residual(old) != _residual(new):
        changes.append(
            Change(
                "review",
                name,
                "argument schema changed",
                f"{label}: {_changed_keys(_residual(old), _residual(new))}",
            )
        )
    return changes


def _changed_keys(old: Any, new: Any) -> str:
    if isinstance(old, dict) and isinstance(new, dict):
        keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        return "changed: " + ", ".join(keys)
    return f"{_quote(old)} -> {_quote(new)}"
