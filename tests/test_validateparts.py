"""Validating only the changed path items (validateparts.py): the findings are those of the
whole document, and whatever could make them differ sends the run to the whole document."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpmint import strictcheck, validate, validateparts
from mcpmint.cache import StageCache
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load import load_document

from .conftest import CORPUS, REPO, corpus_rows

Edit = Callable[[dict[str, Any]], None]


def load(folder: Path, document: dict[str, Any], name: str = "spec.json") -> Any:
    path = folder / name
    path.write_text(json.dumps(document), encoding="utf-8")  # (the C encoder: no indent)
    sink = DiagnosticSink()
    loaded = load_document(path, sink)
    assert loaded is not None and not sink.has_errors
    return loaded


def version_of(document: Any) -> validate.SpecVersion:
    version = validate.detect_version(document, DiagnosticSink())
    assert version is not None
    return version


def rendered(items: list[Any]) -> list[str]:
    return [item.render() for item in items]


class Walks:
    """The path items each validator run was given (None: the whole document)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.calls: list[list[str] | None] = []
        original = strictcheck.report_findings

        def recording(doc: Any, version: Any, sink: Any, paths: Any = None) -> bool:
            self.calls.append(None if paths is None else list(paths))
            return original(doc, version, sink, paths)

        monkeypatch.setattr(strictcheck, "report_findings", recording)


def both_ways(
    tmp_path: Path,
    base: dict[str, Any],
    edit: Edit,
    monkeypatch: pytest.MonkeyPatch,
    shape: dict[str, Any] | None = None,
) -> tuple[list[str], list[str], list[list[str] | None]]:
    """The edited document's findings validated whole, and validated after `base` (clean)
    with its shape at hand (`shape`, when the caller has it); and what the second run
    walked."""
    if shape is None:
        before = load(tmp_path, base, "before.json")
        found, shape = validate.findings(before, version_of(before))
        assert found == [] and shape is not None, rendered(found)
    edited = copy.deepcopy(base)
    edit(edited)
    after = load(tmp_path, edited, "after.json")
    whole, _ = validate.findings(after, version_of(after))
    walks = Walks(monkeypatch)
    by_parts, _ = validate.findings(after, version_of(after), shape)
    return rendered(whole), rendered(by_parts), walks.calls


def petstore() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(
        (REPO / "specs" / "petstore-plus.yaml").read_text(encoding="utf-8")
    )
    return document


def _operation(document: dict[str, Any], path: str = "/pets/{petId}") -> dict[str, Any]:
    operation: dict[str, Any] = document["paths"][path]["get"]
    return operation


def _describe(document: dict[str, Any]) -> None:
    _operation(document)["description"] = "Edited."


def _bad_parameter(document: dict[str, Any]) -> None:
    _operation(document).setdefault("parameters", []).append({"name": "x", "in": "nowhere"})


def _unresolved_path_parameter(document: dict[str, Any]) -> None:
    document["paths"]["/pets/{petId}/{other}"] = copy.deepcopy(document["paths"]["/pets/{petId}"])
    for operation in document["paths"]["/pets/{petId}/{other}"].values():
        if isinstance(operation, dict) and "operationId" in operation:
            operation["operationId"] += "Other"


def _bad_default(document: dict[str, Any]) -> None:
    _operation(document).setdefault("parameters", []).append(
        {"name": "n", "in": "query", "schema": {"type": "integer", "default": "ten"}}
    )


def _removed(document: dict[str, Any]) -> None:
    del document["paths"]["/categories"]


def _duplicate_operation_id(document: dict[str, Any]) -> None:
    _operation(document)["operationId"] = _operation(document, "/pets")["operationId"]


def _component(document: dict[str, Any]) -> None:
    document["components"]["schemas"]["Pet"]["description"] = "Edited."


def _component_with_a_finding(document: dict[str, Any]) -> None:
    document["components"]["schemas"]["Owner"]["properties"]["name"]["default"] = 12


# Each edit: whether the changed path items alone are walked.
EDITS: dict[str, tuple[Edit, bool]] = {
    "a description": (_describe, True),
    "a parameter the document schema refuses": (_bad_parameter, True),
    "a path parameter no parameter defines": (_unresolved_path_parameter, True),
    "a default its schema refuses": (_bad_default, True),
    "a path item removed": (_removed, True),
    "an operation id used twice": (_duplicate_operation_id, False),
    "a component": (_component, False),
    "a component with a finding": (_component_with_a_finding, False),
}


