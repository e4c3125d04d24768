"""A regeneration that patches the previous run's files per tool (patch.py, issue #8).

The whole pipeline is the judge: every patched run is compared byte for byte with a cold run
of the same spec in a fresh folder, and every edit a patch cannot make must fall back to the
pipeline (and give the cold run's bytes too).
"""

from __future__ import annotations

import copy
import hashlib
import json
import shutil
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from mcpmint import load as load_module
from mcpmint import patch, pipeline, render, validate, validateparts
from mcpmint.background import Background
from mcpmint.cache import CACHE_DIR, KEEP
from mcpmint.config import load_config
from mcpmint.diagnostics import Aborted, DiagnosticSink
from mcpmint.jsontext import compact
from mcpmint.lock import digest, lock_parts
from mcpmint.pipeline import GenerateOptions, build, generate
from mcpmint.write import MANIFEST, WriteReport

from .support import REPO
from .test_fast_generation import tree_digest

PETSTORE = REPO / "specs" / "petstore-plus.yaml"
CORPUS = REPO.parent / "shared" / "corpus"
# 216 operations, path-level parameters, several operations per path item.
ASANA = CORPUS / "asana.yaml"
CYCLIC = "petstore-plus with cycles"  # petstore-plus and two recursive schemas (`cyclic`)

Edit = Callable[[dict[str, Any]], None]
METHODS = ("get", "put", "post", "delete", "patch")


def load(spec: Path | str) -> dict[str, Any]:
    if spec == CYCLIC:
        return cyclic(load(PETSTORE))
    assert isinstance(spec, Path)
    text = spec.read_text(encoding="utf-8")
    data = json.loads(text) if spec.suffix == ".json" else yaml.safe_load(text)
    assert isinstance(data, dict)
    return data


def generated(spec: Path, out: Path) -> tuple[WriteReport, DiagnosticSink]:
    sink = DiagnosticSink()
    # Breaking changes accepted: these tests are about the bytes (a new operation id renames
    # a tool, which a run without it refuses to write).
    report = generate(spec, GenerateOptions(output=out, accept_breaking=True), sink)
    assert not sink.has_errors, [d.render() for d in sink.errors]
    assert not report.blocked
    return report, sink


def write(folder: Path, data: dict[str, Any], indent: int = 2) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    spec = folder / "spec.json"
    spec.write_text(json.dumps(data, indent=indent), encoding="utf-8")
    return spec


def cold(data: dict[str, Any], folder: Path, indent: int = 2) -> dict[str, str]:
    spec = write(folder, data, indent)
    generated(spec, folder / "out")
    return tree_digest(folder / "out")


def cyclic(data: dict[str, Any]) -> dict[str, Any]:
    """`data` with two schemas in a reference cycle (and one referring to itself), which two
    operations' results use: their `$defs` names are the cycles' (schema.RefGraph), made
    from the whole document."""
    schemas = data["components"]["schemas"]
    schemas["Node"] = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "edges": {"$ref": "#/components/schemas/Edge"}},
    }
    schemas["Edge"] = {
        "type": "array",
        "items": {
            "type": "object",
            "properties": {
                "to": {"$ref": "#/components/schemas/Node"},
                "next": {"$ref": "#/components/schemas/Edge"},
            },
        },
    }
    for index in (1, 3):
        operation(data, index)["responses"] = {
            "200": {
                "description": "ok",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Node"}}},
            }
        }
    return data


def config_run(folder: Path, data: dict[str, Any], config: str) -> WriteReport:
    """`mcpmint generate` of `folder/mcpmint.yaml` (`config`), its spec `data` beside it;
    breaking changes are refused (the report says `blocked`), nothing else may fail."""
    write(folder, data)
    (folder / "mcpmint.yaml").write_text(config, encoding="utf-8")
    sink = DiagnosticSink()
    loaded = load_config(folder / "mcpmint.yaml", sink)
    assert loaded is not None, [d.render() for d in sink]
    report = generate(loaded, GenerateOptions(output=None), sink)
    assert not sink.has_errors or report.blocked, [d.render() for d in sink]
    return report


def without_record(source: Path, copy_to: Path, out: Path | None = None) -> None:
    """A copy of the folder `source` whose next run is a whole one: no patch record in the
    stage cache of its output folder (`out`, relative; default the folder itself)."""
    shutil.copytree(source, copy_to)
    cache = (copy_to / out if out is not None else copy_to) / CACHE_DIR
    for entry in cache.glob(f"{patch.STAGE}-*.json"):
        entry.unlink()


def operation(data: dict[str, Any], index: int = 0) -> dict[str, Any]:
    """The `index`-th operation of the document."""
    found = [
        op for item in data["paths"].values() for method, op in item.items() if method in METHODS
    ]
    return found[index]


def _describe(data: dict[str, Any]) -> None:
    op = operation(data, 1)
    op["description"] = (op.get("description") or "") + " Edited: now with more words."


def _summarise(data: dict[str, Any]) -> None:
    operation(data, 2)["summary"] = "A new summary, and a new title"


def _describe_parameter(data: dict[str, Any]) -> None:
    for op in (operation(data, i) for i in range(5)):
        for parameter in op.get("parameters", []):
            if "$ref" not in parameter:
                parameter["description"] = "A parameter, described anew."
                return
    raise AssertionError("no inline parameter in the first operations")


def _deprecate(data: dict[str, Any]) -> None:
    operation(data, 0)["deprecated"] = True


def _secure(data: dict[str, Any]) -> None:
    """Another security requirement: the tool's credentials (REFERENCE.md's row, its lock
    summary's scopes, its test case's credentials)."""
    schemes = list(data["components"]["securitySchemes"])
    operation(data, 1)["security"] = [{schemes[-1]: []}]


