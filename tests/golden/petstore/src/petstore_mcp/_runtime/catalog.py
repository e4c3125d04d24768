"""The reader of `tools.json`: `load_catalog`, and the dataclasses it makes (spec.py).

The catalog is checked once, when the server starts, so that every later step can trust its
shape. Anything that could let a tool argument reach a place it must not (a reserved header, a
credential's parameter, an unknown path placeholder) is refused here, with the JSON pointer of
the offending entry.
"""

from __future__ import annotations

import gc
import json
import math
import re
from collections.abc import Mapping, Sequence
from copy import deepcopy
from dataclasses import dataclass, field
from typing import Any

from .content import ContentError, PromptSpec, ResourceSpec, load_prompts, load_resources
from .modes import ModesError, ToolModes, load_modes
from .spec import (
    Body,
    FormEncoding,
    Parameter,
    RequestSpec,
    SecurityRequirement,
    SecurityScheme,
    ServerInfo,
    ServerVariable,
    Tool,
    Upstream,
)
from .upstreams import NamedUpstream, UpstreamsError, check_operation_server, load_upstreams

__all__ = [
    "CONFIRMATIONS",
    "HTTP_TOKEN",
    "RESERVED_HEADERS",
    "STYLES",
    "Body",
    "Catalog",
    "CatalogError",
    "FormEncoding",
    "Parameter",
    "RequestSpec",
    "SecurityRequirement",
    "SecurityScheme",
    "ServerInfo",
    "ServerVariable",
    "Tool",
    "Upstream",
    "load_catalog",
    "load_catalog_text",
]

FORMAT = 1

# Headers that carry credentials, routing or framing: an argument setting one could leak or
# forge credentials, retarget the request or smuggle a second one. Accept and Content-Type
# are ours to set (OpenAPI says parameters with those names are ignored).
RESERVED_HEADERS = frozenset(
    {
        "authorization",
        "proxy-authorization",
        "host",
        "cookie",
        "content-length",
        "transfer-encoding",
        "connection",
        "keep-alive",
        "upgrade",
        "te",
        "trailer",
        "expect",
        "accept",
        "content-type",
    }
)

METHODS = frozenset({"GET", "PUT", "POST", "DELETE", "OPTIONS", "HEAD", "PATCH", "TRACE", "QUERY"})
LOCATIONS = ("path", "query", "header", "cookie")
STYLES: Mapping[str, frozenset[str]] = {
    # "json": a parameter described by `content` rather than `schema`, sent as JSON text
    # (in a path, as one percent-encoded segment).
    "path": frozenset({"simple", "label", "matrix", "json"}),
    "query": frozenset({"form", "spaceDelimited", "pipeDelimited", "deepObject", "json"}),
    "header": frozenset({"simple", "json"}),
    "cookie": frozenset({"form", "json"}),
}
BODY_MEDIA_TYPES = (
    "application/json",
    "application/x-www-form-urlencoded",
    "text/plain",
    "multipart/form-data",
)
# Any other `type/subtype` is sent as raw bytes, carried base64-encoded by one argument.
_MEDIA_TYPE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*$")
FORM_STYLES = ("form", "spaceDelimited", "pipeDelimited", "deepObject")
CONFIRMATIONS = ("required", "none")
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS", "TRACE"})

_TOOL_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,128}$")
# RFC 9110 token: the only characters allowed in a header or cookie name.
HTTP_TOKEN = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


class CatalogError(ValueError):
    """`tools.json` is malformed or asks for something the runtime refuses to do."""

    def __init__(self, pointer: str, message: str) -> None:
        super().__init__(f"tools.json {pointer or '/'}: {message}")
        self.pointer = pointer
        self.message = message


