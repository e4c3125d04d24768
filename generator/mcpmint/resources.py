"""Where the templates and the runtime are, installed from a wheel or in a source checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def templates_dir() -> Path:
    # The wheel carries templates inside the package; a checkout has them at the top level.
    installed = _PACKAGE / "templates" / "package"
    if installed.is_dir():
        return installed
    return _PACKAGE.parents[1] / "templates" / "package"


def runtime_dir() -> Path:
    return _PACKAGE / "runtime"
