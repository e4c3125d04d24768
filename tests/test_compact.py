"""`mcpmint.compact`: same verdicts on every instance, fewer bytes, stable output."""

from __future__ import annotations

import copy
import json
import random
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped, unused-ignore]

from mcpmint import jsontext
from mcpmint.build.compact import (
    HOIST_MIN_BYTES,
    Interner,
    _Compactor,
    _cut,
    _CutSizes,
    compact,
    compact_within,
    inline_defs,
    limit_depth,
)

CORPUS = Path(__file__).resolve().parents[2] / "shared" / "corpus"

_ADDRESS = {
    "type": "object",
    "title": "Address",
    "properties": {
        "street": {"type": "string", "minLength": 1, "description": "Street"},
        "city": {"type": "string", "title": "City", "description": "City"},
        "zip": {"anyOf": [{"type": "string", "pattern": "^[0-9]{5}$"}, {"type": "null"}]},
    },
    "required": ["street"],
    "additionalProperties": False,
}
_USER = {
    "type": "object",
    "properties": {
        "login": {"type": "string"},
        "id": {"type": "integer", "format": "int64"},
        "home": _ADDRESS,
        "work": copy.deepcopy(_ADDRESS),
        "extra": {"type": "object", "properties": {}},
    },
    "additionalProperties": False,
}
_NODE = {
    "type": "object",
    "properties": {"value": {"type": "integer"}, "next": {"$ref": "#/$defs/Node"}},
}
SCHEMAS: list[dict[str, Any]] = [
    {"type": "object", "properties": {"author": _USER, "editor": copy.deepcopy(_USER)}},
    {"type": "object", "properties": {"items": {"type": "array", "items": _USER}, "one": _USER}},
    {
        "type": "object",
        "properties": {"head": {"$ref": "#/$defs/Node"}, "a": _ADDRESS, "b": _ADDRESS},
        "$defs": {"Node": _NODE, "Address": {"type": "string"}},
    },
    {  # data that looks like a schema is never touched
        "type": "object",
        "properties": {"x": _ADDRESS, "y": _ADDRESS},
        "examples": [{"x": {"street": "a"}, "y": {"street": "b"}}],
        "default": {"properties": {}, "title": "t", "description": "t"},
    },
    {"type": "object", "properties": {}, "additionalProperties": False},
]
INSTANCES: list[Any] = [
    None,
    1,
    "x",
    {},
    {"author": {"login": "a", "home": {"street": "s"}}},
    {"author": {"login": "a", "home": {"street": ""}}},
    {"author": {"home": {"street": "s", "zip": "12345"}}, "editor": {"work": {"zip": "1"}}},
    {"editor": {"extra": {"anything": 1}}},
    {"editor": {"bogus": 1}},
    {"items": [{"login": "a"}, {"home": {"street": "s", "city": 3}}], "one": {"id": 2}},
    {"items": [{"id": 1.5}]},
    {"head": {"value": 1, "next": {"value": 2, "next": {"value": "x"}}}},
    {"head": {"value": 1, "next": {"value": 2}}, "a": {"street": "s"}, "b": {"x": 1}},
    {"x": {"street": "s"}, "y": {"street": "s", "more": 1}},
    {"anything": True},
]


def _valid(schema: dict[str, Any], instance: Any) -> bool:
    return bool(Draft202012Validator(schema).is_valid(instance))


def _type_lists(node: Any) -> int:
    if isinstance(node, list):
        return sum(_type_lists(item) for item in node)
    if isinstance(node, dict):
        own = 1 if isinstance(node.get("type"), list) else 0
        return own + sum(_type_lists(value) for value in node.values())
    return 0


def _size(schema: Any) -> int:
    return len(json.dumps(schema, separators=(",", ":")))


@pytest.mark.parametrize("index", range(len(SCHEMAS)))
def test_same_verdicts_valid_schema_idempotent_and_deterministic(index: int) -> None:
    schema = SCHEMAS[index]
    before = copy.deepcopy(schema)
    result = compact(schema, min_bytes=40)
    assert schema == before, "compact is pure"
    Draft202012Validator.check_schema(result)
    assert _type_lists(result) == _type_lists(schema) == 0
    for instance in INSTANCES:
        assert _valid(result, instance) == _valid(schema, instance), instance
    assert compact(result, min_bytes=40) == result
    assert json.dumps(compact(copy.deepcopy(schema), min_bytes=40)) == json.dumps(result)
    assert _size(result) <= _size(schema)


