"""OpenAPI schemas -> JSON Schema 2020-12 (`mcpmint.schema`).

Every schema these tests emit goes through `Draft202012Validator.check_schema` in `_convert`,
which also checks that no `type` in it is a list (`finish` splits them into `anyOf`).
"""

from __future__ import annotations

import copy
import json
import re
import time
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import jsonschema_rs
import pytest
import yaml
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]
from jsonschema.exceptions import SchemaError  # type: ignore[import-untyped, unused-ignore]

from mcpmint import refs
from mcpmint.build.compact import inline_defs
from mcpmint.build.schema import MAX_BRANCHES, MAX_DEPTH, Mode, SchemaConverter
from mcpmint.diagnostics import DiagnosticSink, Level
from mcpmint.pipeline import RenderOptions, build, render_server
from mcpmint.runtime.results import OutputValidator

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
PETSTORE_PLUS = CORPUS / "crafted" / "petstore-plus.yaml"


# -- helpers ---------------------------------------------------------------------------------


def _locate(pointer: str) -> str:
    return f"spec.yaml:{pointer}"


def _spec(schemas: Mapping[str, Any], **extra: Any) -> dict[str, Any]:
    return {"openapi": "3.0.3", "components": {"schemas": dict(schemas)}, **extra}


def _converter(
    document: Mapping[str, Any], openapi: tuple[int, int] = (3, 0)
) -> tuple[SchemaConverter, DiagnosticSink]:
    sink = DiagnosticSink()
    return SchemaConverter(document, openapi=openapi, sink=sink, locate=_locate), sink


def _convert(
    document: Mapping[str, Any],
    pointer: str,
    mode: Mode = "input",
    openapi: tuple[int, int] = (3, 0),
) -> tuple[dict[str, Any], DiagnosticSink]:
    """Convert the schema at `pointer` as one whole root, and check it is valid 2020-12."""
    converter, sink = _converter(document, openapi)
    root = converter.root(mode)
    result = root.finish(root.convert(refs.resolve_pointer(document, pointer), pointer))
    Draft202012Validator.check_schema(result)
    assert _type_lists(result) == [], "finish leaves no type list"
    return result, sink


def _unhoisted(result: Mapping[str, Any], cyclic: set[str]) -> dict[str, Any]:
    """`result` with the `$defs` compaction hoisted put back in place: the tree as converted.

    `finish` hoists repeated subschemas into `$defs` (see `mcpmint.compact`); tests that look
    at the converted structure read it here, while validity is checked on `result` itself.
    `cyclic` names the converter's own `$defs` (reference cycles), which stay.
    """
    assert cyclic <= set(result.get("$defs", {}))
    return inline_defs(result, set(result.get("$defs", {})) - cyclic)


def _one(schema: Any, mode: Mode = "input", openapi: tuple[int, int] = (3, 0)) -> dict[str, Any]:
    """Convert one inline schema of a document with no other schemas; no diagnostics allowed."""
    result, sink = _convert(_spec({"S": schema}), "#/components/schemas/S", mode, openapi)
    assert list(sink) == []
    return result


def _messages(sink: DiagnosticSink, level: Level = Level.WARNING) -> list[str]:
    return [f"{d.location} {d.message}" for d in sink if d.level is level]


def _valid(schema: Mapping[str, Any], instance: Any) -> bool:
    return bool(Draft202012Validator(schema).is_valid(instance))


_SCHEMA_KEYS = [
    "items",
    "additionalProperties",
    "unevaluatedProperties",
    "unevaluatedItems",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "contentSchema",
]


_SCHEMA_MAP_KEYS = ["properties", "patternProperties", "dependentSchemas", "$defs"]
_SCHEMA_LIST_KEYS = ["allOf", "anyOf", "oneOf", "prefixItems"]


def _type_lists(schema: Any, at: str = "#") -> list[str]:
    """Where a `type` is a list, as pointers. Only schema positions are walked: a `type` key
    inside data (`enum`, `default`, `examples`) is not a keyword."""
    if not isinstance(schema, dict):
        return []
    found = [f"{at}/type"] if isinstance(schema.get("type"), list) else []
    for key, value in schema.items():
        if key in _SCHEMA_MAP_KEYS and isinstance(value, dict):
            for name, sub in value.items():
                found += _type_lists(sub, f"{at}/{key}/{refs.escape_token(name)}")
        elif key in _SCHEMA_LIST_KEYS and isinstance(value, list):
            for index, sub in enumerate(value):
                found += _type_lists(sub, f"{at}/{key}/{index}")
        elif key in _SCHEMA_KEYS:
            found += _type_lists(value, f"{at}/{key}")
    return found