@pytest.mark.parametrize("label", EDITS)
def test_the_changed_path_items_alone_find_what_the_whole_document_does(
    tmp_path: Path, label: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    edit, by_parts = EDITS[label]
    whole, parts, walks = both_ways(tmp_path, petstore(), edit, monkeypatch)
    assert parts == whole
    if by_parts:
        assert walks[0] is not None and len(walks) == 1  # only the path items, once
        assert len(walks[0]) <= 1
    else:
        assert walks == [None]
    if label not in ("a description", "a component", "a path item removed"):
        assert whole, "the edit was meant to make a finding"


def _order_dependent(document: dict[str, Any]) -> None:
    """A component whose `required` names no property of its own or of its `allOf`: the
    library reports it only when it first reaches it as a component or a top-level schema,
    not as a property; here a property of the /pets response reaches it first."""
    document["components"]["schemas"]["Loose"] = {
        "type": "object",
        "allOf": [{"properties": {"a": {"type": "string"}}}],
        "required": ["b"],
    }
    responses = _operation(document, "/pets")["responses"]
    responses["202"] = {
        "description": "accepted",
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "properties": {"loose": {"$ref": "#/components/schemas/Loose"}},
                }
            }
        },
    }


_A_SCHEMA = "#/paths/~1a/get/responses/200/content/application~1json/schema"


def _b_then_a(b_schema: dict[str, Any], a_schema: dict[str, Any]) -> dict[str, Any]:
    """A document of two path items, /b then /a, each one GET answering `schema`."""

    def item(schema: dict[str, Any]) -> dict[str, Any]:
        content = {"application/json": {"schema": schema}}
        return {"get": {"responses": {"200": {"description": "ok", "content": content}}}}

    return {
        "openapi": "3.0.3",
        "info": {"title": "t", "version": "1"},
        "paths": {"/b": item(b_schema), "/a": item(a_schema)},
    }


def _set_a_schema(document: dict[str, Any], schema: dict[str, Any]) -> None:
    document["paths"]["/a"]["get"]["responses"]["200"]["content"]["application/json"] = {
        "schema": schema
    }


def test_such_a_finding_in_a_changed_path_item_sends_it_to_the_whole_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /b, unchanged and walked first, reaches /a's schema as a property; /a's schema becomes
    # one the library reports only when it reaches it as a response schema: /a alone would.
    base = _b_then_a(
        {"type": "object", "properties": {"x": {"$ref": _A_SCHEMA}}},
        {"type": "object", "properties": {"a": {}}},
    )
    loose = {"type": "object", "allOf": [{"properties": {"a": {}}}], "required": ["b"]}
    whole, parts, walks = both_ways(
        tmp_path, base, lambda document: _set_a_schema(document, loose), monkeypatch
    )
    assert parts == whole and walks == [None]
    # Without searching the changed path item, /a alone would be validated, and differ.
    monkeypatch.setattr(validateparts, "_may_report_required", lambda data, holders=None: False)
    _, parts, walks = both_ways(
        tmp_path, base, lambda document: _set_a_schema(document, loose), monkeypatch
    )
    assert walks == [["/a"]] and parts != whole


def test_such_a_finding_that_reads_a_path_item_is_judged_again_with_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # /b, unchanged, requires `a` through an `allOf` member that is /a's schema; /a's schema
    # loses `a`: /b's verdict depends on /a, so it is never kept for /b alone.
    base = _b_then_a(
        {"type": "object", "allOf": [{"$ref": _A_SCHEMA}], "required": ["a"]},
        {"type": "object", "properties": {"a": {}}},
    )
    renamed = {"type": "object", "properties": {"z": {}}}
    whole, parts, walks = both_ways(
        tmp_path, base, lambda document: _set_a_schema(document, renamed), monkeypatch
    )
    assert any("Required list has not defined properties" in line for line in whole)
    assert parts == whole and walks == [None]