def _unsampled(data: dict[str, Any]) -> None:
    """Bounds no value meets (no structure: the typed models stay): the tool's arguments
    cannot be sampled any more, so its test case has no call (`unsampled`)."""
    for item in data["paths"].values():
        for parameter in item.get("parameters", []):
            if parameter.get("required") and parameter.get("schema", {}).get("type") == "string":
                parameter["schema"].update(minLength=5, maxLength=2)
                return
        for op in item.values():
            for parameter in op.get("parameters", []) if isinstance(op, dict) else []:
                schema = parameter.get("schema", {})
                if parameter.get("required") and schema.get("type") == "string":
                    schema.update(minLength=5, maxLength=2)
                    return
    raise AssertionError("no required inline string parameter")


def _remove_operation(data: dict[str, Any]) -> None:
    """One of several operations of a path item removed: its tool goes."""
    item = next(i for i in data["paths"].values() if len([m for m in i if m in METHODS]) > 1)
    del item[next(m for m in item if m in METHODS)]


def _add_operation(data: dict[str, Any]) -> None:
    """A new operation in a path item that has others: a new tool."""
    item = next(i for i in data["paths"].values() if "head" not in i)
    item["head"] = {"operationId": "mcpmintHead", "responses": {"200": {"description": "ok"}}}


def _add_parameter(data: dict[str, Any]) -> None:
    """A new parameter of an operation whose arguments class has nested classes (`$defs`:
    named against every other tool's)."""
    op = operation(data, 1)
    parameter = {"name": "mcpmint_extra", "in": "query", "schema": {"type": "string"}}
    op["parameters"] = [*op.get("parameters", []), parameter]


def first_get(data: dict[str, Any]) -> dict[str, Any]:
    """The first GET operation (its arguments class is one alone: plain fields)."""
    return next(item["get"] for item in data["paths"].values() if "get" in item)


def _add_parameter_alone(data: dict[str, Any]) -> None:
    """A new parameter: the typed models' class of the tool's arguments has a new field."""
    op = first_get(data)
    parameter = {"name": "mcpmint_extra", "in": "query", "schema": {"type": "string"}}
    op["parameters"] = [*op.get("parameters", []), parameter]


def _remove_parameter(data: dict[str, Any]) -> None:
    op = first_get(data)
    op["parameters"] = op["parameters"][1:]


def _add_long_enum(data: dict[str, Any]) -> None:
    """A field whose line is longer than the formatter's 100 characters, on an arguments
    class that has a `Literal` already (the module's imports stay)."""
    values = [f"a-rather-long-value-number-{n}" for n in range(6)]
    parameter = {"name": "order", "in": "query", "schema": {"type": "string", "enum": values}}
    op = first_get(data)
    op["parameters"] = [*op.get("parameters", []), parameter]


def _add_enum_needing_an_import(data: dict[str, Any]) -> None:
    """An enum on a class that had none: the class imports `Literal` now."""
    op = next(
        op for op in (operation(data, i) for i in range(9)) if op.get("operationId") == "getPet"
    )
    parameter = {"name": "order", "in": "query", "schema": {"type": "string", "enum": ["a", "b"]}}
    op["parameters"] = [*op.get("parameters", []), parameter]


def _rename_operation(data: dict[str, Any]) -> None:
    operation(data, 1)["operationId"] = "somethingElseEntirely"


def _add_path(data: dict[str, Any]) -> None:
    data["paths"]["/mcpmint-new"] = {"get": {"operationId": "mcpmintNew", "responses": {}}}


def _change_component(data: dict[str, Any]) -> None:
    schemas = data["components"]["schemas"]
    first = schemas[next(iter(schemas))]
    first["description"] = "A component, described anew."


def _nothing(data: dict[str, Any]) -> None:
    """The same document (written with another indent: the spec file's hash changes)."""


# label -> (edit, patched): the edits a patch makes, and those it leaves to the pipeline.
EDITS: dict[str, tuple[Edit, bool]] = {
    "description": (_describe, True),
    "summary": (_summarise, True),
    "parameter description": (_describe_parameter, True),
    "deprecated": (_deprecate, True),
    "security": (_secure, True),
    "same data": (_nothing, True),
    "unsampled": (_unsampled, True),
    "new parameter": (_add_parameter_alone, True),
    "parameter removed": (_remove_parameter, True),
    "new parameter, a long line": (_add_long_enum, True),
    "new parameter, new import": (_add_enum_needing_an_import, False),
    "new parameter, nested classes": (_add_parameter, False),
    "operation removed": (_remove_operation, False),
    "operation added": (_add_operation, False),
    "new operation id (names may change)": (_rename_operation, False),
    "new path": (_add_path, False),
    "component": (_change_component, False),
}


# The edits of the typed models' classes, which no reference cycle changes: on petstore-plus.
CLASS_EDITS = {
    "parameter removed",
    "new parameter, a long line",
    "new parameter, new import",
    "new parameter, nested classes",
}
# Every edit on the small specs (but the classes' on the cyclic one); on Asana's 216
# operations (6 s a case), those its path items make different: several operations each,
# path-level parameters.
CASES = [
    *((PETSTORE, label) for label in EDITS),
    *((CYCLIC, label) for label in EDITS if label not in CLASS_EDITS),
    *(
        (ASANA, label)
        for label in ("description", "parameter description", "operation removed", "new parameter")
    ),
]


@pytest.mark.parametrize(
    ("spec", "label"),
    CASES,
    ids=[
        f"{label}-{'asana' if spec == ASANA else 'cyclic' if spec == CYCLIC else 'petstore'}"
        for spec, label in CASES
    ],
)
def test_a_regeneration_is_patched_only_where_it_gives_the_bytes_of_a_cold_run(
    tmp_path: Path, spec: Path, label: str
) -> None:
    """Each edit after a patched run (whose record keeps the reference graph's parts: the
    cycles and their names), as a pre-commit hook makes them one after the other."""
    edit, patched = EDITS[label]
    original = load(spec)
    first = copy.deepcopy(original)
    operation(first, 0)["summary"] = "A first edit, patched"
    changed = copy.deepcopy(first)
    edit(changed)
    indent = 3 if edit is _nothing else 2
    expected = cold(changed, tmp_path / "cold", indent)

    work = write(tmp_path / "work", original)
    generated(work, tmp_path / "work" / "out")
    write(tmp_path / "work", first)
    assert generated(work, tmp_path / "work" / "out")[0].patched is not None
    write(tmp_path / "work", changed, indent)
    report, _ = generated(work, tmp_path / "work" / "out")
    assert (report.patched is not None) == patched, report.patched
    assert tree_digest(tmp_path / "work" / "out") == expected


