"""The upstreams of a server with several sources (`upstreams` in tools.json).

The first source's upstream is `upstream` (`<PREFIX>_BASE_URL`); each other source has an
entry here, keyed by its namespace, with its own base URL and its own variable
(`<PREFIX>_<NS>_BASE_URL`), and its tools name it in `upstream`. A source whose server URL
has variables (G16) has them here too, set as `<PREFIX>_<NS>_SERVER_<NAME>` with the first
source's rules (`expand_url_template`, which runtime/upstream.py uses too). Reference:
docs/tools-json.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

__all__ = [
    "DEFAULT_PORTS",
    "BaseUrlError",
    "NamedUpstream",
    "UpstreamsError",
    "check_operation_server",
    "expand_url_template",
    "load_upstreams",
    "named_base_url",
    "operation_base_url",
    "server_variable_env",
    "split_base_url",
]

_ENV = re.compile(r"^[A-Z][A-Z0-9_]*$")
# What a free-form server variable may hold: nothing that changes the URL's structure.
_FREE_VALUE = re.compile(r"^[A-Za-z0-9._~:/-]+$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")

DEFAULT_PORTS = {"http": 80, "https": 443}


def split_base_url(base_url: str) -> tuple[str, str]:
    """`("https://host:port", "/base/path")` of a base URL, with no trailing slash on the path.

    Raises:
        ValueError: not an absolute http(s) URL, or it carries credentials, a query or a fragment.
    """
    parts = urlsplit(base_url)
    try:
        parts.port  # noqa: B018 - parsing the port is the check
    except ValueError:
        raise ValueError("the base URL has an invalid port") from None
    if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
        raise ValueError("the base URL must be an absolute http:// or https:// URL")
    if "@" in parts.netloc or "?" in base_url or "#" in base_url:
        raise ValueError("the base URL must not hold credentials, a query or a fragment")
    return f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")


def check_operation_server(value: Any) -> str:
    """An operation's own server URL (tools.json `request.server`): absolute http(s) or
    `//host/path` (checked as a base URL is), or a reference relative to the base URL (a
    path: no query or fragment).

    Raises:
        ValueError: anything else.
    """
    if not isinstance(value, str):
        raise ValueError("must be a string")
    parts = urlsplit(value)
    if parts.netloc or parts.scheme:
        split_base_url(value if parts.scheme else "https:" + value)  # `//host/path` too
    elif "?" in value or "#" in value or "\\" in value:
        raise ValueError("a relative server URL holds no query, fragment or backslash")
    return value


def operation_base_url(base_url: str, server: str, configured: bool) -> str:
    """The base URL of a tool whose operation has servers of its own (`server`, OpenAPI's
    operation or path item `servers`): a relative one resolved against `base_url` (RFC 3986,
    as `urljoin`); an absolute one (a scheme, or `//host`) as it is, unless the operator set
    the base URL (`configured`): then requests go where the operator said, never to another
    host the spec names."""
    if not server or (configured and urlsplit(server).netloc):
        return base_url
    return urljoin(base_url, server).rstrip("/")


@dataclass(frozen=True)
class NamedUpstream:
    """Where the tools of one (non-primary) source send their requests."""

    name: str
    base_url: str
    env: str  # the variable that overrides `base_url`
    # The server URL with `{name}` placeholders, and each variable's (default, enum).
    url_template: str = ""
    variables: Mapping[str, tuple[str, tuple[str, ...]]] = field(default_factory=dict)

    @property
    def variable_prefix(self) -> str:
        """`<PREFIX>_<NS>`: the server variables are `<PREFIX>_<NS>_SERVER_<NAME>`."""
        return self.env.removesuffix("_BASE_URL")


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
        template, variables = _variables(entry, pointer)
        found[str(name)] = NamedUpstream(str(name), base_url, env, template, variables)
    for index, name in sorted(tool_upstreams.items()):
        if name and name not in found:
            raise UpstreamsError(f"/tools/{index}/upstream", f"unknown upstream {name!r}")
    return found


def named_base_url(upstream: NamedUpstream, environ: Mapping[str, str]) -> str:
    """`<PREFIX>_<NS>_BASE_URL` if set, else the source's own base URL; checked like the
    primary one (an absolute http(s) URL without query or credentials)."""

    configured = environ.get(upstream.env, "")
    url = configured or upstream.base_url
    if not configured and upstream.url_template:
        url = expand_url_template(
            upstream.url_template, upstream.variables, upstream.variable_prefix, environ
        )
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


def _variables(
    entry: Mapping[str, Any], pointer: str
) -> tuple[str, dict[str, tuple[str, tuple[str, ...]]]]:
    """An entry's `urlTemplate` and `variables`, checked as the first source's are."""
    template = entry.get("urlTemplate", "")
    raw = entry.get("variables", {})
    if not isinstance(template, str):
        raise UpstreamsError(f"{pointer}/urlTemplate", "must be a string")
    if not isinstance(raw, Mapping):
        raise UpstreamsError(f"{pointer}/variables", "must be an object")
    variables: dict[str, tuple[str, tuple[str, ...]]] = {}
    for name, spec in raw.items():
        where = f"{pointer}/variables/{name}"
        default = spec.get("default") if isinstance(spec, Mapping) else None
        enum = spec.get("enum", []) if isinstance(spec, Mapping) else None
        if not isinstance(default, str):
            raise UpstreamsError(f"{where}/default", "must be a string")
        if not isinstance(enum, list) or not all(isinstance(v, str) for v in enum):
            raise UpstreamsError(f"{where}/enum", "must be a list of strings")
        variables[str(name)] = (default, tuple(enum))
    if set(_PLACEHOLDER.findall(template)) != set(variables):
        raise UpstreamsError(f"{pointer}/urlTemplate", "placeholders do not match the variables")
    return template, variables


def expand_url_template(
    template: str,
    variables: Mapping[str, tuple[str, tuple[str, ...]]],
    prefix: str,
    environ: Mapping[str, str],
) -> str:
    """A server URL from its template (G16). Each variable's value comes only from the
    operator's `<prefix>_SERVER_<NAME>` (else its default, from the spec), never from a tool
    call; one with an `enum` takes only a value from it, a free-form one only characters that
    cannot change the URL's structure (no `@`, `?`, `#`, `%`, spaces).

    Raises:
        BaseUrlError: a value is refused; the message names the variable to set.
    """
    values: dict[str, str] = {}
    for name, (default, enum) in sorted(variables.items()):
        env_name = server_variable_env(prefix, name)
        given = environ.get(env_name, "").strip()
        value = given or default
        source = env_name if given else "the spec's default"
        if enum and value not in enum:
            raise BaseUrlError(
                f"The server variable {name!r} ({source}) must be one of: "
                f"{', '.join(enum)}; set {env_name} to one of them, or set "
                f"{prefix}_BASE_URL. No request was sent."
            )
        if not enum and not _FREE_VALUE.match(value):
            raise BaseUrlError(
                f"The server variable {name!r} ({source}) may hold only letters, digits and "
                f"'.-_~:/'; set {env_name} or {prefix}_BASE_URL. No request was sent."
            )
        values[name] = value
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], template)
