"""Reusing the previous run's tools (toolmemo.py) and test cases (cases.py): a reused tool or
case is exactly what the same inputs make cold, with the same diagnostics, and anything it is
made from that changes makes it be made again."""

from __future__ import annotations

import dataclasses
import datetime
import functools
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpmint import ir
from mcpmint.build import toolmemo
from mcpmint.build.toolmemo import decode_tool, encode_tool
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build, build_cached
from mcpmint.render.cases import build_cases
from mcpmint.write.cache import Memo

from .conftest import CORPUS, REPO

# Every OpenAPI spec of ours, and corpus specs with cycles, Swagger 2.0, warnings and links.
SPECS = [
    REPO / "specs" / "petstore-plus.yaml",
    REPO / "specs" / "petstore.yaml",
    REPO / "specs" / "petstore-v2.yaml",
    REPO / "specs" / "wire-plan-3.1" / "oas31.yaml",
    CORPUS / "oai-petstore-expanded.yaml",
    CORPUS / "oai-uspto.yaml",
    CORPUS / "oai-link-example.yaml",
    CORPUS / "osv-read-only-write-only.yaml",
    CORPUS / "prance-recursive-objs" / "recursive_objs.yaml",
    CORPUS / "docker-engine.yaml",
    CORPUS / "asana.yaml",
]


def built(spec: Path, memo: Memo | None) -> tuple[ir.Server, list[str]]:
    sink = DiagnosticSink()
    server = build(spec, sink) if memo is None else build_cached(spec, sink, memo=memo)
    return server, [d.render() for d in sink.items]


@functools.cache
def cold_build(spec: Path) -> tuple[ir.Server, list[str]]:
    """`built(spec, None)`, once per spec for the whole session (the IR is immutable)."""
    return built(spec, None)


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_a_build_from_the_memo_is_the_cold_build(spec: Path) -> None:
    cold = cold_build(spec)
    first = Memo({})
    assert built(spec, first) == cold  # recording changes nothing
    again = Memo(dict(first.used))
    assert built(spec, again) == cold  # reusing changes nothing: tools and diagnostics
    assert again.missed == 0 and again.used == first.used  # every kept tool was reused
    if spec.stem == "petstore-plus":  # no diagnostics at all: every tool is kept
        assert len(first.used) == len(cold[0].tools)


def test_every_tool_field_survives_the_json_round_trip(tmp_path: Path) -> None:
    tools = [
        tool for spec in [*SPECS, _write(tmp_path, BASE)] for tool in cold_build(spec)[0].tools
    ]
    assert any(tool.request and tool.request.body and tool.request.body.encoding for tool in tools)
    assert any(tool.security and tool.security[0] and tool.security[0][0].scopes for tool in tools)
    for tool in tools:
        assert decode_tool(json.loads(json.dumps(encode_tool(tool)))) == tool


BASE: dict[str, Any] = {
    "openapi": "3.1.0",
    "info": {"title": "Shop", "version": "1"},
    "servers": [{"url": "https://shop.example"}],
    "paths": {
        "/items": {
            "get": {
                "operationId": "listItems",
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "array",
                                    "items": {"$ref": "#/components/schemas/Item"},
                                }
                            }
                        },
                    }
                },
            },
            "post": {
                "operationId": "addItem",
                "requestBody": {
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Item"}}
                    }
                },
                "responses": {"201": {"description": "ok"}},
            },
        },
        "/uploads": {
            "post": {
                "operationId": "upload",
                "requestBody": {
                    "content": {
                        "multipart/form-data": {
                            "schema": {
                                "type": "object",
                                "properties": {
                                    "file": {"type": "string", "format": "binary"},
                                    "tags": {"type": "array", "items": {"type": "string"}},
                                },
                            },
                            "encoding": {"tags": {"style": "form", "explode": True}},
                        }
                    }
                },
                "responses": {"204": {"description": "ok"}},
            },
        },
        "/trees": {
            "get": {
                "operationId": "getTree",
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Node"}}
                        },
                    }
                },
            },
        },
        "/orders": {
            "get": {
                "operationId": "listOrders",
                "parameters": [{"$ref": "#/components/parameters/Limit"}],
                "responses": {
                    "200": {
                        "description": "ok",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Order"}}
                        },
                    }
                },
            },
        },
    },
    "components": {
        "parameters": {
            "Limit": {"name": "limit", "in": "query", "schema": {"type": "integer"}},
        },
        "schemas": {
            "Item": {"type": "object", "properties": {"name": {"type": "string"}}},
            "Order": {"type": "object", "properties": {"id": {"type": "string"}}},
            "Node": {
                "type": "object",
                "properties": {
                    "children": {"type": "array", "items": {"$ref": "#/components/schemas/Node"}}
                },
            },
        },
    },
}