def _refs_in(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key == "$ref":
                yield value
            else:
                yield from _refs_in(value)
    elif isinstance(node, list):
        for item in node:
            yield from _refs_in(item)


def _assert_defs_closed(schema: Mapping[str, Any]) -> None:
    """Every `#/$defs/X` reference of the root has its `X`."""
    names = set(schema.get("$defs", {}))
    for ref in _refs_in(schema):
        assert ref.startswith("#/$defs/"), ref
        assert ref.removeprefix("#/$defs/") in names, ref


# -- references and cycles -------------------------------------------------------------------


def test_G5_circular_refs_become_bounded_defs() -> None:
    document = _spec(
        {
            "A": {
                "type": "object",
                "required": ["name"],
                "properties": {"name": {"type": "string"}, "b": {"$ref": "#/components/schemas/B"}},
            },
            "B": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
            "Tree": {
                "type": "object",
                "properties": {
                    "value": {"type": "integer"},
                    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Tree"}},
                },
            },
        }
    )
    started = time.monotonic()
    mutual, sink = _convert(document, "#/components/schemas/A")
    tree, _ = _convert(document, "#/components/schemas/Tree")
    assert time.monotonic() - started < 5
    assert list(sink) == []

    # The top level is A's own body; the cycle continues through `$defs`.
    assert mutual["properties"]["b"] == {"$ref": "#/$defs/B"}
    assert sorted(mutual["$defs"]) == ["A", "B"]
    assert mutual["$defs"]["B"]["properties"]["a"] == {"$ref": "#/$defs/A"}
    _assert_defs_closed(mutual)
    three_deep = {"name": "1", "b": {"a": {"name": "2", "b": {"a": {"name": "3", "b": {}}}}}}
    assert _valid(mutual, three_deep)
    missing_name_deep_down = {"name": "1", "b": {"a": {"name": "2", "b": {"a": {"b": {}}}}}}
    assert not _valid(mutual, missing_name_deep_down)

    assert tree["properties"]["children"]["items"] == {"$ref": "#/$defs/Tree"}
    assert list(tree["$defs"]) == ["Tree"]
    grandchildren = {"value": 1, "children": [{"value": 2, "children": [{"value": 3}]}]}
    assert _valid(tree, grandchildren)
    assert not _valid(tree, {"value": 1, "children": [{"children": [{"value": "three"}]}]})


def test_reference_to_a_schema_outside_any_cycle_is_inlined() -> None:
    document = _spec(
        {
            "Pet": {"type": "object", "properties": {"tag": {"$ref": "#/components/schemas/Tag"}}},
            "Tag": {"type": "string", "maxLength": 8},
        }
    )
    result, sink = _convert(document, "#/components/schemas/Pet")
    assert result["properties"]["tag"] == {"type": "string", "maxLength": 8}
    assert "$defs" not in result
    assert list(sink) == []


def test_cycle_across_mounted_files_terminates_with_defs() -> None:
    document = _spec(
        {"Folder": {"$ref": "#/x-mcpmint-files/tree.yaml/Folder"}},
        **{
            "x-mcpmint-files": {
                "tree.yaml": {
                    "Folder": {
                        "type": "object",
                        "properties": {
                            "entries": {
                                "type": "array",
                                "items": {"$ref": "#/x-mcpmint-files/entry.yaml"},
                            }
                        },
                    }
                },
                "entry.yaml": {
                    "type": "object",
                    "properties": {"folder": {"$ref": "#/components/schemas/Folder"}},
                },
            }
        },
    )
    result, sink = _convert(document, "#/components/schemas/Folder")
    assert list(sink) == []
    # The component is only a name for the schema in tree.yaml: the root is that schema.
    assert result["properties"]["entries"]["items"] == {"$ref": "#/$defs/entry.yaml"}
    assert sorted(result["$defs"]) == ["Folder", "Folder_2", "entry.yaml"]
    _assert_defs_closed(result)
    nested: dict[str, Any] = {"entries": [{"folder": {"entries": [{"folder": {"entries": []}}]}}]}
    assert _valid(result, nested)
    assert not _valid(result, {"entries": [{"folder": {"entries": "none"}}]})


def test_defs_names_are_sanitised_unique_and_follow_pointer_order() -> None:
    node = {"type": "object", "properties": {"self": {"$ref": "#/components/schemas/My Node"}}}
    other = {"type": "object", "properties": {"self": {"$ref": "#/x-mcpmint-files/a.yaml/My Node"}}}
    document = _spec({"My Node": node}, **{"x-mcpmint-files": {"a.yaml": {"My Node": other}}})
    converter, _ = _converter(document)
    assert converter.graph.names == {
        "#/components/schemas/My Node": "My_Node",
        "#/x-mcpmint-files/a.yaml/My Node": "My_Node_2",
    }


def test_defs_reached_through_an_inlined_schema_are_included() -> None:
    document = _spec(
        {
            "Envelope": {
                "type": "object",
                "properties": {"node": {"$ref": "#/components/schemas/Node"}},
            },
            "Node": {
                "type": "object",
                "properties": {"next": {"$ref": "#/components/schemas/Node"}},
            },
        }
    )
    # A tool's input root built by a frontend from two converted pieces of one `SchemaRoot`.
    converter, _ = _converter(document)
    root = converter.root("input")
    envelope = root.convert({"$ref": "#/components/schemas/Envelope"}, "#/paths/x/body")
    limit = root.convert({"type": "integer"}, "#/paths/x/limit")
    assert "$defs" not in envelope
    built = {"type": "object", "properties": {"envelope": envelope, "limit": limit}}
    finished = root.finish(built)
    Draft202012Validator.check_schema(finished)
    assert list(finished["$defs"]) == ["Node"]
    _assert_defs_closed(finished)


def test_root_without_cycles_gets_no_defs() -> None:
    result = _one({"type": "object", "properties": {"a": {"type": "string"}}})
    assert "$defs" not in result


def test_converted_pieces_are_private_copies() -> None:
    document = _spec({"Tag": {"type": "object", "properties": {"name": {"type": "string"}}}})
    converter, _ = _converter(document)
    first = converter.root("input").convert({"$ref": "#/components/schemas/Tag"}, "#/a")
    first["properties"]["name"]["description"] = "changed by a frontend"
    second = converter.root("input").convert({"$ref": "#/components/schemas/Tag"}, "#/b")
    assert second["properties"]["name"] == {"type": "string"}


def test_ref_loop_without_any_schema_is_an_error_not_a_hang() -> None:
    document = _spec(
        {
            "A": {"$ref": "#/components/schemas/B"},
            "B": {"$ref": "#/components/schemas/A"},
            "User": {"type": "object", "properties": {"a": {"$ref": "#/components/schemas/A"}}},
        }
    )
    result, sink = _convert(document, "#/components/schemas/User")
    assert result["properties"]["a"] == {}
    assert _messages(sink, Level.ERROR) == [
        "spec.yaml:#/components/schemas/User/properties/a/$ref "
        "$ref '#/components/schemas/A' only leads to other $refs in a loop; no schema"
    ]


def test_unresolvable_ref_becomes_empty_schema_with_error_at_the_ref() -> None:
    document = _spec(
        {"Pet": {"type": "object", "properties": {"owner": {"$ref": "#/components/schemas/Nope"}}}}
    )
    result, sink = _convert(document, "#/components/schemas/Pet")
    assert result["properties"]["owner"] == {}
    assert _messages(sink, Level.ERROR) == [
        "spec.yaml:#/components/schemas/Pet/properties/owner/$ref "
        "$ref '#/components/schemas/Nope' does not resolve to anything in the document"
    ]


# -- OpenAPI 3.0 -> 2020-12 ------------------------------------------------------------------


def test_nullable_type_becomes_anyof_with_a_null_branch() -> None:
    result = _one({"type": "string", "nullable": True})
    assert result == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert _valid(result, None)
    assert _valid(result, "a")
    assert not _valid(result, 1)


def test_nullable_enum_also_gets_null_appended_and_keeps_the_enum_outside() -> None:
    result = _one({"type": "string", "enum": ["a", "b"], "nullable": True})
    # `enum` applies to every type, so it stays next to the `anyOf`, with its null.
    assert result == {"enum": ["a", "b", None], "anyOf": [{"type": "string"}, {"type": "null"}]}
    assert _valid(result, None)
    assert _valid(result, "b")
    assert not _valid(result, "c")


def test_nullable_ref_or_composition_becomes_anyof_with_null() -> None:
    document = _spec(
        {
            "Node": {"type": "object", "properties": {"up": {"$ref": "#/components/schemas/Node"}}},
            "Holder": {
                "type": "object",
                "properties": {
                    "node": {
                        "description": "the node",
                        "nullable": True,
                        "allOf": [{"$ref": "#/components/schemas/Node"}],
                    },
                    "either": {
                        "nullable": True,
                        "oneOf": [{"type": "integer"}, {"type": "string"}],
                    },
                },
            },
        }
    )
    result, sink = _convert(document, "#/components/schemas/Holder")
    assert list(sink) == []
    assert result["properties"]["node"] == {
        "description": "the node",
        "anyOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}],
    }
    assert result["properties"]["either"] == {
        "anyOf": [{"oneOf": [{"type": "integer"}, {"type": "string"}]}, {"type": "null"}]
    }
    assert _valid(result, {"node": None, "either": None})
    assert _valid(result, {"node": {"up": {}}, "either": 3})


def test_openapi_30_ref_siblings_are_honoured_too() -> None:
    # OpenAPI 3.0 says siblings of `$ref` are ignored, but specs put `nullable` and
    # `description` there and mean it; reading them loses nothing and surprises no one.
    document = _spec(
        {
            "Tag": {"type": "string", "description": "a tag"},
            "Pet": {
                "type": "object",
                "properties": {
                    "tag": {
                        "$ref": "#/components/schemas/Tag",
                        "nullable": True,
                        "description": "the pet's tag",
                    }
                },
            },
        }
    )
    result, _ = _convert(document, "#/components/schemas/Pet")
    assert result["properties"]["tag"] == {
        "description": "the pet's tag",
        "anyOf": [{"type": "string"}, {"type": "null"}],
    }
    assert _valid(result, {"tag": None})
    assert not _valid(result, {"tag": 1})


def test_swagger_20_x_nullable_is_read_as_nullable() -> None:
    assert _one({"type": "integer", "x-nullable": True}, openapi=(2, 0)) == {
        "anyOf": [{"type": "integer"}, {"type": "null"}]
    }
    assert _one({"type": "integer", "x-nullable": True}) == {"type": "integer"}


def test_boolean_exclusive_bounds_become_numeric() -> None:
    result = _one(
        {
            "type": "number",
            "minimum": 0,
            "exclusiveMinimum": True,
            "maximum": 10,
            "exclusiveMaximum": False,
        }
    )
    assert result == {"type": "number", "exclusiveMinimum": 0, "maximum": 10}


def test_example_becomes_an_examples_list() -> None:
    assert _one({"type": "integer", "example": 42}) == {"type": "integer", "examples": [42]}


def test_yaml_dates_in_data_become_strings() -> None:
    document = yaml.safe_load("components: {schemas: {S: {type: string, example: 2024-05-01}}}")
    result, _ = _convert(document, "#/components/schemas/S")
    assert result["examples"] == ["2024-05-01"]


# -- OpenAPI 3.1 -----------------------------------------------------------------------------


def test_openapi_31_keywords_are_kept() -> None:
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "tag": {"type": ["string", "null"], "minLength": 1},
            "kind": {"const": "pet"},
            "point": {"type": "array", "prefixItems": [{"type": "number"}, {"type": "number"}]},
            "count": {"type": "integer", "exclusiveMinimum": 0},
        },
        "unevaluatedProperties": False,
    }
    result = _one(schema, openapi=(3, 1))
    # Already 2020-12, and closed by the spec itself; only the type list is split, with
    # `minLength` going where it applies.
    tag = {"anyOf": [{"type": "string", "minLength": 1}, {"type": "null"}]}
    assert result == {**schema, "properties": {**schema["properties"], "tag": tag}}
    assert _valid(result, {"tag": None})
    assert not _valid(result, {"tag": ""})


