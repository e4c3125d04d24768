"""The index of a JSON spec's text (textindex.py) and the quick load by it
(load.load_json_quickly's `previous`): the data is the standard parser's, every check the
whole text would fail still fails, and only a change inside `paths`' members uses it."""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest

from mcpmint import load
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load import load_document, load_json_quickly
from mcpmint.textindex import TextIndex, changed_members, decode_indexed

BASE: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "t", "version": "1"},
    "paths": {
        "/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/Ok"}}}},
        "/b": {"get": {"description": "b\u00e9", "responses": {}}},
        "/c": {"post": {"responses": {}}},
    },
    "components": {
        "responses": {"Ok": {"description": "ok"}},
        "schemas": {"Pet": {"type": "object"}},
        "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "k"}},
    },
}


def text_of(document: dict[str, Any], indent: int | None = 1) -> str:
    return json.dumps(document, indent=indent, ensure_ascii=False)


def indexed(tmp_path: Path, text: str) -> TextIndex:
    spec = tmp_path / "spec.json"
    spec.write_text(text, encoding="utf-8")
    quick = load_json_quickly(spec)
    assert quick is not None and quick.index is not None
    return quick.index


@pytest.mark.parametrize("indent", [None, 1, 4])
def test_the_walk_gives_the_parsers_data_and_cuts_the_text_at_each_member(
    indent: int | None,
) -> None:
    text = text_of(BASE, indent)
    walked = decode_indexed(text, json.JSONDecoder())
    assert walked is not None
    data, layout = walked
    assert data == json.loads(text) and layout is not None
    bounds = [0, *layout.members, len(text)]
    chunks = [text[a:b] for a, b in itertools.pairwise(bounds)]
    assert "".join(chunks) == text
    for chunk, path in zip(chunks[1:-1], BASE["paths"], strict=True):
        assert chunk.startswith(json.dumps(path) + ":")
    assert chunks[-1].lstrip().startswith("}")  # `paths`' own end, then the rest
    assert layout.keys == list(BASE["paths"])
    # Each top-level member's, section's and entry's value is where the layout says.
    assert [key for key, _, _ in layout.top] == list(BASE)
    for key, start, end in layout.top:
        assert json.loads(text[start:end]) == BASE[key]
    for name, start, end in layout.sections:
        assert json.loads(text[start:end]) == BASE["components"][name]
    assert [(s, n) for s, n, _, _ in layout.entries] == [
        ("responses", "Ok"),
        ("schemas", "Pet"),
        ("securitySchemes", "key"),
    ]
    for section, name, start, end in layout.entries:
        assert json.loads(text[start:end]) == BASE["components"][section][name]


@pytest.mark.parametrize(
    "text",
    ['{"paths": {}}', '{"openapi": "3.0.3"}', '{"paths": []}', "[1]", '{"paths": {"/a": 1}} x'],
)
def test_texts_without_members_to_index_or_not_json_give_no_bounds(text: str) -> None:
    walked = decode_indexed(text, json.JSONDecoder())
    assert walked is None or walked[1] is None


def edited(change: str) -> dict[str, Any]:
    document = json.loads(json.dumps(BASE))
    paths = document["paths"]
    if change == "member":
        paths["/b"]["get"]["description"] = "changed, longer than it was"
    elif change == "first and last":
        paths["/a"]["get"]["summary"] = "s"
        paths["/c"]["post"]["summary"] = "s"
    elif change == "added":
        document["paths"] = {"/a": paths["/a"], "/a2": {"get": {}}, **paths}
    elif change == "removed":
        del paths["/b"]
    elif change == "head":
        document["info"]["title"] = "other"
    elif change == "tail":
        document["components"]["responses"]["Ok"]["description"] = "other"
    return document