def _edit(path: list[Any], value: Any) -> Any:
    def apply(document: dict[str, Any]) -> None:
        node = document
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return apply


def _drop_list_items(document: dict[str, Any]) -> None:
    del document["paths"]["/items"]["get"]


EDITS = {
    "an operation's description": _edit(["paths", "/items", "get", "description"], "All."),
    "a shared component": _edit(
        ["components", "schemas", "Item", "properties", "price"], {"type": "number"}
    ),
    "a parameter component": _edit(
        ["components", "parameters", "Limit", "schema"], {"type": "integer", "maximum": 50}
    ),
    "a component made cyclic": _edit(
        ["components", "schemas", "Item", "properties", "parts"],
        {"type": "array", "items": {"$ref": "#/components/schemas/Item"}},
    ),
    "document-level security": _edit(["security"], [{"key": []}]),
    # Relative links in descriptions are made absolute against the docs' origin.
    "the docs' origin": _edit(["info", "contact"], {"url": "https://docs.shop.example"}),
    "a path-level parameter": _edit(
        ["paths", "/orders", "parameters"],
        [{"name": "region", "in": "query", "schema": {"type": "string"}}],
    ),
    # A new cycle whose pointer sorts first takes the `$defs` name `Node`: getTree's cycle,
    # whose text did not change, becomes `Node_2`.
    "another cycle taking a $defs name": _edit(
        ["components", "schemas", "A"],
        {
            "type": "object",
            "properties": {
                "Node": {
                    "type": "object",
                    "properties": {"next": {"$ref": "#/components/schemas/A/properties/Node"}},
                }
            },
        },
    ),
    "a warning that only the first user of a component reported": _drop_list_items,
}


def _write(folder: Path, document: dict[str, Any]) -> Path:
    spec = folder / "shop.yaml"
    spec.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
    return spec


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
def test_after_an_edit_the_warm_build_is_the_cold_build_of_the_edited_spec(
    tmp_path: Path, edit: str
) -> None:
    document = json.loads(json.dumps(BASE))
    document["components"]["securitySchemes"] = {
        "key": {"type": "apiKey", "in": "header", "name": "X-Key"}
    }
    # A keyword the conversion drops with a warning, in a component two tools share: the
    # warning is reported once, by whichever tool converts the component first.
    document["components"]["schemas"]["Item"]["x-frobnicate"] = True
    document["components"]["schemas"]["Item"]["properties"]["name"]["frobnicate"] = True
    document["paths"]["/uploads"]["post"]["description"] = "See [the guide](/docs/upload)."
    memo = Memo({})
    built(_write(tmp_path, document), memo)
    EDITS[edit](document)
    spec = _write(tmp_path, document)
    cold = built(spec, None)
    warm = built(spec, Memo(dict(memo.used)))
    assert warm == cold
    if edit.startswith("a warning"):
        assert any("'frobnicate' is not" in line for line in cold[1])  # the warning is still there


def test_tools_reached_by_a_changed_component_are_built_again_and_the_others_reused(
    tmp_path: Path,
) -> None:
    memo = Memo({})
    built(_write(tmp_path, BASE), memo)
    assert len(memo.used) == 5
    document = json.loads(json.dumps(BASE))
    EDITS["a shared component"](document)
    again = Memo(dict(memo.used))
    built(_write(tmp_path, document), again)
    assert again.missed == 2  # listItems and addItem reach Item; the other three were reused
    assert len(set(again.used) & set(memo.used)) == 3


