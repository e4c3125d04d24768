"""Where the templates, the runtime and the JSON Schemas are, installed from a wheel or in a
source checkout."""

from __future__ import annotations

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

_PACKAGE = Path(__file__).resolve().parent


def templates_dir() -> Path:
    # The wheel carries templates inside the package; a checkout has them at the top level.
    installed = _PACKAGE / "templates" / "package"
    if installed.is_dir():
        return installed
    return _PACKAGE.parents[1] / "templates" / "package"


def runtime_dir() -> Path:
    return _PACKAGE / "runtime"


def schema_file(name: str) -> Path:
    """`specs/<name>` (mcpmint.schema.json, manifest.schema.json)."""
    # A wheel carries the schemas inside the package; a checkout has them in specs/.
    installed = _PACKAGE / name
    if installed.is_file():
        return installed
    return _PACKAGE.parents[1] / "specs" / name


@functools.cache
def bundled_schema(name: str) -> dict[str, Any]:
    """The JSON Schema `specs/<name>`, read once."""
    data: dict[str, Any] = json.loads(schema_file(name).read_text(encoding="utf-8"))
    return data


@functools.cache
def generator_identity() -> str:
    """The version plus a digest of mcpmint's own code and templates.

    Recorded with every generated tree, so a changed generator (even a development checkout
    without a version bump) never passes for the one that wrote the tree.
    """
    from mcpmint import __version__

    # The same files whether installed from a wheel (templates inside the package) or run
    # from a checkout (templates beside it): the Python sources and the package templates.
    packaged_templates = _PACKAGE / "templates"
    files = {
        path.relative_to(_PACKAGE).as_posix(): path
        for path in _PACKAGE.rglob("*.py")
        if packaged_templates not in path.parents
    }
    files.update(
        {
            "templates/" + path.relative_to(templates_dir()).as_posix(): path
            for path in templates_dir().rglob("*")
            if path.is_file()
        }
    )
    digest = hashlib.sha256()
    for name in sorted(files):
        digest.update(name.encode("utf-8") + b"\0")
        digest.update(files[name].read_bytes())
    return f"{__version__}+{digest.hexdigest()[:16]}"
