"""The validate stage: version detection, validator findings as located warnings, bad inputs."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

import pytest
from openapi_spec_validator.validation import keywords
from pathable.accessors import SubscriptableAccessor

from mcpmint.diagnostics import DiagnosticSink, Level
from mcpmint.load import strictcheck, validate
from mcpmint.load.document import Limits, load_document
from mcpmint.load.specversion import SpecVersion, detect_version
from mcpmint.load.strictcheck import MAX_MESSAGE, MAX_REPORTED
from mcpmint.load.validate import validate_document

# Test modules are imported as top-level modules until tests/ becomes a package.
try:
    from .invalid_cases import EXPECTED, INVALID_DIR, LATER_STAGE
except ImportError:
    from invalid_cases import EXPECTED, INVALID_DIR, LATER_STAGE  # type: ignore[no-redef]

from .conftest import CORPUS, REPO, corpus_rows

BODY = """\
info:
  title: t
  version: "1"
paths:
  /pets:
    get:
      responses:
        "200":
          description: ok
"""


def check(tmp_path: Path, text: str, name: str = "spec.yaml") -> tuple[Any, DiagnosticSink, str]:
    spec = tmp_path / name
    spec.write_text(text, encoding="utf-8")
    sink = DiagnosticSink()
    document = load_document(spec, sink, Limits())
    assert document is not None, [d.render() for d in sink]
    return validate_document(document, sink), sink, spec.as_posix()


# ---------------------------------------------------------------------- versions
@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("openapi: 3.0.3", SpecVersion("openapi", 3, 0, "3.0.3")),
        ("openapi: 3.1.0", SpecVersion("openapi", 3, 1, "3.1.0")),
        ("openapi: '3.1.1'", SpecVersion("openapi", 3, 1, "3.1.1")),
        ("swagger: '2.0'", SpecVersion("swagger", 2, 0, "2.0")),
        ("swagger: 2.0", SpecVersion("swagger", 2, 0, "2.0")),
    ],
)
def test_supported_versions_are_detected(
    tmp_path: Path, header: str, expected: SpecVersion
) -> None:
    version, sink, _ = check(tmp_path, f"{header}\n{BODY}")

    assert version == expected
    assert sink.errors == []


def test_openapi_3_2_is_accepted_with_a_warning_that_it_is_treated_as_3_1(
    tmp_path: Path,
) -> None:
    version, sink, spec = check(tmp_path, f"{BODY}openapi: 3.2.0\n")

    assert version == SpecVersion("openapi", 3, 2, "3.2.0")
    assert sink.errors == []
    assert [(d.location, d.message) for d in sink.warnings] == [
        (f"{spec}:10:1", "OpenAPI 3.2.0 is newer than mcpmint knows: it is treated as 3.1")
    ]


@pytest.mark.parametrize(
    ("header", "message"),
    [
        ("openapi: 4.0", "unsupported openapi version 4.0"),
        ("openapi: 3.3.0", "unsupported openapi version 3.3.0"),
        ("openapi: 2.0", "unsupported openapi version 2.0"),
        ("swagger: '1.2'", "unsupported swagger version 1.2"),
        ("openapi: banana", "unrecognised openapi version 'banana'"),
        ("openapi: [3, 0]", "unrecognised openapi version [3, 0]"),
        ("openapi: true", "unrecognised openapi version True"),
    ],
)
def test_unsupported_version_is_an_error_at_its_key(
    tmp_path: Path, header: str, message: str
) -> None:
    version, sink, spec = check(tmp_path, f"{BODY}{header}\n")

    assert version is None
    assert [(d.location, d.message) for d in sink.errors] == [(f"{spec}:10:1", message)]


def test_document_without_a_version_key_is_not_openapi(tmp_path: Path) -> None:
    version, sink, spec = check(tmp_path, BODY)

    assert version is None
    [error] = sink.errors
    assert (error.location, error.message) == (f"{spec}:1:1", "no `openapi` or `swagger` key")
    assert error.hint == "not an OpenAPI document: expected a top-level `openapi: 3.x` key"


# ---------------------------------------------------------------------- findings
def test_validator_findings_are_located_warnings_not_errors(tmp_path: Path) -> None:
    version, sink, spec = check(tmp_path, "openapi: 3.0.3\n" + BODY.replace("title: t", "title: 5"))

    assert version == SpecVersion("openapi", 3, 0, "3.0.3")
    assert sink.errors == []
    assert [(d.level, d.location, d.message) for d in sink] == [
        (Level.WARNING, f"{spec}:3:3", "validation: 5 is not of type 'string'")
    ]


def test_a_failed_alternative_names_the_closest_reason(tmp_path: Path) -> None:
    text = "openapi: 3.0.3\n" + BODY.replace("          description: ok\n", "          {}\n")
    text = text.replace('"200":\n          {}', '"200": {}')

    _, sink, spec = check(tmp_path, text)

    assert [(d.location, d.message) for d in sink] == [
        (
            f"{spec}:9:9",
            "validation: 'description' is a required property (no allowed form matched)",
        )
    ]


def test_findings_are_capped_with_one_summary(tmp_path: Path) -> None:
    paths = "".join(
        f"  /p{i}:\n    get:\n      responses:\n        '200': {{}}\n" for i in range(40)
    )
    text = f'openapi: 3.0.3\ninfo: {{title: t, version: "1"}}\npaths:\n{paths}'

    version, sink, spec = check(tmp_path, text)

    assert version is not None
    assert len(sink.warnings) == MAX_REPORTED + 1
    assert sink.warnings[0].location == f"{spec}:7:9"
    assert sink.warnings[-1].message == f"{40 - MAX_REPORTED} more validation findings"


def test_long_findings_are_trimmed_to_one_line(tmp_path: Path) -> None:
    long_title = "[" + ", ".join(f'"line {i}\\nmore"' for i in range(100)) + "]"
    text = "openapi: 3.0.3\n" + BODY.replace("title: t", f"title: {long_title}")

    _, sink, _ = check(tmp_path, text)

    [finding] = sink.warnings
    assert "\n" not in finding.message
    assert len(finding.message) <= len("validation: ") + MAX_MESSAGE
    assert finding.message.endswith("…")


def test_validator_crash_becomes_one_warning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    class Exploding:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setitem(strictcheck._VALIDATORS, ("openapi", 3, 0), Exploding)

    version, sink, spec = check(tmp_path, "openapi: 3.0.3\n" + BODY)

    assert version == SpecVersion("openapi", 3, 0, "3.0.3")
    assert [(d.level, d.location) for d in sink] == [(Level.WARNING, f"{spec}:1:1")]
    assert "RecursionError" in sink.warnings[0].message


def test_validator_never_fetches_a_remote_ref(
    tmp_path: Path, no_network: list[tuple[Any, ...]]
) -> None:
    # Load refuses remote refs, so plant one after loading: the stock validator would open a
    # connection to resolve it; ours must report it without one.
    spec = tmp_path / "spec.yaml"
    spec.write_text("openapi: 3.1.0\n" + BODY, encoding="utf-8")
    sink = DiagnosticSink()
    document = load_document(spec, sink)
    assert document is not None
    document.data["components"] = {
        "schemas": {
            "Pet": {"$id": "https://example.invalid/pet", "properties": {}},
            "Remote": {"$ref": "https://example.invalid/x.json"},
        }
    }

    version = validate_document(document, sink)

    assert version is not None
    assert sink.errors == []
    assert [d.message for d in sink.warnings] != []
    assert no_network == []


# ---------------------------------------------------------------------- specs/invalid
@pytest.mark.parametrize("name", sorted(set(EXPECTED) - LATER_STAGE))
def test_invalid_spec_gives_its_expected_located_error(
    name: str, monkeypatch: pytest.MonkeyPatch, no_network: list[tuple[Any, ...]]
) -> None:
    monkeypatch.chdir(REPO)
    location, message = EXPECTED[name]
    sink = DiagnosticSink()

    document = load_document(Path(INVALID_DIR) / name, sink)
    if document is not None:
        validate_document(document, sink)

    assert [(d.location, message in d.message) for d in sink.errors] == [(location, True)], [
        d.render() for d in sink
    ]
    assert no_network == []


def test_every_invalid_spec_has_an_expected_diagnostic() -> None:
    files = (p for p in (REPO / INVALID_DIR).iterdir() if p.is_file())
    assert sorted(p.name for p in files) == sorted(EXPECTED)


# ---------------------------------------------------------------------- corpus
def corpus_cases() -> list[Any]:
    rows = corpus_rows()
    return [
        pytest.param(
            row["entry_file"],
            row["validator"],
            id=row["name"],
            marks=[pytest.mark.slow] if int(row["size_bytes"]) > 1_000_000 else [],
        )
        for row in rows
        if row["name"] != "prance-recursive-objs"  # cannot load: a remote $ref
    ]


@pytest.mark.parametrize(("entry_file", "verdict"), corpus_cases())
def test_corpus_specs_validate_with_warnings_only(
    entry_file: str, verdict: str, no_network: list[tuple[Any, ...]]
) -> None:
    root = CORPUS / entry_file.split("/")[0] if "/" in entry_file else None
    sink = DiagnosticSink()
    document = load_document(CORPUS / entry_file, sink, root=root)
    assert document is not None

    version = validate_document(document, sink)

    assert version is not None
    assert sink.errors == []
    validation_findings = [d for d in sink.warnings if d.message.startswith("validation:")]
    # INDEX.tsv records what openapi-spec-validator 0.9.0 says of each spec.
    assert bool(validation_findings) == (verdict == "FAIL")
    assert no_network == []


# ---------------------------------------------------------------------- the fast path
def fast_cases() -> list[Any]:
    rows = [row for row in corpus_rows() if row["name"] != "prance-recursive-objs"]
    return [
        pytest.param(
            row["entry_file"],
            id=row["name"],
            marks=[pytest.mark.slow] if int(row["size_bytes"]) > 1_000_000 else [],
        )
        for row in rows
    ]


def _corpus_document(entry_file: str) -> tuple[Any, SpecVersion]:
    """A corpus spec, loaded, and its version."""
    root = CORPUS / entry_file.split("/")[0] if "/" in entry_file else None
    document = load_document(CORPUS / entry_file, DiagnosticSink(), root=root)
    assert document is not None
    version = detect_version(document, DiagnosticSink())
    assert version is not None
    return document, version


@pytest.mark.parametrize("entry_file", fast_cases())
def test_the_fast_document_schema_check_changes_no_finding(
    entry_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # jsonschema-rs only answers "valid or not"; every finding must be exactly what the
    # pure-Python check reports, for valid and invalid documents alike.
    document, version = _corpus_document(entry_file)

    fast = validate.findings(document, version)
    monkeypatch.setattr(strictcheck, "_passes_fast_check", lambda *_: False)
    slow = validate.findings(document, version)

    assert [d.render() for d in fast] == [d.render() for d in slow]


@pytest.mark.parametrize("entry_file", fast_cases())
def test_the_plain_subscript_step_changes_no_finding(
    entry_file: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pathable's step without its Protocol check (strictcheck._plain_subnodes) must walk the
    # document exactly as pathable's own does, and be put back afterwards.
    document, version = _corpus_document(entry_file)
    own_step = vars(SubscriptableAccessor)["_get_subnode"]

    fast = validate.findings(document, version)
    assert vars(SubscriptableAccessor)["_get_subnode"] is own_step
    monkeypatch.setattr(strictcheck, "_plain_subnodes", contextlib.nullcontext)
    slow = validate.findings(document, version)

    assert [d.render() for d in fast] == [d.render() for d in slow]


def test_the_plain_subscript_step_is_used_while_validating(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text("openapi: 3.0.3\n" + BODY, encoding="utf-8")
    document = load_document(spec, DiagnosticSink())
    assert document is not None
    steps: list[str] = []
    own = vars(SubscriptableAccessor)["_get_subnode"]

    def counting(cls: Any, node: Any, part: Any) -> Any:
        steps.append("own")
        return own.__func__(cls, node, part)

    monkeypatch.setattr(SubscriptableAccessor, "_get_subnode", classmethod(counting))
    with strictcheck._plain_subnodes():
        assert SubscriptableAccessor._get_subnode({"a": 1}, "a") == 1
        assert SubscriptableAccessor._get_subnode([5, 6], 1) == 6
        with pytest.raises(KeyError):
            SubscriptableAccessor._get_subnode({"a": 1}, "b")
        assert steps == []  # dicts and lists never reach pathable's own step
        SubscriptableAccessor._get_subnode("text", 0)  # anything else still does
        assert steps == ["own"]
    assert vars(SubscriptableAccessor)["_get_subnode"].__func__ is counting


def test_the_fast_check_tells_valid_from_invalid(tmp_path: Path) -> None:
    meta = strictcheck._meta_schema("3.0")
    spec = tmp_path / "spec.yaml"
    spec.write_text("openapi: 3.0.3\n" + BODY, encoding="utf-8")
    document = load_document(spec, DiagnosticSink())
    assert document is not None
    assert strictcheck._passes_fast_check(meta, document.data)
    broken = dict(document.data, info={"version": "1"})  # `title` is required
    assert not strictcheck._passes_fast_check(meta, broken)


def test_visited_ids_keep_list_order_with_set_membership() -> None:
    ids = strictcheck._VisitedIds()
    for item in (3, 1, 2):
        ids.append(item)

    assert list(ids) == [3, 1, 2]
    assert 1 in ids and 2 in ids and 4 not in ids


def test_the_hooks_into_the_validators_internals_still_apply(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """strictcheck.py replaces two internals of pinned libraries (pyproject.toml); when an
    upgrade moves them, this fails instead of validation silently going slow."""
    own_step = vars(SubscriptableAccessor).get("_get_subnode")
    assert isinstance(own_step, classmethod)  # pathable's step, which _plain_subnodes swaps
    with strictcheck._plain_subnodes():
        assert vars(SubscriptableAccessor)["_get_subnode"] is not own_step
    assert vars(SubscriptableAccessor)["_get_subnode"] is own_step
    # openapi-spec-validator keeps its visited schemas in lists that _VisitedIds replaces,
    # and consults them while it walks a document's schemas.
    plain = keywords.OpenAPIV30SchemaValidator(None)
    assert isinstance(plain.visited_schema_ids, list)
    assert isinstance(plain.meta_checked_schema_ids, list)
    consulted: list[object] = []
    members = strictcheck._VisitedIds.__contains__

    def spying(self: Any, item: object) -> bool:
        consulted.append(item)
        return members(self, item)

    monkeypatch.setattr(strictcheck._VisitedIds, "__contains__", spying)
    spec = tmp_path / "spec.yaml"
    schema = (
        "          content:\n            application/json:\n              schema: {type: string}\n"
    )
    spec.write_text("openapi: 3.0.3\n" + BODY + schema, encoding="utf-8")
    document = load_document(spec, DiagnosticSink())
    assert document is not None
    version = detect_version(document, DiagnosticSink())
    assert version is not None
    validate.findings(document, version)
    assert consulted