def test_a_corrupt_or_foreign_memo_value_is_a_miss(tmp_path: Path) -> None:
    spec = _write(tmp_path, BASE)
    memo = Memo({})
    cold = built(spec, memo)
    keys = sorted(memo.used)[:3]
    values = [memo.used[key] for key in keys]
    # Garbage, a record of another shape, and another tool's record under this key.
    damaged = Memo(dict(zip(keys, ["{not json", json.dumps({"tool": 1}), values[0]], strict=True)))
    assert values[0] != values[1]
    assert built(spec, damaged) == cold
    assert damaged.missed == 5  # the three damaged, and the two not in the memo


def test_a_tool_json_cannot_carry_is_built_every_time_and_builds_the_same(
    tmp_path: Path,
) -> None:
    # YAML's `.nan` is a float JSON cannot write (the loader keeps dates as their text): no
    # key is made for what holds it.
    text = yaml.safe_dump(BASE, sort_keys=False).replace(
        "operationId: listItems", "operationId: listItems\n      x-ratio: .nan", 1
    )
    spec = tmp_path / "dated.yaml"
    spec.write_text(text, encoding="utf-8")
    memo = Memo({})
    cold = built(spec, memo)
    assert len(memo.used) == len(cold[0].tools) - 1  # every tool but listItems
    again = Memo(dict(memo.used))
    assert built(spec, again) == cold and again.missed == 0
    # The same at document level, which every tool's key includes: nothing is kept.
    dated = text.replace("paths:", "security:\n- key:\n  - .nan\npaths:", 1)
    dated = dated.replace(
        "components:",
        "components:\n  securitySchemes:\n    key: {type: apiKey, in: header, name: X-Key}",
        1,
    )
    spec.write_text(dated, encoding="utf-8")
    none = Memo({})
    assert built(spec, none)[0].tools and none.used == {}


@pytest.mark.parametrize(
    ("record", "error"),
    [
        ({"example": float("nan")}, ValueError),
        ({"example": float("inf")}, ValueError),
        ({"example": (1, 2)}, ValueError),
        ({"example": datetime.date(2026, 12, 1)}, ValueError),
        ({"example": 2**70}, TypeError),
        ({"example": {1: "a"}}, TypeError),
        ({"example": {"a", "b"}}, TypeError),
    ],
    ids=repr,
)
def test_a_record_json_cannot_carry_exactly_is_refused(record: Any, error: type) -> None:
    with pytest.raises(error):
        toolmemo.record_text(record)


def test_a_record_reads_back_as_memo_text_would_write_it() -> None:
    record = {"tool": {"name": "t", "n": 1, "x": 1.5, "tiny": 1e-05, "s": 'ünï "q"'}, "cut": True}
    assert json.loads(toolmemo.record_text(record)) == json.loads(toolmemo.memo_text(record))


# ---------------------------------------------------------------- the cases memo (cases.py)


def cases_of(server: ir.Server, memo: Memo | None) -> tuple[str, list[str]]:
    sink = DiagnosticSink()
    cases = build_cases(server, sink, memo)
    return json.dumps(cases, sort_keys=True), [d.render() for d in sink.items]


@pytest.mark.parametrize("spec", SPECS, ids=[s.stem for s in SPECS])
def test_cases_from_the_memo_are_the_cases_made_cold(spec: Path) -> None:
    server = cold_build(spec)[0]
    cold = cases_of(server, None)
    first = Memo({})
    assert cases_of(server, first) == cold  # recording changes nothing
    again = Memo(dict(first.used))
    assert cases_of(server, again) == cold  # reusing changes nothing: cases and warnings
    assert again.missed == 0 and again.used == first.used
    assert first.missed == len(first.used) > 0


def test_a_case_is_made_again_when_its_tool_or_what_every_case_shares_changes() -> None:
    server = built(REPO / "specs" / "petstore-plus.yaml", None)[0]
    first = Memo({})
    cases_of(server, first)
    # What every case shares: the base URL moves every expected request.
    moved = dataclasses.replace(server, base_url="https://elsewhere.example/v9")
    memo = Memo(dict(first.used))
    assert cases_of(moved, memo) == cases_of(moved, None)
    assert memo.missed == len(server.tools)
    # One tool changed: only its case is made again.
    tool = server.tools[0]
    changed = dataclasses.replace(tool, description=tool.description + " (edited)")
    edited = dataclasses.replace(server, tools=(changed, *server.tools[1:]))
    memo = Memo(dict(first.used))
    assert cases_of(edited, memo) == cases_of(edited, None)
    assert memo.missed == 1