def test_a_finding_that_depends_on_the_order_of_the_walk_sends_it_to_the_whole_document(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    base = petstore()
    _order_dependent(base)

    def unlink(document: dict[str, Any]) -> None:  # now the components' walk reaches it first
        del _operation(document, "/pets")["responses"]["202"]

    whole, parts, walks = both_ways(tmp_path, base, unlink, monkeypatch)
    assert any("Required list has not defined properties" in line for line in whole)
    assert parts == whole and walks == [None]
    # Without that check, the path item alone would miss the finding: the check is needed.
    monkeypatch.setattr(validateparts, "_may_report_required", lambda data, holders=None: False)
    _, parts, walks = both_ways(tmp_path, base, unlink, monkeypatch)
    assert walks != [None] and parts != whole


def test_a_document_with_findings_leaves_no_shape_and_without_one_all_is_walked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = petstore()
    _bad_parameter(document)
    loaded = load(tmp_path, document)
    version = version_of(loaded)
    found, shape = validate.findings(loaded, version)
    assert found and shape is not None
    # Its shape is kept for a patched run (patch.py), by the bytes of its file, but it is no
    # baseline for the next validation.
    cache = StageCache(tmp_path / "cache")
    validate.validate_document(loaded, DiagnosticSink(), cache=cache)
    assert cache.get(validate.SHAPE_STAGE, validate.shape_key(loaded, version)) is None
    digest = hashlib.sha256(loaded.files[0].read_bytes()).hexdigest()
    key = validate.document_shape_key(loaded.files[0], digest)
    assert cache.get(validate.DOCUMENT_SHAPE_STAGE, key) == shape
    walks = Walks(monkeypatch)
    validate.findings(loaded, version_of(loaded), None)
    assert walks.calls == [None]


def test_a_swagger_document_is_always_validated_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    document = yaml.safe_load((REPO / "specs" / "petstore-v2.yaml").read_text(encoding="utf-8"))
    loaded = load(tmp_path, document)
    _, shape = validate.findings(loaded, version_of(loaded))
    assert shape is None
    walks = Walks(monkeypatch)
    validate.findings(loaded, version_of(loaded), {"rest": "", "paths": {}})
    assert walks.calls == [None]


@pytest.mark.parametrize(
    ("text", "suffix"),
    [
        ("NaN", "json"),
        ("Infinity", "json"),
        ("-1e999", "json"),
        (".nan", "yaml"),
        ("-.inf", "yaml"),
    ],
)
def test_shapes_tell_nan_from_null_and_refuse_what_json_cannot_carry(
    tmp_path: Path, text: str, suffix: str
) -> None:
    """A document's numbers as the loader found them: NaN and the infinities are not JSON
    (orjson writes them as null)."""
    documents = []
    for value in ("null", text):
        spec = tmp_path / f"{value}.{suffix}"
        spec.write_text('{"openapi": "3.0.3", "paths": {"/a": {"x-v": ' + value + "}}}")
        loaded = load_document(spec, DiagnosticSink())
        assert loaded is not None
        documents.append(loaded)
    with_null, with_nan = (validateparts.document_shape(d.data, finite=d.finite) for d in documents)
    assert with_null is not None and with_nan is None
    assert validateparts.document_shape({"paths": {"/a": {"x-v": {1, 2}}}}, finite=True) is None
    assert validateparts.document_shape({"paths": []}, finite=True) is None
    # orjson refuses an integer beyond 64 bits: the standard library's text, a digest still
    assert validateparts.document_shape({"paths": {"/a": {"x-v": 2**70}}}, finite=True)


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"$ref": "#/components/schemas/Base"}], "required": ["id"]},
        {"allOf": [{"anyOf": [{"properties": {"id": {}}}]}], "required": ["id"]},
        {"allOf": [{"items": {"properties": {"id": {}}}}], "required": ["id"]},
        {"allOf": [{}], "properties": {"id": {}}, "required": ["id"]},
    ],
)
def test_required_names_defined_through_all_of_are_not_taken_for_findings(
    schema: dict[str, Any],
) -> None:
    document = {"components": {"schemas": {"Base": {"properties": {"id": {}}}, "S": schema}}}
    assert not validateparts._may_report_required(document)


@pytest.mark.parametrize(
    "schema",
    [
        {"allOf": [{"properties": {"id": {}}}], "required": ["name"]},
        # Only `allOf` members count, not the schema's own `anyOf`.
        {"allOf": [{}], "anyOf": [{"properties": {"id": {}}}], "required": ["id"]},
        {"allOf": [{"$ref": "#/components/schemas/Missing"}], "required": ["id"]},
        {"allOf": [{"$ref": "#/components/schemas/Loop"}], "required": ["id"]},
        {"allOf": "not a list", "required": ["id"]},
    ],
)
def test_anything_that_may_be_such_a_finding_counts_as_one(schema: dict[str, Any]) -> None:
    loop = {"allOf": [{"$ref": "#/components/schemas/Loop"}]}
    document = {"components": {"schemas": {"Loop": loop, "S": schema}}}
    assert validateparts._may_report_required(document)


_HOLDER_SCHEMAS = [
    {"allOf": [{"$ref": "#/components/schemas/Base"}], "required": ["id"]},
    {"allOf": [{"properties": {"id": {}}}], "required": ["name"]},
    {"allOf": [{}], "anyOf": [{"properties": {"id": {}}}], "required": ["id"]},
    {"allOf": [{"$ref": "#/components/schemas/Missing"}], "required": ["id"]},
    {"properties": {"id": {}}, "required": ["id"]},  # no `allOf`: never asked about
    {"allOf": [{"properties": {"id": {}}}]},  # no `required`: nor this
]


