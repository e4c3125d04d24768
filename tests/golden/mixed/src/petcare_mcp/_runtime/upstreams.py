"""The upstreams of a server with several sources (`upstreams` in tools.json).

The first source's upstream is `upstream` (`<PREFIX>_BASE_URL`); each other source has an
entry here, keyed by its namespace, with its own base URL and its own variable
(`<PREFIX>_<NS>_BASE_URL`), and its tools name it in `upstream`. Reference:
docs/tools-json.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "BaseUrlError",
    "NamedUpstream",
    "UpstreamsError",
    "load_upstreams",
    "named_base_url",
    "server_variable_env",
]

_ENV = re.compile(r"^[A-Z][A-Z0-9_]*$")


@dataclass(frozen=True)
class NamedUpstream:
    """Where the tools of one (non-primary) source send their requests."""

    name: str
    base_url: str
    env: str  # the variable that overrides `base_url`


def server_variable_env(prefix: str, name: str) -> str:
    """`<prefix>_SERVER_<NAME>`: the name upper-cased, every other character than A-Z0-9 `_`.

    Here (not in upstream.py) so that the generator can name the variable without importing
    the HTTP client."""
    return f"{prefix}_SERVER_" + re.sub(r"[^A-Z0-9]", "_", name.upper())


class UpstreamsError(ValueError):
    """`upstreams` (or a tool's `upstream`) is malformed; `pointer` says where."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(message)
        self.pointer = pointer
        self.message = message


class BaseUrlError(ValueError):
    """No usable base URL for a source; the message names the variable, never a secret."""


def load_upstreams(raw: Any, tool_upstreams: Mapping[int, str]) -> Mapping[str, NamedUpstream]:
    """Check `upstreams` and that every tool's `upstream` (by tool index) names one."""
    if raw is None:
        raw = {}
    if not isinstance(raw, Mapping):
        raise UpstreamsError("/upstreams", "must be an object")
    found: dict[str, NamedUpstream] = {}
    for name, entry in raw.items():
        pointer = f"/upstreams/{name}"
        if not isinstance(entry, Mapping):
            raise UpstreamsError(pointer, "must be an object")
        base_url, env = entry.get("baseUrl", ""), entry.get("env", "")
        if not isinstance(base_url, str):
            raise UpstreamsError(f"{pointer}/baseUrl", "must be a string")
        if not isinstance(env, str) or not _ENV.match(env):
            raise UpstreamsError(f"{pointer}/env", "must be an environment variable name")
        found[str(name)] = NamedUpstream(str(name), base_url, env)
    for index, name in sorted(tool_upstreams.items()):
        if name and name not in found:
            raise UpstreamsError(f"/tools/{index}/upstream", f"unknown upstream {name!r}")
    return found


def named_base_url(upstream: NamedUpstream, environ: Mapping[str, str]) -> str:
    """`<PREFIX>_<NS>_BASE_URL` if set, else the source's own base URL; checked like the
    primary one (an absolute http(s) URL without query or credentials)."""
    from .request import split_base_url  # request imports the catalog, which imports us

    configured = environ.get(upstream.env, "")
    url = configured or upstream.base_url
    if not url:
        raise BaseUrlError(
            f"The base URL of the {upstream.name} API is not configured: set {upstream.env} to "
            "its absolute http:// or https:// URL. No request was sent."
        )
    try:
        split_base_url(url)
    except ValueError as exc:
        where = upstream.env if configured else f"the {upstream.name} source's base URL"
        raise BaseUrlError(
            f"{where} is not usable ({exc}); set {upstream.env} to the API's absolute http:// "
            "or https:// URL. No request was sent."
        ) from None
    return url