def test_openapi_31_defs_inside_a_schema_are_reached_through_refs() -> None:
    document = _spec(
        {
            "Plan": {
                "$defs": {
                    "Code": {"type": "string", "pattern": "^[0-9]{3}$"},
                    "Step": {
                        "type": "object",
                        "properties": {
                            "then": {"$ref": "#/components/schemas/Plan/$defs/Step"},
                        },
                    },
                },
                "type": "object",
                "properties": {
                    "code": {"$ref": "#/components/schemas/Plan/$defs/Code"},
                    "first": {"$ref": "#/components/schemas/Plan/$defs/Step"},
                },
            }
        }
    )
    result, sink = _convert(document, "#/components/schemas/Plan", openapi=(3, 1))
    assert list(sink) == []
    assert result["properties"]["code"] == {"type": "string", "pattern": "^[0-9]{3}$"}
    assert result["properties"]["first"] == {"$ref": "#/$defs/Step"}
    assert list(result["$defs"]) == ["Step"]


def test_ref_with_sibling_keywords_is_merged_like_allof() -> None:
    document = _spec(
        {
            "Base": {
                "type": "object",
                "description": "base",
                "properties": {"id": {"type": "integer"}},
            },
            "Named": {
                "$ref": "#/components/schemas/Base",
                "description": "named",
                "required": ["name"],
                "properties": {"name": {"type": "string"}},
            },
        }
    )
    result, _ = _convert(document, "#/components/schemas/Named", openapi=(3, 1))
    assert result == {
        "description": "named",
        "required": ["name"],
        "properties": {"name": {"type": "string"}, "id": {"type": "integer"}},
        "type": "object",
        "additionalProperties": False,
    }


def test_ref_to_a_cycle_with_only_annotations_stays_a_reference() -> None:
    document = _spec(
        {
            "Node": {
                "type": "object",
                "properties": {
                    "next": {"$ref": "#/components/schemas/Node", "description": "the next one"}
                },
            }
        }
    )
    result, _ = _convert(document, "#/components/schemas/Node", openapi=(3, 1))
    assert result["properties"]["next"] == {"description": "the next one", "$ref": "#/$defs/Node"}


# -- type lists become anyOf (in `finish`) ---------------------------------------------------

_NULLABLE_NODE = {
    "type": "object",
    "nullable": True,
    "properties": {
        "label": {"type": "string", "nullable": True, "maxLength": 3},
        "tags": {
            "type": "array",
            "nullable": True,
            "minItems": 1,
            "items": {"type": "string", "nullable": True, "format": "uuid"},
        },
        "next": {"$ref": "#/components/schemas/Node"},
    },
}


def _same_verdicts(a: Mapping[str, Any], b: Mapping[str, Any], instances: list[Any]) -> None:
    for instance in instances:
        assert _valid(a, instance) == _valid(b, instance), instance


def test_type_list_helper_only_looks_at_schema_positions() -> None:
    schema = {
        "type": ["object", "null"],
        "properties": {"type": {"type": ["string", "null"]}},
        "$defs": {"D": {"items": {"anyOf": [{"type": ["integer", "null"]}]}}},
        "enum": [{"type": ["data"]}],
        "default": {"type": ["data"]},
    }
    assert _type_lists(schema) == [
        "#/type",
        "#/properties/type/type",
        "#/$defs/D/items/anyOf/0/type",
    ]


def test_type_lists_are_split_by_finish_not_by_convert() -> None:
    converter, sink = _converter(_spec({"Node": _NULLABLE_NODE}))
    root = converter.root("input")
    pointer = "#/components/schemas/Node"
    piece = root.convert(_NULLABLE_NODE, pointer)
    assert piece["type"] == ["object", "null"]
    assert _type_lists(piece) == [
        "#/type",
        "#/properties/label/type",
        "#/properties/tags/type",
        "#/properties/tags/items/type",
    ]
    finished = root.finish(piece)
    assert _type_lists(finished) == []
    Draft202012Validator.check_schema(finished)
    assert list(sink) == []


def test_type_list_keywords_for_one_type_go_into_its_branch() -> None:
    schema = {
        "type": "string",
        "nullable": True,
        "description": "an address",
        "minLength": 3,
        "maxLength": 20,
        "pattern": "^a",
        "format": "email",
        "default": "abc",
        "example": "a@b",
    }
    assert _one(schema) == {
        "description": "an address",
        "examples": ["a@b"],
        "default": "abc",
        "anyOf": [
            {
                "type": "string",
                "minLength": 3,
                "maxLength": 20,
                "pattern": "^a",
                "format": "email",
            },
            {"type": "null"},
        ],
    }


