"""The strict-mode variant of input schemas (`output: {strict_schemas: true}` in mcpmint.yaml).

Some clients (OpenAI's structured outputs in strict mode, for one) accept a tool only when
every object lists all of its properties as `required`. The variant says the same thing in
that form: each optional property becomes required and nullable (`anyOf: [schema, null]`),
and the server reads an explicit `null` as "not given" (the tool's catalog entry carries
`meta.nullsAbsent`, which `runtime/request.py` honours). Only input schemas change: outputs
describe what the upstream sends and are never made stricter.

The price, documented in docs/config.md: a property that was optional *and* nullable can no
longer be sent as an explicit null, since null now means "absent".
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from jsonschema import Draft202012Validator

from mcpmint import ir

# Keywords whose value is one schema, a map of name -> schema, or a list of schemas.
_ONE = (
    "items",
    "additionalProperties",
    "not",
    "contains",
    "propertyNames",
    "if",
    "then",
    "else",
    "unevaluatedProperties",
    "unevaluatedItems",
)
_MAP = ("properties", "patternProperties", "$defs", "dependentSchemas")
_LIST = ("allOf", "anyOf", "oneOf", "prefixItems")
_NULL: dict[str, Any] = {"type": "null"}


def strict_server(server: ir.Server) -> ir.Server:
    """`server` with every tool's input schema in its strict variant."""
    return replace(server, tools=tuple(strict_tool(tool) for tool in server.tools))


def strict_tool(tool: ir.Tool) -> ir.Tool:
    schema = strict_schema(tool.input_schema)
    validator = Draft202012Validator(schema)
    examples: list[dict[str, Any]] = []
    for example in tool.examples:
        # Top-level arguments left out by an example are now sent as null; an example that
        # still does not fit (a nested object without its optional keys) is dropped.
        filled = {name: example.get(name) for name in schema.get("properties", {})}
        if validator.is_valid(filled):
            examples.append(filled)
    if examples:
        schema["examples"] = examples
    else:
        schema.pop("examples", None)
    return replace(tool, input_schema=schema, examples=tuple(examples), nulls_absent=True)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A copy of `schema` where every object requires all its properties, the optional ones
    made nullable."""
    result = _strict(schema)
    assert isinstance(result, dict)
    return result


def _strict(node: Any) -> Any:
    if not isinstance(node, dict):
        return node  # a boolean schema
    out = dict(node)
    for key in _ONE:
        if key in out:
            out[key] = _strict(out[key])
    for key in _MAP:
        if isinstance(out.get(key), dict):
            out[key] = {name: _strict(sub) for name, sub in out[key].items()}
    for key in _LIST:
        if isinstance(out.get(key), list):
            out[key] = [_strict(sub) for sub in out[key]]
    properties = out.get("properties")
    if isinstance(properties, dict) and properties:
        listed = out.get("required")
        required: list[Any] = listed if isinstance(listed, list) else []
        out["properties"] = {
            name: sub if name in required else _nullable(sub) for name, sub in properties.items()
        }
        out["required"] = list(properties)
    return out


def _nullable(schema: Any) -> Any:
    if _accepts_null(schema):
        return schema
    # The description stays outside, where a client shows it for the property.
    inner = {k: v for k, v in schema.items() if k not in ("description", "title")}
    outer = {k: schema[k] for k in ("title", "description") if k in schema}
    return {**outer, "anyOf": [inner, dict(_NULL)]}


def _accepts_null(schema: Any) -> bool:
    if schema is True or schema == {}:
        return True
    if not isinstance(schema, dict):
        return False
    kind = schema.get("type")
    if kind == "null" or (isinstance(kind, list) and "null" in kind):
        return True
    if None in schema.get("enum", ()) or ("const" in schema and schema["const"] is None):
        return True
    if not any(k in schema for k in ("type", "enum", "const", "$ref", "allOf", "anyOf", "oneOf")):
        return "not" not in schema  # annotations only (or object keywords): null is valid
    branches = [*schema.get("anyOf", []), *schema.get("oneOf", [])]
    return any(isinstance(b, dict) and _accepts_null(b) for b in branches)