def test_patched_runs_in_a_row_each_give_a_cold_runs_bytes_and_keep_the_cache(
    tmp_path: Path,
) -> None:
    data = load(CYCLIC)
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    entries = {p.name for p in (out / CACHE_DIR).glob("*.json")}
    for round_ in range(KEEP + 3):
        operation(data, round_)["description"] = f"Round {round_}."
        write(tmp_path / "work", data)
        report, _ = generated(spec, out)
        assert report.patched is not None
        assert tree_digest(out) == cold(data, tmp_path / f"cold-{round_}")
    # The whole run's entries (tools, typed models, formatter) are kept for the next one
    # the patch cannot make: a patched run uses none of them. Of the stages it uses, the
    # last `KEEP` others are kept, as a whole run keeps them (the records are megabytes on
    # a large API).
    kept = {p.name for p in (out / CACHE_DIR).glob("*.json")}
    assert {e for e in entries if not e.startswith(("validate", "patch", "shape"))} <= kept
    # (this run's record, the one it read and `KEEP` others)
    assert len([e for e in kept if e.startswith(f"{patch.STAGE}-")]) == KEEP + 2


def _wrong_example(data: dict[str, Any]) -> None:
    """An example that does not fit its schema (warned about, left out), and a description
    edit (a change to review in the lock)."""
    _describe(data)
    for item in data["paths"].values():
        for op in item.values():
            for parameter in op.get("parameters", []) if isinstance(op, dict) else []:
                if "$ref" not in parameter and "enum" in parameter["schema"]:
                    parameter["example"] = "mcpmint-none-of-the-options"
                    return
    raise AssertionError("no inline parameter with an enum")


def test_a_patched_run_reports_the_changes_and_warnings_a_whole_run_does(
    tmp_path: Path,
) -> None:
    data = load(PETSTORE)
    spec = write(tmp_path / "patched", data)
    generated(spec, tmp_path / "patched" / "out")
    without_record(tmp_path / "patched", tmp_path / "whole", Path("out"))
    _wrong_example(data)
    reports = {}
    for folder in ("patched", "whole"):
        write(tmp_path / folder, data)
        reports[folder] = generated(tmp_path / folder / "spec.json", tmp_path / folder / "out")
    (patched, patched_sink), (whole, whole_sink) = reports["patched"], reports["whole"]
    assert patched.patched is not None and whole.patched is None
    assert patched.lock_changes == whole.lock_changes != []
    assert tree_digest(tmp_path / "patched" / "out") == tree_digest(tmp_path / "whole" / "out")
    # The changed operation's warning, as the whole run words it; the other operations'
    # warnings were printed by the runs that made them.
    shown = [d.render().replace("/patched/", "/") for d in patched_sink]
    every = [d.render().replace("/whole/", "/") for d in whole_sink]
    assert any("does not match its schema" in line for line in shown)
    assert set(shown) <= set(every)


def _validation_warnings(sink: DiagnosticSink, folder: str) -> list[str]:
    return [d.render().replace(f"/{folder}/", "/") for d in sink if "validation:" in d.message]