def test_type_list_of_many_types_keeps_enum_and_annotations_outside() -> None:
    schema = {
        "type": ["integer", "string", "array", "object", "null"],
        "title": "anything",
        "minimum": 1,
        "maxLength": 3,
        "items": {"type": "integer"},
        "required": ["a"],
        "properties": {"a": {"type": "string"}},
        "enum": [1, "a", [1], {"a": "b"}, None],
    }
    converter, _ = _converter(_spec({"S": schema}), (3, 1))
    root = converter.root("input")
    unsplit = root.convert(schema, "#/components/schemas/S")
    result = root.finish(unsplit)
    assert result == {
        "title": "anything",
        "enum": [1, "a", [1], {"a": "b"}, None],
        "anyOf": [
            {"type": "integer", "minimum": 1},
            {"type": "string", "maxLength": 3},
            {"type": "array", "items": {"type": "integer"}},
            {
                "type": "object",
                "required": ["a"],
                "properties": {"a": {"type": "string"}},
                "additionalProperties": False,
            },
            {"type": "null"},
        ],
    }
    assert _type_lists(result) == []
    Draft202012Validator.check_schema(result)
    instances = [1, 0, "a", "ab", [1], ["1"], {"a": "b"}, {"a": "b", "c": 1}, {}, None, True]
    _same_verdicts(unsplit, result, instances)
    assert [x for x in instances if _valid(result, x)] == [1, "a", [1], {"a": "b"}, None]


def test_type_list_next_to_an_existing_anyof_goes_into_allof() -> None:
    schema = {
        "type": ["string", "null"],
        "maxLength": 5,
        "anyOf": [{"pattern": "^a"}, {"const": None}],
        "allOf": [{"pattern": "^a"}, {"pattern": "b$"}],
    }
    converter, _ = _converter(_spec({"S": schema}), (3, 1))
    root = converter.root("input")
    unsplit = root.convert(schema, "#/components/schemas/S")
    result = root.finish(unsplit)
    assert result == {
        "anyOf": [{"pattern": "^a"}, {"const": None}],  # the spec's own, untouched
        "allOf": [
            {"pattern": "b$"},  # could not be merged: kept, and the split comes after it
            {"anyOf": [{"type": "string", "maxLength": 5, "pattern": "^a"}, {"type": "null"}]},
        ],
    }
    assert _type_lists(result) == []
    Draft202012Validator.check_schema(result)
    instances = ["ab", "abcdb", "abcdeb", "ba", "a", None, 5, ["ab"]]
    _same_verdicts(unsplit, result, instances)
    assert [x for x in instances if _valid(result, x)] == ["ab", "abcdb", None]


def test_type_lists_are_split_in_properties_items_and_defs() -> None:
    result, sink = _convert(_spec({"Node": _NULLABLE_NODE}), "#/components/schemas/Node")
    assert list(sink) == []
    label = {"anyOf": [{"type": "string", "maxLength": 3}, {"type": "null"}]}
    tag = {"anyOf": [{"type": "string", "format": "uuid"}, {"type": "null"}]}
    tags = {"anyOf": [{"type": "array", "minItems": 1, "items": tag}, {"type": "null"}]}
    properties = {"label": label, "tags": tags, "next": {"$ref": "#/$defs/Node"}}
    node = {
        "anyOf": [
            {"type": "object", "properties": properties, "additionalProperties": False},
            {"type": "null"},
        ]
    }
    assert _unhoisted(result, {"Node"}) == {**node, "$defs": {"Node": node}}
    assert _valid(result, None)
    assert _valid(result, {"label": None, "tags": None, "next": None})
    assert _valid(result, {"tags": [None, "x"], "next": {"label": "abc", "next": {}}})
    assert not _valid(result, {"tags": []})
    assert not _valid(result, {"next": {"next": {"label": "abcd"}}})
    assert not _valid(result, {"next": {"other": 1}})


# -- removed keywords and checked values ------------------------------------------------------


def test_openapi_only_keywords_and_extensions_are_removed() -> None:
    schema = {
        "type": "object",
        "discriminator": {"propertyName": "kind"},
        "xml": {"name": "pet"},
        "externalDocs": {"url": "https://example.com"},
        "x-internal": True,
        "properties": {"kind": {"type": "string", "x-order": 1}},
    }
    assert _one(schema) == {
        "type": "object",
        "properties": {"kind": {"type": "string"}},
        "additionalProperties": False,
    }


def test_keywords_unknown_to_json_schema_2020_12_are_dropped_with_a_warning() -> None:
    result, sink = _convert(
        _spec({"S": {"type": "string", "minlength": 3, "$dynamicRef": "#meta"}}),
        "#/components/schemas/S",
    )
    assert result == {"type": "string"}
    assert _messages(sink) == [
        "spec.yaml:#/components/schemas/S/minlength "
        "'minlength' is not a JSON Schema 2020-12 keyword; dropped",
        "spec.yaml:#/components/schemas/S/$dynamicRef $dynamicRef is not supported; dropped",
    ]


def test_duplicate_required_names_are_removed_with_a_warning() -> None:
    schema = {"type": "object", "required": ["a", "a"], "properties": {"a": {"type": "string"}}}
    result, sink = _convert(_spec({"S": schema}), "#/components/schemas/S")
    assert result["required"] == ["a"]
    assert _messages(sink) == [
        "spec.yaml:#/components/schemas/S/required required lists 'a' twice; deduplicated"
    ]


@pytest.mark.parametrize("pattern", ["(", "^\\p{L}+$"])
def test_a_pattern_jsonschema_cannot_compile_is_dropped(pattern: str) -> None:
    # jsonschema checks schemas with Python's `re`, which reads neither (`\p{L}` is ECMA-262);
    # the rest of the schema stays.
    result, sink = _convert(
        _spec({"S": {"type": "string", "pattern": pattern, "maxLength": 5}}),
        "#/components/schemas/S",
    )
    assert result == {"type": "string", "maxLength": 5}
    assert _messages(sink) == [
        f"spec.yaml:#/components/schemas/S/pattern pattern {pattern!r} is not a valid regular"
        " expression; dropped"
    ]


@pytest.mark.parametrize("pattern", ["^(?=.*[0-9])[a-z0-9]+$", "^(a)\\1$", "(?<!x)y"])
def test_S27_a_pattern_only_a_backtracking_engine_runs_is_kept_unchecked(pattern: str) -> None:
    # Look-around and back-references: the model reads them; the server leaves them to the
    # upstream, as a crafted argument could stall a backtracking engine (runtime/patterns.py).
    result, sink = _convert(
        _spec({"S": {"type": "string", "pattern": pattern}}), "#/components/schemas/S"
    )
    assert result == {"type": "string", "pattern": pattern}
    assert _messages(sink) == [
        f"spec.yaml:#/components/schemas/S/pattern pattern {pattern!r}: look-around or"
        " back-references, which the server does not check (no linear-time engine runs them);"
        " the upstream does"
    ]


@pytest.mark.parametrize(
    ("schema", "kept"),
    [
        ({"type": "string", "enum": []}, {"type": "string"}),
        ({"type": "file"}, {}),
        ({"type": "string", "minLength": -1}, {"type": "string"}),
        ({"type": "array", "maxItems": 1.5}, {"type": "array"}),
        ({"type": "number", "multipleOf": 0}, {"type": "number"}),
        ({"type": "number", "maximum": "10"}, {"type": "number"}),
        ({"type": "number", "minimum": True}, {"type": "number"}),
        ({"type": "string", "title": 5}, {"type": "string"}),
        ({"type": "string", "deprecated": "yes"}, {"type": "string"}),
        ({"type": "object", "required": "a"}, {"type": "object"}),
        ({"type": "object", "properties": []}, {"type": "object"}),
        ({"anyOf": []}, {}),
        ({"type": "object", "patternProperties": {"(": {"type": "string"}}}, None),
        ({"type": "string", "examples": "a"}, {"type": "string"}),
    ],
)
def test_invalid_keyword_values_are_dropped_with_a_warning(
    schema: dict[str, Any], kept: dict[str, Any] | None
) -> None:
    result, sink = _convert(_spec({"S": schema}), "#/components/schemas/S")
    if kept is not None:
        assert result == kept
    assert _messages(sink), "a warning names what was dropped"
    assert all(d.level is Level.WARNING for d in sink)


