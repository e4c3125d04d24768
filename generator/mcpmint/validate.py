"""Validate stage: detect the spec version, then check the document with openapi-spec-validator.

Only an unknown or missing version is an error here. Strict-validation findings are warnings:
real-world specs often fail the official schema in ways that do not matter for generating
tools (see the corpus notes), and later stages report, with errors, what they cannot use.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Literal

# jsonschema ships no type hints; `unused-ignore` keeps this clean once types-jsonschema is in.
from jsonschema.exceptions import (  # type: ignore[import-untyped, unused-ignore]
    ValidationError,
    best_match,
)
from jsonschema.validators import validator_for  # type: ignore[import-untyped, unused-ignore]
from openapi_spec_validator import (
    OpenAPIV2SpecValidator,
    OpenAPIV30SpecValidator,
    OpenAPIV31SpecValidator,
    OpenAPIV32SpecValidator,
)
from openapi_spec_validator.schemas.utils import get_schema_content
from openapi_spec_validator.validation import SpecValidator, keywords

from .background import Background
from .cache import StageCache, cache_key
from .diagnostics import Diagnostic, DiagnosticSink, Level
from .load import RawDocument
from .refs import escape_token

MAX_REPORTED = 25
MAX_MESSAGE = 300

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?(?:-[0-9A-Za-z.-]+)?")
_NOT_OPENAPI_HINT = "not an OpenAPI document: expected a top-level `openapi: 3.x` key"
_FINDING_HINT = (
    "the spec does not strictly follow the OpenAPI schema; generation goes on, and later "
    "stages report as errors anything they cannot use"
)


@dataclass(frozen=True)
class SpecVersion:
    family: Literal["openapi", "swagger"]
    major: int
    minor: int
    text: str  # e.g. "3.0.3"


class _NoRetrieval(Mapping[str, Callable[[str], Any]]):
    """Resolver handlers that refuse every URI scheme.

    The bundled document holds only local refs, so nothing ever needs fetching. jsonschema-path
    falls back to `urlopen()` for a scheme it has no handler for, so an empty mapping would not
    stop a stray remote `$ref`: this one claims every scheme and refuses it.
    """

    def __getitem__(self, scheme: str) -> Callable[[str], Any]:
        return _refuse_retrieval

    def __contains__(self, scheme: object) -> bool:
        return True

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0


def _refuse_retrieval(uri: str) -> Any:
    raise LookupError(f"{uri} was not fetched: mcpmint never opens network connections")


# Typed Any: the library annotates this attribute as a plain dict of its own handlers.
_NO_RETRIEVAL: Any = _NoRetrieval()


class _VisitedIds(list[int]):
    """The validator's "seen this schema" registry, with set-speed membership.

    openapi-spec-validator keeps these ids in plain lists and asks `id in list` for every
    schema it visits: quadratic, about 5 s of GitHub's 969 component schemas. Same contents,
    same order, constant-time `in`.
    """

    def __init__(self) -> None:
        super().__init__()
        self._members: set[int] = set()

    def __contains__(self, item: object) -> bool:
        return item in self._members

    def append(self, item: int) -> None:
        self._members.add(item)
        super().append(item)


class _SchemaV30(keywords.OpenAPIV30SchemaValidator):
    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.visited_schema_ids, self.meta_checked_schema_ids = _VisitedIds(), _VisitedIds()

    def _get_schema_checker(self, schema: Any, schema_value: Any) -> Callable[[Any], None]:
        """Each Schema Object against the OpenAPI 3.0 schema dialect: jsonschema-rs says
        whether it is valid (half the walk's time, pure-Python, on GitHub's 1,989 schemas);
        jsonschema checks, and words the finding, only when it is not."""
        thorough = super()._get_schema_checker(schema, schema_value)
        meta_schema = self.schema_validator_cls.META_SCHEMA

        def check(value: Any) -> None:
            if not _passes_fast_check(meta_schema, value):
                thorough(value)

        return check


class _SchemaV31(keywords.OpenAPIV31SchemaValidator):
    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.visited_schema_ids, self.meta_checked_schema_ids = _VisitedIds(), _VisitedIds()


class _SchemaV32(keywords.OpenAPIV32SchemaValidator):
    def __init__(self, registry: Any) -> None:
        super().__init__(registry)
        self.visited_schema_ids, self.meta_checked_schema_ids = _VisitedIds(), _VisitedIds()


def _with_schema_keyword(
    base: type[SpecValidator], schema: type[keywords.KeywordValidator]
) -> dict[str, type[keywords.KeywordValidator]]:
    return {**base.keyword_validators, "schema": schema}


class _OfflineV2(OpenAPIV2SpecValidator):
    resolver_handlers = _NO_RETRIEVAL
    keyword_validators = _with_schema_keyword(OpenAPIV2SpecValidator, _SchemaV30)


class _OfflineV30(OpenAPIV30SpecValidator):
    resolver_handlers = _NO_RETRIEVAL
    keyword_validators = _with_schema_keyword(OpenAPIV30SpecValidator, _SchemaV30)


class _OfflineV31(OpenAPIV31SpecValidator):
    resolver_handlers = _NO_RETRIEVAL
    keyword_validators = _with_schema_keyword(OpenAPIV31SpecValidator, _SchemaV31)


class _OfflineV32(OpenAPIV32SpecValidator):
    resolver_handlers = _NO_RETRIEVAL
    keyword_validators = _with_schema_keyword(OpenAPIV32SpecValidator, _SchemaV32)


_VALIDATORS: dict[tuple[str, int, int], type[SpecValidator]] = {
    ("swagger", 2, 0): _OfflineV2,
    ("openapi", 3, 0): _OfflineV30,
    ("openapi", 3, 1): _OfflineV31,
    ("openapi", 3, 2): _OfflineV32,
}
# The version of the official document schema ("meta-schema") each family is checked against.
_META_SCHEMAS = {
    ("swagger", 2, 0): "2.0",
    ("openapi", 3, 0): "3.0",
    ("openapi", 3, 1): "3.1",
    ("openapi", 3, 2): "3.2",
}


class _NoFindings:
    """A document-schema check that finds nothing (it was already done, and passed)."""

    def iter_errors(self, instance: Any) -> Iterator[ValidationError]:
        return iter(())


def _validator(version: SpecVersion, data: Any) -> SpecValidator:
    """The spec validator for `data`: the document-schema check first, then the library's
    own checks (path parameters, operation ids, defaults against their schemas, ...).

    The document-schema check of a large spec is seconds of pure-Python jsonschema (3 s on
    GitHub's). jsonschema-rs answers "valid or not" against the very same schema in a tenth
    of that; only a document that fails it goes through jsonschema, whose errors carry the
    alternatives that `_describe` picks the best reason from.
    """
    key = (version.family, version.major, version.minor)
    meta_schema = _meta_schema(_META_SCHEMAS[key])
    base = _VALIDATORS[key]
    if _passes_fast_check(meta_schema, data):
        checker: Any = _NoFindings()
    else:
        checker = validator_for(meta_schema)(meta_schema)
    validator_class: type[SpecValidator] = type(
        base.__name__, (base,), {"schema_validator": checker}
    )
    return validator_class(data, base_uri="")


def _passes_fast_check(schema: Any, data: Any) -> bool:
    """True only when jsonschema-rs is there and finds `data` valid against `schema` (then
    jsonschema would too: same schema, same draft). False means "ask jsonschema"."""
    checker = _fast_checker(schema)
    if checker is None:
        return False
    try:
        return checker(data)
    except Exception:  # third-party code on hostile input: let jsonschema decide
        return False


# id(schema) -> (schema, its compiled check). Only long-lived schemas come here (the document
# schemas of `_meta_schema`, the dialect's META_SCHEMA), and each is held, so ids stay unique.
_FAST_CHECKERS: dict[int, tuple[Any, Callable[[Any], bool] | None]] = {}


def _fast_checker(schema: Any) -> Callable[[Any], bool] | None:
    """jsonschema-rs's compiled `is_valid` for `schema`, compiled once (it is asked for every
    Schema Object of a document), or None."""
    found = _FAST_CHECKERS.get(id(schema))
    if found is not None and found[0] is schema:
        return found[1]
    checker: Callable[[Any], bool] | None = None
    try:
        import jsonschema_rs

        checker = jsonschema_rs.validator_for(json.loads(json.dumps(schema))).is_valid
    except ImportError:  # pragma: no cover - a declared dependency; jsonschema does it all
        pass
    except Exception:
        checker = None
    _FAST_CHECKERS[id(schema)] = (schema, checker)
    return checker


@functools.cache
def _meta_schema(version: str) -> Any:
    """The official document schema of an OpenAPI version, read once."""
    return get_schema_content(version)


# Documents with at least this many path items are validated in a second process while the
# rest of the pipeline runs (validation takes ~3 s on GitHub's 969-path spec, single-core);
# below it, starting a process costs more than it saves.
BACKGROUND_MIN_PATHS = 200
# The distributions whose code decides the findings (they key the cache).
_VALIDATOR_LIBRARIES = (
    "openapi-spec-validator",
    "openapi-schema-validator",
    "jsonschema",
    "jsonschema-path",
    "jsonschema-rs",
)


def validate_document(
    doc: RawDocument,
    sink: DiagnosticSink,
    *,
    cache: StageCache | None = None,
    deferred: list[PendingFindings] | None = None,
) -> SpecVersion | None:
    """Detect the OpenAPI/Swagger version of `doc` and report validation findings.

    Args:
        doc: the bundled document from the load stage.
        sink: receives an error for an unknown or missing version, and warnings for every
            strict-validation finding (at most `MAX_REPORTED`, then one summary).
        cache: the previous run's findings for the very same files are reused.
        deferred: when given and the document is large, the findings are computed in a
            second process and a `PendingFindings` is appended here instead; the caller
            must `join` it (which puts the warnings where they would have been in `sink`).
            Findings are only ever warnings, so no later decision depends on them.

    Returns:
        The version, or None if the document is not a supported OpenAPI/Swagger document.
    """
    version = _detect_version(doc, sink)
    if version is None:
        return None
    key = _findings_key(doc, version)
    stored = cache.get("validate", key) if cache is not None else None
    found = _decode(stored)
    if found is not None:
        sink.extend(found)
        return version
    pending = PendingFindings(doc, version, sink, cache, key)
    if deferred is not None and pending.start():
        deferred.append(pending)
    else:
        pending.join()
    return version


def findings(doc: RawDocument, version: SpecVersion) -> list[Diagnostic]:
    """The strict-validation warnings for `doc` (what `validate_document` reports)."""
    sink = DiagnosticSink()
    _report_findings(doc, version, sink)
    return sink.items


class PendingFindings:
    """Validation findings being computed, possibly in a forked second process."""

    def __init__(
        self,
        doc: RawDocument,
        version: SpecVersion,
        sink: DiagnosticSink,
        cache: StageCache | None,
        key: str,
    ) -> None:
        self.doc, self.version, self.sink, self.cache, self.key = doc, version, sink, cache, key
        self.index = len(sink.items)  # where the warnings go, as if reported right now
        self._background: Background[list[Diagnostic]] | None = None

    def start(self) -> bool:
        """Fork a worker when it pays and is safe; False means "run it in `join`"."""
        paths = self.doc.data.get("paths")
        big = isinstance(paths, dict) and len(paths) >= BACKGROUND_MIN_PATHS
        doc, version = self.doc, self.version
        self._background = Background(lambda: findings(doc, version), worth_it=big)
        return self._background.forked

    def join(self) -> None:
        """Wait for the findings and put them into the sink at the place they belong."""
        if self._background is not None:
            found = self._background.result()
        else:
            found = findings(self.doc, self.version)
        self._background = None
        self.sink.items[self.index : self.index] = found
        if self.cache is not None:
            self.cache.put("validate", self.key, _encode(found))


def _findings_key(doc: RawDocument, version: SpecVersion) -> str:
    """The findings depend on the files' bytes (the data and the line numbers) and names."""
    files = [[path.as_posix(), hashlib.sha256(path.read_bytes()).hexdigest()] for path in doc.files]
    inputs = {
        "entry": doc.path.as_posix(),
        "root": doc.root.as_posix(),
        "files": files,
        "version": version.text,
    }
    return cache_key("validate", inputs, *_VALIDATOR_LIBRARIES)


