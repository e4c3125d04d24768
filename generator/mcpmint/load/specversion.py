"""Which OpenAPI or Swagger version a document declares, and which versions mcpmint reads."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import RawDocument

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