@dataclass(frozen=True)
class Catalog:
    """The whole of `tools.json`."""

    server: ServerInfo
    upstream: Upstream
    security_schemes: Mapping[str, SecurityScheme]
    tools: tuple[Tool, ...]
    # Which tools are listed, and concise results (`toolModes`; runtime/modes.py).
    modes: ToolModes = field(default_factory=ToolModes)
    # mcpmint.yaml `settings:` by full variable name; the environment overrides each.
    settings: Mapping[str, str] = field(default_factory=dict)
    # Several sources: the upstream of each source after the first (runtime/upstreams.py).
    upstreams: Mapping[str, NamedUpstream] = field(default_factory=dict)
    # MCP resources (and templates) and prompts (runtime/content.py).
    resources: tuple[ResourceSpec, ...] = ()
    prompts: tuple[PromptSpec, ...] = ()

    def tool(self, name: str) -> Tool | None:
        """The tool called `name`, or None."""
        for tool in self.tools:
            if tool.name == name:
                return tool
        return None


def load_catalog_text(text: str) -> Catalog:
    """The catalogue of a server's own `tools.json` text, parsed and checked once, for good.

    The catalogue is many small objects without reference cycles that live as long as the
    server: the cyclic collector would scan them over and over while they are made (a quarter
    of the start-up of a 1,000-tool server), and again at every full collection. So they are
    made with the collector off (then left as the caller had it: an embedding application may
    run without it) and frozen (`gc.freeze()`: later collections pass them over).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return load_catalog(json.loads(text), copy=False)  # parsed here, used only here
    finally:
        if collecting:
            gc.enable()
        gc.freeze()


def load_catalog(data: Mapping[str, Any], *, copy: bool = True) -> Catalog:
    """Check the parsed `tools.json` and return it as a `Catalog`.

    The catalogue's schemas are `data`'s own objects unless `copy` (the default) makes it
    work on a deep copy. `copy=False` is for a caller that hands `data` over and never
    touches it again (the server's freshly parsed `tools.json`): copying GitHub's 1,223
    tools costs a third of a second at every start.

    Raises:
        CatalogError: the data is not format 1, is malformed, or breaks a runtime rule.
    """
    data = dict(_mapping(data, ""))
    if copy:
        data = deepcopy(data)
    if data.get("format") != FORMAT:
        raise CatalogError("/format", f"unsupported format {data.get('format')!r}; expected 1")
    server = _server(_mapping(data.get("server"), "/server"))
    upstream = _upstream(_mapping(data.get("upstream"), "/upstream"))
    schemes_data = _mapping(data.get("securitySchemes", {}), "/securitySchemes")
    schemes = {
        name: _scheme(name, _mapping(raw, f"/securitySchemes/{_escape(name)}"))
        for name, raw in schemes_data.items()
    }
    tools_data = _sequence(data.get("tools"), "/tools")
    tools = tuple(
        _tool(_mapping(raw, f"/tools/{i}"), f"/tools/{i}", schemes)
        for i, raw in enumerate(tools_data)
    )
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool.name in seen:
            raise CatalogError(f"/tools/{i}/name", f"duplicate tool name {tool.name!r}")
        seen.add(tool.name)
    try:
        upstreams = load_upstreams(
            data.get("upstreams"), {i: tool.upstream for i, tool in enumerate(tools)}
        )
    except UpstreamsError as exc:
        raise CatalogError(exc.pointer, exc.message) from None
    try:
        resources = load_resources(
            data.get("resources"),
            lambda entry, p, variables: _resource_reader(entry, p, variables, schemes),
        )
        prompts = load_prompts(data.get("prompts"))
    except ContentError as exc:
        raise CatalogError(exc.pointer, exc.message) from None
    for i, resource in enumerate(resources):
        if resource.reader and resource.reader.upstream not in ("", *upstreams):
            raise CatalogError(f"/resources/{i}/upstream", "unknown upstream")
    try:
        modes = load_modes(data.get("toolModes"), [tool.name for tool in tools])
    except ModesError as exc:
        raise CatalogError(exc.pointer, exc.message) from None
    settings = _mapping(data.get("settings", {}), "/settings")
    for key, value in settings.items():
        if not key.startswith(f"{server.env_prefix}_") or not isinstance(value, str):
            raise CatalogError(f"/settings/{_escape(key)}", "must be <envPrefix>_... : a string")
    return Catalog(
        server=server,
        upstream=upstream,
        security_schemes=schemes,
        tools=tools,
        modes=modes,
        settings=dict(settings),
        upstreams=upstreams,
        resources=resources,
        prompts=prompts,
    )


def _resource_reader(
    entry: Mapping[str, Any],
    p: str,
    variables: Sequence[str],
    schemes: Mapping[str, SecurityScheme],
) -> Tool:
    """A resource's HTTP GET, as a read-only tool whose arguments are the template variables
    (so the request, credential and upstream code of tools reads it too)."""
    request = _request(_mapping(entry.get("request"), f"{p}/request"), f"{p}/request")
    if request.method != "GET" or request.body is not None:
        raise CatalogError(f"{p}/request", "a resource is read with a GET without a body")
    if {x.argument for x in request.parameters} != set(variables):
        raise CatalogError(f"{p}/request/parameters", "must be the template's variables")
    security = _security(_sequence(entry.get("security", []), f"{p}/security"), p, schemes)
    _check_credential_clashes(request, security, schemes, p)
    return Tool(
        name=_str(entry, "name", p),
        title=_str(entry, "title", p),
        description="",
        input_schema={
            "type": "object",
            "properties": {v: {"type": "string"} for v in variables},
            "required": sorted(variables),
            "additionalProperties": False,
        },
        output_schema=None,
        annotations={"readOnlyHint": True},
        request=request,
        security=security,
        output_wrap=None,
        confirmation="none",
        upstream=_str(entry, "upstream", p),
    )


def _server(raw: Mapping[str, Any]) -> ServerInfo:
    p = "/server"
    return ServerInfo(
        name=_str(raw, "name", p, nonempty=True),
        namespace=_str(raw, "namespace", p),
        env_prefix=_str(raw, "envPrefix", p, nonempty=True),
        version=_str(raw, "version", p),
        title=_str(raw, "title", p),
        instructions=_str(raw, "instructions", p),
    )


def _upstream(raw: Mapping[str, Any]) -> Upstream:
    timeout = raw.get("timeoutSeconds", 30.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float):
        raise CatalogError("/upstream/timeoutSeconds", "must be a number")
    if not math.isfinite(timeout) or timeout <= 0:
        raise CatalogError("/upstream/timeoutSeconds", "must be a positive finite number")
    variables: dict[str, ServerVariable] = {}
    for name, var in _mapping(raw.get("variables", {}), "/upstream/variables").items():
        vp = f"/upstream/variables/{_escape(name)}"
        enum = _sequence(_mapping(var, vp).get("enum", []), f"{vp}/enum")
        if not all(isinstance(v, str) for v in enum):
            raise CatalogError(f"{vp}/enum", "must be strings")
        variables[name] = ServerVariable(_str(var, "default", vp), tuple(enum))
    template = _str(raw, "urlTemplate", "/upstream")
    if set(_PLACEHOLDER.findall(template)) != set(variables):
        raise CatalogError("/upstream/urlTemplate", "placeholders do not match the variables")
    return Upstream(
        base_url=_str(raw, "baseUrl", "/upstream"),
        timeout_seconds=float(timeout),
        url_template=template,
        variables=variables,
    )


def _scheme(name: str, raw: Mapping[str, Any]) -> SecurityScheme:
    p = f"/securitySchemes/{_escape(name)}"
    env_raw = _mapping(raw.get("env", {}), f"{p}/env")
    env: dict[str, str] = {}
    for role, var in env_raw.items():
        if not isinstance(var, str) or not var:
            raise CatalogError(f"{p}/env/{_escape(role)}", "must be a variable name")
        env[role] = var
    kind = _str(raw, "type", p, nonempty=True)
    location = _str(raw, "in", p) if kind == "apiKey" else ""
    param_name = _str(raw, "name", p) if kind == "apiKey" else ""
    if kind == "apiKey":
        if location not in ("header", "query", "cookie"):
            raise CatalogError(f"{p}/in", f"unsupported apiKey location {location!r}")
        if location != "query" and not HTTP_TOKEN.fullmatch(param_name):
            raise CatalogError(f"{p}/name", f"{param_name!r} is not a valid {location} name")
        # An API key may well travel as `Authorization: <key>`: it comes from the operator's
        # environment, never from the model, so that one reserved name is allowed here.
        if location == "header" and param_name.lower() in RESERVED_HEADERS - {"authorization"}:
            raise CatalogError(f"{p}/name", f"an apiKey cannot be sent as {param_name!r}")
        if not param_name:
            raise CatalogError(f"{p}/name", "must not be empty")
    return SecurityScheme(
        name=name,
        type=kind,
        env=env,
        location=location,
        param_name=param_name,
        scheme=_str(raw, "scheme", p).lower() if kind == "http" else "",
        token_url=_str(raw, "tokenUrl", p) if kind == "oauth2" else "",
    )


def _tool(raw: Mapping[str, Any], p: str, schemes: Mapping[str, SecurityScheme]) -> Tool:
    name = _str(raw, "name", p, nonempty=True)
    if not _TOOL_NAME.match(name):
        raise CatalogError(f"{p}/name", f"{name!r} is not a valid tool name")
    input_schema = _mapping(raw.get("inputSchema"), f"{p}/inputSchema")
    if input_schema.get("type") != "object":
        raise CatalogError(f"{p}/inputSchema", "the root must be an object schema")
    output_schema = raw.get("outputSchema")
    if output_schema is not None:
        output_schema = _mapping(output_schema, f"{p}/outputSchema")
    output = _mapping(raw.get("output", {}), f"{p}/output")
    wrap = output.get("wrap")
    if wrap not in (None, "result"):
        raise CatalogError(f"{p}/output/wrap", f"unsupported wrap {wrap!r}")
    handler = raw.get("handler", False)
    if not isinstance(handler, bool) or handler != (raw.get("request") is None):
        raise CatalogError(f"{p}/handler", "a tool has either a request or handler: true")
    request = (
        None if handler else _request(_mapping(raw.get("request"), f"{p}/request"), f"{p}/request")
    )
    annotations = _mapping(raw.get("annotations", {}), f"{p}/annotations")
    confirmation = _confirmation(raw, "POST" if request is None else request.method, p)
    security = _security(_sequence(raw.get("security", []), f"{p}/security"), p, schemes)
    if request is not None:
        _check_credential_clashes(request, security, schemes, p)
    scopes = _sequence(raw.get("scopes", []), f"{p}/scopes")
    if not all(isinstance(s, str) and s for s in scopes):
        raise CatalogError(f"{p}/scopes", "must be non-empty strings")
    tool = Tool(
        name=name,
        title=_str(raw, "title", p),
        description=_str(raw, "description", p),
        input_schema=input_schema,
        output_schema=output_schema,
        annotations=annotations,
        request=request,
        security=security,
        output_wrap=wrap,
        meta=_mapping(raw.get("meta", {}), f"{p}/meta"),
        confirmation=confirmation,
        scopes=tuple(scopes),
        upstream=_str(raw, "upstream", p),
    )
    properties = input_schema.get("properties", {})
    for argument in sorted(tool.argument_names):
        if not isinstance(properties, Mapping) or argument not in properties:
            raise CatalogError(
                f"{p}/inputSchema/properties",
                f"argument {argument!r} is used by the request but not declared",
            )
    return tool


def _confirmation(raw: Mapping[str, Any], method: str, p: str) -> str:
    # Absent (a hand-written catalog): fail safe, as the `writes` policy decides from the method
    # alone (annotations in the file are not trusted to make a tool look safer).
    default = "none" if method in SAFE_METHODS else "required"
    value = raw.get("confirmation", default)
    if value not in CONFIRMATIONS:
        raise CatalogError(f"{p}/confirmation", f"must be one of {list(CONFIRMATIONS)}")
    return str(value)


def _request(raw: Mapping[str, Any], p: str) -> RequestSpec:
    method = _str(raw, "method", p).upper()
    if method not in METHODS:
        raise CatalogError(f"{p}/method", f"unsupported method {method!r}")
    path = _str(raw, "path", p)
    if not path.startswith("/") or "?" in path or "#" in path:
        raise CatalogError(f"{p}/path", "must start with '/' and hold no query or fragment")
    literal = _PLACEHOLDER.sub("x", path)
    if "{" in literal or "}" in literal:
        raise CatalogError(f"{p}/path", "unbalanced braces")
    if any(seg in (".", "..") for seg in literal.split("/")):
        raise CatalogError(f"{p}/path", "dot segments are not allowed")
    params = tuple(
        _parameter(_mapping(item, f"{p}/parameters/{i}"), f"{p}/parameters/{i}")
        for i, item in enumerate(_sequence(raw.get("parameters", []), f"{p}/parameters"))
    )
    placeholders = set(_PLACEHOLDER.findall(path))
    path_names = {x.name for x in params if x.location == "path"}
    if placeholders != path_names:
        raise CatalogError(
            f"{p}/parameters",
            f"path placeholders {sorted(placeholders)} do not match path parameters "
            f"{sorted(path_names)}",
        )
    body_raw = raw.get("body")
    body = None if body_raw is None else _body(_mapping(body_raw, f"{p}/body"), f"{p}/body")
    _check_unique_arguments(params, body, p)
    return RequestSpec(
        method=method,
        path=path,
        parameters=params,
        body=body,
        accept=_str(raw, "accept", p),
        server=_operation_server(raw.get("server", ""), f"{p}/server"),
    )


def _operation_server(value: Any, p: str) -> str:
    try:
        return check_operation_server(value)
    except ValueError as exc:
        raise CatalogError(p, str(exc)) from None


def _parameter(raw: Mapping[str, Any], p: str) -> Parameter:
    location = _str(raw, "in", p)
    if location not in LOCATIONS:
        raise CatalogError(f"{p}/in", f"unsupported location {location!r}")
    name = _str(raw, "name", p, nonempty=True)
    style = _str(raw, "style", p)
    if style not in STYLES[location]:
        raise CatalogError(f"{p}/style", f"style {style!r} is not supported in {location}")
    explode = raw.get("explode")
    required = raw.get("required", False)
    if not isinstance(explode, bool) or not isinstance(required, bool):
        raise CatalogError(p, "explode and required must be booleans")
    if location in ("header", "cookie") and not HTTP_TOKEN.fullmatch(name):
        raise CatalogError(f"{p}/name", f"{name!r} is not a valid {location} name")
    if location == "header" and name.lower() in RESERVED_HEADERS:
        raise CatalogError(f"{p}/name", f"a parameter cannot set the {name!r} header")
    if location == "path" and not required:
        raise CatalogError(f"{p}/required", "path parameters are always required")
    return Parameter(
        argument=_str(raw, "argument", p, nonempty=True),
        name=name,
        location=location,
        style=style,
        explode=explode,
        required=required,
    )


def _body(raw: Mapping[str, Any], p: str) -> Body:
    media_type = _str(raw, "mediaType", p, nonempty=True)
    essence = media_type.split(";", 1)[0].strip().lower()
    if not _MEDIA_TYPE.match(essence):
        raise CatalogError(f"{p}/mediaType", f"unsupported request media type {media_type!r}")
    raw_bytes = essence not in BODY_MEDIA_TYPES and not essence.endswith(("/json", "+json"))
    argument = raw.get("argument")
    if argument is not None and (not isinstance(argument, str) or not argument):
        raise CatalogError(f"{p}/argument", "must be null or an argument name")
    props_raw = _mapping(raw.get("properties", {}), f"{p}/properties")
    props: dict[str, str] = {}
    for arg, wire in props_raw.items():
        if not isinstance(wire, str):
            raise CatalogError(f"{p}/properties/{_escape(arg)}", "must be a wire property name")
        props[arg] = wire
    if argument is not None and props:
        raise CatalogError(p, "a body has either one argument or properties, not both")
    if (essence == "text/plain" or raw_bytes) and argument is None:
        raise CatalogError(p, f"a {essence} body must be carried by one argument")
    required = raw.get("required", False)
    if not isinstance(required, bool):
        raise CatalogError(f"{p}/required", "must be a boolean")
    encoding: dict[str, FormEncoding] = {}
    for wire, enc_raw in _mapping(raw.get("encoding", {}), f"{p}/encoding").items():
        ep = f"{p}/encoding/{_escape(wire)}"
        enc = _mapping(enc_raw, ep)
        style = enc.get("style", "form")
        if style not in FORM_STYLES:
            raise CatalogError(f"{ep}/style", f"must be one of {', '.join(FORM_STYLES)}")
        explode = enc.get("explode", style == "form")
        if not isinstance(explode, bool):
            raise CatalogError(f"{ep}/explode", "must be a boolean")
        content_type = enc.get("contentType", "")
        if not isinstance(content_type, str):
            raise CatalogError(f"{ep}/contentType", "must be a string")
        encoding[str(wire)] = FormEncoding(style, explode, content_type)
    return Body(
        media_type=media_type,
        required=required,
        argument=argument,
        properties=props,
        encoding=encoding,
    )


def _check_unique_arguments(params: tuple[Parameter, ...], body: Body | None, p: str) -> None:
    args = [x.argument for x in params]
    if body is not None:
        args.extend(body.properties if body.argument is None else [body.argument])
    dupes = sorted({a for a in args if args.count(a) > 1})
    if dupes:
        raise CatalogError(p, f"arguments used twice: {dupes}")
    wires = [(x.location, x.name.lower() if x.location == "header" else x.name) for x in params]
    if len(set(wires)) != len(wires):
        raise CatalogError(f"{p}/parameters", "two parameters share a location and name")


def _security(
    alternatives: Sequence[Any], p: str, schemes: Mapping[str, SecurityScheme]
) -> tuple[tuple[SecurityRequirement, ...], ...]:
    result = []
    for i, alternative in enumerate(alternatives):
        reqs = []
        for j, item in enumerate(_sequence(alternative, f"{p}/security/{i}")):
            q = f"{p}/security/{i}/{j}"
            raw = _mapping(item, q)
            scheme = _str(raw, "scheme", q)
            if scheme not in schemes:
                raise CatalogError(f"{q}/scheme", f"unknown security scheme {scheme!r}")
            scopes = _sequence(raw.get("scopes", []), f"{q}/scopes")
            if not all(isinstance(s, str) for s in scopes):
                raise CatalogError(f"{q}/scopes", "must be strings")
            reqs.append(SecurityRequirement(scheme=scheme, scopes=tuple(scopes)))
        result.append(tuple(reqs))
    return tuple(result)


def _check_credential_clashes(
    request: RequestSpec,
    security: tuple[tuple[SecurityRequirement, ...], ...],
    schemes: Mapping[str, SecurityScheme],
    p: str,
) -> None:
    # G17: if a parameter shared its wire name with an apiKey, an argument could supply or
    # override the key; the key must only ever come from the environment.
    used = {req.scheme for alternative in security for req in alternative}
    for name in sorted(used):
        scheme = schemes[name]
        if scheme.type != "apiKey":
            continue
        for param in request.parameters:
            same = (
                param.name.lower() == scheme.param_name.lower()
                if scheme.location == "header"
                else param.name == scheme.param_name
            )
            if param.location == scheme.location and same:
                raise CatalogError(
                    f"{p}/request/parameters",
                    f"parameter {param.name!r} would clash with the credential of scheme {name!r}",
                )


def _mapping(value: Any, p: str) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise CatalogError(p, "must be an object")
    return value


def _sequence(value: Any, p: str) -> Sequence[Any]:
    if not isinstance(value, list | tuple):
        raise CatalogError(p, "must be an array")
    return value


def _str(raw: Mapping[str, Any], key: str, p: str, *, nonempty: bool = False) -> str:
    value = raw.get(key, "")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise CatalogError(f"{p}/{key}", "must be a string")
    if nonempty and not value:
        raise CatalogError(f"{p}/{key}", "must not be empty")
    return value


def _escape(token: str) -> str:
    return token.replace("~", "~0").replace("/", "~1")
