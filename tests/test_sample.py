"""Small valid instances of converted schemas (`mcpmint.sample`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]

from mcpmint import refs
from mcpmint.build.sample import drop_invalid_examples, sample_instance, teaching_instance
from mcpmint.build.schema import Mode, SchemaConverter
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build
from tests.support import in_a_child

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"
PETSTORE_PLUS = CORPUS / "crafted" / "petstore-plus.yaml"


def _sample(schema: dict[str, Any]) -> Any:
    ok, value = sample_instance(schema)
    assert ok, f"no sample for {schema}"
    assert Draft202012Validator(schema).is_valid(value)
    return value


# -- the spec's own values come first -------------------------------------------------------


def test_examples_default_const_and_enum_are_preferred_in_that_order() -> None:
    assert _sample({"type": "string", "examples": ["rex"], "default": "bo", "enum": ["rex", "bo"]})
    assert _sample({"type": "string", "examples": ["rex"], "default": "bo"}) == "rex"
    assert _sample({"type": "string", "default": "bo", "enum": ["x", "bo"]}) == "bo"
    assert _sample({"const": "pet"}) == "pet"
    assert _sample({"type": "string", "enum": ["available", "sold"]}) == "available"


def test_an_example_that_breaks_the_schema_is_skipped() -> None:
    assert _sample({"type": "string", "maxLength": 3, "examples": ["too long"]}) == "str"


def test_a_float_example_is_not_an_integer() -> None:
    # The runtime refuses 1.0 for an integer argument; the sample must not offer it.
    assert _sample({"type": "integer", "examples": [1.0, True]}) == 1


# -- objects and arrays ----------------------------------------------------------------------


def test_objects_get_their_required_properties_only() -> None:
    schema = {
        "type": "object",
        "required": ["name", "age"],
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer", "minimum": 18},
            "nick": {"type": "string"},
        },
        "additionalProperties": False,
    }
    assert _sample(schema) == {"name": "string", "age": 18}


def test_min_properties_adds_optional_then_made_up_properties() -> None:
    schema = {
        "type": "object",
        "minProperties": 3,
        "properties": {"a": {"type": "boolean"}},
        "additionalProperties": {"type": "integer"},
    }
    assert _sample(schema) == {"a": True, "key1": 1, "key2": 1}


def test_arrays_get_min_items_items_unique_when_required() -> None:
    assert _sample({"type": "array", "items": {"type": "string"}}) == []
    unique = {"type": "array", "minItems": 3, "uniqueItems": True, "items": {"type": "integer"}}
    assert _sample(unique) == [1, 2, 3]
    enum = {"type": "array", "minItems": 2, "uniqueItems": True, "items": {"enum": ["a", "b"]}}
    assert _sample(enum) == ["a", "b"]


def test_tuples_follow_prefix_items() -> None:
    schema = {
        "type": "array",
        "minItems": 2,
        "prefixItems": [{"type": "number"}, {"type": "string", "format": "date"}],
    }
    assert _sample(schema) == [1, "2024-01-01"]


# -- strings and numbers ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "string"}, "string"),
        ({"type": "string", "minLength": 8}, "stringgg"),
        ({"type": "string", "maxLength": 2}, "st"),
        ({"type": "string", "format": "date-time"}, "2024-01-01T00:00:00Z"),
        ({"type": "string", "format": "date"}, "2024-01-01"),
        ({"type": "string", "format": "email"}, "user@example.com"),
        ({"type": "string", "format": "uuid"}, "00000000-0000-4000-8000-000000000000"),
        ({"type": "string", "format": "uri"}, "https://example.com"),
        ({"type": "string", "pattern": "^[0-9]{3}$"}, "123"),
        ({"type": "string", "pattern": "^[A-Z]"}, "A"),
        ({"type": "string", "pattern": "^/v1/accounts"}, "/v1/accounts"),
    ],
)
def test_strings_honour_lengths_formats_and_simple_patterns(
    schema: dict[str, Any], expected: str
) -> None:
    assert _sample(schema) == expected


@pytest.mark.parametrize(
    ("pattern", "expected"),
    [
        # Azure's subscription IDs: no candidate meets it, and no call case was made.
        (
            "^[0-9A-Fa-f]{8}-([0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}$",
            "aaaaaaaa-aaaa-aaaa-aaaa-aaaaaaaaaaaa",
        ),
        ("^\\d{3}-[A-Z]{2,}$", "000-AA"),
        ("^(foo|bar)+/[^/]+$", "foo/a"),
        ("^[^a0A_ .x-]$", "b"),  # a negated class: a member of its own complement
    ],
)
def test_a_string_meets_a_pattern_no_candidate_meets(pattern: str, expected: str) -> None:
    assert _sample({"type": "string", "pattern": pattern}) == expected


def test_a_pattern_beyond_reading_gives_no_sample() -> None:
    """A lookahead or backreference is not read; no text is guessed."""
    ok, _ = sample_instance({"type": "string", "pattern": "^(?=b)(z)\\1$"})
    assert not ok


@pytest.mark.parametrize(
    ("schema", "expected"),
    [
        ({"type": "integer"}, 1),
        ({"type": "integer", "minimum": 5, "maximum": 9}, 5),
        ({"type": "integer", "maximum": -3}, -3),
        ({"type": "integer", "exclusiveMinimum": 1}, 2),
        ({"type": "integer", "minimum": 5, "multipleOf": 4}, 8),
        ({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1}, 0.5),
        ({"type": "number", "minimum": 0.15, "maximum": 0.2, "multipleOf": 0.05}, 0.2),
    ],
)
def test_numbers_stay_within_bounds_and_multiples(schema: dict[str, Any], expected: Any) -> None:
    assert _sample(schema) == expected


def test_nullable_type_samples_the_non_null_type_first() -> None:
    assert _sample({"type": ["null", "boolean"]}) is True
    assert _sample({"type": "null"}) is None


# -- references and unions -------------------------------------------------------------------


def test_references_are_followed_into_defs() -> None:
    defs = {"Tag": {"type": "string", "enum": ["dog"]}}
    schema = {"type": "object", "required": ["tag"], "properties": {"tag": {"$ref": "#/$defs/Tag"}}}
    assert sample_instance(schema, defs) == (True, {"tag": "dog"})
    assert sample_instance({**schema, "$defs": defs}) == (True, {"tag": "dog"})


def test_a_recursive_schema_stops_where_nothing_more_is_required() -> None:
    node = {
        "type": "object",
        "required": ["kids"],
        "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
    }
    assert sample_instance({"$ref": "#/$defs/Node", "$defs": {"Node": node}}) == (
        True,
        {"kids": []},
    )


def test_a_required_cycle_has_no_sample_and_the_search_is_bounded() -> None:
    loop = {
        "type": "object",
        "required": ["next"],
        "properties": {"next": {"$ref": "#/$defs/Loop"}},
    }
    assert sample_instance({"$ref": "#/$defs/Loop", "$defs": {"Loop": loop}}) == (False, None)
    branching = {"anyOf": [{"$ref": "#/$defs/B"}, {"$ref": "#/$defs/B"}, {"$ref": "#/$defs/B"}]}
    assert sample_instance({"$ref": "#/$defs/B", "$defs": {"B": branching}}) == (False, None)


def test_unions_take_the_first_branch_that_works() -> None:
    schema = {"anyOf": [{"type": "string", "minLength": 3, "maxLength": 2}, {"type": "integer"}]}
    assert _sample(schema) == 1
    assert _sample({"oneOf": [{"type": "boolean"}, {"type": "string"}]}) is True


def test_a_union_branch_is_sampled_together_with_what_sits_next_to_the_union() -> None:
    schema = {
        "type": "object",
        "required": ["version"],
        "anyOf": [{"required": ["pattern"]}, {"required": ["must_match"]}],
        "properties": {"version": {"type": "string"}, "pattern": {"type": "string"}},
        "additionalProperties": False,
    }
    assert _sample(schema) == {"version": "string", "pattern": "string"}


def test_unsatisfiable_schemas_give_no_sample() -> None:
    too_short = {"type": "string", "pattern": "^zz[q]+$", "maxLength": 2}  # needs three
    assert sample_instance(too_short) == (False, None)
    assert sample_instance({"type": "integer", "minimum": 5, "maximum": 4}) == (False, None)
    assert sample_instance({"not": {}}) == (False, None)
    closed = {"type": "object", "required": ["a"], "additionalProperties": False}
    assert sample_instance(closed) == (False, None)


# -- converted specs -------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["input", "output"])
def test_every_petstore_plus_schema_gets_a_valid_sample(mode: Mode) -> None:
    document = yaml.safe_load(PETSTORE_PLUS.read_text(encoding="utf-8"))
    converter = SchemaConverter(
        document, openapi=(3, 0), sink=DiagnosticSink(), locate=lambda pointer: pointer
    )
    for name in document["components"]["schemas"]:
        root = converter.root(mode)
        pointer = f"#/components/schemas/{name}"
        schema = root.finish(root.convert(refs.resolve_pointer(document, pointer), pointer))
        ok, value = sample_instance(schema)
        assert ok, name
        assert Draft202012Validator(schema).is_valid(value)
        if mode == "input" and name == "NewPet":
            assert value == {"name": "Rex"}


@pytest.mark.slow
@pytest.mark.parametrize("name", ["stripe.yaml", "github.json"])
def test_every_component_of_a_big_spec_gets_a_valid_sample(name: str) -> None:
    path = CORPUS / name
    with path.open(encoding="utf-8") as handle:
        if name.endswith(".json"):
            document = json.load(handle)
        else:
            document = yaml.load(handle, Loader=yaml.CSafeLoader)
    converter = SchemaConverter(
        document, openapi=(3, 0), sink=DiagnosticSink(), locate=lambda pointer: pointer
    )
    missing = []
    for mode in ("input", "output"):
        for schema_name, schema in document["components"]["schemas"].items():
            root = converter.root(mode)
            pointer = refs.join("#/components/schemas", schema_name)
            converted = root.finish(root.convert(schema, pointer))
            ok, value = sample_instance(converted)
            if not ok:
                missing.append((mode, schema_name))
            assert not ok or Draft202012Validator(converted).is_valid(value)
    assert missing == []


# ---------------------------------------------------------------------- examples that teach
def test_a_teaching_value_comes_only_from_what_the_schema_says() -> None:
    assert teaching_instance({"type": "string"}) == (False, None)  # no "string" placeholder
    assert teaching_instance({"type": "integer"}) == (False, None)
    assert teaching_instance({"type": "string", "format": "date"}) == (True, "2024-01-01")
    assert teaching_instance({"type": "string", "enum": ["open", "closed"]}) == (True, "open")
    assert teaching_instance({"type": "string", "examples": ["octocat"]}) == (True, "octocat")
    ok, value = teaching_instance({"type": "string", "pattern": "^[a-z]+$"})
    assert ok and isinstance(value, str) and value.isalpha()
    obj = {
        "type": "object",
        "properties": {"id": {"$ref": "#/$defs/Id"}, "note": {"type": "string"}},
        "required": ["id"],
        "$defs": {"Id": {"type": "string", "format": "uuid"}},
    }
    assert teaching_instance(obj) == (True, {"id": "00000000-0000-4000-8000-000000000000"})
    assert teaching_instance({**obj, "required": ["id", "note"]}) == (False, None)


def test_property_examples_are_checked_like_whole_calls() -> None:
    schema = {
        "type": "object",
        "properties": {
            "digest": {"type": "string", "minLength": 71, "examples": ["sha256:0ec"]},
            "vcs": {"enum": ["git", "svn"], "examples": ['"git"', "git"]},
            "count": {"type": "integer", "examples": [1.0, 2]},
            "thing": {"$ref": "#/$defs/Thing"},
            "examples": {"type": "string", "examples": ["a property named examples"]},
        },
        "$defs": {"Thing": {"type": "object", "properties": {"n": {"type": "integer"}}}},
        "examples": [{"digest": "whole calls are checked elsewhere"}],
    }
    kept, dropped = drop_invalid_examples(schema)
    props = kept["properties"]
    assert "examples" not in props["digest"] and props["vcs"]["examples"] == ["git"]
    assert props["count"]["examples"] == [2]  # 1.0 is not an integer to the runtime
    assert props["examples"]["examples"] == ["a property named examples"]
    assert kept["examples"] == schema["examples"]  # the root's are left to checked_examples
    assert [d.split(":")[0] for d in dropped] == [
        "properties/digest",
        "properties/vcs",
        "properties/count",
    ]


def test_a_tool_example_is_whole_and_real_or_absent(tmp_path: Path) -> None:
    def spec(owner: dict[str, Any]) -> dict[str, Any]:
        body = {"type": "object", "properties": {"title": {"type": "string"}}}
        return {
            "openapi": "3.0.3",
            "info": {"title": "T", "version": "1"},
            "paths": {
                "/repos/{owner}/issues": {
                    "post": {
                        "operationId": "createIssue",
                        "parameters": [{"name": "owner", "in": "path", "required": True, **owner}],
                        "requestBody": {
                            "content": {
                                "application/json": {"schema": body, "example": {"title": "Bug"}}
                            }
                        },
                        "responses": {"201": {"description": "ok"}},
                    }
                }
            },
        }

    def examples(owner: dict[str, Any]) -> tuple[dict[str, Any], ...]:
        path = tmp_path / "t.yaml"
        path.write_text(yaml.safe_dump(spec(owner)), encoding="utf-8")
        (tool,) = build(path, DiagnosticSink(), namespace="t").tools
        return tool.examples

    # A bare string path parameter: no placeholder, so no example at all.
    assert examples({"schema": {"type": "string"}}) == ()
    assert examples({"schema": {"type": "string"}, "example": "octocat"}) == (
        {"owner": "octocat", "title": "Bug"},
    )


def test_S27_examples_against_a_catastrophic_pattern_are_checked_at_once(tmp_path: Path) -> None:
    # Python's `re` needs longer than the age of the universe to refuse these examples, which
    # nearly match (a real spec's URL pattern and a classic one); generation used to hang.
    patterns = {
        "site": r"^(https?:\/\/)?([\da-z\.-]+)\.([a-z\.]{2,6})([\/\w \.-]*)*\/?$",
        "code": r"^(\d+)*[a-z]$",
    }
    near_misses = {"site": "http://a.io/" + "a" * 40 + "!", "code": "1" * 40 + "!"}
    properties = {
        name: {"type": "string", "pattern": pattern, "example": near_misses[name]}
        for name, pattern in patterns.items()
    }
    spec = {
        "openapi": "3.0.3",
        "info": {"title": "T", "version": "1"},
        "paths": {
            "/sites": {
                "post": {
                    "operationId": "addSite",
                    "requestBody": {
                        "content": {
                            "application/json": {
                                "schema": {"type": "object", "properties": properties}
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

    def schemas() -> dict[str, Any]:
        (tool,) = build(path, DiagnosticSink(), namespace="t").tools
        return dict(tool.input_schema["properties"])

    built = in_a_child(schemas)
    for name, pattern in patterns.items():
        assert built[name]["pattern"] == pattern and "examples" not in built[name]