def test_repeated_subschemas_are_hoisted_once_with_readable_names() -> None:
    result = compact(SCHEMAS[0], min_bytes=40)
    assert result["properties"]["author"] == {"$ref": "#/$defs/Author"}
    assert result["properties"]["editor"] == {"$ref": "#/$defs/Author"}
    user = result["$defs"]["Author"]
    assert user["properties"]["home"] == user["properties"]["work"] == {"$ref": "#/$defs/Address"}
    assert sorted(result["$defs"]) == ["Address", "Author"]
    # The title wins for the name; a description repeating the title is dropped; format stays.
    assert result["$defs"]["Address"]["properties"]["city"] == {"type": "string", "title": "City"}
    assert user["properties"]["id"] == {"type": "integer", "format": "int64"}
    # `properties: {}` below the root says nothing: dropped; the root keeps its own.
    assert user["properties"]["extra"] == {"type": "object"}
    assert compact(SCHEMAS[4]) == SCHEMAS[4]


def test_existing_defs_and_refs_stay_and_names_do_not_clash() -> None:
    result = compact(SCHEMAS[2], min_bytes=40)
    assert result["$defs"]["Node"] == _NODE
    assert result["$defs"]["Address"] == {"type": "string"}
    assert result["properties"]["head"] == {"$ref": "#/$defs/Node"}
    assert result["properties"]["a"] == {"$ref": "#/$defs/Address_2"}
    assert inline_defs(result, {"Address_2"})["properties"]["a"]["title"] == "Address"


def test_data_is_never_rewritten() -> None:
    result = compact(SCHEMAS[3], min_bytes=40)
    assert result["examples"] == SCHEMAS[3]["examples"]
    assert result["default"] == SCHEMAS[3]["default"]


def test_small_or_single_subschemas_stay_inline() -> None:
    small = {"type": "object", "properties": {"a": {"type": "string"}, "b": {"type": "string"}}}
    assert compact(small) == small  # repeated, but under the threshold
    once = {"type": "object", "properties": {"home": _ADDRESS}}
    assert "$defs" not in compact(once, min_bytes=40)  # large, but used once
    assert "$defs" not in compact(SCHEMAS[0], min_bytes=10_000)


def test_inlining_the_hoisted_defs_gives_back_the_tree() -> None:
    for schema in SCHEMAS[:2]:
        result = compact(schema, min_bytes=40)
        expanded = inline_defs(result, set(result.get("$defs", {})))
        assert compact(expanded, min_bytes=40) == result
        for instance in INSTANCES:
            assert _valid(expanded, instance) == _valid(schema, instance)


@pytest.mark.slow
def test_every_github_response_schema_compacts_and_keeps_its_meaning(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mcpmint.diagnostics import DiagnosticSink
    from mcpmint.pipeline import build

    server = build(CORPUS / "github.json", DiagnosticSink())
    before = after = 0
    for tool in server.tools:
        if tool.output_schema is None:
            continue
        expanded = inline_defs(tool.output_schema, _hoisted(tool.output_schema))
        before += _size(expanded)
        after += _size(tool.output_schema)
        assert compact(tool.output_schema) == tool.output_schema  # finish already compacted
        Draft202012Validator.check_schema(tool.output_schema)
    assert after < before
    with capsys.disabled():
        print(f"\nGitHub output schemas: {before} -> {after} bytes ({after / before:.0%})")


def _hoisted(schema: dict[str, Any]) -> set[str]:
    """Hoisted entries never refer back to themselves (cycles are the converter's)."""
    defs = schema.get("$defs", {})
    return {name for name, sub in defs.items() if f'"#/$defs/{name}"' not in json.dumps(sub)}


def _big_cyclic_output() -> dict[str, Any]:
    node = {
        "type": "object",
        "properties": {
            f"field_{i}": {"type": "string", "description": "x" * 40} for i in range(30)
        },
    }
    node["properties"]["children"] = {"type": "array", "items": {"$ref": "#/$defs/Node"}}
    node["properties"]["parent"] = {"$ref": "#/$defs/Node"}
    return {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}},
        "$defs": {"Node": node},
    }


