"""Where the templates and the runtime are, installed from a wheel or in a source checkout."""

from __future__ import annotations

import functools
import hashlib
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


@functools.cache
def generator_identity() -> str:
    """The version plus a digest of mcpmint's own code and templates.

    Recorded with every generated tree, so a changed generator (even a development checkout
    without a version bump) never passes for the one that wrote the tree.
    """
    from . import __version__

    digest = hashlib.sha256()
    roots = [_PACKAGE, templates_dir()]
    for root in roots:
        for path in sorted(p for p in root.rglob("*") if p.is_file() and p.suffix != ".pyc"):
            digest.update(path.relative_to(root).as_posix().encode("utf-8") + b"\0")
            digest.update(path.read_bytes())
    return f"{__version__}+{digest.hexdigest()[:16]}"