def _encode(found: list[Diagnostic]) -> list[list[str]]:
    return [[d.level.value, d.location, d.message, d.hint] for d in found]


def _decode(stored: Any) -> list[Diagnostic] | None:
    if not isinstance(stored, list):
        return None
    found = []
    for item in stored:
        if not (
            isinstance(item, list) and len(item) == 4 and all(isinstance(x, str) for x in item)
        ):
            return None
        if item[0] not in (Level.ERROR.value, Level.WARNING.value):
            return None
        found.append(Diagnostic(Level(item[0]), item[1], item[2], item[3]))
    return found


def _detect_version(doc: RawDocument, sink: DiagnosticSink) -> SpecVersion | None:
    data: Any = doc.data
    if not isinstance(data, dict):
        sink.error(doc.locate("#"), "the top level is not a mapping", _NOT_OPENAPI_HINT)
        return None
    if "openapi" in data:
        family: Literal["openapi", "swagger"] = "openapi"
    elif "swagger" in data:
        family = "swagger"
    else:
        sink.error(doc.locate("#"), "no `openapi` or `swagger` key", _NOT_OPENAPI_HINT)
        return None
    pointer = f"#/{family}"
    raw = data[family]
    # An unquoted `openapi: 3.1` reads as the number 3.1; keep going with its text.
    text = str(raw) if isinstance(raw, str | int | float) and not isinstance(raw, bool) else ""
    match = _VERSION.fullmatch(text.strip())
    if match is None:
        sink.error(doc.locate(pointer), f"unrecognised {family} version {raw!r}", _version_hint())
        return None
    version = SpecVersion(family, int(match.group(1)), int(match.group(2)), text.strip())
    key = (version.family, version.major, version.minor)
    if key not in _VALIDATORS:
        sink.error(
            doc.locate(pointer),
            f"unsupported {family} version {version.text}",
            _version_hint(),
        )
        return None
    if key == ("openapi", 3, 2):
        sink.warning(
            doc.locate(pointer),
            f"OpenAPI {version.text} is newer than mcpmint knows: it is treated as 3.1",
            "features added in 3.2 are ignored or reported by later stages",
        )
    return version