def test_output_schemas_within_the_budget_are_left_alone() -> None:
    schema = {"type": "object", "properties": {"a": {"type": "string"}}}
    assert limit_depth(schema, 1000) == schema


def test_oversized_output_schemas_are_cut_to_a_depth_that_fits_and_only_get_more_permissive() -> (
    None
):
    schema = _big_cyclic_output()
    cut = limit_depth(schema, 1500)
    assert len(json.dumps(cut, separators=(",", ":"))) <= 1500
    assert "$defs" not in cut and "$ref" not in json.dumps(cut)
    Draft202012Validator.check_schema(cut)
    # The structure near the root survives...
    assert cut["properties"]["root"]["type"] == "object"
    instances = [
        {"root": {"field_1": "a", "children": [{"field_2": "b", "parent": {}}]}},
        {"root": {"children": [{"children": [{"children": []}]}]}},
        {"root": {"field_1": 5}},
        {"root": "not an object"},
    ]
    full, limited = Draft202012Validator(schema), Draft202012Validator(cut)
    for instance in instances:
        # ...and nothing the full schema accepts is refused by the cut one.
        if full.is_valid(instance):
            assert limited.is_valid(instance), instance
    assert not limited.is_valid(instances[3])


def _varied_cyclic_output() -> dict[str, Any]:
    """Every kind of member a cut treats differently, through a reference cycle."""
    node: dict[str, Any] = {
        "type": "object",
        "description": 'ünïcode "quoted" \\ and a control \u0001 character',
        "properties": {
            "name": {"type": "string", "enum": ["a", "b"], "default": None},
            "size": {"type": "number", "minimum": 1e-05, "maximum": 2.5, "default": 3},
            "flag": {"type": "boolean", "default": False, "examples": [True]},
            "kind": {"anyOf": [{"$ref": "#/$defs/Leaf"}, {"type": "integer"}]},
            "either": {"oneOf": [{"$ref": "#/$defs/Node"}, {"type": "null"}]},
            "both": {"allOf": [{"$ref": "#/$defs/Leaf", "description": "with a sibling"}]},
            "map": {"type": "object", "additionalProperties": {"$ref": "#/$defs/Node"}},
            "pattern": {"type": "object", "patternProperties": {"^x-": {"$ref": "#/$defs/Leaf"}}},
            "tuple": {"type": "array", "prefixItems": [{"type": "string"}], "not": {}},
            "empty": {"type": "object", "properties": {}},
            "none": {},
            "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}},
        },
    }
    leaf = {"type": "object", "properties": {"ключ": {"type": "string"}}, "required": []}
    return {
        "type": "object",
        "properties": {"root": {"$ref": "#/$defs/Node"}, "list": {"anyOf": []}},
        "$defs": {"Node": node, "Leaf": leaf},
    }


@pytest.mark.parametrize("cap", [10**9, 5000, 300, 40, 0])
def test_a_cuts_size_is_measured_exactly_without_making_it(cap: int) -> None:
    """limit_depth measures each depth's cut before making it: the measure is the length of
    the cut's compact JSON, or anything above `cap` once it is longer."""
    for schema in (_varied_cyclic_output(), _big_cyclic_output()):
        defs = schema["$defs"]
        sizes = _CutSizes(defs, cap)
        for depth in range(5, -1, -1):
            made = len(jsontext.compact(_cut(schema, defs, depth)))
            assert sizes.of(schema, depth) == min(made, cap + 1), (depth, made)


def _hoisting_output() -> dict[str, Any]:
    """Repeated subschemas (hoisted when compacted) around a reference cycle."""
    schema = _varied_cyclic_output()
    address = copy.deepcopy(_ADDRESS)
    schema["properties"].update({"home": address, "work": copy.deepcopy(address)})
    node = schema["$defs"]["Node"]
    node["properties"]["addresses"] = {"type": "array", "items": copy.deepcopy(address)}
    node["properties"]["billing"] = copy.deepcopy(address)
    return schema