@pytest.mark.parametrize("schema", _HOLDER_SCHEMAS)
def test_the_holders_a_parser_collects_give_the_answer_of_the_walk(schema: dict[str, Any]) -> None:
    """`RequiredHolders`, as the parser's hook, spares the walk and changes no answer: the
    schema inside a list, under a property and in a path item."""
    document = {
        "components": {"schemas": {"Base": {"properties": {"id": {}}}, "S": schema}},
        "paths": {"/a": {"x-list": [{"nested": {"properties": {"deep": schema}}}]}},
    }
    holders = validateparts.RequiredHolders()
    data = json.loads(json.dumps(document), object_hook=holders)
    expected = validateparts._may_report_required(data)
    assert validateparts._may_report_required(data, holders) == expected
    assert len(holders) == (2 if "allOf" in schema and "required" in schema else 0)


def test_the_second_process_finds_such_a_finding_by_what_its_parser_collected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`findings_of_json_file` (a patched run's validation) sends a changed path item with a
    schema whose finding depends on the walk's order to the whole document, as `findings`
    does on a loaded document."""
    base = _b_then_a(
        {"type": "object", "properties": {"x": {"$ref": _A_SCHEMA}}},
        {"type": "object", "properties": {"a": {}}},
    )
    before = load(tmp_path, base, "spec.json")
    version = version_of(before)
    found, shape = validate.findings(before, version)
    assert found == [] and shape is not None
    cache = StageCache(tmp_path / "cache")
    cache.put(validate.SHAPE_STAGE, validate.shape_key(before, version), shape)
    edited = copy.deepcopy(base)
    _set_a_schema(
        edited, {"type": "object", "allOf": [{"properties": {"a": {}}}], "required": ["b"]}
    )
    after = load(tmp_path, edited, "spec.json")
    whole, _ = validate.findings(after, version_of(after))
    walks = Walks(monkeypatch)
    made = validate.findings_of_json_file(tmp_path / "spec.json", None, cache)
    assert made is not None and rendered(made[2]) == rendered(whole)
    assert walks.calls == [None]
    # A description edited instead: the changed path item alone is walked.
    described = copy.deepcopy(base)
    described["paths"]["/a"]["get"]["description"] = "edited"
    load(tmp_path, described, "spec.json")
    walks.calls.clear()
    made = validate.findings_of_json_file(tmp_path / "spec.json", None, cache)
    assert made is not None and made[2] == [] and walks.calls == [["/a"]]


def _clean_corpus_specs() -> list[str]:
    return [
        row["entry_file"]
        for row in corpus_rows()
        if row["version"].startswith(("openapi 3.0", "openapi 3.1")) and row["files"] == "1"
    ]


@pytest.mark.slow
@pytest.mark.parametrize("entry", _clean_corpus_specs())
def test_every_corpus_spec_edited_in_one_path_item_finds_what_the_whole_document_does(
    tmp_path: Path, entry: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    loaded = load_document(CORPUS / entry, DiagnosticSink())
    assert loaded is not None
    base = json.loads(json.dumps(loaded.data))
    found, shape = validate.findings(load(tmp_path, base), version_of(loaded))
    if found or "paths" not in base:  # no shape: the next document is validated whole
        assert shape is None
        return
    path = next(
        p for p, item in base["paths"].items() if any(m in item for m in validateparts.OPERATIONS)
    )
    components = sorted(base.get("components", {}).get("schemas", {}))

    def edit(document: dict[str, Any]) -> None:
        item = document["paths"][path]
        operation = item[next(m for m in validateparts.OPERATIONS if m in item)]
        operation["description"] = "Edited."
        # A finding of the library's own checks (a path parameter its path does not name),
        # not of the document schema: that one would have jsonschema walk the whole document
        # (seconds on GitHub; the petstore edits above cover it).
        operation.setdefault("parameters", []).append(
            {"name": "nowhere", "in": "path", "required": True, "schema": {"type": "string"}}
        )
        if components:  # and a reference into the components it did not make before
            reference = {"$ref": f"#/components/schemas/{components[-1]}"}
            operation["responses"] = {
                "299": {
                    "description": "edited",
                    "content": {"application/json": {"schema": reference}},
                }
            }

    whole, parts, walks = both_ways(tmp_path, base, edit, monkeypatch, shape)
    assert parts == whole and whole
    # Only the edited path item was walked (11 corpus specs, GitHub's and Stripe's among
    # them: none has an operation id twice or an order-dependent `required`).
    assert walks == [[path]]
