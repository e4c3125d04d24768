"""The tools of `tools.json`, as frozen dataclasses (catalog.py reads and checks them).

In a module of its own so that the modules the catalogue is made of (content.py, modes.py)
can name a tool without importing the reader that imports them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Body",
    "FormEncoding",
    "Parameter",
    "RequestSpec",
    "SecurityRequirement",
    "SecurityScheme",
    "ServerInfo",
    "ServerVariable",
    "Tool",
    "Upstream",
]


@dataclass(frozen=True)
class ServerInfo:
    """Identity of the generated server."""

    name: str
    namespace: str
    env_prefix: str
    version: str
    title: str
    instructions: str


@dataclass(frozen=True)
class Upstream:
    """Where requests go, unless `<envPrefix>_BASE_URL` says otherwise."""

    base_url: str
    timeout_seconds: float
    # The spec's server URL with `{name}` placeholders and its variables (G16): their values
    # come only from the operator's environment, and only from the enum when there is one.
    url_template: str = ""
    variables: Mapping[str, ServerVariable] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerVariable:
    """A server URL variable: its default and, when the spec lists them, its allowed values."""

    default: str
    enum: tuple[str, ...] = ()


@dataclass(frozen=True)
class SecurityScheme:
    """One entry of `securitySchemes`; `env` maps a role (`value`, `token`...) to a variable."""

    name: str
    type: str
    env: Mapping[str, str]
    location: str = ""
    param_name: str = ""
    scheme: str = ""
    token_url: str = ""


@dataclass(frozen=True)
class Parameter:
    """A path, query, header or cookie parameter; `argument` is the model's name for it."""

    argument: str
    name: str
    location: str
    style: str
    explode: bool
    required: bool


@dataclass(frozen=True)
class Body:
    """The request body: one whole argument, or top-level arguments mapped to wire properties."""

    media_type: str
    required: bool
    argument: str | None
    properties: Mapping[str, str]
    # Wire property name -> how a form field is serialised (OpenAPI `encoding`); a property
    # not listed gets the default: scalars and arrays of scalars as repeated `name=value`,
    # objects and arrays of objects in brackets (`name[key]=`, `name[0][key]=`).
    encoding: Mapping[str, FormEncoding] = field(default_factory=dict)


@dataclass(frozen=True)
class FormEncoding:
    """`style`/`explode` of one form property, and for multipart its part's `contentType`."""

    style: str
    explode: bool
    content_type: str = ""


@dataclass(frozen=True)
class RequestSpec:
    """How a tool call becomes an HTTP request."""

    method: str
    path: str
    parameters: tuple[Parameter, ...]
    body: Body | None
    accept: str
    # The operation's own server ("" for the source's base URL): `operation_base_url`.
    server: str = ""


@dataclass(frozen=True)
class SecurityRequirement:
    """A scheme required by a tool, with the OAuth2 scopes it asks for."""

    scheme: str
    scopes: tuple[str, ...]


@dataclass(frozen=True)
class Tool:
    """One MCP tool and the upstream operation behind it."""

    name: str
    title: str
    description: str
    input_schema: Mapping[str, Any]
    output_schema: Mapping[str, Any] | None
    annotations: Mapping[str, Any]
    request: RequestSpec | None  # None: a handler tool, answered by a function in hooks.py
    security: tuple[tuple[SecurityRequirement, ...], ...]
    output_wrap: str | None
    meta: Mapping[str, Any] = field(default_factory=dict)
    # "required": the user confirms every call through MCP elicitation before anything is sent.
    confirmation: str = "required"
    # Inbound OAuth scopes a caller needs (a manifest's `scopes`), besides those of `security`.
    scopes: tuple[str, ...] = ()
    # Several sources: the namespace of the source whose upstream it calls ("" = `upstream`).
    upstream: str = ""

    @property
    def handler(self) -> bool:
        """A handler tool: no upstream request; the package's hooks.py answers it."""
        return self.request is None

    @property
    def needs_confirmation(self) -> bool:
        """Whether a call waits for the user's explicit confirmation."""
        return self.confirmation != "none"

    @property
    def argument_names(self) -> frozenset[str]:
        """Every argument the request uses; any other argument is refused."""
        if self.request is None:  # a handler gets the whole validated argument object
            properties = self.input_schema.get("properties", {})
            return frozenset(properties if isinstance(properties, Mapping) else ())
        names = {p.argument for p in self.request.parameters}
        body = self.request.body
        if body is not None:
            names.update(body.properties if body.argument is None else (body.argument,))
        return frozenset(names)