@pytest.mark.parametrize("max_bytes", [10**9, 3000, 1500, 800, 300, 10])
def test_compacting_within_a_budget_is_compacting_then_cutting(max_bytes: int) -> None:
    """The build compacts a response schema and cuts it in one step (`compact_within`),
    counting the compacted size from the interner's table and cutting through views of the
    compacted schema: the result is what compacting, then `limit_depth`, gives."""
    for schema in (_hoisting_output(), _varied_cyclic_output(), _big_cyclic_output(), _ADDRESS):
        whole = compact(schema, min_bytes=40)
        expected = limit_depth(whole, max_bytes)
        got, cut = compact_within(schema, max_bytes, min_bytes=40)
        assert json.dumps(got) == json.dumps(expected)  # the same, in the same key order
        assert cut == (len(jsontext.compact(whole)) > max_bytes)


_OTHER_SUBSCHEMAS = ["not", "if", "then", "else", "contains", "propertyNames", "additionalItems"]


def _random_schema(rng: random.Random, depth: int, defs: list[str], *, branch: bool = False) -> Any:
    """A schema with repeats to hoist, references (some with siblings) into `defs`, type
    lists, titles repeated as descriptions, boolean schemas and every keyword a cut treats
    in its own way. A branch of `anyOf`/`oneOf`/`allOf` is never a bare reference: a cycle
    through those alone describes nothing (the converter refuses it), and a cut of it would
    never end."""
    if depth <= 0 or rng.random() < 0.2:
        choice = rng.random()
        if choice < 0.3 and defs and not branch:
            ref: dict[str, Any] = {"$ref": "#/$defs/" + rng.choice(defs)}
            if rng.random() < 0.3:
                ref["description"] = f"sibling {rng.randint(0, 3)}"
            return ref
        if choice < 0.4:
            return rng.choice([True, False]) if rng.random() < 0.3 else {}
        leaf: dict[str, Any] = {
            "type": rng.choice(["string", "integer", "number", "boolean", ["string", "null"]]),
            "description": rng.choice(["a", "b", "long text " * rng.randint(1, 20)]),
        }
        if rng.random() < 0.2:
            leaf["enum"] = ["x", "y"]
        if rng.random() < 0.05:
            leaf["minimum"] = 1e-05
        return leaf
    node: dict[str, Any] = {}
    if rng.random() < 0.3:
        node["title"] = rng.choice(["Thing", "Other"])
        if rng.random() < 0.5:
            node["description"] = node["title"]
    kind = rng.random()
    if kind < 0.5:
        node["type"] = "object"
        node["properties"] = {
            f"p{i}": _random_schema(rng, depth - 1, defs) for i in range(rng.randint(0, 5))
        }
        if rng.random() < 0.3:
            node["additionalProperties"] = rng.choice([False, _random_schema(rng, depth - 1, defs)])
        if rng.random() < 0.1:
            node["patternProperties"] = {"^x": _random_schema(rng, depth - 1, defs)}
        if rng.random() < 0.1:
            node["dependentSchemas"] = {"p0": _random_schema(rng, depth - 1, defs)}
    elif kind < 0.7:
        node["type"] = "array"
        node["items"] = _random_schema(rng, depth - 1, defs)
        if rng.random() < 0.1:
            node["prefixItems"] = [_random_schema(rng, depth - 1, defs)]
    else:
        branches = [
            _random_schema(rng, depth - 1, defs, branch=True) for _ in range(rng.randint(0, 3))
        ]
        node[rng.choice(["anyOf", "oneOf", "allOf"])] = branches
    if rng.random() < 0.1:
        node[rng.choice(_OTHER_SUBSCHEMAS)] = _random_schema(rng, depth - 1, defs)
    return node


def _random_root(seed: int) -> dict[str, Any]:
    rng = random.Random(seed)
    names = [f"D{i}" for i in range(rng.randint(0, 3))]
    defs = {name: _random_schema(rng, 4, names) for name in names}
    shared = _random_schema(rng, 3, names)
    properties = {
        f"r{i}": shared if rng.random() < 0.5 else _random_schema(rng, 5, names)
        for i in range(rng.randint(1, 6))
    }
    root: dict[str, Any] = {"type": "object", "properties": properties}
    if defs:
        root["$defs"] = defs
    return root