def _version_hint() -> str:
    return 'supported: `openapi: 3.0.x`, `3.1.x` (3.2.x treated as 3.1) and `swagger: "2.0"`'


def _report_findings(doc: RawDocument, version: SpecVersion, sink: DiagnosticSink) -> None:
    reported = 0
    try:
        for error in _validator(version, doc.data).iter_errors():
            reported += 1
            if reported <= MAX_REPORTED:
                location, message = _describe(doc, error)
                sink.warning(location, f"validation: {message}", _FINDING_HINT)
    except Exception as exc:  # the validator is third-party code run on hostile input
        sink.warning(
            doc.locate("#"),
            _one_line(
                f"the OpenAPI validator failed, validation skipped: {type(exc).__name__}: {exc}"
            ),
            "validation findings may be missing; later stages still check what they use",
        )
    finally:
        _clear_validator_cache()
    if reported > MAX_REPORTED:
        sink.warning(
            doc.locate("#"),
            f"{reported - MAX_REPORTED} more validation findings",
            "run `openapi-spec-validator` on the spec to see them all",
        )


def _describe(doc: RawDocument, error: ValidationError) -> tuple[str, str]:
    suffix = ""
    if error.context:
        # "X is not valid under any of the given schemas" names no reason; the closest
        # alternative's own error usually does ("'description' is a required property").
        error = best_match(error.context) or error
        suffix = " (no allowed form matched)"
    pointer = "#" + "".join("/" + escape_token(str(p)) for p in error.absolute_path)
    return doc.locate(pointer), _one_line(str(error.message) + suffix)


def _one_line(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 1] + "…"


def _clear_validator_cache() -> None:
    # SpecValidator.iter_errors is an unbounded lru_cache keyed on the validator, so it would
    # keep every validated document (13 MB of JSON for GitHub's) alive for the whole process.
    cached = getattr(SpecValidator.iter_errors, "__wrapped__", None)
    cache_clear = getattr(cached, "cache_clear", None)
    if callable(cache_clear):
        cache_clear()
