"""The intermediate representation every frontend produces and every later stage reads.

Frozen dataclasses with tuples sorted by name: two runs over the same input build equal values,
so everything rendered from them is byte-identical. JSON Schemas are plain dicts (they are data
for `tools.json`, never code); the frontends build them fresh and nothing mutates them later.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

JsonSchema = dict[str, Any]
ParameterLocation = Literal["path", "query", "header", "cookie"]
# Which tools the user must confirm (docs/safety.md): a server-wide policy...
ConfirmationPolicy = Literal["none", "destructive", "writes", "all"]
# ...decided per tool by the generator, written to tools.json as "confirmation".
Confirmation = Literal["required", "none"]
CONFIRMATION_POLICIES: tuple[ConfirmationPolicy, ...] = ("none", "destructive", "writes", "all")
# The hints `confirmation_for` reads: an operator who sets one decides the confirmation.
CONFIRMATION_HINTS = frozenset({"readOnlyHint", "destructiveHint"})


@dataclass(frozen=True)
class Parameter:
    argument: str  # the name the model sees, a safe identifier
    name: str  # the wire name
    location: ParameterLocation
    style: str
    explode: bool
    required: bool


@dataclass(frozen=True)
class Body:
    media_type: str
    required: bool
    # None: the body's properties are top-level arguments (see `properties`);
    # otherwise the one argument that carries the whole body.
    argument: str | None
    properties: tuple[tuple[str, str], ...] = ()  # (argument, wire name), sorted by argument
    # Form/multipart `encoding`: (wire name, style, explode, part contentType), sorted by name.
    encoding: tuple[tuple[str, str, bool, str], ...] = ()


@dataclass(frozen=True)
class Request:
    method: str  # upper case
    path: str  # the spec's path template
    parameters: tuple[Parameter, ...]
    body: Body | None
    accept: str
    # The operation's own server (its `servers`, else its path item's), variables at their
    # defaults: absolute, or relative to the base URL; "" for the document's servers.
    server: str = ""


@dataclass(frozen=True)
class Annotations:
    title: str
    read_only: bool
    destructive: bool
    idempotent: bool
    open_world: bool = True


def confirmation_for(policy: ConfirmationPolicy, annotations: Annotations) -> Confirmation:
    """Whether a tool with these (method-derived) annotations needs the user's confirmation."""
    if policy == "all":
        return "required"
    if policy == "writes":
        return "none" if annotations.read_only else "required"
    if policy == "destructive":
        return "required" if annotations.destructive else "none"
    return "none"


@dataclass(frozen=True)
class SchemeUse:
    scheme: str
    scopes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Tool:
    name: str  # namespaced MCP tool name
    python_name: str  # snake_case identifier, unique within the server
    class_stem: str  # PascalCase stem for typed models: <stem>Arguments, <stem>Result
    title: str
    description: str
    input_schema: JsonSchema
    output_schema: JsonSchema | None
    output_wrap: str | None  # property that carries a non-object response, or None
    examples: tuple[dict[str, Any], ...]  # valid argument objects, from the spec
    annotations: Annotations
    request: Request | None  # None: a handler tool, answered by Python in the package's hooks.py
    security: tuple[tuple[SchemeUse, ...], ...]
    operation_id: str
    source: str  # JSON pointer of the operation
    confirmation: Confirmation = "required"  # fail safe: a frontend that forgets asks the user
    # Inbound OAuth scopes a caller needs (a manifest's `scopes`), besides those of `security`.
    scopes: tuple[str, ...] = ()
    # The source namespace whose upstream it calls, when that is not the first source's.
    upstream: str = ""
    # Strict-mode schemas (strict.py): every property required, so null means "not given".
    nulls_absent: bool = False
    # `confirmation` (or the hints it is decided from) was set by the operator's own files:
    # an mcpmint.yaml override, a manifest tool's fields; not by the policy and the method.
    operator_confirmation: bool = False

    @property
    def handler(self) -> bool:
        """A handler tool: a Python function in hooks.py answers it, no HTTP request."""
        return self.request is None

    @property
    def endpoint(self) -> tuple[str, str]:
        """(method, path) for listings; ("HANDLER", "hooks.py") for a handler tool."""
        if self.request is None:
            return "HANDLER", "hooks.py"
        return self.request.method, self.request.path


