"""Validate stage: detect the spec version, then check the document with openapi-spec-validator
(strictcheck.py).

Only an unknown or missing version is an error here. Strict-validation findings are warnings:
real-world specs often fail the official schema in ways that do not matter for generating
tools (see the corpus notes), and later stages report, with errors, what they cannot use.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .background import Background
from .cache import StageCache, cache_key
from .diagnostics import Diagnostic, DiagnosticSink, Level
from .load import RawDocument, json_document

# What `findings_of_json_file` makes: the sha256 of the bytes it read, the version's text,
# the findings and the document's shape (`findings`).
FileFindings = tuple[str, str, list[Diagnostic], dict[str, Any] | None]

MAX_REPORTED = 25
MAX_MESSAGE = 300

_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.\d+)?(?:-[0-9A-Za-z.-]+)?")
_NOT_OPENAPI_HINT = "not an OpenAPI document: expected a top-level `openapi: 3.x` key"
# The versions the strict check (strictcheck.py) knows.
SUPPORTED: frozenset[tuple[str, int, int]] = frozenset(
    {("swagger", 2, 0), ("openapi", 3, 0), ("openapi", 3, 1), ("openapi", 3, 2)}
)


@dataclass(frozen=True)
class SpecVersion:
    family: Literal["openapi", "swagger"]
    major: int
    minor: int
    text: str  # e.g. "3.0.3"


# Documents with at least this many path items are validated in a second process while the
# rest of the pipeline runs (validation takes ~3 s on GitHub's 969-path spec, single-core);
# below it, starting a process costs more than it saves.
BACKGROUND_MIN_PATHS = 200
# The versions whose findings can be made from the changed path items (validateparts.py):
# 2.0 and 3.2 documents are walked in places that module does not cover.
_BY_PARTS = frozenset({("openapi", 3, 0), ("openapi", 3, 1)})
SHAPE_STAGE = "validated"  # the stage cache's entries of shapes (validateparts.py)
# The shape of each document validated, clean or not, by its one file's bytes (patch.py).
DOCUMENT_SHAPE_STAGE = "shape"
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
    digests: list[str] | None = None,
    begun: Background[FileFindings | None] | None = None,
    whole: Callable[[], RawDocument] | None = None,
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
        digests: the sha256 of each of `doc.files`, when the caller has them already (a
            patched run: patch.py); otherwise they are read and hashed here.
        begun: `findings_of_json_file` of `doc`'s one file, begun in the second process
            before `doc` was loaded (patch.py): its findings are taken when they are of the
            same bytes and version; it is stopped when the findings are cached.
        whole: the whole document, when `doc` holds only part of it (a partial load:
            patch.py): what findings are made of here when `begun`'s are not taken.

    Returns:
        The version, or None if the document is not a supported OpenAPI/Swagger document.
    """
    version = detect_version(doc, sink)
    if version is None:
        return None
    if digests is None:
        digests = [hashlib.sha256(path.read_bytes()).hexdigest() for path in doc.files]
    key = _findings_key(doc, version, digests)
    stored = cache.get("validate", key) if cache is not None else None
    # The shape of the last document validated without findings (validateparts.py), read
    # even on a hit so that the cache keeps it.
    previous = cache.get(SHAPE_STAGE, shape_key(doc, version)) if cache is not None else None
    found = _decode(stored)
    if found is not None:
        if begun is not None:
            begun.cancel()
        sink.extend(found)
        return version
    pending = PendingFindings(doc, version, sink, cache, key, previous, digests, begun, whole)
    if deferred is not None and pending.start():
        deferred.append(pending)
    else:
        pending.join()
    return version


def findings(
    doc: RawDocument,
    version: SpecVersion,
    previous: Any = None,
    holders: list[dict[str, Any]] | None = None,
) -> tuple[list[Diagnostic], dict[str, Any] | None]:
    """The strict-validation warnings for `doc` (what `validate_document` reports), and the
    document's shape (validateparts.py; None for a version validated whole). `previous`: the
    shape of the last document validated without findings; when only some path items differ
    from it, and validating those alone finds what the whole document would, only they are
    validated. `holders`: see `validateparts.changed_paths`."""
    # Imported here: openapi-spec-validator takes a tenth of a second to import, which a run
    # whose findings are cached, or made in the second process, does not need.
    from .strictcheck import report_findings
    from .validateparts import changed_paths, document_shape

    by_parts = (version.family, version.major, version.minor) in _BY_PARTS
    shape = document_shape(doc.data, finite=doc.finite) if by_parts else None
    paths = changed_paths(previous, shape, doc.data, holders) if by_parts else None
    sink = DiagnosticSink()
    if paths is None or not report_findings(doc, version, sink, paths):
        sink = DiagnosticSink()  # the whole document (also when the validator failed)
        report_findings(doc, version, sink)
    return sink.items, shape