def _joined(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each validation joined from now on was begun before the spec's load."""
    begun: list[bool] = []
    original = validate.PendingFindings.join

    def spying(self: validate.PendingFindings) -> None:
        begun.append(self.begun is not None)
        original(self)

    monkeypatch.setattr(validate.PendingFindings, "join", spying)
    return begun


def _findings_of_other_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """The second process's findings come back as made of other bytes (and with no finding):
    the patch must not take them, and makes them itself."""
    original = patch.findings_of_json_file

    def of_other_bytes(*args: Any) -> Any:
        made = original(*args)
        return ("0" * 64, made[1], [], made[3]) if made is not None else None

    monkeypatch.setattr(patch, "findings_of_json_file", of_other_bytes)


def _partial_reads(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Whether each of the patch's loads read the spec partly (load.QuickLoad.partial)."""
    loads: list[bool] = []
    quickly = patch.load_json_quickly

    def spying(*args: Any, **kwargs: Any) -> Any:
        quick = quickly(*args, **kwargs)
        loads.append(quick is not None and quick.partial)
        return quick

    monkeypatch.setattr(patch, "load_json_quickly", spying)
    return loads


@pytest.mark.parametrize(
    "how", ["begun before the load", "begun after it", "begun, of other bytes"]
)
def test_a_patched_run_validates_the_new_spec_as_a_whole_run_does(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, how: str
) -> None:
    # A large JSON spec's validation is begun in the second process before the patch loads
    # it (patch._begin_findings): its findings are the whole run's, and are taken only when
    # made of the bytes the patch read (else they are made again here).
    monkeypatch.setattr(patch, "_BEGIN_MIN_BYTES", 10**12 if how == "begun after it" else 0)
    if how == "begun, of other bytes":
        _findings_of_other_bytes(monkeypatch)
    data = load(PETSTORE)
    data["paths"]["/pets"]["get"]["responses"]["200"]["x_oops"] = 1  # a finding
    spec = write(tmp_path / "patched", data)
    generated(spec, tmp_path / "patched" / "out")
    data["paths"]["/pets"]["get"]["description"] = "Edited."
    write(tmp_path / "patched", data)
    begun = _joined(monkeypatch)
    patched, patched_sink = generated(spec, tmp_path / "patched" / "out")
    whole, whole_sink = generated(write(tmp_path / "whole", data), tmp_path / "whole" / "out")
    assert patched.patched is not None and whole.patched is None
    forked = how != "begun after it" and threading.active_count() == 1
    assert begun == [forked, False]  # the patched run's validation, then the whole run's
    shown = _validation_warnings(patched_sink, "patched")
    assert shown == _validation_warnings(whole_sink, "whole") != []
    assert tree_digest(tmp_path / "patched" / "out") == tree_digest(tmp_path / "whole" / "out")


def test_validation_begun_early_is_stopped_when_its_findings_are_known(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Edited and edited back: the findings of the spec the first run read are cached, and
    # the second process begun for them is stopped; so is one the patch cannot use (a spec
    # the pipeline loads again), which leaves the pipeline a second process of its own.
    monkeypatch.setattr(patch, "_BEGIN_MIN_BYTES", 0)
    stopped: list[bool] = []
    original = Background.cancel

    def spying(self: Background[Any]) -> None:
        stopped.append(self.forked)
        original(self)

    monkeypatch.setattr(Background, "cancel", spying)
    data = load(PETSTORE)
    spec = write(tmp_path, data)
    out = tmp_path / "out"
    generated(spec, out)
    edited = copy.deepcopy(data)
    edited["paths"]["/pets"]["get"]["description"] = "Edited."
    write(tmp_path, edited)
    assert generated(spec, out)[0].patched is not None
    forked = threading.active_count() == 1
    assert stopped == []  # taken by the validation
    write(tmp_path, data)
    assert generated(spec, out)[0].patched is not None
    assert stopped == [forked]  # the findings of `data` are the first run's
    stopped.clear()
    edited["paths"]["/pets"]["x-link"] = {"$ref": "#/paths/~1pets~1{petId}"}  # into the paths
    write(tmp_path, edited)
    begun = _joined(monkeypatch)
    started: list[bool] = []
    start = validate.PendingFindings.start

    def spying_start(self: validate.PendingFindings) -> bool:
        started.append(start(self))
        return started[-1]

    monkeypatch.setattr(validate.PendingFindings, "start", spying_start)
    monkeypatch.setattr(validate, "BACKGROUND_MIN_PATHS", 0)
    assert generated(spec, out)[0].patched is None
    assert stopped == [forked] and begun == [False] and started == [forked]


def test_a_hand_edited_generated_file_is_refused_as_a_whole_run_refuses_it(
    tmp_path: Path,
) -> None:
    data = load(PETSTORE)
    spec = write(tmp_path, data)
    out = tmp_path / "out"
    generated(spec, out)
    reference = out / "REFERENCE.md"
    reference.write_text(reference.read_text(encoding="utf-8") + "\nmine\n", encoding="utf-8")
    _describe(data)
    write(tmp_path, data)
    sink = DiagnosticSink()
    report = generate(spec, GenerateOptions(output=out), sink)
    assert report.patched is None
    assert report.refused == ["REFERENCE.md"]
    assert reference.read_text(encoding="utf-8").endswith("\nmine\n")


def test_a_deleted_scaffolded_file_is_written_back_by_the_pipeline(tmp_path: Path) -> None:
    data = load(PETSTORE)
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    (out / "README.md").unlink()
    _describe(data)
    write(tmp_path / "work", data)
    report, _ = generated(spec, out)
    assert report.patched is None and report.scaffolded == ["README.md"]
    assert tree_digest(out) == cold(data, tmp_path / "cold")


def test_without_the_previous_runs_record_the_pipeline_runs(tmp_path: Path) -> None:
    data = load(PETSTORE)
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    for entry in (out / CACHE_DIR).glob(f"{patch.STAGE}-*.json"):
        entry.unlink()
    _describe(data)
    write(tmp_path / "work", data)
    report, _ = generated(spec, out)
    assert report.patched is None
    assert tree_digest(out) == cold(data, tmp_path / "cold")


# A changed path item's text that only the whole load can judge (a patched run reads a JSON
# spec without its walk: load.load_json_quickly): label -> (the marked summary's new text,
# what the whole load says about it).
MARK = '"summary": "MARK"'
QUICK_LOAD_CASES = {
    "duplicate key": ('"summary": "first", ' + MARK, "duplicate key 'summary'"),
    "broken $ref": (
        MARK + ', "x-schema": {"$ref": "#/components/schemas/Nothing"}',
        "broken $ref",
    ),
    "$ref into #/paths, escaped": (
        MARK + ', "x-schema": {"$ref": "#\\/paths/~1pets/get/responses/200"}',
        None,
    ),
    "nested too deep": (MARK + ', "x-deep": ' + "[" * 300 + "]" * 300, "(max_depth)"),
}


@pytest.mark.parametrize("label", QUICK_LOAD_CASES)
def test_a_path_item_only_the_whole_load_can_judge_is_the_pipelines(
    tmp_path: Path, label: str
) -> None:
    replacement, said = QUICK_LOAD_CASES[label]
    data = load(PETSTORE)
    operation(data, 0)["summary"] = "MARK"
    text = json.dumps(data, indent=2).replace(MARK, replacement)
    outcomes = []
    for folder in (tmp_path / "cold", tmp_path / "work"):
        spec = write(folder, data)
        if folder.name == "work":
            generated(spec, folder / "out")
        spec.write_text(text, encoding="utf-8")
        sink = DiagnosticSink()
        try:
            options = GenerateOptions(output=folder / "out", accept_breaking=True)
            assert generate(spec, options, sink).patched is None
        except Aborted:
            assert label == "nested too deep"
        messages = [d.message.replace(folder.as_posix(), "") for d in sink]
        outcomes.append((messages, tree_digest(folder / "out")))
    (cold_said, cold_tree), (said_then, tree) = outcomes
    assert said_then == cold_said
    assert said is None or any(said in message for message in said_then)
    if label == "nested too deep":  # an error: the previous run's files are left as they were
        assert cold_tree == {} and tree != {}
    else:
        assert tree == cold_tree


CONFIGS = {
    "plain": ("sources:\n  - spec: spec.json\n", True),
    "overrides": (
        "sources:\n  - spec: spec.json\n    overrides:\n      getPet:\n"
        "        description: Overridden.\n",
        True,
    ),
    "tools section": ("sources:\n  - spec: spec.json\ntools:\n  mode: dynamic\n", False),
    # The typed models' class laid out by black, as the whole run lays out its module.
    "black": ("sources:\n  - spec: spec.json\noutput:\n  formatter: black\n", True),
}


# Each config with a description edited and a field added (black's layout only matters to
# the second: a class written again).
CONFIG_CASES = [
    (label, edit)
    for label in CONFIGS
    for edit in (_describe, _add_long_enum)
    if label != "black" or edit is _add_long_enum
]


@pytest.mark.parametrize(
    ("label", "edit"),
    CONFIG_CASES,
    ids=[
        f"{label}-{'description' if e is _describe else 'new field'}" for label, e in CONFIG_CASES
    ],
)
def test_a_project_config_run_is_patched_unless_its_server_is_made_from_every_tool(
    tmp_path: Path, label: str, edit: Edit
) -> None:
    text, patched = CONFIGS[label]
    data = load(PETSTORE)
    changed = copy.deepcopy(data)
    edit(changed)
    config_run(tmp_path / "cold", changed, text)
    config_run(tmp_path / "work", data, text)
    report = config_run(tmp_path / "work", changed, text)
    assert not report.blocked
    assert (report.patched is not None) == patched
    assert tree_digest(tmp_path / "work") == tree_digest(tmp_path / "cold")


def test_typed_models_laid_out_by_another_formatters_version_are_made_by_the_pipeline(
    tmp_path: Path,
) -> None:
    """A class is laid out by the formatter that laid out the rest of the module, the same
    version (the record says which); a description edit does not touch the module."""
    data = load(PETSTORE)
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    for entry in (out / CACHE_DIR).glob(f"{patch.STAGE}-*.json"):
        stored = json.loads(entry.read_text(encoding="utf-8"))
        assert stored["value"]["formatter"].startswith("ruff ")
        stored["value"]["formatter"] = "ruff 0.0.1"
        entry.write_text(json.dumps(stored), encoding="utf-8")
    _add_parameter_alone(data)
    write(tmp_path / "work", data)
    report, _ = generated(spec, out)
    assert report.patched is None
    assert tree_digest(out) == cold(data, tmp_path / "cold")
    _describe(data)
    write(tmp_path / "work", data)
    assert generated(spec, out)[0].patched is not None


def test_the_locks_hash_from_each_summarys_text_is_the_digest_of_them_all() -> None:
    server = build(PETSTORE, DiagnosticSink())
    document, texts = lock_parts(server)
    assert document["hash"] == digest(document["tools"])
    assert set(texts) == {tool.name for tool in server.tools}


def test_a_breaking_change_stops_a_patched_run_as_it_stops_a_whole_one(tmp_path: Path) -> None:
    """A result field removed is a breaking change to the tool surface, and no change to the
    typed models when results have none (`result_models: handlers`): a patch. Without
    `accept_breaking` neither run writes anything, and both report the same changes."""
    data = load(PETSTORE)
    fields = {"kept": {"type": "string"}, "dropped": {"type": "string"}}
    schema = {"type": "object", "properties": fields}
    operation(data, 0)["responses"] = {
        "200": {"description": "ok", "content": {"application/json": {"schema": schema}}}
    }
    config = "sources:\n  - spec: spec.json\noutput:\n  result_models: handlers\n"
    config_run(tmp_path / "patched", data, config)
    without_record(tmp_path / "patched", tmp_path / "whole")
    del fields["dropped"]
    reports = {}
    for folder in ("patched", "whole"):
        before = tree_digest(tmp_path / folder)
        reports[folder] = config_run(tmp_path / folder, data, config)
        assert reports[folder].blocked
        before.pop("spec.json")
        after = tree_digest(tmp_path / folder)
        after.pop("spec.json")
        assert after == before  # nothing written
    assert reports["patched"].patched is not None and reports["whole"].patched is None
    assert reports["patched"].lock_changes == reports["whole"].lock_changes
    assert [c.what for c in reports["patched"].lock_changes] == ["output field removed"]


def test_a_reference_into_a_component_from_an_unchanged_operation_is_seen_by_the_patch(
    tmp_path: Path,
) -> None:
    """How a component converts depends on which places inside it are `$ref` targets
    anywhere in the document (schema.SchemaConverter.targets_under), the operations the
    patch does not build included."""
    pet = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "tag": {"type": "object", "properties": {"label": {"type": "string"}}},
        },
    }
    ok = {"description": "ok", "content": {"application/json": {"schema": {}}}}

    def responding(schema: dict[str, Any]) -> dict[str, Any]:
        return {"200": {**ok, "content": {"application/json": {"schema": schema}}}}

    data = {
        "openapi": "3.0.3",
        "info": {"title": "Refs", "version": "1"},
        "servers": [{"url": "https://api.example.com"}],
        "paths": {
            "/pets": {
                "get": {
                    "operationId": "getPet",
                    "responses": responding({"$ref": "#/components/schemas/Pet"}),
                }
            },
            "/tags": {
                "get": {
                    "operationId": "getTag",
                    "responses": responding({"$ref": "#/components/schemas/Pet/properties/tag"}),
                }
            },
        },
        "components": {"schemas": {"Pet": pet}},
    }
    spec = write(tmp_path / "work", data)
    generated(spec, tmp_path / "work" / "out")
    data["paths"]["/pets"]["get"]["description"] = "Edited."
    write(tmp_path / "work", data)
    report, _ = generated(spec, tmp_path / "work" / "out")
    assert report.patched == ["refs_get_pet"]
    assert tree_digest(tmp_path / "work" / "out") == cold(data, tmp_path / "cold")


def test_a_spec_edited_back_and_forth_is_compared_with_the_one_the_last_run_read(
    tmp_path: Path,
) -> None:
    """A patch compares the spec with the one the previous run read (its shape is kept by
    the bytes of that spec), not with the last one validated: after A, B, A, the spec B
    again differs from A (the last run's), though not from B (validated last: A's findings
    were cached)."""
    original = load(PETSTORE)
    edited = copy.deepcopy(original)
    _describe(edited)
    spec = write(tmp_path / "work", original)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    for round_, data in enumerate([edited, original, edited, original]):
        write(tmp_path / "work", data)
        report, _ = generated(spec, out)
        assert report.patched is not None
        assert tree_digest(out) == cold(data, tmp_path / f"cold-{round_}")


def _huge(data: dict[str, Any], index: int) -> None:
    """Operation `index` answers with a schema larger than an output schema may be (it is
    cut to fit, and the build warns about every such schema at once)."""
    fields = {
        f"field_{n}": {"type": "string", "description": f"{n} " + "x" * 200} for n in range(300)
    }
    schema = {"type": "object", "properties": fields}
    operation(data, index)["responses"] = {
        "200": {"description": "ok", "content": {"application/json": {"schema": schema}}}
    }


def _fits(data: dict[str, Any]) -> None:
    """Operation 0's result described in fewer words: the same structure, no longer cut."""
    schema = operation(data, 0)["responses"]["200"]["content"]["application/json"]["schema"]
    for field in schema["properties"].values():
        field["description"] = "short"


def _describe_first(data: dict[str, Any]) -> None:
    operation(data, 0)["description"] = "Edited."


def _describe_third(data: dict[str, Any]) -> None:
    operation(data, 2)["description"] = "Edited."


@pytest.mark.parametrize(
    ("edit", "count"),
    [(_describe_first, 2), (_describe_third, 2), (_fits, 1)],
    ids=["a cut one", "another", "one no longer cut"],
)
def test_output_schemas_cut_to_fit_are_counted_over_every_tool(
    tmp_path: Path, edit: Edit, count: int
) -> None:
    data = load(PETSTORE)
    _huge(data, 0)
    _huge(data, 3)
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    edit(data)
    write(tmp_path / "work", data)
    report, sink = generated(spec, out)
    assert report.patched is not None
    assert tree_digest(out) == cold(data, tmp_path / "cold")
    _, whole = generated(tmp_path / "cold" / "spec.json", tmp_path / "cold" / "again")
    warned = [d.message for d in sink if "output schemas are larger" in d.message]
    assert warned == [d.message for d in whole if "output schemas are larger" in d.message]
    assert warned[0].startswith(f"{count} output schemas")


def test_a_yaml_spec_edited_as_text_is_patched_to_the_bytes_of_a_cold_run(
    tmp_path: Path,
) -> None:
    """The other tests write JSON; a YAML spec (where diagnostics have lines) edited in
    place, as a person edits it."""
    text = PETSTORE.read_text(encoding="utf-8")
    edited = text.replace("summary: Get a pet", "summary: One pet, by its id", 1)
    assert edited != text
    work, folder = tmp_path / "work", tmp_path / "cold"
    for where in (work, folder):
        where.mkdir()
    (work / "spec.yaml").write_text(text, encoding="utf-8")
    generated(work / "spec.yaml", work / "out")
    (work / "spec.yaml").write_text(edited, encoding="utf-8")
    report, _ = generated(work / "spec.yaml", work / "out")
    assert report.patched is not None
    (folder / "spec.yaml").write_text(edited, encoding="utf-8")
    generated(folder / "spec.yaml", folder / "out")
    assert tree_digest(work / "out") == tree_digest(folder / "out")


@pytest.mark.parametrize(
    ("extra", "patched"),
    [
        ("", True),
        # another group's class merged into the tool's (the same body): it is used elsewhere
        ("\n\nclass Listing(BaseModel):\n    pets: ListPetsArguments | None = None\n", False),
        # another group's class of the same name, renamed after it at the merge
        ("\n\nclass ListPetsArgumentsG2(BaseModel):\n    pass\n", False),
    ],
    ids=["alone", "used by another class", "another class renamed after it"],
)
def test_an_arguments_class_is_written_again_only_where_nothing_else_names_it(
    tmp_path: Path, extra: str, patched: bool
) -> None:
    data = load(PETSTORE)
    spec = write(tmp_path, data)
    generated(spec, tmp_path / "out")
    module = next((tmp_path / "out").glob("src/*/_generated/models.py")).read_text("utf-8")
    first = module.index("\n\n\nclass ")  # the extra class goes before the first one
    text = module[:first] + extra + module[first:]
    server = build(spec, DiagnosticSink())
    tool = next(t for t in server.tools if t.operation_id == first_get(data)["operationId"])
    schema = tool.input_schema
    grown = {**schema, "properties": {**schema["properties"], "mcpmint_extra": {"type": "string"}}}
    rewrite = patch._Rewrite("ListPetsArguments", schema, grown)

    result = patch._patched_models(text, [rewrite], "ruff")

    assert (result is not None) == patched
    if result is not None:
        assert "    mcpmint_extra: str | None = None\n" in result
        assert result.replace("    mcpmint_extra: str | None = None\n", "") == text


def test_work_beside_the_patch_gives_its_value_or_raises_its_error() -> None:
    # patch._Beside: the previous files read, the formatter run, in a thread of their own.
    assert patch._Beside(sorted, [3, 1, 2]).result() == [1, 2, 3]
    with pytest.raises(ZeroDivisionError):
        patch._Beside(divmod, 1, 0).result()


def _hashed_files(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """The files a patched run hashes from disk after the quick check (which hashes the
    inputs through `write.sha256_each`)."""
    seen: list[Path] = []
    for module in (patch, pipeline):
        real = module.file_sha256

        def spy(path: Path, real: Callable[[Path], str] = real) -> str:
            seen.append(Path(path))
            return real(path)

        monkeypatch.setattr(module, "file_sha256", spy)
    return seen


def _recorded_spec_sha(out: Path) -> str:
    inputs = json.loads((out / MANIFEST).read_text(encoding="utf-8"))["inputs"]
    return str(inputs["files"]["../spec.json"])


def test_a_patched_run_reads_the_spec_once_after_the_quick_check(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The quick check's hash finds the record, the load's bytes give the record's hash: the
    spec is neither read again to find the record nor to record it (GitHub's: 10 MB each)."""
    data = load(PETSTORE)
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    _describe(data)
    write(tmp_path / "work", data)
    hashed = _hashed_files(monkeypatch)
    report, _ = generated(spec, out)
    assert report.patched
    assert spec not in hashed
    assert _recorded_spec_sha(out) == hashlib.sha256(spec.read_bytes()).hexdigest()
    assert tree_digest(out) == cold(data, tmp_path / "cold")
    assert generated(spec, out)[0].quick  # the record names the spec as it is


def _written_before_the_load(
    monkeypatch: pytest.MonkeyPatch, folder: Path, data: dict[str, Any]
) -> None:
    """The spec in `folder` saved as `data` after the quick check, right before a patched
    run loads it."""
    real = patch.load_json_quickly

    def written_then_loaded(path: Path, *args: Any, **kwargs: Any) -> Any:
        write(folder, data)
        return real(path, *args, **kwargs)

    monkeypatch.setattr(patch, "load_json_quickly", written_then_loaded)


def test_a_spec_edited_during_a_patched_run_is_recorded_as_the_bytes_it_was_made_of(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Edited again between the quick check and the load: the tree is the loaded spec's,
    and so is the hash in the inputs record (not the one the quick check took)."""
    data = load(PETSTORE)
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    first, second = copy.deepcopy(data), copy.deepcopy(data)
    _describe(first)
    _summarise(second)
    write(tmp_path / "work", first)
    _written_before_the_load(monkeypatch, tmp_path / "work", second)
    report, _ = generated(spec, out)
    assert report.patched
    assert _recorded_spec_sha(out) == hashlib.sha256(spec.read_bytes()).hexdigest()
    assert tree_digest(out) == cold(second, tmp_path / "cold")


def test_a_spec_put_back_during_a_patched_run_is_the_pipelines(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The previous run's spec again by the time it is loaded: nothing to patch; the
    pipeline takes the loaded document, and the tree and record are the previous run's."""
    data = load(PETSTORE)
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    before = tree_digest(out)
    edited = copy.deepcopy(data)
    _describe(edited)
    write(tmp_path / "work", edited)
    _written_before_the_load(monkeypatch, tmp_path / "work", data)
    report, _ = generated(spec, out)
    assert report.patched is None
    assert _recorded_spec_sha(out) == hashlib.sha256(spec.read_bytes()).hexdigest()
    assert tree_digest(out) == before


def test_tools_json_holds_each_tool_on_a_line_of_its_own_and_reads_back_the_same() -> None:
    """render.catalog_text: the document as `dump_json` lays it out, but for each tool,
    compact on its line (what a patched run replaces); no tools: `dump_json`'s text."""
    tools = [
        {"name": "t_a", "description": "A, \u00e9\n", "inputSchema": {"type": "object"}},
        {"name": "t_b", "inputSchema": {"properties": {"x": {"type": "string"}}}},
    ]
    document = {"format": 1, "server": {"name": "s"}, "tools": tools, "upstream": {"b": ""}}
    text = render.catalog_text(document)
    assert json.loads(text) == document
    lines = text.splitlines()
    start = lines.index('  "tools": [')
    assert lines[start + 1 : start + 4] == [
        "    " + compact(tools[0]) + ",",
        "    " + compact(tools[1]),
        "  ],",
    ]
    # Around the list, the text of the document without tools.
    listed = "\n".join(lines[start : start + 4]) + "\n"
    empty = render.dump_json({**document, "tools": []})
    assert text.replace(listed, '  "tools": [],\n') == empty
    assert render.catalog_text({**document, "tools": []}) == render.dump_json(
        {**document, "tools": []}
    )
    # A document whose tools list is its last key is not one catalog_text writes (nothing
    # would follow the list): refused, never written without its tools.
    last = {key: value for key, value in document.items() if key != "upstream"}
    with pytest.raises(ValueError, match="tools list"):
        render.catalog_text(last)


def test_a_tool_whose_name_is_only_another_tools_value_is_not_patched_there() -> None:
    """A changed tool's name found once in `tools.json`, but as a value inside another
    tool's entry (a parameter of that name): that entry is not replaced."""
    other = {"name": "t_a", "request": {"parameters": [{"name": "t_b", "in": "query"}]}}
    document = {"format": 1, "tools": [other], "upstream": {"baseUrl": ""}}
    data = render.catalog_text(document).encode("utf-8")
    start = data.index(patch._TOOLS_OPEN) + len(patch._TOOLS_OPEN)
    end = data.rindex(patch._TOOLS_CLOSE, start)
    with pytest.raises(patch._Unpatchable):
        patch._entry(data, "t_b", start, end)
    assert patch._entry(data, "t_a", start, end)[2] == other
    with pytest.raises(patch._Unpatchable):
        patch._entry(data.replace(b'"t_a"', b'"t_b"'), "t_b", start, end)  # twice


def test_a_patched_run_keeps_an_integer_beyond_64_bits_in_the_test_cases(tmp_path: Path) -> None:
    """The test cases hold the spec's examples; a patch reads them back with the standard
    library's parser (orjson reads an integer beyond 64 bits as a float). The example is in
    a path item the edit leaves alone: its case is read back, not made again."""
    data = load(PETSTORE)
    big = 2**70 + 1  # (2**70 itself is a float's too: the text would differ, not the value)
    operation(data, -1).setdefault("parameters", []).append(
        {"name": "big", "in": "query", "schema": {"type": "integer"}, "example": big}
    )
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    assert str(big) in (out / patch.CASES_FILE).read_text(encoding="utf-8")
    _describe(data)
    write(tmp_path / "work", data)
    report, _ = generated(spec, out)
    assert report.patched
    assert tree_digest(out) == cold(data, tmp_path / "cold")


def test_a_tool_with_an_integer_beyond_64_bits_in_its_schema_is_patched(tmp_path: Path) -> None:
    """The changed tool's old entry in `tools.json` is read back exactly: its arguments'
    structure (an enum of integers beyond 64 bits) is the new one's, so no class is made
    again (read as floats, it differed: the whole pipeline ran)."""
    data = load(PETSTORE)
    choice = {"type": "integer", "enum": [2**70 + 1, 1]}
    operation(data, 1).setdefault("parameters", []).append(
        {"name": "big", "in": "query", "schema": choice}
    )
    spec = write(tmp_path / "work", data)
    out = tmp_path / "work" / "out"
    generated(spec, out)
    _describe(data)  # the same operation's description
    write(tmp_path / "work", data)
    report, _ = generated(spec, out)
    assert report.patched
    assert tree_digest(out) == cold(data, tmp_path / "cold")


def test_a_patched_run_reads_the_spec_by_the_index_the_previous_run_kept(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The whole run keeps the index of the spec's text (textindex.py); the next run, whose
    spec differs in one path item, checks that item alone, and writes what a whole run
    writes; it keeps the new text's index for the run after it."""
    data = load(PETSTORE)
    spec = write(tmp_path / "a", data)
    generated(spec, tmp_path / "a" / "out")
    cache = patch.StageCache(tmp_path / "a" / "out" / CACHE_DIR)
    key = patch.text_index_key(spec)
    assert patch.TextIndex.from_json(cache.get(patch.INDEX_STAGE, key)) is not None
    edited = copy.deepcopy(data)
    _describe(edited)
    expected = cold(edited, tmp_path / "b")
    spec = write(tmp_path / "a", edited)

    def checked_whole(*args: Any) -> Any:
        raise AssertionError("the spec was checked whole")

    monkeypatch.setattr(load_module, "_checked", checked_whole)
    # The new document's shape is the previous one's with the changed path item digested.
    monkeypatch.setattr(patch, "document_shape", checked_whole)
    report, _ = generated(spec, tmp_path / "a" / "out")
    assert report.patched is not None
    assert tree_digest(tmp_path / "a" / "out") == expected
    after = patch.StageCache(cache.folder)
    index = patch.TextIndex.from_json(after.get(patch.INDEX_STAGE, key))
    assert index is not None and index.length == len(spec.read_text(encoding="utf-8"))
    digest = hashlib.sha256(spec.read_bytes()).hexdigest()
    assert index.sha256 == digest
    shape = after.get(validate.DOCUMENT_SHAPE_STAGE, validate.document_shape_key(spec, digest))
    assert shape == validateparts.document_shape(load(spec), finite=True)


def test_a_shape_is_made_from_the_previous_one_only_for_the_text_that_one_is_of(
    tmp_path: Path,
) -> None:
    data = load(PETSTORE)
    spec = write(tmp_path, data)
    first = load_module.load_json_quickly(spec)
    assert first is not None and first.index is not None
    before = validateparts.document_shape(first.document.data, finite=True)
    edited = copy.deepcopy(data)
    _describe(edited)
    spec = write(tmp_path, edited)
    quick = load_module.load_json_quickly(spec, previous=first.index)
    assert quick is not None and quick.replaced is not None
    whole = validateparts.document_shape(quick.document.data, finite=True)
    made = patch._shape_by_index(quick.document, quick, first.index, before, first.digest)
    assert made == whole and made != before
    # Of another text (another sha256), or with no shape before it: digested whole.
    assert patch._shape_by_index(quick.document, quick, first.index, before, "0" * 64) is None
    assert patch._shape_by_index(quick.document, quick, first.index, None, first.digest) is None


def test_a_patched_run_reads_only_the_changed_path_items_and_validates_the_whole_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the validation in the second process, the patch reads the changed path items and
    the components they reach only (load.QuickLoad.partial), and writes a whole run's bytes;
    findings made here instead (the second process's were of other bytes) are the whole
    spec's: a finding in a path item the edit left alone is still reported."""
    monkeypatch.setattr(patch, "_BEGIN_MIN_BYTES", 0)
    _findings_of_other_bytes(monkeypatch)
    loads = _partial_reads(monkeypatch)
    data = load(PETSTORE)
    data["paths"]["/pets"]["get"]["responses"]["200"]["x_oops"] = 1  # a finding, left alone
    spec = write(tmp_path / "patched", data)
    generated(spec, tmp_path / "patched" / "out")
    data["paths"]["/pets/{petId}"]["get"]["description"] = "Edited."
    write(tmp_path / "patched", data)
    patched, patched_sink = generated(spec, tmp_path / "patched" / "out")
    whole, whole_sink = generated(write(tmp_path / "whole", data), tmp_path / "whole" / "out")
    assert patched.patched is not None and whole.patched is None
    assert loads == [True] or threading.active_count() > 1  # (forked only when alone)
    shown = _validation_warnings(patched_sink, "patched")
    assert shown == _validation_warnings(whole_sink, "whole") != []
    assert tree_digest(tmp_path / "patched" / "out") == tree_digest(tmp_path / "whole" / "out")


def test_a_patch_that_falls_back_after_a_partial_read_leaves_the_pipeline_the_whole_spec(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new operation in a path item is read partly (the item changed, nothing else) and then
    found to add a tool, which a patch does not make: the pipeline builds from the whole spec,
    never from the patch's partial document, and writes a cold run's bytes."""
    monkeypatch.setattr(patch, "_BEGIN_MIN_BYTES", 0)
    loads = _partial_reads(monkeypatch)
    data = load(PETSTORE)
    spec = write(tmp_path / "a", data)
    generated(spec, tmp_path / "a" / "out")
    edited = copy.deepcopy(data)
    _add_operation(edited)
    write(tmp_path / "a", edited)
    report, _ = generated(spec, tmp_path / "a" / "out")
    assert report.patched is None
    assert loads == [threading.active_count() == 1]  # read partly (when it could fork)
    assert tree_digest(tmp_path / "a" / "out") == cold(edited, tmp_path / "b")