def test_default_that_does_not_match_its_own_schema_is_dropped() -> None:
    document = _spec(
        {
            "Swarm": {
                "type": "object",
                "properties": {
                    "managers": {"type": "array", "items": {"type": "string"}, "default": None},
                    "limit": {"type": "integer", "minimum": 1, "default": 20},
                },
            }
        }
    )
    result, sink = _convert(document, "#/components/schemas/Swarm")
    assert result["properties"]["managers"] == {"type": "array", "items": {"type": "string"}}
    assert result["properties"]["limit"]["default"] == 20
    assert _messages(sink) == [
        "spec.yaml:#/components/schemas/Swarm/properties/managers/default "
        "default None does not match its own schema; dropped"
    ]


def test_a_component_used_by_many_roots_in_both_modes_is_reported_once() -> None:
    document = _spec({"Tag": {"type": "string", "pattern": "(", "x-a": 1}})
    converter, sink = _converter(document)
    for mode in ("input", "output", "input"):
        for index in range(3):
            converter.root(mode).convert({"$ref": "#/components/schemas/Tag"}, f"#/p/{index}")
    assert _messages(sink) == [
        "spec.yaml:#/components/schemas/Tag/pattern pattern '(' is not a valid regular"
        " expression; dropped"
    ]


def test_default_under_a_nullable_type_is_kept() -> None:
    result = _one({"type": "array", "items": {"type": "string"}, "nullable": True, "default": None})
    assert result["default"] is None


# -- allOf -----------------------------------------------------------------------------------


def test_allof_merges_properties_required_and_types() -> None:
    result = _one(
        {
            "allOf": [
                {"type": "object", "required": ["a"], "properties": {"a": {"type": "string"}}},
                {"type": "object", "required": ["b", "a"], "properties": {"b": {"type": "number"}}},
                {"properties": {"b": {"type": "integer", "minimum": 0}}},
            ]
        }
    )
    assert result == {
        "type": "object",
        "required": ["a", "b"],
        "properties": {"a": {"type": "string"}, "b": {"type": "integer", "minimum": 0}},
        "additionalProperties": False,
    }


def test_allof_keeps_the_first_description_and_the_nodes_own_first() -> None:
    result = _one(
        {
            "description": "own",
            "allOf": [{"description": "first", "title": "T"}, {"description": "second"}],
        }
    )
    assert result == {"description": "own", "title": "T"}
    assert _one({"allOf": [{"description": "first"}, {"description": "second"}]}) == {
        "description": "first"
    }


def test_allof_closed_base_extended_with_properties_stays_closed_over_all_of_them() -> None:
    result = _one(
        {
            "allOf": [
                {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {"name": {"type": "string"}},
                },
                {"type": "object", "properties": {"id": {"type": "integer"}}},
            ]
        }
    )
    assert result["properties"] == {"name": {"type": "string"}, "id": {"type": "integer"}}
    assert _valid(result, {"name": "a", "id": 1})
    assert not _valid(result, {"name": "a", "other": 1})


def test_allof_that_cannot_be_merged_stays_allof() -> None:
    result = _one(
        {
            "allOf": [
                {"type": "string", "pattern": "^a"},
                {"type": "string", "pattern": "b$"},
                {"type": "string", "maxLength": 3},
            ]
        }
    )
    assert result == {
        "type": "string",
        "pattern": "^a",
        "maxLength": 3,
        "allOf": [{"type": "string", "pattern": "b$"}],
    }
    assert _valid(result, "ab")
    assert not _valid(result, "ac")


def test_allof_with_contradictory_types_is_kept_as_written() -> None:
    result = _one({"allOf": [{"type": "string"}, {"type": "integer"}]})
    assert result == {"type": "string", "allOf": [{"type": "integer"}]}
    result = _one({"allOf": [{"type": "string"}, {"type": ["integer", "number"]}]})
    assert result == {
        "type": "string",
        "allOf": [{"anyOf": [{"type": "integer"}, {"type": "number"}]}],
    }


@pytest.mark.parametrize(
    ("first", "second", "merged"),
    [
        ("number", "integer", {"type": "integer"}),
        ("integer", ["number", "null"], {"type": "integer"}),
        (
            ["string", "null"],
            ["null", "string", "integer"],
            {"anyOf": [{"type": "string"}, {"type": "null"}]},  # ["string", "null"], split
        ),
    ],
)
def test_allof_intersects_types(first: Any, second: Any, merged: dict[str, Any]) -> None:
    assert _one({"allOf": [{"type": first}, {"type": second}]}) == merged


def test_allof_branch_in_a_cycle_is_resolved_one_level_for_the_merge() -> None:
    document = _spec(
        {
            "NewPet": {
                "type": "object",
                "properties": {
                    "name": {"type": "string"},
                    "owner": {"$ref": "#/components/schemas/Owner"},
                },
            },
            "Pet": {
                "allOf": [
                    {"$ref": "#/components/schemas/NewPet"},
                    {"type": "object", "properties": {"id": {"type": "integer"}}},
                ]
            },
            "Owner": {
                "type": "object",
                "properties": {"pet": {"$ref": "#/components/schemas/Pet"}},
            },
        }
    )
    result, sink = _convert(document, "#/components/schemas/Pet")
    assert list(sink) == []
    assert list(result["properties"]) == ["name", "owner", "id"]
    assert result["properties"]["owner"] == {"$ref": "#/$defs/Owner"}
    assert result["$defs"]["Pet"]["properties"]["owner"] == {"$ref": "#/$defs/Owner"}
    _assert_defs_closed(result)


def test_allof_branches_that_inherit_from_each_other_terminate() -> None:
    document = _spec(
        {
            "A": {"allOf": [{"$ref": "#/components/schemas/B"}, {"properties": {"a": {}}}]},
            "B": {"allOf": [{"$ref": "#/components/schemas/A"}, {"properties": {"b": {}}}]},
        }
    )
    result, sink = _convert(document, "#/components/schemas/A")
    assert list(sink) == []
    _assert_defs_closed(result)
    assert result["properties"] == {"b": {}, "a": {}}  # A and B, each merged into the other
    assert _valid(result, {"a": 1, "b": 2})  # returns: no reference loops back on itself
    assert not _valid(result, {"c": 3})


def test_schema_that_refers_to_itself_without_nesting_drops_the_reference() -> None:
    # A or string is string: the reference to itself says nothing (a warning, not an error).
    document = _spec({"A": {"anyOf": [{"$ref": "#/components/schemas/A"}, {"type": "string"}]}})
    result, sink = _convert(document, "#/components/schemas/A")
    assert result["$defs"]["A"] == {"anyOf": [{"type": "string"}]}
    assert not sink.errors
    [warning] = sink.warnings
    assert warning.location == "spec.yaml:#/components/schemas/A"
    assert "refers back to itself without going down into the data" in warning.message
    assert _valid(result, "x") and not _valid(result, 1)


