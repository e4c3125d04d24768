"""OpenAPI 3.0 / 3.1 (3.2 read as 3.1) -> `ir.Server`.

Reads the bundled document (every `$ref` local), turns each operation into one tool with one
argument object, and reports what it cannot use as located diagnostics.

One module, over 600 lines: an operation becomes a tool in one pass over its parameters,
body, responses and security, and each part's decisions (names, clashes, confirmation) read
the others'.
"""

from __future__ import annotations

import difflib
import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fnmatch import fnmatchcase
from typing import Any, Final
from urllib.parse import parse_qsl, urlsplit

from mcpmint import ir, refs
from mcpmint.build import naming, servers_check
from mcpmint.build.compact import OUTPUT_SCHEMA_MAX_BYTES, compact
from mcpmint.build.frontends import common
from mcpmint.build.namespaces import default_namespace
from mcpmint.build.sample import drop_invalid_examples, teaching_instance
from mcpmint.build.schema import SchemaConverter, SchemaRoot
from mcpmint.build.text import (
    absolute_links,
    clean_text,
    describe_operation,
    docs_base,
    html_to_markdown,
    instruction_like,
    one_line,
)
from mcpmint.build.toolmemo import ToolKeys, decoded, encode_tool, record_text
from mcpmint.config import Override, Selection
from mcpmint.diagnostics import DiagnosticSink, Level
from mcpmint.load.document import RawDocument
from mcpmint.load.specversion import SpecVersion
from mcpmint.runtime.arguments import schema_validator
from mcpmint.runtime.catalog import HTTP_TOKEN, RESERVED_HEADERS, STYLES
from mcpmint.write.cache import Memo

# A security requirement that names no usable scheme: the message (then the name) and hint.
_UNDEFINED_SCHEME = (
    "security requirement names an undefined or unsupported scheme",
    "define it under components.securitySchemes",
)

HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch", "trace")
_LOCATION_ORDER = {"path": 0, "query": 1, "header": 2, "cookie": 3}
_DEFAULT_STYLE = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
# OpenAPI: header parameters with these names "SHALL be ignored" (the spec has other ways).
_IGNORED_HEADERS = frozenset({"accept", "content-type", "authorization"})
# A media type's essence the runtime can send (runtime/catalog.py's `_MEDIA_TYPE`).
_MEDIA_TYPE = re.compile(r"^[a-z0-9][a-z0-9!#$&^_.+-]*/[a-z0-9][a-z0-9!#$&^_.+-]*$")
_JSON_MEDIA = re.compile(r"^[a-z0-9!#$&^_.+-]+/([^;,]*\+)?json([;,].*)?$", re.IGNORECASE)
# After JSON, in this order of preference; any other media type whose schema is a binary string
# (or absent) is sent as raw bytes, carried base64-encoded by one `body` argument.
_TEXT_MEDIA = "text/plain"
_SUPPORTED_BODY_MEDIA = ("application/x-www-form-urlencoded", "multipart/form-data", "text/plain")
_FORM_MEDIA = "application/x-www-form-urlencoded"
_FORM_STYLES = ("form", "spaceDelimited", "pipeDelimited", "deepObject")
_MULTIPART_MEDIA = "multipart/form-data"
_FILE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "A file: its bytes base64-encoded, with a filename and a media type.",
    "properties": {
        "content_base64": {"type": "string", "contentEncoding": "base64", "examples": ["aGVsbG8="]},
        "filename": {"type": "string"},
        "content_type": {"type": "string"},
    },
    "required": ["content_base64"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class BuildOptions:
    namespace: str | None = None
    max_tool_name: int = naming.DEFAULT_MAX_TOOL_NAME
    # Which tools ask the user before acting (docs/safety.md); `output.confirmation`.
    confirmation: ir.ConfirmationPolicy = "writes"
    # Selection and overrides from mcpmint.yaml (docs/config.md): the operator's word.
    include: Selection | None = None
    exclude: Selection | None = None
    overrides: tuple[Override, ...] = ()
    # Accepted for compatibility: an operation that cannot become a tool is always left out
    # with a located warning naming it (a spec that can be read gives a server).
    allow_partial: bool = False
    # Each tool name of the previous run's lock, with its "METHOD /path": a name that two
    # operations now give stays with the operation that had it (naming.assign_tool_names).
    previous_names: Mapping[str, str] = field(default_factory=dict)


# An operation that cannot become a tool: the hint of the error that leaves it out.
_PARTIAL_HINT = "fix the spec there; the other operations are generated without it"


@dataclass
class _Operation:
    """One operation with everything the tool needs, before names are assigned."""

    method: str
    path: str  # the path key as written (the operation's identity: "METHOD /path")
    pointer: str  # where the operation's object is (after an operation-level `$ref`)
    operation: Mapping[str, Any]
    path_parameters: list[Any]
    # A path key with a query string (`/responses?beta=true`): the fixed query parameters,
    # sent by every call; a fragment (`/files/{id}#shared_link`) names a variant only.
    fixed_query: tuple[tuple[str, str], ...] = ()
    # The operation's own `servers` (else its path item's) and where they are: see `server`.
    servers: Any = None
    servers_pointer: str = ""

    @property
    def key(self) -> str:
        return f"{self.method.upper()} {self.path}"

    @property
    def request_path(self) -> str:
        """The path the request goes to: the key without its query string and fragment."""
        return _split_path_key(self.path)[0]


def build_server(
    doc: RawDocument,
    version: SpecVersion,
    options: BuildOptions,
    sink: DiagnosticSink,
    memo: Memo | None = None,
) -> ir.Server | None:
    """Build the IR of a server from an OpenAPI document; None when nothing usable.
    `memo`: the previous run's tools (toolmemo.py), reused where their inputs are unchanged;
    this run's are added to it."""
    if version.family == "swagger":  # converted to the 3.0 shape, then built as 3.0
        from mcpmint.build.frontends.swagger2 import as_openapi3

        doc, version = as_openapi3(doc, sink)
    return _Builder(doc, version, options, sink, memo).build()


def cut_outputs_warning(cut: Sequence[str]) -> tuple[str, str]:
    """The message and hint of the warning about the output schemas `cut` to fit ("METHOD
    /path" of each, in document order), located at `#/paths`."""
    return (
        f"{len(cut)} output schemas are larger than {OUTPUT_SCHEMA_MAX_BYTES // 1024} KB and "
        "were cut to the depth that fits (below it, only types): "
        + ", ".join(cut[:5])
        + (" ..." if len(cut) > 5 else ""),
        "whole responses still reach the model; the schema only describes less deeply",
    )


class _Builder:
    def __init__(
        self,
        doc: RawDocument,
        version: SpecVersion,
        options: BuildOptions,
        sink: DiagnosticSink,
        memo: Memo | None = None,
    ) -> None:
        self.doc = doc
        self.data = doc.data
        self.options = options
        self.sink = sink
        self.memo = memo
        self.skipped: list[str] = []
        self.schemes: dict[str, ir.SecurityScheme] = {}
        self.warned_schemes: set[str] = set()  # places of undefined schemes warned about
        self.warned_clashes: set[tuple[str, ...]] = set()  # schemes told apart, warned once
        self.cut_outputs: list[str] = []
        self.checked_servers: set[str] = set()  # `servers` lists of operations checked (G16)
        minor = 0 if (version.major, version.minor) == (3, 0) else 1
        self.converter = SchemaConverter(
            self.data, openapi=(3, minor), sink=sink, locate=doc.locate
        )

    # ------------------------------------------------------------------ helpers
    def deref(self, node: Any, pointer: str) -> tuple[Any, str]:
        try:
            return refs.deref(self.data, node, pointer)
        except refs.PointerError as exc:
            self.sink.error(self.doc.locate(pointer), f"cannot resolve $ref: {exc}")
            return None, pointer

    def locate(self, pointer: str) -> str:
        return self.doc.locate(pointer)

    def example_of(self, node: Any) -> Any:
        """The Example Object a `$ref` names (None when it names nothing)."""
        try:
            return refs.deref(self.data, node, "#")[0]
        except refs.PointerError:
            return None

    # ------------------------------------------------------------------ server
    def build(self) -> ir.Server | None:
        info = self.data.get("info") if isinstance(self.data.get("info"), Mapping) else {}
        assert isinstance(info, Mapping)
        title = one_line(str(info.get("title") or "API"))
        namespace = self.options.namespace or default_namespace(self.data, self.doc.path)
        security_schemes = self.security_schemes(namespace.upper())
        self.schemes = {scheme.name: scheme for scheme in security_schemes}
        operations = self.operations()
        tools = self.tools(namespace, operations, {s.name for s in security_schemes})
        servers_check.check_servers(self.data, self.locate, self.sink, namespace.upper())  # G16
        if self.sink.has_errors:
            return None
        if self.cut_outputs:
            self.sink.warning(self.locate("#/paths"), *cut_outputs_warning(self.cut_outputs))
        base_url, servers = self.base_url()
        url_template, url_variables = servers_check.server_template(self.data, base_url)
        return common.new_server(
            namespace,
            title=title,
            version=str(info.get("version") or "0.0.0"),
            description=str(info.get("description") or ""),
            tools=tools,
            security_schemes=security_schemes,
            base_url=base_url,
            spec_servers=servers,
            server_url_template=url_template,
            server_variables=url_variables,
            skipped=tuple(self.skipped),
            cut_outputs=tuple(self.cut_outputs),
        )

    def server_urls(self, servers: Any, pointer: str, *, warn: bool = True) -> list[str]:
        """The URLs of a `servers` list, each variable at its default; one with a variable
        that has none is left out, with a warning."""
        urls: list[str] = []
        if isinstance(servers, list):
            for index, server in enumerate(servers):
                if not isinstance(server, Mapping) or not isinstance(server.get("url"), str):
                    continue
                url = str(server["url"])
                variables = server.get("variables")
                if isinstance(variables, Mapping):
                    for name, variable in variables.items():
                        if isinstance(variable, Mapping) and "default" in variable:
                            url = url.replace("{" + str(name) + "}", str(variable["default"]))
                if "{" in url:
                    if not warn:
                        continue
                    self.sink.warning(
                        self.locate(refs.join(pointer, index, "url")),
                        "server URL has a variable without a default; it cannot be used as is",
                    )
                    continue
                urls.append(_without_default_port(url))
        return urls

    def server(self, op: _Operation) -> str:
        """The operation's own server (OpenAPI 4.8.10: its `servers`, else its path item's):
        the first absolute http(s) one, else the first; "" when it has none of its own. The
        runtime resolves a relative one against the base URL, and uses the base URL instead of
        an absolute one when the operator sets it (docs/generated-package.md)."""
        if op.servers is None:
            return ""
        if op.servers_pointer not in self.checked_servers:  # G16, once per list
            self.checked_servers.add(op.servers_pointer)
            prefix = (self.options.namespace or default_namespace(self.data, self.doc.path)).upper()
            servers_check.check_server_list(
                op.servers, op.servers_pointer, self.locate, self.sink, prefix
            )
        urls = self.server_urls(op.servers, op.servers_pointer)
        absolute = [url for url in urls if urlsplit(url).scheme in ("http", "https")]
        chosen = (absolute or urls or [""])[0]
        chosen = chosen.rstrip("/") if chosen != "/" else chosen
        base = self._document_server
        return "" if base is not None and chosen == base.rstrip("/") else chosen

    @functools.cached_property
    def _document_server(self) -> str | None:
        """The document's first absolute http(s) server, if any (read once: `server` asks
        for it on every operation that has servers of its own)."""
        urls = self.server_urls(self.data.get("servers"), "#/servers", warn=False)
        return next((u for u in urls if urlsplit(u).scheme in ("http", "https")), None)

    def base_url(self) -> tuple[str, tuple[str, ...]]:
        urls = self.server_urls(self.data.get("servers"), "#/servers")
        for url in urls:
            parts = urlsplit(url)
            if parts.scheme in ("http", "https") and parts.netloc:
                return url.rstrip("/"), tuple(urls)
        if urls:
            self.sink.warning(
                self.locate("#/servers"),
                "the spec gives no absolute http(s) server URL",
                "set the base URL variable when running the server (see its README)",
            )
        return "", tuple(urls)

    # ------------------------------------------------------------------ security
    def security_schemes(self, env_prefix: str) -> list[ir.SecurityScheme]:
        components = self.data.get("components")
        raw = components.get("securitySchemes") if isinstance(components, Mapping) else None
        if not isinstance(raw, Mapping):
            return []
        schemes: list[ir.SecurityScheme] = []
        for name, node in raw.items():
            pointer = refs.join("#/components/securitySchemes", name)
            scheme, pointer = self.deref(node, pointer)
            if not isinstance(scheme, Mapping):
                continue
            var = common.credential_variable(env_prefix, str(name))
            kind = scheme.get("type")
            if (
                kind == "apiKey"
                and scheme.get("in") == "header"
                and str(scheme.get("name", "")).lower() in RESERVED_HEADERS - {"authorization"}
            ):
                self.sink.warning(
                    self.locate(pointer),
                    f"security scheme {name!r} would send its key as the {scheme.get('name')} "
                    "header, which a request may not set; the scheme is left out, and operations "
                    "that need only it are generated without credentials",
                )
            elif kind == "apiKey" and not _sendable_key_name(scheme.get("in"), scheme.get("name")):
                location, key_name = str(scheme.get("in")), scheme.get("name")
                problem = (
                    f"{key_name!r} is not a valid {location} name (an HTTP token: letters, "
                    "digits and !#$%&'*+.^_`|~-, no spaces)"
                    if isinstance(key_name, str) and key_name
                    else f"the {location} name is missing or empty"
                )
                self.sink.warning(
                    self.locate(refs.join(pointer, "name")),
                    f"security scheme {name!r}: {problem}, so no request can carry the key; "
                    "the scheme is left out, and operations that need only it are generated "
                    "without credentials",
                    f"write the {location} name the API expects"
                    + (
                        f" (the scheme's own name, {name!r}?)"
                        if HTTP_TOKEN.fullmatch(str(name))
                        else " (e.g. 'X-Api-Key')"
                    ),
                )
            elif kind == "apiKey" and scheme.get("in") in ("header", "query", "cookie"):
                location, parameter = str(scheme["in"]), str(scheme.get("name", ""))
                schemes.append(common.api_key_scheme(str(name), location, parameter, var))
            elif kind == "http" and str(scheme.get("scheme", "")).lower() == "bearer":
                schemes.append(common.bearer_scheme(str(name), var))
            elif kind == "http" and str(scheme.get("scheme", "")).lower() == "basic":
                schemes.append(common.basic_scheme(str(name), var))
            elif kind in ("oauth2", "openIdConnect"):
                token_url = ""
                flows = scheme.get("flows")
                if isinstance(flows, Mapping) and isinstance(
                    flows.get("clientCredentials"), Mapping
                ):
                    token_url = str(flows["clientCredentials"].get("tokenUrl", ""))
                env: tuple[tuple[str, str], ...] = (("token", f"{var}_ACCESS_TOKEN"),)
                if token_url:
                    env = (
                        ("clientId", f"{var}_CLIENT_ID"),
                        ("clientSecret", f"{var}_CLIENT_SECRET"),
                        *env,
                    )
                schemes.append(ir.SecurityScheme(str(name), kind, token_url=token_url, env=env))
            else:
                self.sink.warning(
                    self.locate(pointer),
                    f"security scheme {name!r} ({kind} {scheme.get('scheme', '')}) is not "
                    "supported; the scheme is left out, and operations that need only it are "
                    "generated without credentials",
                )
        return schemes

    def security(
        self, operation: Mapping[str, Any], pointer: str, known: set[str]
    ) -> tuple[tuple[ir.SchemeUse, ...], ...]:
        alternatives = common.security_requirements(
            self.data,
            operation,
            pointer,
            known,
            self.locate,
            self.sink,
            _UNDEFINED_SCHEME,
            lenient=self.warned_schemes,
        )
        alternatives, clashes = common.one_credential_per_place(alternatives, self.schemes)
        where = refs.join(pointer, "security") if "security" in operation else "#/security"
        for names in clashes:
            if names not in self.warned_clashes:  # once: Google's specs repeat it everywhere
                self.warned_clashes.add(names)
                self.sink.warning(
                    self.locate(where),
                    f"security schemes {' and '.join(map(repr, names))} are required together "
                    "but would set the same credential, which a request carries once; read "
                    "as either one",
                )
        return alternatives

    # ------------------------------------------------------------------ operations
    def path_items(self) -> list[tuple[str, Any, str]]:
        """(path key, node, pointer) of each path item; `paths` itself may be a `$ref`, or a
        list of `$ref`s each naming a mapping of path items (as some multi-file specs give it)."""
        paths, pointer = self.deref(self.data.get("paths"), "#/paths")
        if paths is None:
            return []
        if isinstance(paths, Mapping):
            return [(str(key), node, refs.join(pointer, key)) for key, node in paths.items()]
        if not isinstance(paths, list):
            self.sink.error(self.locate("#/paths"), "`paths` must be a mapping")
            return []
        found: list[tuple[str, Any, str]] = []
        seen: set[str] = set()
        for index, element in enumerate(paths):
            chunk, chunk_pointer = self.deref(element, refs.join(pointer, index))
            if not isinstance(chunk, Mapping):
                self.sink.warning(
                    self.locate(refs.join(pointer, index)),
                    "an entry of the list `paths` is not a mapping of path items; ignored",
                    "`paths` should be a mapping from path to path item",
                )
                continue
            for key, node in chunk.items():
                if str(key) in seen:
                    self.sink.warning(
                        self.locate(refs.join(chunk_pointer, key)),
                        f"path {key} is given twice in the list `paths`; the first is used",
                    )
                    continue
                seen.add(str(key))
                found.append((str(key), node, refs.join(chunk_pointer, key)))
        if found:
            self.sink.warning(
                self.locate("#/paths"),
                "`paths` is a list of references; read as the mapping they make together",
                "OpenAPI wants `paths` to be a mapping from path to path item",
            )
        return found

    def operations(self) -> list[_Operation]:
        found: list[_Operation] = []
        for path, node, pointer in self.path_items():
            item, item_pointer = self.deref(node, pointer)
            reason = refs.unresolved(item)
            if reason is not None:
                self.cannot_build(
                    refs.join(pointer, "$ref"),
                    f"path {path}: its path item {reason}; none of its operations can be a tool",
                    f"{path} (all operations): unresolvable path item $ref",
                )
                continue
            if not isinstance(item, Mapping):
                continue
            listed = item.get("parameters")
            shared: list[Any] = listed if isinstance(listed, list) else []
            shared_ptrs = [refs.join(item_pointer, "parameters", i) for i in range(len(shared))]
            request_path, fixed = _split_path_key(path)
            if request_path != path:
                self.sink.warning(
                    self.locate(pointer),
                    f"path {path} holds a query string or a fragment: the request goes to "
                    f"{request_path}"
                    + (
                        " with the fixed query " + "&".join(f"{k}={v}" for k, v in fixed)
                        if fixed
                        else ""
                    ),
                    "OpenAPI path keys hold no query string: declare query parameters",
                )
            for method in HTTP_METHODS:
                if method not in item:
                    continue
                # An operation may itself be a `$ref` (to another file, as multi-file specs
                # often write them): followed, as Swagger UI and Redocly do.
                operation, op_pointer = self.deref(item[method], refs.join(item_pointer, method))
                reason = refs.unresolved(operation)
                if reason is not None:
                    key = f"{method.upper()} {path}"
                    self.cannot_build(
                        refs.join(item_pointer, method, "$ref"),
                        f"operation {key} cannot become a tool: its operation {reason}",
                        f"{key}: unresolvable operation $ref",
                    )
                    continue
                if isinstance(operation, Mapping):
                    # OpenAPI 4.8.10: an operation's `servers` override its path item's,
                    # which override the document's.
                    servers = item.get("servers")
                    servers_pointer = refs.join(item_pointer, "servers")
                    if isinstance(operation.get("servers"), list) and operation["servers"]:
                        servers = operation["servers"]
                        servers_pointer = refs.join(op_pointer, "servers")
                    found.append(
                        _Operation(
                            method=method,
                            path=path,
                            pointer=op_pointer,
                            operation=operation,
                            path_parameters=list(zip(shared, shared_ptrs, strict=True)),
                            fixed_query=fixed,
                            servers=servers if isinstance(servers, list) and servers else None,
                            servers_pointer=servers_pointer,
                        )
                    )
        return found

    def tools(
        self, namespace: str, operations: list[_Operation], known_schemes: set[str]
    ) -> list[ir.Tool]:
        self.check_operation_ids(operations)
        overrides = self.match_overrides(operations)
        operations = self.select(operations, overrides)
        names = self.tool_names(namespace, operations, overrides)
        keys = self.tool_keys(known_schemes)
        tools = []
        for op in operations:
            name = names[op.key]
            before = len(self.sink.items)
            tool = self.reused_or_built(name, namespace, op, known_schemes, keys)
            if self.partial(op, before):
                continue
            if tool is not None:
                override = overrides.get(op.key)
                tools.append(tool if override is None else self.overridden(tool, override))
        return tools

    def cannot_build(self, pointer: str, message: str, skipped: str) -> None:
        """An operation (or path) that cannot become a tool: a warning, and it is listed as
        left out."""
        self.sink.warning(self.locate(pointer), message + "; left out")
        self.skipped.append(skipped)

    def partial(self, op: _Operation, before: int) -> bool:
        """The errors reported while building `op` (from index `before` on) become warnings
        and the operation is left out, named in one more warning. True if it is."""
        items = self.sink.items
        found = [d for d in items[before:] if d.level is Level.ERROR]
        if not found:
            return False
        items[before:] = [
            replace(d, level=Level.WARNING, hint="" if d.hint == _PARTIAL_HINT else d.hint)
            for d in items[before:]
        ]
        self.sink.warning(
            self.locate(op.pointer),
            f"operation {op.key} cannot become a tool ({len(found)} problem(s) above); left out",
        )
        self.skipped.append(f"{op.key}: {found[0].message}")
        return True

    def tool_names(
        self, namespace: str, operations: list[_Operation], overrides: dict[str, Override]
    ) -> dict[str, str]:
        """Each operation's tool name, by key ("METHOD /path"); collisions are errors."""
        limit = self.options.max_tool_name
        requests = [
            naming.NameRequest(
                source=self.locate(op.pointer),
                key=op.key,
                words=tuple(
                    naming.operation_words(
                        str(op.operation.get("operationId") or ""), op.method, op.path
                    )
                ),
                qualifiers=tuple(
                    word
                    for wire in re.findall(r"\{([^{}]+)\}", op.request_path)
                    for word in naming.words(wire)
                ),
                endpoint=f"{op.method.upper()} {op.request_path}",
            )
            for op in operations
            if op.key not in overrides or overrides[op.key].name is None
        ]
        previous = self.options.previous_names
        names, collisions = naming.assign_tool_names(namespace, requests, limit, previous)
        for collision in collisions:
            self.sink.warning(
                collision.sources[0],
                f"operations give the same tool name {collision.name!r}; told apart as "
                + ", ".join(
                    f"{name} ({source})"
                    for name, source in zip(collision.resolved, collision.sources, strict=True)
                ),
                "rename one operationId, or give one a name override in mcpmint.yaml",
            )
        # Names the operator chose: taken as written (namespaced), never shortened.
        owners = {
            name: f"{op.key} ({self.locate(op.pointer)})"
            for op in operations
            if (name := names.get(op.key))
        }
        for op in operations:
            override = overrides.get(op.key)
            if override is None or override.name is None:
                continue
            name = common.namespaced(namespace, override.name)
            if len(name) > limit:
                self.sink.error(
                    override.location,
                    f"override name {name!r} is {len(name)} characters, more than "
                    f"output.max_tool_name ({limit})",
                    "choose a shorter name or raise output.max_tool_name (at most 128)",
                )
            if name in owners:
                self.sink.error(
                    override.location,
                    f"override name {name!r} for {op.key} is already the name of the tool of "
                    f"{owners[name]}",
                    "choose another name, or rename the other tool with an override too",
                )
            owners[name] = f"{op.key} (override at {override.location})"
            names[op.key] = name
        return names

    # ------------------------------------------------------------------ mcpmint.yaml
    def match_overrides(self, operations: list[_Operation]) -> dict[str, Override]:
        """Each override, by the key ("METHOD /path") of the operation it names. An override
        that names no operation is a stale entry: an error at its key."""
        by_id = {str(op.operation["operationId"]): op for op in operations if _has_id(op)}
        by_key = {op.key: op for op in operations}
        matched: dict[str, Override] = {}
        for override in self.options.overrides:
            op = by_id.get(override.key) or by_key.get(_normal_key(override.key))
            if op is None:
                close = difflib.get_close_matches(override.key, [*by_id, *by_key], n=3)
                self.sink.error(
                    override.location,
                    f"override {override.key!r} names no operation of the spec",
                    (f"did you mean {' or '.join(map(repr, close))}? " if close else "")
                    + 'key overrides by operationId or by "METHOD /path"; remove stale ones',
                )
                continue
            if op.key in matched:
                self.sink.error(
                    override.location,
                    f"override {override.key!r} names {op.key}, which already has an override "
                    f"({matched[op.key].key!r} at {matched[op.key].location})",
                    "merge the two overrides into one",
                )
                continue
            matched[op.key] = override
        return matched

    def select(
        self, operations: list[_Operation], overrides: dict[str, Override]
    ) -> list[_Operation]:
        """The operations `include`, `exclude` and `hidden` overrides keep."""
        include, exclude = self.options.include, self.options.exclude
        if include is None and exclude is None and not overrides:
            return operations
        for selection in (include, exclude):
            if selection is not None:
                self.check_selection(selection, operations)
        kept = [
            op
            for op in operations
            if (include is None or _matches_all(include, op))
            and (exclude is None or not _matches_any(exclude, op))
            and not (op.key in overrides and overrides[op.key].hidden)
        ]
        for key, override in overrides.items():
            if not override.hidden and key not in {op.key for op in kept}:
                self.sink.warning(
                    override.location,
                    f"override {override.key!r}: {key} is not selected, so it has no effect",
                    "remove the override, or select the operation in include/exclude",
                )
        if operations and not kept:
            chosen = include or exclude
            where = chosen.location if chosen else next(iter(overrides.values())).location
            self.sink.error(
                where,
                f"the selection keeps none of the spec's {len(operations)} operations",
                "check include/exclude (include keeps operations that match every key given; "
                "exclude drops those that match any entry) and the `hidden` overrides",
            )
        return kept

    def check_selection(self, selection: Selection, operations: list[_Operation]) -> None:
        """Entries that can never match are stale: unknown operationIds and tags are errors,
        methods and path globs that match nothing are warnings."""
        ids = {str(op.operation["operationId"]) for op in operations if _has_id(op)}
        tags = {tag for op in operations for tag in _tags(op)}
        for index, operation_id in enumerate(selection.operations):
            if operation_id not in ids:
                close = difflib.get_close_matches(operation_id, sorted(ids), n=3)
                self.sink.error(
                    selection.where("operations", index),
                    f"no operation has the operationId {operation_id!r}",
                    (f"did you mean {' or '.join(map(repr, close))}? " if close else "")
                    + "remove stale entries",
                )
        for index, tag in enumerate(selection.tags):
            if tag not in tags:
                self.sink.error(
                    selection.where("tags", index),
                    f"no operation has the tag {tag!r}",
                    "tags in the spec: " + (", ".join(sorted(tags)) or "none"),
                )
        for index, method in enumerate(selection.methods):
            if not any(op.method.upper() == method for op in operations):
                self.sink.warning(
                    selection.where("methods", index), f"no operation uses the method {method}"
                )
        for index, glob in enumerate(selection.paths):
            if not any(fnmatchcase(op.path, glob) for op in operations):
                self.sink.warning(
                    selection.where("paths", index),
                    f"the path pattern {glob!r} matches no path of the spec",
                    "patterns match whole paths as written in the spec; `*` also matches `/`, "
                    "e.g. /pets/*",
                )

    def overridden(self, tool: ir.Tool, override: Override) -> ir.Tool:
        """The operator's changes; annotations and confirmation may go either way."""
        title = one_line(override.title) if override.title is not None else tool.title
        hints = dict(override.annotations)
        annotations = ir.Annotations(
            title=title,
            read_only=hints.get("readOnlyHint", tool.annotations.read_only),
            destructive=hints.get("destructiveHint", tool.annotations.destructive),
            idempotent=hints.get("idempotentHint", tool.annotations.idempotent),
            open_world=hints.get("openWorldHint", tool.annotations.open_world),
        )
        confirmation = override.confirmation or ir.confirmation_for(
            self.options.confirmation, annotations
        )
        description = tool.description
        if override.description is not None:
            description = clean_text(override.description) or tool.description
        input_schema, examples = tool.input_schema, tool.examples
        if override.examples:
            examples = override_examples(tool, override, self.sink)
            input_schema = {**input_schema, "examples": list(examples)}
        return replace(
            tool,
            title=title,
            description=description,
            annotations=annotations,
            confirmation=confirmation,
            input_schema=input_schema,
            examples=examples,
            scopes=override.scopes or tool.scopes,
            operator_confirmation=override.confirmation is not None
            or any(key in ir.CONFIRMATION_HINTS for key, _ in override.annotations),
        )

    def check_operation_ids(self, operations: list[_Operation]) -> None:
        seen: dict[str, str] = {}
        for op in operations:
            operation_id = op.operation.get("operationId")
            if operation_id is None:
                continue
            where = refs.join(op.pointer, "operationId")
            if not isinstance(operation_id, str):
                self.sink.error(self.locate(where), "operationId must be a non-empty string")
                continue
            if not operation_id.strip():
                # Read as absent (as Swagger UI and the code generators read it): the tool is
                # named from its method and path, as one without an operationId.
                self.sink.warning(
                    self.locate(where),
                    f"{op.key}: the operationId is empty; read as absent, so the tool is "
                    "named from the method and path",
                    "give the operation a unique operationId, or remove the empty one",
                )
                continue
            if operation_id in seen:
                self.sink.warning(
                    self.locate(where),
                    f"{op.key}: duplicate operationId {operation_id!r}, first used at "
                    f"{seen[operation_id]}; the tool names are told apart (see below)",
                    "operationIds must be unique across the document",
                )
            else:
                seen[operation_id] = self.locate(where)

    # ------------------------------------------------------------------ reuse
    def tool_keys(self, known_schemes: set[str]) -> ToolKeys | None:
        """Keys for reusing the previous run's tools (toolmemo.py), or None without a memo."""
        if self.memo is None:
            return None
        options = self.options
        shared = [
            list(self.converter.openapi),
            options.confirmation,
            options.allow_partial,
            sorted(known_schemes),
            self.data.get("security"),
            docs_base(self.data),  # relative links in descriptions are read against it
        ]
        try:
            return ToolKeys(self.data, shared, self.converter.reuse_flags)
        except (TypeError, ValueError):  # not JSON data (a NaN): every tool is built
            return None

    def reused_or_built(
        self,
        name: str,
        namespace: str,
        op: _Operation,
        known_schemes: set[str],
        keys: ToolKeys | None,
    ) -> ir.Tool | None:
        """`tool(...)`, or the previous run's tool when everything it is built from is
        unchanged. A tool whose build reported anything is not kept: its warnings belong to
        every run."""
        memo = self.memo
        item = op.pointer.rsplit("/", 1)[0]  # the path item: its parameters are the tool's
        parts = [
            *(name, namespace, op.method, op.path, op.pointer, op.servers),
            *(op.operation, op.path_parameters, self.converter.targets_under(item)),
        ]
        roots = [op.operation, [node for node, _ in op.path_parameters]]
        keyed = keys.key(parts, roots) if memo is not None and keys is not None else None
        if memo is None or keys is None or keyed is None:
            return self.tool(name, namespace, op, known_schemes)
        key, closure = keyed
        reused = decoded(memo.previous.get(key))
        if reused is not None and reused.tool.name == name and reused.tool.source == op.pointer:
            memo.used[key] = memo.previous[key]
            if reused.cut:
                self.cut_outputs.append(f"{op.method.upper()} {op.path}")
            return reused.tool
        items, cut = len(self.sink.items), len(self.cut_outputs)
        tool = self.tool(name, namespace, op, known_schemes)
        # Reports about a shared component are made once, by the first tool that converts
        # it: every tool that reaches such a component counts as having reported.
        reported = len(self.sink.items) > items or keys.reported_within(
            self.converter.reported_pointers, closure, (op.pointer, item)
        )
        if tool is None or reported:
            return tool
        try:
            record = {"tool": encode_tool(tool), "cut": len(self.cut_outputs) > cut}
            memo.used[key] = record_text(record)
        except (TypeError, ValueError):  # not JSON data (a NaN in an example): rebuilt
            return tool
        memo.missed += 1
        return tool

    # ------------------------------------------------------------------ one tool
    def tool(
        self, name: str, namespace: str, op: _Operation, known_schemes: set[str]
    ) -> ir.Tool | None:
        operation = op.operation
        inputs = self.converter.root("input")
        args = _Arguments()
        security = self.security(operation, op.pointer, known_schemes)
        # What the credentials of the operation's schemes set: no argument may set it too (G17).
        credentials = {
            (scheme.location, _wire_key(scheme.location, scheme.parameter))
            for alternative in security
            for use in alternative
            if (scheme := self.schemes.get(use.scheme)) is not None and scheme.type == "apiKey"
        }

        parameters = self.parameters(op, inputs, args, credentials)
        usable, body = self.request_body(op, inputs, args)
        if not usable:
            return None
        input_root: dict[str, Any] = {
            "type": "object",
            "properties": args.properties,
            "additionalProperties": False,
        }
        if args.required:
            input_root["required"] = args.required
        input_schema, refused = drop_invalid_examples(inputs.finish(input_root))
        for where in refused:
            self.sink.warning(
                self.locate(op.pointer),
                f"an example in the input schema does not match its schema at {where}; "
                "it is left out",
            )
        examples = self.checked_examples(input_schema, args) if args.example else ()
        if examples:
            input_schema["examples"] = list(examples)
        output_schema, wrap, accept = self.response(op)

        summary = str(operation.get("summary") or "")
        description = str(operation.get("description") or "")
        for key, text in (("summary", summary), ("description", description)):
            phrase = instruction_like(text)
            if phrase:
                # G14: text that talks to the model is how a tool gets poisoned.
                self.sink.warning(
                    self.locate(refs.join(op.pointer, key)),
                    f"the {key} reads like an instruction to the model ({phrase[:60]!r})",
                    "review it; replace it with a `description` override in mcpmint.yaml",
                )
        title, full_description = describe_operation(
            summary,
            description,
            common.default_title(name[len(namespace) + 1 :]),
            docs_base(self.data),
        )
        full_description = full_description or f"{op.method.upper()} {op.path}"
        if operation.get("deprecated") is True:
            full_description = "Deprecated. " + full_description
        method = op.method.upper()
        annotations = common.method_annotations(method, title)
        return ir.Tool(
            name=name,
            python_name=name,
            class_stem=naming.pascal(name[len(namespace) + 1 :]) or "Tool",
            title=title,
            description=full_description,
            input_schema=input_schema,
            output_schema=output_schema,
            output_wrap=wrap,
            examples=examples,
            annotations=annotations,
            request=ir.Request(
                method, op.request_path, tuple(parameters), body, accept, self.server(op)
            ),
            security=security,
            operation_id=str(operation["operationId"]) if _has_id(op) else "",
            source=op.pointer,
            confirmation=ir.confirmation_for(self.options.confirmation, annotations),
        )

    def parameters(
        self,
        op: _Operation,
        inputs: SchemaRoot,
        args: _Arguments,
        credentials: set[tuple[str, str]] = frozenset(),  # type: ignore[assignment]
    ) -> list[ir.Parameter]:
        found = op.operation.get("parameters")
        own: list[Any] = found if isinstance(found, list) else []
        own_ptrs = [refs.join(op.pointer, "parameters", i) for i in range(len(own))]
        # (location, wire name as the upstream compares it) -> (parameter, pointer, wire name)
        merged: dict[tuple[str, str], tuple[Mapping[str, Any], str, str]] = {}
        level: dict[tuple[str, str], int] = {}  # where each came from: 0 path item, 1 operation
        shared = [(node, pointer, 0) for node, pointer in op.path_parameters]
        for node, pointer, at in [
            *shared,
            *((n, q, 1) for n, q in zip(own, own_ptrs, strict=True)),
        ]:
            param, param_pointer = self.deref(node, pointer)
            reason = refs.unresolved(param)
            if reason is not None:
                self.sink.error(
                    self.locate(refs.join(pointer, "$ref")),
                    f"operation {op.key} cannot become a tool: its parameter {reason}",
                    _PARTIAL_HINT,
                )
                continue
            if not isinstance(param, Mapping):
                continue
            location, wire = param.get("in"), param.get("name")
            if location not in _LOCATION_ORDER or not isinstance(wire, str):
                self.sink.error(
                    self.locate(param_pointer),
                    "a parameter needs a string `name` and `in` one of path, query, header, cookie",
                )
                continue
            # Operation-level parameters override path-level ones with the same name and place
            # (header names in any case: `X-Amz-Date` and `x-amz-date` are one header).
            key = (location, _wire_key(location, wire))
            if level.get(key) == at:
                self.sink.warning(
                    self.locate(param_pointer),
                    f"{op.key}: {location} parameter {wire!r} is declared twice"
                    + (" (header names are compared in any case)" if location == "header" else "")
                    + f"; this declaration replaces the one at {self.locate(merged[key][1])}",
                    "declare each parameter once per operation (OpenAPI: a parameter is "
                    "identified by its name and location)",
                )
            merged[key], level[key] = (param, param_pointer, wire), at
        for wire, value in op.fixed_query:
            if ("query", wire) not in merged:
                fixed = {
                    "name": wire,
                    "in": "query",
                    "required": True,
                    "description": f"Fixed by the operation's path: always {value!r}.",
                    "schema": {"type": "string", "enum": [value], "default": value},
                    "example": value,
                }
                merged[("query", wire)] = (fixed, op.pointer, wire)
        placeholders = re.findall(r"\{([^{}]+)\}", op.request_path)
        for wire in placeholders:
            if ("path", wire) not in merged:
                self.sink.warning(
                    self.locate(op.pointer),
                    f"path parameter {{{wire}}} is not declared; it is taken as a required string",
                    "declare it under `parameters` with `in: path`",
                )
                merged[("path", wire)] = (
                    {"name": wire, "in": "path", "required": True},
                    op.pointer,
                    wire,
                )
        for location, wire in [key for key in merged if key[0] == "path"]:
            if wire not in placeholders:
                self.sink.warning(
                    self.locate(merged[(location, wire)][1]),
                    f"{op.key}: path parameter {wire!r} does not appear in the path; ignored",
                )
                del merged[(location, wire)]
        ordered = sorted(merged.values(), key=lambda v: (_LOCATION_ORDER[v[0]["in"]], v[2]))
        result: list[ir.Parameter] = []
        for param, pointer, wire in ordered:
            location = str(param["in"])
            if location == "header" and wire.lower() in _IGNORED_HEADERS:
                self.sink.warning(
                    self.locate(pointer),
                    f"header parameter {wire!r} is ignored, as OpenAPI requires",
                    "use the security scheme or the media types to describe it",
                )
                continue
            if location == "header" and wire.lower() in RESERVED_HEADERS:
                self.sink.warning(
                    self.locate(pointer),
                    f"{op.key}: header parameter {wire!r} is left out: the HTTP client sets "
                    "that header itself",
                )
                continue
            if location in ("header", "cookie") and not HTTP_TOKEN.fullmatch(wire):
                # No request can carry such a name: an optional parameter is left out, a
                # required one leaves the operation out (a tool that always fails is worse).
                message = (
                    f"{op.key}: {wire!r} is not a valid {location} name (an HTTP token: letters, "
                    "digits and !#$%&'*+.^_`|~-, no spaces), so no request can carry it"
                )
                if param.get("required") is True:
                    self.sink.error(
                        self.locate(refs.join(pointer, "name")),
                        message + "; the parameter is required",
                        _PARTIAL_HINT,
                    )
                else:
                    self.sink.warning(
                        self.locate(refs.join(pointer, "name")),
                        message + "; the optional parameter is left out",
                        f"write the {location} name the API expects",
                    )
                continue
            if (location, _wire_key(location, wire)) in credentials:
                self.sink.warning(
                    self.locate(pointer),
                    f"{op.key}: {location} parameter {wire!r} is left out: the credential of "
                    "the operation's security scheme sets it",
                    "the value comes from the environment, never from an argument (G17)",
                )
                continue
            argument = naming.argument_name(wire)
            if not argument:
                self.sink.error(
                    self.locate(refs.join(pointer, "name")),
                    f"parameter name {wire!r} has no usable characters",
                )
                continue
            argument = args.name(argument, f"{argument}_{location}")
            schema, style = self.parameter_schema(param, pointer, inputs)
            description = clean_text(
                absolute_links(
                    html_to_markdown(str(param.get("description") or "")), docs_base(self.data)
                )
            )
            if description and "description" not in schema:
                schema["description"] = description
            is_required = location == "path" or param.get("required") is True
            args.add(
                argument,
                schema,
                is_required,
                _first_example(param, self.example_of),
                (f"the example of {location} parameter {wire!r}", _example_pointer(param, pointer)),
            )
            explode = param.get("explode")
            result.append(
                ir.Parameter(
                    argument=argument,
                    name=wire,
                    location=location,  # type: ignore[arg-type]
                    style=style,
                    explode=bool(explode) if isinstance(explode, bool) else style == "form",
                    required=is_required,
                )
            )
        return result

    def parameter_schema(
        self, param: Mapping[str, Any], pointer: str, inputs: SchemaRoot
    ) -> tuple[dict[str, Any], str]:
        location = str(param["in"])
        style = str(param.get("style") or _DEFAULT_STYLE[location])
        if style not in STYLES[location]:
            self.sink.warning(
                self.locate(refs.join(pointer, "style")),
                f"style {style!r} is not one a {location} parameter can have; "
                f"{_DEFAULT_STYLE[location]!r}, its default, is used",
            )
            style = _DEFAULT_STYLE[location]
        if "schema" in param:
            return inputs.convert(param["schema"], refs.join(pointer, "schema")), style
        content = param.get("content")
        if isinstance(content, Mapping) and content:
            media = next(iter(content))
            media_node = content[media]
            if isinstance(media_node, Mapping) and "schema" in media_node:
                schema_pointer = refs.join(pointer, "content", media, "schema")
                # A parameter described by `content` is sent serialised in that media type
                # (as JSON text; in a path, as one percent-encoded segment).
                return inputs.convert(media_node["schema"], schema_pointer), "json"
        if location != "path":
            self.sink.warning(
                self.locate(pointer), f"parameter {param.get('name')!r} has no schema; any string"
            )
        return {"type": "string"}, style

    def _empty_body(self, body: Mapping[str, Any], pointer: str) -> bool:
        """An optional request body that can carry nothing: its every media type's schema is
        a closed object without properties (`additionalProperties: false`). An object that
        says nothing of its properties takes any (Elasticsearch's `GET /_cat/count` query)."""
        if body.get("required") is True or not body["content"]:
            return False
        for media, node in body["content"].items():
            schema = node.get("schema") if isinstance(node, Mapping) else None
            schema, _ = self.deref(schema, refs.join(pointer, "content", media, "schema"))
            if not isinstance(schema, Mapping) or schema.get("type") not in ("object", None):
                return False
            if schema.get("properties") or schema.get("additionalProperties") is not False:
                return False
            if any(key in schema for key in ("allOf", "anyOf", "oneOf", "items")):
                return False
        return True

    def request_body(
        self,
        op: _Operation,
        inputs: SchemaRoot,
        args: _Arguments,
    ) -> tuple[bool, ir.Body | None]:
        """Whether the operation can be a tool, and its body binding (None: no body)."""
        node = op.operation.get("requestBody")
        if node is None:
            return True, None
        body, pointer = self.deref(node, refs.join(op.pointer, "requestBody"))
        reason = refs.unresolved(body)
        if reason is not None:
            self.sink.error(
                self.locate(refs.join(op.pointer, "requestBody", "$ref")),
                f"operation {op.key} cannot become a tool: its request body {reason}",
                _PARTIAL_HINT,
            )
            return False, None
        if not isinstance(body, Mapping) or not isinstance(body.get("content"), Mapping):
            return True, None
        content: Mapping[str, Any] = body["content"]
        if op.method.lower() in ("get", "delete", "head") and self._empty_body(body, pointer):
            return True, None  # Stripe's GETs: an optional body with nothing in it
        if not content:
            self.sink.warning(
                self.locate(refs.join(pointer, "content")),
                f"{op.key}: the request body names no media type (`content: {{}}`); "
                "the tool sends no body",
                "give the body a media type and a schema",
            )
            return True, None
        media, sent = _pick_media(content)
        media_node = content[media] if isinstance(content[media], Mapping) else {}
        body_required = body.get("required") is True
        schema_pointer = refs.join(pointer, "content", media, "schema")
        essence = _essence(sent)
        also = _also_accepts(content, media)
        raw = not _JSON_MEDIA.match(sent) and essence not in _SUPPORTED_BODY_MEDIA
        if sent != media:
            also = f" Sent as {sent}." + also
        media = sent
        if raw:
            schema: dict[str, Any] = {
                "type": "string",
                "contentEncoding": "base64",
                "examples": [_raw_example(essence)],
                "description": f"The request body ({media}), base64-encoded." + also,
            }
        else:
            schema = inputs.convert(media_node.get("schema", {}), schema_pointer)
        if essence == _TEXT_MEDIA and _not_text(schema):
            # Text carries a string; an object (appcenter's text/plain release update) is
            # JSON by its schema, as a wildcard media type with such a schema is read.
            self.sink.warning(
                self.locate(schema_pointer),
                f"{op.key}: the {media} request body's schema describes a JSON value that is "
                "not a string, which text cannot carry; the body is sent as JSON "
                "(application/json)",
                "if the API takes JSON, list application/json in `content`; if it takes text, "
                "give the body a string schema",
            )
            media = essence = "application/json"
        body_example = _first_example(media_node, self.example_of) if not raw else _MISSING
        body_origin = refs.join(pointer, "content", media)
        example_at = _example_pointer(media_node, body_origin) if not raw else body_origin
        flat = _flattenable(schema) and (body_required or not schema.get("required"))
        if not flat:
            if essence == _MULTIPART_MEDIA:
                schema = _multipart_schema(schema)
            if also and not raw:
                schema = {
                    **schema,
                    "description": (str(schema.get("description") or "") + also).strip(),
                }
            argument = args.name("body", "request_body")
            args.add(
                argument,
                schema,
                body_required,
                body_example,
                ("the request body's example", example_at),
            )
            return True, ir.Body(media, body_required, argument, (), _encoding(media_node))
        mapping: list[tuple[str, str]] = []
        body_required_props = schema.get("required", [])
        for wire, prop_schema in schema["properties"].items():
            plain = naming.argument_name(wire) or "field"
            argument = args.name(plain, "body_" + plain)
            value = (
                body_example.get(wire, _MISSING) if isinstance(body_example, Mapping) else _MISSING
            )
            if essence == _MULTIPART_MEDIA:
                prop_schema = _file_schema(prop_schema)
                if prop_schema.get("properties") is _FILE_SCHEMA["properties"]:
                    value = _MISSING  # an example of a binary string is no file object
            args.add(
                argument,
                prop_schema,
                wire in body_required_props,
                value,
                (f"property {wire!r} of the request body's example", refs.join(example_at, wire)),
            )
            mapping.append((argument, wire))
        encoding = _encoding(media_node)
        return True, ir.Body(media, body_required, None, tuple(sorted(mapping)), encoding)

    def response(self, op: _Operation) -> tuple[dict[str, Any] | None, str | None, str]:
        responses = op.operation.get("responses")
        if not isinstance(responses, Mapping):
            return None, None, ""
        codes = sorted(str(c) for c in responses if str(c).startswith("2"))
        for code in codes:
            response, pointer = self.deref(
                responses[code] if code in responses else responses[int(code)],
                refs.join(op.pointer, "responses", code),
            )
            if not isinstance(response, Mapping) or "content" not in response:
                continue
            # `content` itself, or a media type, given as a `$ref` (lob's
            # `#/components/mediaTypes/...`, OpenAPI 3.2's media type references): followed,
            # so that `$ref` is never taken for a media type (`Accept: $ref`).
            content, content_pointer = self.deref(
                response["content"], refs.join(pointer, "content")
            )
            if not isinstance(content, Mapping):
                continue
            json_media = next((m for m in content if _JSON_MEDIA.match(str(m))), None)
            if json_media is None:
                return None, None, str(next((m for m in content if m != "$ref"), ""))
            media_node, media_pointer = self.deref(
                content[json_media], refs.join(content_pointer, json_media)
            )
            if not isinstance(media_node, Mapping) or "schema" not in media_node:
                return None, None, str(json_media)
            outputs = self.converter.root("output")
            schema = outputs.convert(media_node["schema"], refs.join(media_pointer, "schema"))
            wrap = None
            if _is_object_schema(schema):
                schema = {**schema, "type": "object"}
            else:
                schema, wrap = {"type": "object", "properties": {"result": schema}}, "result"
            finished, cut = outputs.finish_within(schema, OUTPUT_SCHEMA_MAX_BYTES)
            if not cut:
                return finished, wrap, str(json_media)
            self.cut_outputs.append(f"{op.method.upper()} {op.path}")
            # Cutting resolves references, which repeats what they named: compact once more.
            return compact(finished), wrap, str(json_media)
        return None, None, ""

    def checked_examples(
        self, schema: dict[str, Any], args: _Arguments
    ) -> tuple[dict[str, Any], ...]:
        """The tool's example: the spec's example values of its arguments, and sampled values
        for required arguments without one. A value of the spec's that does not fit its
        argument's schema is a warning located at that value, naming it as the spec does (not
        by the argument name mcpmint chose), and is left out; when a value mcpmint sampled does
        not fit, the tool has no example (nothing the spec's author can change: no warning)."""
        validator = schema_validator(schema)
        given = dict(args.example)
        while True:
            candidate = _complete_example(given, schema)
            error = next(iter(validator.iter_errors(candidate)), None)
            if error is None:
                return (candidate,) if candidate else ()
            path = list(error.absolute_path)
            argument = path[0] if path and path[0] in given else None
            if argument is None:  # a sampled value, or the object as a whole
                return ()
            what, pointer = args.origin[str(argument)]
            inside = "/".join(str(p) for p in path[1:])
            self.sink.warning(
                self.locate(pointer),
                f"{what} does not match its schema{f' at {inside}' if inside else ''}: "
                f"{one_line(error.message, 200)}; the tool's example leaves it out",
                "correct the example, or its schema",
            )
            del given[argument]


_MISSING: Any = object()


@dataclass
class _Arguments:
    """The one argument object of a tool, filled by parameters first and then the body."""

    properties: dict[str, Any] = field(default_factory=dict)
    required: list[str] = field(default_factory=list)
    example: dict[str, Any] = field(default_factory=dict)
    # Where each example value is in the spec: (what it is, its JSON pointer).
    origin: dict[str, tuple[str, str]] = field(default_factory=dict)
    taken: set[str] = field(default_factory=set)

    def name(self, wanted: str, on_clash: str) -> str:
        """`wanted`, or `on_clash` when another argument has it already (then made unique)."""
        return naming.unique(wanted if wanted not in self.taken else on_clash, self.taken)

    def add(
        self,
        name: str,
        schema: dict[str, Any],
        required: bool,
        example: Any,
        origin: tuple[str, str],
    ) -> None:
        self.properties[name] = schema
        if required:
            self.required.append(name)
        if example is not _MISSING:
            self.example[name] = example
            self.origin[name] = origin


def override_examples(
    tool: ir.Tool, override: Override, sink: DiagnosticSink
) -> tuple[dict[str, Any], ...]:
    """An override's examples; each that does not fit the input schema is a located error."""
    validator = schema_validator(tool.input_schema)
    for index, (example, where) in enumerate(
        zip(override.examples, override.example_locations, strict=True), start=1
    ):
        for error in sorted(validator.iter_errors(example), key=str)[:3]:
            path = "/".join(str(p) for p in error.absolute_path) or "(the arguments)"
            sink.error(
                where,
                f"example {index} of the override for {override.key!r} does not fit the input "
                f"schema of {tool.name}: {path}: {one_line(error.message, 200)}",
                "fix the example, or remove it; `mcpmint tools --json` shows the input schema",
            )
    return override.examples


def _first_example(node: Mapping[str, Any], example_of: Any = None) -> Any:
    """The first example of a parameter or media type; `example_of` follows an Example
    Object given as a `$ref` (to `components/examples`)."""
    if "example" in node:
        return node["example"]
    examples = node.get("examples")
    if isinstance(examples, Mapping):
        for entry in examples.values():
            if example_of is not None and refs.is_ref(entry):
                entry = example_of(entry)
            if isinstance(entry, Mapping) and "value" in entry:
                return entry["value"]
    schema = node.get("schema")
    if isinstance(schema, Mapping) and "example" in schema:
        return schema["example"]
    return _MISSING


def _example_pointer(node: Mapping[str, Any], pointer: str) -> str:
    """Where `_first_example(node)` found its value, `node` being at `pointer`."""
    if "example" in node:
        return refs.join(pointer, "example")
    examples = node.get("examples")
    if isinstance(examples, Mapping):
        for key, entry in examples.items():
            if isinstance(entry, Mapping) and "value" in entry:
                return refs.join(pointer, "examples", str(key), "value")
    return refs.join(pointer, "schema", "example")


def _complete_example(example: dict[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    """The spec's example values, plus values for the required arguments it leaves out where
    their schema says what a real one looks like; else no example ({}).

    Specs often give an example for the body but not for the path parameters; the tool's
    example must be a whole, valid call, and never teach a placeholder (`"owner": "string"`).
    """
    completed = dict(example)
    properties = schema.get("properties", {})
    for name in schema.get("required", []):
        if name not in completed and name in properties:
            ok, value = teaching_instance(properties[name], schema.get("$defs"))
            if not ok:
                return {}
            completed[name] = value
    return completed


def _raw_example(essence: str) -> str:
    """The example of a body sent as raw bytes (base64): a well-formed document for an XML
    media type (`application/xml`, `+xml`), which the upstream parses, else `hello`."""
    subtype = essence.partition("/")[2]
    return "PGV4YW1wbGUvPg==" if subtype == "xml" or subtype.endswith("+xml") else "aGVsbG8="


def _essence(media: object) -> str:
    """`type/subtype` of a media type, lower case; a parameter list after `;` (or after a
    `,`, as some specs write it: `application/json, okta-version=1.0.0`) is not part of it."""
    return re.split(r"[;,]", str(media), maxsplit=1)[0].strip().lower()


def _normal_media(media: str) -> str:
    """A media type as it is sent: as the spec writes it, or, when the spec separates its
    parameters with commas (`application/json, okta-version=1.0.0`), `;`-separated."""
    if "," not in media:
        return media.strip()
    essence = _essence(media)
    rest = str(media).strip()[len(essence) :].strip(" ;,")
    params = [p.strip() for p in re.split(r"[;,]", rest) if "=" in p]
    return "; ".join([essence, *params])


def _json_like(essence: str) -> bool:
    """JSON by its media type: `application/json`, `text/json`, `application/vnd.x+json`."""
    return essence.endswith(("/json", "+json"))


def _says_json(schema: Any) -> bool:
    """A schema of a JSON value that is not a plain or binary string (an object, an array,
    a number, a composition, a reference, or any value at all)."""
    if not isinstance(schema, Mapping):
        return False
    if not schema:
        return False  # no schema: nothing says JSON; raw bytes
    return _types(schema) != {"string"} or bool(
        {"$ref", "allOf", "anyOf", "oneOf"} & set(schema) and not _binary(schema)
    )


def _pick_media(content: Mapping[str, Any]) -> tuple[str, str]:
    """The media type of `content` to send, and how it is sent (the media type of the
    request): JSON first (by its media type: `text/json` and `+json` types too), then forms,
    multipart and text, then a wildcard (`*/*`, `application/*`, `image/*`) read by its
    schema (JSON when the schema says JSON, text for a `text/*` string, raw bytes
    otherwise), then any other type as raw bytes, base64-encoded by one argument."""
    listed = [str(media) for media in content]
    for media in listed:
        essence = _essence(media)
        if _json_like(essence) and "*" not in essence:
            # Not even `type/subtype` (`datacenter-vnd-com.example+json`): sent as JSON.
            return media, _normal_media(media) if _MEDIA_TYPE.match(essence) else "application/json"
    for wanted in _SUPPORTED_BODY_MEDIA:
        for media in listed:
            if _essence(media) == wanted:
                return media, _normal_media(media)
    for media in listed:
        essence = _essence(media)
        if "*" not in essence:
            continue
        node = content[media]
        schema = node.get("schema", {}) if isinstance(node, Mapping) else {}
        if _json_like(essence) or _says_json(schema):
            return media, "application/json"
        if essence.startswith("text/") and not _binary(schema, empty_too=True):
            return media, "text/plain"
        return media, "application/octet-stream"
    for media in listed:
        if _MEDIA_TYPE.match(_essence(media)):
            return media, _normal_media(media)
    return listed[0], "application/octet-stream"


def _not_text(schema: Mapping[str, Any]) -> bool:
    """A (converted) schema whose `type` says its value is not a string: an object, an
    array, a number, a boolean (what a text body cannot be). The generated tests' oracle
    reads such a `text/plain` body as JSON too (spec_oracle.py.jinja, `_find_media_type`)."""
    return bool(_types(schema) - {"string", "null"})


def _binary(schema: Mapping[str, Any], *, empty_too: bool = False) -> bool:
    """A string schema of raw bytes (`format: binary`, or 3.1's `contentMediaType` alone)."""
    if not schema:
        return empty_too
    if "string" not in _types(schema) or "contentEncoding" in schema:
        return False
    return schema.get("format") == "binary" or "contentMediaType" in schema


def _encoding(media_node: Mapping[str, Any]) -> tuple[tuple[str, str, bool, str], ...]:
    """OpenAPI `encoding` of a form or multipart body, with OpenAPI's defaults filled in."""
    raw = media_node.get("encoding")
    out = []
    for wire, enc in raw.items() if isinstance(raw, Mapping) else ():
        if not isinstance(enc, Mapping):
            continue
        style = enc.get("style") if enc.get("style") in _FORM_STYLES else "form"
        explode = enc.get("explode")
        explode = explode if isinstance(explode, bool) else style == "form"
        part_type = enc.get("contentType")
        part_type = part_type if isinstance(part_type, str) else ""
        out.append((str(wire), str(style), explode, part_type))
    return tuple(sorted(out))


def _also_accepts(content: Mapping[str, Any], media: str) -> str:
    others = [str(m) for m in content if str(m) != media]
    return f" The operation also accepts: {', '.join(others)}." if others else ""


def _multipart_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A whole multipart body: its binary properties become file objects."""
    props = schema.get("properties")
    if isinstance(props, dict):
        fixed = {k: _file_schema(v) if isinstance(v, dict) else v for k, v in props.items()}
        return {**schema, "properties": fixed}
    return _file_schema(schema)


def _file_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A multipart property: a binary string becomes a file object (an array: of files)."""
    extra = {k: schema[k] for k in ("title",) if k in schema}
    note = str(schema.get("description") or "").strip()
    if _binary(schema):
        out = {**_FILE_SCHEMA, **extra}
        out["description"] = (note + "\n\n" if note else "") + _FILE_SCHEMA["description"]
        return out
    items = schema.get("items")
    if "array" in _types(schema) and isinstance(items, dict) and _binary(items):
        return {**schema, "items": _file_schema(items)}
    return schema


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    if isinstance(kind, list):
        return {str(k) for k in kind}
    return set()


def _is_object_schema(schema: Mapping[str, Any]) -> bool:
    if any(k in schema for k in ("$ref", "anyOf", "oneOf", "allOf")):
        return False
    return "object" in _types(schema) and _types(schema) <= {"object", "null"}


# What an object body may say and still become top-level arguments: each property becomes an
# argument, `required` the arguments' `required`. Any other keyword about the whole body
# (`minProperties`, `maxProperties`, `dependentRequired`, `not`, `if`, `propertyNames`, ...)
# has no place in the arguments' schema, so such a body stays one `body` argument, whole.
_FLATTENED_KEYWORDS: Final = frozenset(
    {"type", "properties", "required", "additionalProperties", "title", "description"}
    | {"examples", "default", "deprecated", "readOnly", "writeOnly", "$comment"}
)


def _flattenable(schema: Mapping[str, Any]) -> bool:
    """An object body with named properties, no composition and nothing else said about the
    whole body (`_FLATTENED_KEYWORDS`) can become top-level arguments."""
    return (
        _is_object_schema(schema)
        and set(schema) <= _FLATTENED_KEYWORDS
        and _types(schema) == {"object"}
        and isinstance(schema.get("properties"), Mapping)
        and bool(schema["properties"])
        and schema.get("additionalProperties") is False
        and "patternProperties" not in schema
    )


def _without_default_port(url: str) -> str:
    """`url` without its scheme's default port (`https://api.example.com:443/v1`): the
    request's URL never carries it, and the generated tests compare the two."""
    return re.sub(
        r"^(https://[^/?#]*?):443(?=[/?#]|$)|^(http://[^/?#]*?):80(?=[/?#]|$)", r"\1\2", url
    )


def _sendable_key_name(location: Any, name: Any) -> bool:
    """Whether an apiKey's `name` can be sent where it goes: a non-empty string, and in a
    header or a cookie an HTTP token (`X-Api-Key`; not `My API Key`). Another `in` is not
    this check's to refuse."""
    if location not in ("header", "query", "cookie"):
        return True
    if not isinstance(name, str) or not name:
        return False
    return location == "query" or HTTP_TOKEN.fullmatch(name) is not None


def _wire_key(location: str, wire: str) -> str:
    """A parameter's wire name as the upstream compares it: header names in any case."""
    return wire.lower() if location == "header" else wire


def _split_path_key(key: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    """A path key's request path and fixed query: `/responses?beta=true` -> (`/responses`,
    (("beta", "true"),)); a fragment is dropped (`/files/{id}#shared_link` -> `/files/{id}`)."""
    without_fragment = key.split("#", 1)[0]
    path, _, query = without_fragment.partition("?")
    fixed = tuple((name, value) for name, value in parse_qsl(query, keep_blank_values=True) if name)
    return path or "/", fixed


def _has_id(op: _Operation) -> bool:
    operation_id = op.operation.get("operationId")
    return isinstance(operation_id, str) and bool(operation_id.strip())


def _tags(op: _Operation) -> list[str]:
    tags = op.operation.get("tags")
    return [str(t) for t in tags] if isinstance(tags, list) else []


def _normal_key(key: str) -> str:
    """`get /pets` -> `GET /pets`: the method part of an override key in any case."""
    method, _, path = key.strip().partition(" ")
    return f"{method.upper()} {path.strip()}"


def _matches(selection: Selection, op: _Operation) -> list[bool]:
    """For each key the selection gives: does the operation match one of its entries?"""
    found = []
    if selection.tags:
        found.append(any(tag in selection.tags for tag in _tags(op)))
    if selection.operations:
        found.append(_has_id(op) and op.operation["operationId"] in selection.operations)
    if selection.methods:
        found.append(op.method.upper() in selection.methods)
    if selection.paths:
        found.append(any(fnmatchcase(op.path, glob) for glob in selection.paths))
    return found


def _matches_all(selection: Selection, op: _Operation) -> bool:
    return all(_matches(selection, op))


def _matches_any(selection: Selection, op: _Operation) -> bool:
    return any(_matches(selection, op))
