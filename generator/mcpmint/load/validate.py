"""Validate stage: detect the spec version, then check the document with openapi-spec-validator
(strictcheck.py).

Only an unknown or missing version is an error here. Strict-validation findings are warnings:
real-world specs often fail the official schema in ways that do not matter for generating
tools (see the corpus notes), and later stages report, with errors, what they cannot use.
"""

from __future__ import annotations

import hashlib
from types import TracebackType
from typing import Any

from mcpmint.diagnostics import Aborted, Diagnostic, DiagnosticSink, Level
from mcpmint.forked import Forked
from mcpmint.load.document import RawDocument
from mcpmint.load.specversion import SpecVersion, detect_version
from mcpmint.write.cache import StageCache, cache_key

# The distributions whose code decides the findings (they key the cache).
_VALIDATOR_LIBRARIES = (
    "openapi-spec-validator",
    "openapi-schema-validator",
    "jsonschema",
    "jsonschema-path",
    "jsonschema-rs",
)


# From this many path items on, the findings are computed in a forked child while the
# pipeline builds the tools (forked.py); below it, a fork costs more than it saves.
FORK_MIN_PATHS = 200


def validate_document(
    doc: RawDocument, sink: DiagnosticSink, *, cache: StageCache | None = None
) -> SpecVersion | None:
    """Detect the OpenAPI/Swagger version of `doc` and report validation findings.

    Args:
        doc: the bundled document from the load stage.
        sink: receives an error for an unknown or missing version, and warnings for every
            strict-validation finding (at most `MAX_REPORTED`, then one summary).
        cache: the previous run's findings for the very same files are reused.

    Returns:
        The version, or None if the document is not a supported OpenAPI/Swagger document.
    """
    validation = start_validation(doc, sink, cache=cache)
    if validation is None:
        return None
    validation.finish()
    return validation.version


def start_validation(
    doc: RawDocument, sink: DiagnosticSink, *, cache: StageCache | None = None
) -> Validation | None:
    """`validate_document`, begun: the version is detected now (None, with an error in
    `sink`, when it is not supported), the findings reach `sink` at `Validation.finish`, in
    the place they would have taken now. A large document is validated in a forked child
    meanwhile; `Validation.cancel` stops it when the run ends early."""
    version = detect_version(doc, sink)
    if version is None:
        return None
    return Validation(doc, version, sink, cache)


class Validation:
    """The findings of one document, being computed (possibly in a forked child)."""

    def __init__(
        self, doc: RawDocument, version: SpecVersion, sink: DiagnosticSink, cache: StageCache | None
    ) -> None:
        self.version = version
        self._sink, self._cache, self._place = sink, cache, len(sink.items)
        self._key = findings_key(doc, version)
        self._found = _decode(cache.get("validate", self._key)) if cache is not None else None
        self._pending: Forked[list[Diagnostic]] | None = None
        if self._found is None:
            paths = doc.data.get("paths")
            if isinstance(paths, dict) and len(paths) >= FORK_MIN_PATHS:
                self._pending = Forked(lambda: findings(doc, version))
            else:
                self._found = findings(doc, version)

    def finish(self) -> None:
        """Put the findings into the sink (waiting for them), and into the cache."""
        if self._pending is not None:
            self._found, self._pending = self._pending.result(), None
            if self._cache is not None:
                self._cache.put("validate", self._key, _encode(self._found))
        elif self._cache is not None and self._found is not None:
            self._cache.put("validate", self._key, _encode(self._found))
        self._sink.items[self._place : self._place] = self._found or []
        self._found = None

    def cancel(self) -> None:
        """Stop computing the findings: the run ends without them."""
        if self._pending is not None:
            self._pending.cancel()
            self._pending = None


class Findings:
    """The validations of a run's documents, being computed while the run goes on.

    `with Findings() as findings:` around the stages that may go on without them: when the
    block ends, each validation's findings are put into the sink (waited for), also when it
    ends by `Aborted` (the findings may explain the errors); any other exception (an
    interrupted run) stops them instead. The findings are warnings only: nothing the run
    writes depends on them, so they are waited for at the end, not before the writes.
    """

    def __init__(self) -> None:
        self._pending: list[Validation] = []

    def add(self, validation: Validation) -> None:
        self._pending.append(validation)

    def __enter__(self) -> Findings:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        pending, self._pending = self._pending, []
        for validation in pending:
            if kind is None or issubclass(kind, Aborted):
                validation.finish()
            else:
                validation.cancel()


def findings(doc: RawDocument, version: SpecVersion) -> list[Diagnostic]:
    """The strict-validation warnings for `doc` (what `validate_document` reports)."""
    # Imported here: a run whose findings are cached does not need openapi-spec-validator.
    from mcpmint.load.strictcheck import report_findings

    sink = DiagnosticSink()
    report_findings(doc, version, sink)
    return sink.items


def findings_key(doc: RawDocument, version: SpecVersion) -> str:
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