def test_schemas_that_refer_to_each_other_without_nesting_end() -> None:
    document = _spec(
        {
            "A": {"anyOf": [{"$ref": "#/components/schemas/B"}, {"type": "string"}]},
            "B": {"allOf": [{"$ref": "#/components/schemas/A"}, {"minLength": 1}]},
        }
    )
    result, sink = _convert(document, "#/components/schemas/A")
    assert not sink.errors
    assert _valid(result, "x")  # returns: no reference loops back on itself


# -- input mode: strict ----------------------------------------------------------------------


def test_input_objects_with_declared_properties_are_closed() -> None:
    result = _one(
        {
            "type": "object",
            "properties": {
                "inner": {"type": "object", "properties": {"x": {"type": "string"}}},
                "list": {"type": "array", "items": {"properties": {"y": {"type": "string"}}}},
            },
        }
    )
    assert result["additionalProperties"] is False
    assert result["properties"]["inner"]["additionalProperties"] is False
    assert result["properties"]["list"]["items"]["additionalProperties"] is False


def test_input_explicit_additional_properties_are_kept() -> None:
    result = _one(
        {
            "type": "object",
            "properties": {
                "labels": {"type": "object", "additionalProperties": {"type": "string"}},
                "loose": {
                    "type": "object",
                    "properties": {"a": {"type": "string"}},
                    "additionalProperties": True,
                },
            },
        }
    )
    labels = result["properties"]["labels"]
    assert labels == {"type": "object", "additionalProperties": {"type": "string"}}
    assert result["properties"]["loose"]["additionalProperties"] is True


def test_input_free_form_objects_stay_open() -> None:
    assert _one({"type": "object"}) == {"type": "object"}
    assert _one({"type": "object", "properties": {}}) == {"type": "object", "properties": {}}


def test_input_read_only_properties_are_removed_with_their_required_entry() -> None:
    document = _spec(
        {
            "Id": {"type": "integer", "readOnly": True},
            "Pet": {
                "type": "object",
                "required": ["id", "name"],
                "properties": {
                    "id": {"$ref": "#/components/schemas/Id"},
                    "name": {"type": "string"},
                },
            },
        }
    )
    result, _ = _convert(document, "#/components/schemas/Pet")
    assert result == {
        "type": "object",
        "required": ["name"],
        "properties": {"name": {"type": "string"}},
        "additionalProperties": False,
    }


def test_input_keeps_integers_formats_and_unions() -> None:
    schema = {
        "type": "object",
        "properties": {
            "id": {"type": "integer", "format": "int64"},
            "when": {"oneOf": [{"type": "integer"}, {"type": "string", "format": "date-time"}]},
            "any": {"anyOf": [{"type": "boolean"}, {"type": "null"}]},
            "secret": {"type": "string", "writeOnly": True},
        },
    }
    result = _one(schema)
    assert result["properties"] == schema["properties"]


# -- output mode: lenient --------------------------------------------------------------------

# A response schema with everything output mode leaves out: closed, required, validated.
_STRICT_RESPONSE: dict[str, Any] = {
    "type": "object",
    "additionalProperties": False,
    "required": ["id", "name"],
    "properties": {
        "id": {"type": "integer", "minimum": 1},
        "name": {"type": "string", "pattern": "^[A-Z]", "maxLength": 3},
        "status": {"type": "string", "enum": ["on", "off"]},
        "inner": {"type": "object", "properties": {"x": {"type": "string"}}},
    },
}


def test_output_never_rejects_extra_or_missing_fields_but_rejects_unpromised_nulls() -> None:
    result = _one(_STRICT_RESPONSE, mode="output")
    assert result == {
        "type": "object",
        "properties": {
            "id": {"type": "integer"},
            "name": {"type": "string"},
            "status": {"type": "string"},
            "inner": {"type": "object", "properties": {"x": {"type": "string"}}},
        },
    }
    assert _valid(result, {})
    assert _valid(result, {"name": "string", "status": "string", "extra": 1})
    # Faithful about null: the spec promises an object and an integer, not null. A response
    # that sends null anyway is the runtime's business (`OutputValidator.conform`).
    assert not _valid(result, {"inner": None})
    assert not _valid(result, {"id": None, "name": None})
    assert not _valid(result, {"id": "one"}), "the shape is still described"


def test_output_conform_removes_what_the_faithful_schema_rejects() -> None:
    result = _one(_STRICT_RESPONSE, mode="output")
    what_prism_returns = {"name": "string", "status": "string", "extra": 1, "inner": None}
    assert not _valid(result, what_prism_returns)
    validator = OutputValidator(result)
    conformed, removed = validator.conform(what_prism_returns)
    assert conformed == {"name": "string", "status": "string", "extra": 1}
    assert removed == ["inner"]
    assert _valid(result, conformed)
    assert validator.first_error(conformed) is None
    assert what_prism_returns["inner"] is None, "the response itself is left alone"

    conformed, removed = validator.conform({"id": None, "name": None, "inner": {"x": None}})
    assert conformed == {"inner": {}}
    assert sorted(removed) == ["id", "inner.x", "name"]
    assert _valid(result, conformed)


@pytest.mark.parametrize(
    ("schema", "openapi", "nullable"),
    [
        ({"type": "string"}, (3, 0), False),
        ({"type": "string", "nullable": True}, (3, 0), True),
        ({"type": "string", "x-nullable": True}, (2, 0), True),
        ({"type": "string", "x-nullable": True}, (3, 0), False),  # 2.0's spelling only
        ({"type": ["string", "null"]}, (3, 1), True),
    ],
)
def test_output_nullability_follows_the_spec(
    schema: dict[str, Any], openapi: tuple[int, int], nullable: bool
) -> None:
    holder = {"type": "object", "properties": {"p": schema}}
    result = _one(holder, "output", openapi)
    expected = {"anyOf": [{"type": "string"}, {"type": "null"}]} if nullable else {"type": "string"}
    assert result == {"type": "object", "properties": {"p": expected}}
    assert _valid(result, {"p": None}) is nullable
    assert _valid(result, {"p": "x"})


def test_output_drops_validation_keywords_and_keeps_the_shape() -> None:
    schema = {
        "type": "object",
        "title": "Pet",
        "description": "A pet",
        "required": ["tags"],
        "minProperties": 1,
        "properties": {
            "tags": {
                "type": "array",
                "minItems": 1,
                "uniqueItems": True,
                "items": {"type": "string", "format": "uuid", "example": "x", "not": {"const": ""}},
            },
            "weight": {"type": "number", "multipleOf": 0.5, "exclusiveMaximum": 100},
            "kind": {"const": "pet"},
        },
    }
    assert _one(schema, mode="output") == {
        "type": "object",
        "title": "Pet",
        "description": "A pet",
        "properties": {
            "tags": {
                "type": "array",
                "items": {"type": "string", "format": "uuid", "examples": ["x"]},
            },
            "weight": {"type": "number"},
            "kind": {},
        },
    }


def test_output_keeps_maps_as_maps() -> None:
    schema = {"type": "object", "additionalProperties": {"type": "integer", "maximum": 3}}
    assert _one(schema, mode="output") == {
        "type": "object",
        "additionalProperties": {"type": "integer"},
    }


def test_output_oneof_becomes_anyof() -> None:
    result = _one({"oneOf": [{"type": "integer"}, {"type": "number"}]}, mode="output")
    assert result == {"anyOf": [{"type": "integer"}, {"type": "number"}]}
    assert _valid(result, 3)  # matches both branches: fine for anyOf
    assert not _valid(result, None)


