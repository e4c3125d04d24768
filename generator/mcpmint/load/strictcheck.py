"""The strict check of an OpenAPI document: openapi-spec-validator, made offline and fast.

The validate stage (validate.py) imports this only when findings must be computed: a run
whose findings are cached does not need the libraries.

Two hooks reach into the libraries' internals, both to keep large specs' validation from
being quadratic or dominated by a Protocol check; both libraries are pinned exactly in
pyproject.toml, and tests/test_validate.py fails when either hook stops applying:
`_VisitedIds` replaces openapi-spec-validator's `visited_schema_ids` lists, and
`_plain_subnodes` replaces pathable's `SubscriptableAccessor._get_subnode`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any

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
from pathable.accessors import SubscriptableAccessor

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import RawDocument
from mcpmint.load.specversion import SUPPORTED, SpecVersion
from mcpmint.refs import escape_token

MAX_REPORTED = 25
MAX_MESSAGE = 300

_FINDING_HINT = (
    "the spec does not strictly follow the OpenAPI schema; generation goes on, and later "
    "stages report as errors anything they cannot use"
)


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
    schema it visits: quadratic in the number of schemas. Same contents,
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

    The document-schema check of a large spec is seconds of pure-Python jsonschema.
    jsonschema-rs answers "valid or not" against the very same schema in compiled code; only
    a document that fails it goes through jsonschema, whose errors carry the alternatives
    that `_describe` picks the best reason from.
    """
    key = (version.family, version.major, version.minor)
    meta_schema = _meta_schema(_META_SCHEMAS[key])
    base = _VALIDATORS[key]
    if _passes_fast_check(meta_schema, data):
        checker: Any = _NoFindings()
    else:
        checker = validator_for(meta_schema)(meta_schema)
    members: dict[str, Any] = {"schema_validator": checker}
    validator_class: type[SpecValidator] = type(base.__name__, (base,), members)
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


@contextmanager
def _plain_subnodes() -> Iterator[None]:
    """pathable's subscript step without its Protocol check, for dicts and lists.

    openapi-spec-validator walks the document through jsonschema-path, whose every step asks
    `isinstance(node, Subscriptable)`, a runtime-checkable Protocol; Python 3.11 answers that
    by collecting the protocol's attributes again each time: a quarter of validating GitHub's
    spec (128,000 checks). A parsed document's containers are dicts and lists, which are
    Subscriptable, so for them the step is the same lookup without the check; any other node
    takes pathable's own. Restored when the block ends; left alone when pathable's layout is
    not the one this was written for (then validation is only slower).
    """
    original = vars(SubscriptableAccessor).get("_get_subnode")
    if not isinstance(original, classmethod):
        yield
        return
    own = original.__func__

    def get_subnode(cls: Any, node: Any, part: Any) -> Any:
        if type(node) is dict or type(node) is list:
            try:
                return node[part]
            except (KeyError, IndexError, TypeError) as exc:
                raise KeyError(part) from exc
        return own(cls, node, part)

    _set_subnode(classmethod(get_subnode))
    try:
        yield
    finally:
        _set_subnode(original)


def _set_subnode(step: classmethod[Any, Any, Any]) -> None:
    setattr(SubscriptableAccessor, "_get_subnode", step)  # noqa: B010 (typed as a function)


def report_findings(doc: RawDocument, version: SpecVersion, sink: DiagnosticSink) -> bool:
    """Report the findings of `doc` as warnings; False when the validator failed (also
    reported)."""
    reported = 0
    completed = True
    try:
        with _plain_subnodes():
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
        completed = False
    finally:
        _clear_validator_cache()
    if reported > MAX_REPORTED:
        sink.warning(
            doc.locate("#"),
            f"{reported - MAX_REPORTED} more validation findings",
            "run `openapi-spec-validator` on the spec to see them all",
        )
    return completed


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
    # keep every validated document alive for the whole process.
    cached = getattr(SpecValidator.iter_errors, "__wrapped__", None)
    cache_clear = getattr(cached, "cache_clear", None)
    if callable(cache_clear):
        cache_clear()


assert set(_VALIDATORS) == SUPPORTED  # specversion.py's version check and this agree