@dataclass(frozen=True)
class SecurityScheme:
    name: str  # as in the spec
    type: Literal["apiKey", "http", "oauth2", "openIdConnect"]
    location: str = ""  # apiKey: header, query or cookie
    parameter: str = ""  # apiKey: header, query or cookie name
    scheme: str = ""  # http: bearer or basic
    token_url: str = ""  # oauth2 client credentials
    env: tuple[
        tuple[str, str], ...
    ] = ()  # (role, variable), e.g. ("token", "PETSTORE_BEARER_AUTH")


@dataclass(frozen=True)
class Resource:
    """An MCP resource (static `uri`) or resource template (`uri_template`) from a manifest."""

    name: str  # namespaced, like tool names
    title: str
    description: str
    mime_type: str
    uri: str  # a static resource's URI, or ""
    uri_template: str  # a template's RFC 6570 level-1 template, or ""
    request: Request | None  # the HTTP GET that reads it; None: a handler in hooks.py
    security: tuple[tuple[SchemeUse, ...], ...] = ()
    upstream: str = ""  # as `Tool.upstream`
    source: str = ""  # JSON pointer in its manifest


@dataclass(frozen=True)
class PromptArgument:
    name: str
    description: str
    required: bool


@dataclass(frozen=True)
class Prompt:
    """An MCP prompt: messages whose `{argument}` placeholders take the caller's values."""

    name: str  # namespaced
    title: str
    description: str
    arguments: tuple[PromptArgument, ...]
    messages: tuple[tuple[str, str], ...]  # (role, text), text with `{name}` placeholders
    source: str = ""


@dataclass(frozen=True)
class Upstream:
    """The base URL of a source other than the first one (several sources in one server)."""

    name: str  # the source's namespace
    base_url: str  # from its spec or manifest; may be empty (then `env` is required)
    env: str  # <PREFIX>_<NS>_BASE_URL
    # Its server URL's variables, as `Server.server_url_template` / `server_variables` (G16):
    # set by the operator as <PREFIX>_<NS>_SERVER_<NAME>.
    url_template: str = ""
    variables: tuple[tuple[str, str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True)
class SpecSource:
    """An OpenAPI source's files, shipped in the package as data for its tests' oracle
    (cases.py, docs/generated-package.md): the spec judges the requests, not the runtime."""

    upstream: str  # the source's upstream, as `Tool.upstream` ("" for the first source)
    entry: str  # the entry file's path, relative to the folder the files are shipped under
    files: tuple[tuple[str, str], ...]  # (relative POSIX path, text), entry first
    # Swagger 2.0: the OpenAPI 3.0 document mcpmint read it as (JSON text); "" for 3.x.
    converted: str = ""


@dataclass(frozen=True)
class Server:
    distribution: str  # petstore-mcp
    package: str  # petstore_mcp
    namespace: str  # petstore
    env_prefix: str  # PETSTORE
    title: str
    version: str
    description: str
    instructions: str
    base_url: str
    spec_servers: tuple[str, ...]
    tools: tuple[Tool, ...]
    security_schemes: tuple[SecurityScheme, ...]
    source_file: str = ""  # the spec's path, relative to the output folder's config
    skipped: tuple[str, ...] = field(default=())  # human-readable notes about what was left out
    # "METHOD /path" of each tool whose output schema was cut to fit, in document order.
    cut_outputs: tuple[str, ...] = ()
    # The `toolModes` section of tools.json (modes, core, groups, concise results), or None
    # when the config has no `tools` section (generator/mcpmint/toolmodes.py).
    tool_modes: dict[str, Any] | None = None
    # The chosen server URL with `{name}` placeholders, and (name, default, enum) of each of
    # its variables; empty when it has none (G16: set by the operator, at run time, only).
    server_url_template: str = ""
    server_variables: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    # mcpmint.yaml `settings:` as (suffix, value): defaults the environment overrides.
    settings: tuple[tuple[str, str], ...] = ()
    # Several sources: the upstream of each source after the first (docs/manifests.md).
    upstreams: tuple[Upstream, ...] = ()
    # MCP resources, resource templates and prompts (manifests), sorted by name.
    resources: tuple[Resource, ...] = ()
    prompts: tuple[Prompt, ...] = ()
    # The policy that decided each tool's `confirmation` (docs/safety.md), and the OpenAPI
    # sources' files: what the generated tests judge the tools by (cases.py).
    confirmation_policy: ConfirmationPolicy = "writes"
    specs: tuple[SpecSource, ...] = ()