def test_output_write_only_properties_are_removed() -> None:
    schema = {
        "type": "object",
        "properties": {
            "password": {"type": "string", "writeOnly": True},
            "id": {"type": "integer"},
        },
    }
    assert list(_one(schema, mode="output")["properties"]) == ["id"]


def test_output_root_itself_is_never_null() -> None:
    # structuredContent is always an object: a nullable root loses its null in output only.
    schema = {"type": "object", "nullable": True, "properties": {"a": {"type": "string"}}}
    assert _one(schema, mode="output") == {
        "type": "object",
        "properties": {"a": {"type": "string"}},
    }
    assert _one(schema) == {
        "anyOf": [
            {
                "type": "object",
                "properties": {"a": {"type": "string"}},
                "additionalProperties": False,
            },
            {"type": "null"},
        ]
    }


# -- limits (G13) ----------------------------------------------------------------------------


def test_G13_deep_nesting_and_huge_allof_are_refused_with_limit_message() -> None:
    deep: dict[str, Any] = {"type": "string"}
    for _ in range(500):
        deep = {"type": "object", "properties": {"x": deep}}
    chain = {
        f"S{i}": {
            "type": "object",
            "properties": {"next": {"$ref": f"#/components/schemas/S{i + 1}"}},
        }
        for i in range(500)
    }
    huge = {"allOf": [{"properties": {f"p{i}": {"type": "string"}}} for i in range(10_000)]}
    document = _spec({"Deep": deep, "Huge": huge, **chain, "S500": {"type": "string"}})

    started = time.monotonic()
    _, deep_sink = _convert(document, "#/components/schemas/Deep")
    _, chain_sink = _convert(document, "#/components/schemas/S0")
    huge_result, huge_sink = _convert(document, "#/components/schemas/Huge")
    assert time.monotonic() - started < 10

    for sink in (deep_sink, chain_sink):
        [error] = sink.errors
        assert f"more than {MAX_DEPTH} levels deep (limit {MAX_DEPTH})" in error.message
    assert huge_result == {}
    [error] = huge_sink.errors
    assert error.location == "spec.yaml:#/components/schemas/Huge/allOf"
    assert f"10000 branches, more than the limit of {MAX_BRANCHES}" in error.message


def test_allof_at_the_branch_limit_is_merged() -> None:
    schemas: dict[str, Any] = {
        f"P{i}": {"type": "object", "properties": {f"p{i}": {"type": "integer"}}}
        for i in range(1000)
    }
    schemas["All"] = {"allOf": [{"$ref": f"#/components/schemas/P{i}"} for i in range(1000)]}
    result, sink = _convert(_spec(schemas), "#/components/schemas/All")
    assert list(sink) == []
    assert len(result["properties"]) == 1000


# -- determinism -----------------------------------------------------------------------------


def test_conversion_is_deterministic_including_key_order() -> None:
    document = yaml.safe_load(PETSTORE_PLUS.read_text(encoding="utf-8"))

    def everything() -> str:
        converter, _ = _converter(document)
        results = []
        for mode in ("input", "output"):
            for name in sorted(document["components"]["schemas"]):
                root = converter.root(mode)
                pointer = f"#/components/schemas/{name}"
                piece = root.convert(refs.resolve_pointer(document, pointer), pointer)
                results.append(root.finish(piece))
        return json.dumps(results)  # no sort_keys: key order is part of the output

    assert everything() == everything()


# -- petstore-plus ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def petstore_plus() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load(PETSTORE_PLUS.read_text(encoding="utf-8"))
    return loaded