def test_compacting_within_a_budget_matches_on_random_schemas() -> None:
    """`compact_within` against compacting, then `limit_depth`, on 100 random roots (fixed
    seeds), at three hoisting thresholds and budgets around each compacted size."""
    compared = 0
    for seed in range(100):
        root = _random_root(seed)
        for min_bytes in (20, 60, HOIST_MIN_BYTES):
            whole = compact(root, min_bytes=min_bytes)
            size = len(jsontext.compact(whole))
            for budget in sorted({10, size // 4, size // 2, size - 1, size, size + 5}):
                got, cut = compact_within(root, budget, min_bytes=min_bytes)
                expected = limit_depth(whole, budget)
                assert json.dumps(got) == json.dumps(expected), (seed, min_bytes, budget)
                assert cut == (size > budget), (seed, min_bytes, budget)
                compared += 1
    assert compared > 1500


def test_the_least_size_is_never_more_than_the_compacted_size() -> None:
    """`compact_within` cuts a root without planning it when `least_size` is over the
    budget: the bound must never pass the size of the compacted root (else a root that fits
    would be cut), on 100 random roots at three hoisting thresholds."""
    ratios = []
    for seed in range(100):
        root = _random_root(seed)
        for min_bytes in (20, 60, HOIST_MIN_BYTES):
            compactor = _Compactor(min_bytes)
            compactor.intern(root)
            least = compactor.least_size(10**9)
            size = len(jsontext.compact(compact(root, min_bytes=min_bytes)))
            assert least <= size, (seed, min_bytes)
            ratios.append(least / size)
    assert sum(ratios) / len(ratios) > 0.7  # close enough to decide most cuts early


def _distinct_fields(count: int) -> dict[str, Any]:
    return {f"f{i}": {"type": "string", "description": f"field {i} " * 6} for i in range(count)}


def test_a_root_that_cannot_fit_is_cut_without_planning_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    node: dict[str, Any] = {"type": "object", "properties": _distinct_fields(30)}
    node["properties"]["children"] = {"type": "array", "items": {"$ref": "#/$defs/Node"}}
    schema = {"type": "object", "properties": {"root": {"$ref": "#/$defs/Node"}}}
    schema["$defs"] = {"Node": node}
    expected = limit_depth(compact(schema), 1500)
    assert expected != {"type": "object"}

    def refuse(self: _Compactor) -> bool:
        raise AssertionError("planned a root that cannot fit")

    monkeypatch.setattr(_Compactor, "choose", refuse)
    cut, was_cut = compact_within(schema, 1500)
    assert was_cut and json.dumps(cut) == json.dumps(expected)


def test_a_cut_follows_a_reference_to_a_reference() -> None:
    """A hoisted subschema may be a reference with siblings; a cut resolves it to the end
    (it once stopped one step short and kept only the siblings)."""
    inner = {"type": "object", "properties": _distinct_fields(30)}
    outer = {"$ref": "#/$defs/Inner", "description": "the outer one"}
    schema = {
        "type": "object",
        "properties": {"a": {"$ref": "#/$defs/Outer"}, "b": {"$ref": "#/$defs/Outer"}},
        "$defs": {"Outer": outer, "Inner": inner},
    }
    shapes = {f"f{i}": {"type": "string"} for i in range(30)}
    expected = {"type": "object", "properties": shapes, "description": "the outer one"}
    assert limit_depth(schema, 2000)["properties"]["a"] == expected
    # The same through a subschema that compaction hoisted, cut without planning.
    twice = {"type": "object", "properties": {"x": outer, "y": outer}, "$defs": {"Inner": inner}}
    hoisted = compact(twice, min_bytes=20)
    assert hoisted["properties"]["x"] == {"$ref": "#/$defs/X"}
    got, was_cut = compact_within(twice, 2000, min_bytes=20)
    assert was_cut and got == limit_depth(hoisted, 2000)
    assert got["properties"]["x"] == expected


def test_the_compacted_size_is_counted_without_writing_the_schema() -> None:
    for schema in (_hoisting_output(), _varied_cyclic_output(), _big_cyclic_output()):
        for min_bytes in (40, HOIST_MIN_BYTES, 10**6):
            compactor = _Compactor(min_bytes)
            if compactor.plan(schema):
                built = compactor.build_root()
                assert compactor.root_size() == len(jsontext.compact(built))
                assert built == compact(schema, min_bytes=min_bytes)


@pytest.mark.parametrize(
    "keyword",
    ["contains", "if", "then", "else", "propertyNames", "additionalItems", "contentSchema"],
)
def test_a_cut_keeps_no_reference_it_cannot_resolve(keyword: str) -> None:
    """A cut output schema has no `$defs`: a subschema the cut does not go down through (it
    would carry `$ref`s into the cycle, or to a hoisted subschema) is left out, which only
    makes the schema more permissive."""
    schema = _big_cyclic_output()
    node = schema["$defs"]["Node"]
    node["properties"]["children"][keyword] = {"$ref": "#/$defs/Node"}
    node["dependentSchemas"] = {"field_1": {"$ref": "#/$defs/Node"}}
    cut, was_cut = compact_within(schema, 1500)
    assert was_cut and "$ref" not in json.dumps(cut) and "$defs" not in cut
    assert cut == limit_depth(compact(schema), 1500)
    assert keyword not in json.dumps(cut) and "dependentSchemas" not in json.dumps(cut)
    Draft202012Validator.check_schema(cut)


def test_a_schema_that_cannot_fit_at_any_depth_becomes_any_object() -> None:
    assert limit_depth(_big_cyclic_output(), 10) == {"type": "object"}


@pytest.mark.parametrize(
    "value",
    ['a"b\\', "é\n\x00", "", 0, -(10**20), True, False, None, 1.5, 1e-7, float("nan")],
    ids=repr,
)
def test_a_scalars_size_is_the_length_of_the_text_json_dumps_writes(value: Any) -> None:
    # Hoisting compares sizes with `min_bytes`: the fast paths for strings, integers, booleans
    # and null must measure what json.dumps writes, or a subschema is hoisted or not by error.
    interner = Interner()
    assert interner._size[interner._scalar(value)] == len(json.dumps(value, ensure_ascii=False))


def test_a_redundant_keyword_is_dropped_even_after_its_compacted_twin() -> None:
    # `{"type": "object"}` and `{"type": "object", "properties": {}}` are one subschema once
    # compacted; the second must still lose its `properties: {}` when nothing is hoisted.
    twin = {"type": "object"}
    redundant = {"type": "object", "properties": {}}
    root = {"type": "object", "properties": {"a": twin, "b": redundant}}

    assert compact(root) == {
        "type": "object",
        "properties": {"a": {"type": "object"}, "b": {"type": "object"}},
    }


def test_one_interner_cuts_many_roots_as_each_root_alone_is_cut() -> None:
    """Roots that are cut without planning share the interner's views and measured sizes
    when their `$defs` are the same (`Interner.unplanned_cut`): each cut is the one the root
    alone gets, with the same, other or no `$defs`, and at other budgets."""
    cyclic, varied = _big_cyclic_output(), _varied_cyclic_output()
    node = cyclic["$defs"]["Node"]
    node["properties"].update(_distinct_fields(20))
    roots = [
        cyclic,
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/Node"}}, "$defs": cyclic["$defs"]},
        {
            "type": "object",
            "properties": {"b": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            "$defs": cyclic["$defs"],
        },
        varied,
        {**varied, "properties": {"x": {"$ref": "#/$defs/Node"}, "y": {"type": "string"}}},
        {"type": "object", "properties": _distinct_fields(40)},
        *(_random_root(seed) for seed in range(30)),
    ]
    for budget in (300, 1500, 4000):
        alone = [compact_within(root, budget) for root in roots]
        interner = Interner()
        together = [compact_within(root, budget, interner=interner) for root in roots]
        assert json.dumps(together) == json.dumps(alone), budget
        assert interner._cut_sizes  # and some were cut without planning
    assert sum(cut for _, cut in together) >= 5


def test_one_interner_for_many_roots_gives_what_each_root_alone_gives() -> None:
    shared = copy.deepcopy(_USER)  # one object in every root, as output schemas share them
    roots = [
        {"type": "object", "properties": {"user": shared, "owner": shared}},
        {"type": "object", "properties": {"user": shared, "extra": {"type": "object"}}},
        {"type": "object", "properties": {"only": {"type": "object", "properties": {}}}},
        SCHEMAS[0],
        {"type": "object", "properties": {"again": shared, "more": copy.deepcopy(_ADDRESS)}},
    ]
    alone = [compact(root, min_bytes=40) for root in roots]
    interner = Interner()

    together = [compact(root, min_bytes=40, interner=interner) for root in roots]

    assert json.dumps(together) == json.dumps(alone)
    assert together[2] == {"type": "object", "properties": {"only": {"type": "object"}}}
