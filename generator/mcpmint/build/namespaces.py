"""The default namespace of an API: one rule for every entry point.

`mcpmint generate` (both frontends), `mcpmint init` and the copier template all take it from
here: an OpenAPI document's `info.title` (`Swagger Petstore` -> `petstore`), a tool manifest's
own `namespace:` or else its file name. Given explicitly (`--namespace`, a config's
`namespace:`, a copier answer), the given one wins.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from mcpmint.build.naming import namespace_from_title


def default_namespace(data: Mapping[str, Any], path: Path) -> str:
    """The namespace of the document `data` read from `path` when none is given."""
    if "mcpmint_manifest" in data:  # a tool manifest (frontends/manifest.py)
        return str(data.get("namespace") or namespace_from_title(path.stem))
    info = data.get("info")
    title = info.get("title") if isinstance(info, Mapping) else None
    return namespace_from_title(str(title or "API"))


def spec_namespace(path: Path) -> str | None:
    """`default_namespace` of the spec file at `path`; None when it cannot be read (the
    run that builds it says why)."""
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return default_namespace(data, path) if isinstance(data, Mapping) else None