def test_petstore_plus_create_pet_body_is_strict_with_bounded_cycles(
    petstore_plus: dict[str, Any],
) -> None:
    body = "#/paths/~1pets/post/requestBody/content/application~1json/schema"
    compacted, sink = _convert(petstore_plus, body)
    assert list(sink) == []
    result = _unhoisted(compacted, {"Owner", "Pet"})
    assert result["required"] == ["name"]
    assert result["additionalProperties"] is False
    assert result["properties"]["tag"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    assert result["properties"]["owner"] == {"$ref": "#/$defs/Owner"}
    dog, cat = result["properties"]["kind"]["oneOf"]
    assert dog == {
        "type": "object",
        "properties": {"bark": {"type": "boolean"}},
        "additionalProperties": False,
    }
    assert cat["properties"] == {"meow": {"type": "boolean"}}
    assert sorted(result["$defs"]) == ["Owner", "Pet"]
    pet = result["$defs"]["Pet"]
    assert list(pet["properties"]) == ["name", "tag", "status", "owner", "kind", "id"]
    assert pet["required"] == ["name", "id"]
    assert pet["additionalProperties"] is False  # NewPet's, now over Pet's properties too
    assert pet["properties"]["tag"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    _assert_defs_closed(result)

    rex = {"name": "Rex", "tag": None, "owner": {"name": "Ann", "pets": [{"name": "Bo", "id": 2}]}}
    assert _valid(result, rex)
    assert not _valid(result, {**rex, "admin": True})
    assert not _valid(result, {"name": "Rex", "owner": {"pets": [{"name": "Bo"}]}})  # no id


def test_petstore_plus_category_self_cycle(petstore_plus: dict[str, Any]) -> None:
    result, _ = _convert(petstore_plus, "#/components/schemas/Category")
    assert result["properties"]["children"]["items"] == {"$ref": "#/$defs/Category"}
    assert _valid(result, {"name": "a", "children": [{"name": "b", "children": [{"name": "c"}]}]})
    assert not _valid(result, {"children": [{"children": [{"colour": "red"}]}]})


def test_petstore_plus_pet_output_is_faithful_and_conform_fixes_what_a_mock_returns(
    petstore_plus: dict[str, Any],
) -> None:
    compacted, sink = _convert(petstore_plus, "#/components/schemas/Pet", mode="output")
    assert list(sink) == []
    result = _unhoisted(compacted, {"Owner", "Pet"})
    assert result["type"] == "object"
    assert "required" not in result
    assert "additionalProperties" not in result
    assert result["properties"]["kind"]["anyOf"][0]["type"] == "object"
    assert result["properties"]["status"] == {"type": "string"}
    assert result["properties"]["tag"] == {"anyOf": [{"type": "string"}, {"type": "null"}]}
    _assert_defs_closed(result)
    # Prism invents strings and extra fields: fine. It also cuts recursive schemas off with
    # null, which the spec does not allow: the schema says so, and the runtime removes it.
    assert _valid(result, {"name": "string", "status": "string", "tag": None, "extra": {}})
    mock = {"name": "string", "status": "string", "owner": {"pets": [None]}, "kind": None}
    assert not _valid(result, mock)
    assert not _valid(result, {"id": "not a number"})
    conformed, removed = OutputValidator(result).conform(mock)
    assert conformed == {"name": "string", "status": "string", "owner": {"pets": []}}
    assert removed == ["owner.pets[0]", "kind"]
    assert _valid(result, conformed)
    assert OutputValidator(compacted).conform(mock) == (conformed, removed)


# -- the big specs ---------------------------------------------------------------------------


def _check_each_subschema_once(schema: Any, seen: set[str]) -> None:
    """`check_schema` on every distinct subschema, each with its own subschemas blanked; and
    no subschema may have a `type` list.

    The 2020-12 meta-schema checks every subschema on its own, so this is the same verdict as
    checking the whole (and the second check finds what `_type_lists` would), without
    re-checking a component inlined a thousand times.
    """
    if not isinstance(schema, dict):
        return
    children: list[Any] = []
    shallow = dict(schema)
    for key, value in schema.items():
        if key in ("properties", "patternProperties", "dependentSchemas", "$defs"):
            if isinstance(value, dict):
                children.extend(value.values())
                shallow[key] = dict.fromkeys(value, True)
        elif key in ("allOf", "anyOf", "oneOf", "prefixItems"):
            if isinstance(value, list):
                children.extend(value)
                shallow[key] = [True] * len(value)
        elif key in _SCHEMA_KEYS:
            children.append(value)
            shallow[key] = True
    fingerprint = json.dumps(shallow, sort_keys=True)
    if fingerprint not in seen:
        seen.add(fingerprint)
        _check_schema(shallow)
        assert not isinstance(shallow.get("type"), list), shallow
    for child in children:
        _check_each_subschema_once(child, seen)


# jsonschema's `check_schema` is pure Python: ~20 s over Stripe's 5,785 distinct subschemas.
# jsonschema-rs gives the same verdict on the meta-schema itself; the one format of the
# meta-schema that jsonschema checks here (`regex`: `pattern` and `patternProperties` keys;
# `uri` and `uri-reference` need a package that is not installed) is checked with `re`, as
# jsonschema's checker does. Anything jsonschema-rs rejects goes to jsonschema for the error.
_META_FAST = jsonschema_rs.validator_for(Draft202012Validator.META_SCHEMA).is_valid
_ONLY_REGEX = {"uri", "uri-reference"}.isdisjoint(Draft202012Validator.FORMAT_CHECKER.checkers)


def _check_schema(schema: dict[str, Any]) -> None:
    """`Draft202012Validator.check_schema(schema)`, the same verdict, faster."""
    if _ONLY_REGEX and _META_FAST(schema):
        patterns = list(schema.get("patternProperties") or ())
        if isinstance(schema.get("pattern"), str):
            patterns.append(schema["pattern"])
        for pattern in patterns:
            re.compile(pattern)
        return
    Draft202012Validator.check_schema(schema)


def test_the_fast_meta_schema_check_rejects_what_jsonschema_rejects() -> None:
    _check_schema({"type": "string", "pattern": "^a+$", "patternProperties": {"^x-": {}}})
    bad: list[dict[str, Any]] = [
        {"type": "strin"},
        {"properties": 3},
        {"minLength": -1},
        {"pattern": "("},
        {"patternProperties": {"[": True}},
    ]
    for schema in bad:
        with pytest.raises((SchemaError, re.error)):
            _check_schema(schema)
        with pytest.raises(SchemaError):
            Draft202012Validator.check_schema(schema)


def _load_corpus(name: str) -> dict[str, Any]:
    path = CORPUS / name
    with path.open(encoding="utf-8") as handle:
        if name.endswith(".json"):
            loaded: dict[str, Any] = json.load(handle)
        else:
            loaded = yaml.load(handle, Loader=yaml.CSafeLoader)
    return loaded


@pytest.mark.slow
@pytest.mark.parametrize("name", ["stripe.yaml", "github.json"])
def test_every_component_schema_of_a_big_spec_converts_to_valid_2020_12(name: str) -> None:
    document = _load_corpus(name)
    started = time.monotonic()
    converter, sink = _converter(document)
    results = []
    for mode in ("input", "output"):
        for schema_name, schema in document["components"]["schemas"].items():
            root = converter.root(mode)
            pointer = refs.join("#/components/schemas", schema_name)
            results.append(root.finish(root.convert(schema, pointer)))
    converted = time.monotonic() - started
    seen: set[str] = set()
    for result in results:
        _check_each_subschema_once(result, seen)
        _assert_defs_closed(result)
    print(
        f"\n{name}: {len(results)} roots converted in {converted:.1f} s, "
        f"checked in {time.monotonic() - started - converted:.1f} s"
    )
    assert sink.errors == []


# -- output roots share their cyclic $defs ----------------------------------------------------

SHARED_CYCLE_SPEC = """\
openapi: 3.1.0
info: {title: Trees, version: "1"}
servers: [{url: "https://trees.example/api"}]
paths:
  /trees/{id}:
    get:
      operationId: getTree
      parameters: [{name: id, in: path, required: true, schema: {type: string}}]
      responses:
        "200":
          description: A tree.
          content: {application/json: {schema: {$ref: "#/components/schemas/Node"}}}
  /forest:
    get:
      operationId: getForest
      responses:
        "200":
          description: The first tree of the forest.
          content: {application/json: {schema: {$ref: "#/components/schemas/Node"}}}
components:
  schemas:
    Node:
      type: object
      properties:
        label: {type: [string, "null"], maxLength: 40}
        children: {type: array, items: {$ref: "#/components/schemas/Node"}}
"""


def test_output_roots_sharing_a_cycle_get_it_split_and_no_later_stage_changes_it(
    tmp_path: Path,
) -> None:
    # Output roots share the finished `$defs` bodies of a cycle (and their split form) rather
    # than a copy each: every root must still get the split form, and no stage after the build
    # may change an output schema, or one tool's change would show in another's.
    spec = tmp_path / "trees.yaml"
    spec.write_text(SHARED_CYCLE_SPEC, encoding="utf-8")
    sink = DiagnosticSink()
    server = build(spec, sink)
    schemas = {tool.name: tool.output_schema for tool in server.tools}
    assert len(schemas) == 2 and all(s is not None and "$defs" in s for s in schemas.values())
    for schema in schemas.values():
        assert _type_lists(schema) == []  # `type: [string, null]` split, in $defs too
        _assert_defs_closed(schema)
    before = copy.deepcopy(schemas)

    render_server(server, RenderOptions("trees.yaml"), sink)

    assert not sink.has_errors, [d.render() for d in sink]
    assert {tool.name: tool.output_schema for tool in server.tools} == before


def test_declared_properties_without_a_type_are_an_object_in_input() -> None:
    """Xero's schemas (and many converted specs') give properties and no `type`: JSON Schema
    alone then accepts any string, such as an example that is the object's JSON text, which
    the typed models refuse (the generated tests of xero_files failed so)."""
    properties = {"Name": {"type": "string"}}
    assert _one({"properties": properties})["type"] == "object"
    assert "type" not in _one({"properties": properties}, mode="output")
    either = _one({"properties": properties, "anyOf": [{"required": ["Name"]}, {}]})
    assert "type" not in either  # a composition says what it accepts


def test_a_body_example_that_is_json_text_is_left_out(tmp_path: Path) -> None:
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/folders": {
                "post": {
                    "operationId": "createFolder",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "example": '{ "Name": "My Docs" }',
                                "schema": {"properties": {"Name": {"type": "string"}}},
                            }
                        }
                    },
                    "responses": {"201": {"description": "ok"}},
                }
            }
        },
    }
    path = tmp_path / "t.yaml"
    path.write_text(yaml.safe_dump(spec), encoding="utf-8")
    (tool,) = build(path, DiagnosticSink(), namespace="t").tools
    assert all(isinstance(example.get("body", {}), dict) for example in tool.examples)