@pytest.mark.parametrize("change", ["member", "first and last", "added", "removed"])
def test_a_change_inside_paths_is_read_by_the_index_as_the_whole_check_reads_it(
    tmp_path: Path, change: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    index = indexed(tmp_path, text_of(BASE))
    spec = tmp_path / "spec.json"
    spec.write_text(text_of(edited(change)), encoding="utf-8")
    whole = load_json_quickly(spec)
    assert whole is not None

    def unchecked(*args: Any) -> Any:
        raise AssertionError("the index was not used")

    monkeypatch.setattr(load, "_checked", unchecked)
    quick = load_json_quickly(spec, previous=index)
    assert quick is not None
    assert quick.document.data == whole.document.data and quick.digest == whole.digest
    assert quick.index == whole.index and not quick.into_paths
    # An index of the edited text, for the next edit.
    assert quick.index is not None and changed_members(spec.read_text("utf-8"), quick.index) is None


@pytest.mark.parametrize("change", ["head", "tail"])
def test_a_change_outside_the_members_of_paths_is_checked_whole(
    tmp_path: Path, change: str
) -> None:
    index = indexed(tmp_path, text_of(BASE))
    text = text_of(edited(change))
    assert changed_members(text, index) is None
    assert load._by_index(text, index, "", False) is None


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ('"description": "b\u00e9"', '"description": "b", "description": "again"'),  # duplicate
        ('"/b": {', '"/a": {'),  # a changed member's key is an unchanged one's
        ('"description": "b\u00e9"', '"x-n": NaN'),
        ('"description": "b\u00e9"', '"x-n": 1e999'),
        ('"description": "b\u00e9"', '"schema": {"$ref": "#/components/schemas/Missing"}'),
        ('"description": "b\u00e9"', '"schema": {"$ref": "other.json#/x"}'),
        ('"description": "b\u00e9"', '"description": "b"},'),  # not JSON any more
        ('},\n  "/c"', '}\n  "/c"'),  # no comma after the changed member
    ],
)
def test_what_the_whole_check_refuses_in_a_changed_member_is_refused_by_the_index_too(
    tmp_path: Path, old: str, new: str
) -> None:
    index = indexed(tmp_path, text_of(BASE))
    text = text_of(BASE)
    assert old in text
    spec = tmp_path / "spec.json"
    spec.write_text(text.replace(old, new, 1), encoding="utf-8")
    assert load._by_index(spec.read_text("utf-8"), index, "", False) is None
    assert load_json_quickly(spec, previous=index) is None  # nor the whole check


def test_a_ref_into_paths_is_said_and_never_read_by_the_index(tmp_path: Path) -> None:
    document = edited("member")
    document["paths"]["/b"]["get"]["x-schema"] = {"$ref": "#/paths/~1a"}
    index = indexed(tmp_path, text_of(BASE))
    spec = tmp_path / "spec.json"
    spec.write_text(text_of(document), encoding="utf-8")
    assert load._by_index(spec.read_text("utf-8"), index, "", False) is None
    quick = load_json_quickly(spec, previous=index)
    assert quick is not None and quick.into_paths and quick.index is not None
    assert quick.index.into_paths
    # Its index is then never used: the next edit, inside a member, is checked whole.
    spec.write_text(text_of(document).replace('"changed', '"edited'), encoding="utf-8")
    assert load._by_index(spec.read_text("utf-8"), quick.index, "", False) is None


def test_the_whole_load_keeps_the_quick_loads_index_of_a_text_that_passes_its_checks(
    tmp_path: Path,
) -> None:
    text = text_of(BASE)
    spec = tmp_path / "spec.json"
    spec.write_text(text, encoding="utf-8")
    whole = load_document(spec, DiagnosticSink())
    assert whole is not None and whole.text_index == indexed(tmp_path, text)
    for old, new in [
        ('"description": "b\u00e9"', '"description": "b", "description": "again"'),
        ('"description": "b\u00e9"', '"x-n": NaN'),
        ('"#/components/responses/Ok"', '"#/components/responses/Missing"'),
        ('"#/components/responses/Ok"', '"other.json#/Ok"'),
    ]:
        spec.write_text(text.replace(old, new, 1), encoding="utf-8")
        (tmp_path / "other.json").write_text('{"Ok": {"description": "ok"}}', encoding="utf-8")
        again = load_document(spec, DiagnosticSink())
        assert again is None or again.text_index is None, new


def test_an_index_read_back_from_the_cache_is_checked(tmp_path: Path) -> None:
    index = indexed(tmp_path, text_of(BASE))
    assert TextIndex.from_json(json.loads(json.dumps(index.to_json()))) == index
    stored = index.to_json()
    for broken in [
        None,
        {**stored, "bounds": [0, 9, 5, *stored["bounds"][3:]]},
        {**stored, "bounds": [1, *stored["bounds"][1:]]},
        {**stored, "digests": stored["digests"][1:]},
        {**stored, "into": "no"},
        {**stored, "keys": stored["keys"][1:]},
        {**stored, "top": [["openapi", 0]]},
        {**stored, "sections": [["schemas", "0", 1]]},
        {**stored, "entries": [["schemas", "Pet", 1]]},
    ]:
        assert TextIndex.from_json(broken) is None