def findings_of_json_file(
    path: Path, root: Path | None, cache: StageCache | None
) -> FileFindings | None:
    """`findings` of the one-file JSON spec at `path` as `load.load_json_quickly` reads it
    (`root` as given to it; the shape of the last clean document from `cache`), with the
    sha256 of the bytes read and the version's text; None when it has no supported version.

    Begun in the second process while this one loads the spec (patch.py): the validator's
    import (0.17 s) and the findings no longer wait for that load. The text is parsed
    without the quick load's checks (0.06 s for GitHub's 13 MB, against 0.1 s): the findings
    are taken only when that load passed them, on the same bytes (`validate_document`).
    """
    raw = path.read_bytes()
    digest = hashlib.sha256(raw).hexdigest()
    # The quick load's parser without its checks: the same data (orjson, a little quicker,
    # reads an integer beyond 64 bits as a float); its one hook collects what by-parts
    # validation asks about (imported here, as `findings` imports the module).
    from .validateparts import RequiredHolders

    holders = RequiredHolders()
    data = json.loads(raw.decode("utf-8-sig"), object_hook=holders)
    if not isinstance(data, dict):
        return None
    doc = json_document(path, root, data)
    version = detect_version(doc, DiagnosticSink())
    if version is None:
        return None
    previous = cache.get(SHAPE_STAGE, shape_key(doc, version)) if cache is not None else None
    found, shape = findings(doc, version, previous, holders)
    return digest, version.text, found, shape


class PendingFindings:
    """Validation findings being computed, possibly in a forked second process."""

    def __init__(
        self,
        doc: RawDocument,
        version: SpecVersion,
        sink: DiagnosticSink,
        cache: StageCache | None,
        key: str,
        previous: Any = None,
        digests: list[str] | None = None,
        begun: Background[FileFindings | None] | None = None,
        whole: Callable[[], RawDocument] | None = None,
    ) -> None:
        """`digests`: the sha256 of each of `doc`'s files (the findings' key is made of them);
        `begun`, `whole`: see `validate_document`."""
        self.doc, self.version, self.sink, self.cache, self.key = doc, version, sink, cache, key
        self.previous, self.digests, self.begun, self.whole = previous, digests, begun, whole
        self.index = len(sink.items)  # where the warnings go, as if reported right now
        self._background: Background[tuple[list[Diagnostic], dict[str, Any] | None]] | None = None

    def start(self) -> bool:
        """Fork a worker when it pays and is safe; False means "run it in `join`"."""
        if self.begun is not None:
            return True  # begun already
        doc = self.whole() if self.whole is not None else self.doc
        paths = doc.data.get("paths")
        big = isinstance(paths, dict) and len(paths) >= BACKGROUND_MIN_PATHS
        version, previous = self.version, self.previous
        self._background = Background(lambda: findings(doc, version, previous), worth_it=big)
        return self._background.forked

    def report_to(self, sink: DiagnosticSink) -> None:
        """Put the warnings into `sink` instead, where they would go if reported now."""
        self.sink, self.index = sink, len(sink.items)

    def join(self) -> None:
        """Wait for the findings and put them into the sink at the place they belong."""
        begun, self.begun = self.begun, None
        made = begun.result() if begun is not None else None
        if made is not None and [made[0]] == self.digests and made[1] == self.version.text:
            found, shape = made[2], made[3]
        elif self._background is not None:
            found, shape = self._background.result()
        else:
            doc = self.whole() if self.whole is not None else self.doc
            found, shape = findings(doc, self.version, self.previous)
        self._background = None
        self.sink.items[self.index : self.index] = found
        if self.cache is not None:
            self.cache.put("validate", self.key, _encode(found))
            if shape is not None and not found:  # the baseline of the next validation
                self.cache.put(SHAPE_STAGE, shape_key(self.doc, self.version), shape)
            if shape is not None and self.digests is not None and len(self.doc.files) == 1:
                key = document_shape_key(self.doc.files[0], self.digests[0])
                self.cache.put(DOCUMENT_SHAPE_STAGE, key, shape)


def document_shape_key(file: Path, digest: str) -> str:
    """The key of the shape of the document whose one file (as the loader read it) has the
    sha256 `digest` (what a patched run compares the changed spec with: patch.py)."""
    return cache_key(DOCUMENT_SHAPE_STAGE, {"file": file.as_posix(), "sha256": digest})


def _findings_key(doc: RawDocument, version: SpecVersion, digests: list[str]) -> str:
    """The findings depend on the files' bytes (the data and the line numbers: `digests`, the
    sha256 of each) and names."""
    files = [[path.as_posix(), digest] for path, digest in zip(doc.files, digests, strict=True)]
    inputs = {
        "entry": doc.path.as_posix(),
        "root": doc.root.as_posix(),
        "files": files,
        "version": version.text,
    }
    return cache_key("validate", inputs, *_VALIDATOR_LIBRARIES)


def shape_key(doc: RawDocument, version: SpecVersion) -> str:
    """One entry per entry file and version: the last clean document's shape replaces the
    one before."""
    inputs = {"entry": doc.path.as_posix(), "root": doc.root.as_posix(), "version": version.text}
    return cache_key(SHAPE_STAGE, inputs, *_VALIDATOR_LIBRARIES)


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


def detect_version(doc: RawDocument, sink: DiagnosticSink) -> SpecVersion | None:
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
    if key not in SUPPORTED:
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