REACHING: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "t", "version": "1"},
    "components": {
        "responses": {"Ok": {"description": "ok"}},
        "schemas": {
            "A": {"type": "object", "properties": {"b": {"$ref": "#/components/schemas/B"}}},
            "Unused": {"type": "integer"},
            "B": {
                "type": "object",
                "properties": {"a": {"$ref": "#/components/schemas/A/properties/b"}},
            },
        },
        "securitySchemes": {"key": {"type": "apiKey", "in": "header", "name": "k"}},
    },
    "paths": {
        "/a": {"get": {"responses": {"200": {"$ref": "#/components/responses/Ok"}}}},
        "/b": {
            "get": {
                "description": "b",
                "responses": {
                    "200": {
                        "description": "x",
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/A"}}
                        },
                    }
                },
            }
        },
        "/c": {"post": {"responses": {}}},
    },
    "x-extension": {"schema": {"$ref": "#/components/schemas/Unused"}},
}


def test_a_partial_read_holds_the_changed_path_items_and_what_they_reach(tmp_path: Path) -> None:
    """Components before `paths` (in the part before them), `x-extension` after them (moved by
    the change); the changed item reaches `A`, and `B` through it, not `Unused`; the other
    sections are whole, every part in the text's order."""
    index = indexed(tmp_path, text_of(REACHING))
    edited = json.loads(json.dumps(REACHING))
    edited["paths"]["/b"]["get"]["description"] = "a longer description than before"
    spec = tmp_path / "spec.json"
    spec.write_text(text_of(edited), encoding="utf-8")
    quick = load_json_quickly(spec, previous=index, partly=True)
    assert quick is not None and quick.partial and quick.replaced is not None
    data = quick.document.data
    schemas = REACHING["components"]["schemas"]
    assert data == {
        "openapi": "3.0.3",
        "info": REACHING["info"],
        "components": {
            "responses": {},
            "schemas": {"A": schemas["A"], "B": schemas["B"]},
            "securitySchemes": REACHING["components"]["securitySchemes"],
        },
        "paths": {"/b": edited["paths"]["/b"]},
        "x-extension": REACHING["x-extension"],
    }
    assert list(data) == list(REACHING) and list(data["components"]["schemas"]) == ["A", "B"]
    # Its index is the whole text's, as a whole load makes it.
    whole = load_json_quickly(spec)
    assert whole is not None and not whole.partial and quick.index == whole.index
    assert quick.digest == whole.digest and not quick.into_paths


@pytest.mark.parametrize(
    ("ref", "partial"),
    [
        ("#/components/schemas", False),  # a whole section: not followed, all of it read
        ("#/info", True),  # outside the components: there already
        ("#/components/securitySchemes/key", True),  # a section read whole
    ],
)
def test_a_ref_a_partial_read_does_not_follow_makes_it_read_all(
    tmp_path: Path, ref: str, partial: bool
) -> None:
    index = indexed(tmp_path, text_of(REACHING))
    edited = json.loads(json.dumps(REACHING))
    edited["paths"]["/b"]["get"]["x-other"] = {"$ref": ref}
    spec = tmp_path / "spec.json"
    spec.write_text(text_of(edited), encoding="utf-8")
    quick = load_json_quickly(spec, previous=index, partly=True)
    assert quick is not None and quick.replaced is not None and quick.partial == partial
    if not partial:
        assert quick.document.data == edited


def test_a_partial_read_refuses_a_ref_to_an_entry_the_text_lacks(tmp_path: Path) -> None:
    index = indexed(tmp_path, text_of(REACHING))
    edited = json.loads(json.dumps(REACHING))
    edited["paths"]["/b"]["get"]["x-other"] = {"$ref": "#/components/schemas/Missing"}
    spec = tmp_path / "spec.json"
    spec.write_text(text_of(edited), encoding="utf-8")
    assert load_json_quickly(spec, previous=index, partly=True) is None
