"""Tool manifests (YAML) -> `ir.Server`.

A manifest defines tools directly: name, description, input and output schema, examples,
annotations, scopes, and either an HTTP binding (method, URL template, where each argument
goes) or `handler: true` (a Python function in the package's hooks.py). It is checked against
`specs/manifest.schema.json`, then turned into the same `ir.Tool` values the OpenAPI frontend
makes: schemas through the same strict input / lenient output conversion, names namespaced the
same way. Reference: docs/manifests.md.

One module, over 600 lines, because a manifest is one format read top to bottom: the checks
of each part need the names and schemes read before them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from mcpmint import ir, refs
from mcpmint.build import naming
from mcpmint.build.frontends import common
from mcpmint.build.frontends.openapi import BuildOptions
from mcpmint.build.namespaces import default_namespace
from mcpmint.build.schema import SchemaConverter
from mcpmint.build.text import clean_text, instruction_like, one_line
from mcpmint.config import check_schema
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import RawDocument
from mcpmint.resources import bundled_schema
from mcpmint.runtime.arguments import schema_validator
from mcpmint.runtime.catalog import RESERVED_HEADERS

MANIFEST_KEY = "mcpmint_manifest"
# A security requirement that names no usable scheme: the message (then the name) and hint.
_UNDEFINED_SCHEME = (
    "security names an undefined scheme",
    "define it under security_schemes",
)

_DOCS_HINT = "see docs/manifests.md, or point your editor at specs/manifest.schema.json"
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")
_QUERY_METHODS = frozenset({"GET", "HEAD", "DELETE", "OPTIONS"})
_STYLES = {"path": "simple", "query": "form", "header": "simple", "cookie": "form"}
_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class _HasName(Protocol):
    @property
    def name(self) -> str: ...


_Named = TypeVar("_Named", bound=_HasName)  # a tool or a prompt


def is_manifest(data: Any) -> bool:
    """A mapping with a top-level `mcpmint_manifest:` or `tools:` key and no `openapi:` or
    `swagger:` one (the content-based twin of `config.is_config_path`)."""
    if not isinstance(data, Mapping) or {"openapi", "swagger"} & set(data):
        return False
    return MANIFEST_KEY in data or "tools" in data


def manifest_schema() -> dict[str, Any]:
    return bundled_schema("manifest.schema.json")


def build_manifest_server(
    doc: RawDocument, options: BuildOptions, sink: DiagnosticSink
) -> ir.Server | None:
    """Check `doc` against the manifest schema and build the IR; None (with located errors)
    when it cannot be used."""
    errors_before = len(sink.errors)
    check_schema(doc.data, manifest_schema(), doc, sink, _DOCS_HINT, "the manifest")
    if len(sink.errors) > errors_before:
        return None
    server = _Builder(doc, options, sink).build()
    return None if len(sink.errors) > errors_before else server


@dataclass(frozen=True)
class _Placement:
    location: str  # path, query, header, cookie or body
    wire: str
    pointer: str


class _Builder:
    def __init__(self, doc: RawDocument, options: BuildOptions, sink: DiagnosticSink) -> None:
        self.doc = doc
        self.data: Mapping[str, Any] = doc.data
        self.options = options
        self.sink = sink
        # Manifest schemas are JSON Schema 2020-12, which OpenAPI 3.1 schemas are too.
        self.converter = SchemaConverter(self.data, openapi=(3, 1), sink=sink, locate=doc.locate)

    def locate(self, pointer: str) -> str:
        return self.doc.locate(pointer)

    def build(self) -> ir.Server:
        data = self.data
        namespace = self.options.namespace or default_namespace(data, self.doc.path)
        title = one_line(str(data.get("title") or namespace))
        schemes = self.security_schemes(namespace.upper())
        known = {s.name for s in schemes}
        tools = self.named(
            "tools", "tool", lambda node, pointer: self.tool(namespace, node, pointer, known)
        )
        owners = {tool.name: self.locate(f"{tool.source}/name") for tool in tools}
        resources = self.resources(namespace, known)
        for resource in resources:
            if resource.name in owners:  # one namespace of Python functions in hooks.py
                self.sink.error(
                    self.locate(resource.source),
                    f"resource {resource.name!r} has the name of the tool at "
                    f"{owners[resource.name]}",
                    "give the resource another name",
                )
        prompts = self.prompts(namespace)
        base_url = str(data.get("base_url") or "")
        if not base_url and (
            any(not tool.handler for tool in tools) or any(r.request for r in resources)
        ):
            self.sink.warning(
                self.locate("#/tools"),
                "no base_url: HTTP-bound tools need one at run time",
                f"set base_url in the manifest, or {namespace.upper()}_BASE_URL when running",
            )
        return common.new_server(
            namespace,
            title=title,
            version=str(data.get("version") or "0.0.0"),
            description=str(data.get("description") or ""),
            tools=tools,
            security_schemes=schemes,
            base_url=base_url.rstrip("/"),
            spec_servers=(base_url.rstrip("/"),) if base_url else (),
            resources=tuple(sorted(resources, key=lambda r: r.name)),
            prompts=tuple(sorted(prompts, key=lambda p: p.name)),
        )

    def named(
        self, section: str, kind: str, build: Callable[[Mapping[str, Any], str], _Named | None]
    ) -> list[_Named]:
        """Each entry of the list `section` that `build` makes something of, refusing a second
        entry with a name already taken (`kind` says what it is in the message)."""
        found: list[_Named] = []
        owners: dict[str, str] = {}
        for index, node in enumerate(self.data.get(section, ())):
            pointer = f"#/{section}/{index}"
            item = build(node, pointer)
            if item is None:
                continue
            if item.name in owners:
                self.sink.error(
                    self.locate(f"{pointer}/name"),
                    f"two {kind}s are named {item.name!r}: {owners[item.name]} and "
                    f"{self.locate(pointer + '/name')}",
                    f"{kind} names must be unique; rename one",
                )
                continue
            owners[item.name] = self.locate(f"{pointer}/name")
            found.append(item)
        return found

    # ------------------------------------------------------------------ resources, prompts
    def resources(self, namespace: str, known_schemes: set[str]) -> list[ir.Resource]:
        found: list[ir.Resource] = []
        owners: dict[str, str] = {}
        for index, node in enumerate(self.data.get("resources", ())):
            pointer = f"#/resources/{index}"
            resource = self.resource(namespace, node, pointer, known_schemes)
            if resource is None:
                continue
            for key in (resource.name, resource.uri or resource.uri_template):
                if key in owners:
                    self.sink.error(
                        self.locate(pointer),
                        f"two resources share {key!r}: {owners[key]} and {self.locate(pointer)}",
                        "resource names and URIs must be unique",
                    )
                owners[key] = self.locate(pointer)
            found.append(resource)
        return found

    def resource(
        self, namespace: str, node: Mapping[str, Any], pointer: str, known_schemes: set[str]
    ) -> ir.Resource | None:
        uri, template = str(node.get("uri", "")), str(node.get("uri_template", ""))
        http, handler = node.get("http"), node.get("handler")
        if bool(uri) == bool(template) or (http is None) == (handler is None):
            self.sink.error(
                self.locate(pointer),
                f"resource {node['name']!r} needs exactly one of `uri` or `uri_template`, and "
                "exactly one of `http:` or `handler: true`",
                "a static resource has a uri; a resource template has a uri_template",
            )
            return None
        variables = _PLACEHOLDER.findall(template)
        for variable in variables:
            if not _IDENTIFIER.match(variable):
                self.sink.error(
                    self.locate(f"{pointer}/uri_template"),
                    f"template expression {{{variable}}} is not a simple {{name}}",
                    "only RFC 6570 level 1 ({name}) is supported in uri_template",
                )
                return None
        if len(set(variables)) != len(variables):
            self.sink.error(
                self.locate(f"{pointer}/uri_template"),
                "a template variable appears twice",
                "use each {name} once",
            )
            return None
        name = self.tool_name(namespace, node, pointer)
        if name is None:
            return None
        request = None
        if http is not None:
            path = str(http["path"])
            in_path = _PLACEHOLDER.findall(path)
            unknown = [v for v in in_path if v not in variables]
            if unknown:
                self.sink.error(
                    self.locate(f"{pointer}/http/path"),
                    f"path placeholder {{{unknown[0]}}} is not a variable of the uri_template",
                    "every {placeholder} of http.path must be a {variable} of uri_template",
                )
                return None
            parameters = tuple(
                ir.Parameter(
                    argument=variable,
                    name=variable,
                    location="path" if variable in in_path else "query",
                    style="simple" if variable in in_path else "form",
                    explode=variable not in in_path,
                    required=True,
                )
                for variable in sorted(variables)
            )
            mime = str(node.get("mime_type") or "application/json")
            request = ir.Request("GET", path, parameters, None, mime)
        title = one_line(str(node.get("title") or "")) or common.default_title(
            name[len(namespace) + 1 :]
        )
        return ir.Resource(
            name=name,
            title=title,
            description=clean_text(str(node["description"])),
            mime_type=str(node.get("mime_type") or "application/json"),
            uri=uri,
            uri_template=template,
            request=request,
            security=() if request is None else self.security(node, pointer, known_schemes),
            source=pointer,
        )

    def prompts(self, namespace: str) -> list[ir.Prompt]:
        return self.named(
            "prompts", "prompt", lambda node, pointer: self.prompt(namespace, node, pointer)
        )

    def prompt(self, namespace: str, node: Mapping[str, Any], pointer: str) -> ir.Prompt | None:
        name = self.tool_name(namespace, node, pointer)
        if name is None:
            return None
        arguments = tuple(
            ir.PromptArgument(
                str(a["name"]),
                clean_text(str(a.get("description") or "")),
                a.get("required", False) is True,
            )
            for a in node.get("arguments", ())
        )
        declared = {a.name for a in arguments}
        if len(declared) != len(arguments):
            self.sink.error(
                self.locate(f"{pointer}/arguments"),
                f"prompt {node['name']!r} declares an argument twice",
                "give each argument one entry",
            )
            return None
        ok = True
        for index, message in enumerate(node["messages"]):
            for placeholder in placeholders(str(message["text"])):
                if placeholder not in declared:
                    self.sink.error(
                        self.locate(f"{pointer}/messages/{index}/text"),
                        f"{{{placeholder}}} is not an argument of prompt {node['name']!r}",
                        "declare it under arguments, or write {{ and }} for literal braces",
                    )
                    ok = False
        if not ok:
            return None
        title = one_line(str(node.get("title") or "")) or common.default_title(
            name[len(namespace) + 1 :]
        )
        return ir.Prompt(
            name=name,
            title=title,
            description=clean_text(str(node["description"])),
            arguments=arguments,
            messages=tuple((str(m["role"]), str(m["text"])) for m in node["messages"]),
            source=pointer,
        )

    # ------------------------------------------------------------------ security
    def security_schemes(self, env_prefix: str) -> list[ir.SecurityScheme]:
        schemes: list[ir.SecurityScheme] = []
        for name, node in (self.data.get("security_schemes") or {}).items():
            pointer = refs.join("#/security_schemes", name)
            var = common.credential_variable(env_prefix, str(name))
            kind = node["type"]
            if kind == "apiKey":
                location, parameter = node.get("in"), node.get("name")
                if location is None or parameter is None:
                    self.sink.error(
                        self.locate(pointer),
                        f"apiKey scheme {name!r} needs `in` and `name`",
                        "e.g. {type: apiKey, in: header, name: X-API-Key}",
                    )
                    continue
                if location == "header" and parameter.lower() in RESERVED_HEADERS - {
                    "authorization"
                }:
                    self.sink.error(
                        self.locate(f"{pointer}/name"),
                        f"an API key cannot be sent as the {parameter} header",
                        "choose the header the API expects, e.g. X-API-Key",
                    )
                    continue
                schemes.append(common.api_key_scheme(str(name), location, parameter, var))
            elif node.get("scheme") == "basic":
                schemes.append(common.basic_scheme(str(name), var))
            elif node.get("scheme") == "bearer":
                schemes.append(common.bearer_scheme(str(name), var))
            else:
                self.sink.error(
                    self.locate(pointer),
                    f"http scheme {name!r} needs `scheme: bearer` or `scheme: basic`",
                    _DOCS_HINT,
                )
        return schemes

    def security(
        self, node: Mapping[str, Any], pointer: str, known: set[str]
    ) -> tuple[tuple[ir.SchemeUse, ...], ...]:
        return common.security_requirements(
            self.data, node, pointer, known, self.locate, self.sink, _UNDEFINED_SCHEME
        )

    # ------------------------------------------------------------------ tools
    def tool_name(self, namespace: str, node: Mapping[str, Any], pointer: str) -> str | None:
        """Names are the operator's: taken as written (namespaced), never shortened."""
        name = common.namespaced(namespace, str(node["name"]))
        limit = self.options.max_tool_name
        if len(name) > limit:
            self.sink.error(
                self.locate(f"{pointer}/name"),
                f"tool name {name!r} is {len(name)} characters, more than {limit}",
                "choose a shorter name, or raise output.max_tool_name in mcpmint.yaml (at "
                "most 128)",
            )
            return None
        return name

    def tool(
        self, namespace: str, node: Mapping[str, Any], pointer: str, known_schemes: set[str]
    ) -> ir.Tool | None:
        http, handler = node.get("http"), node.get("handler")
        if (http is None) == (handler is None):
            self.sink.error(
                self.locate(pointer),
                f"tool {node['name']!r} needs exactly one implementation: `http:` or "
                "`handler: true`",
                "bind it to an HTTP endpoint, or write it in Python in hooks.py",
            )
            return None
        name = self.tool_name(namespace, node, pointer)
        if name is None:
            return None
        input_schema = self.input_schema(node, pointer)
        if input_schema is None:
            return None
        output_schema, wrap = self.output_schema(node, pointer)
        examples = self.examples(node, pointer, input_schema)
        if examples:
            input_schema["examples"] = list(examples)
        request = None if http is None else self.request(http, f"{pointer}/http", input_schema)
        if http is not None and request is None:
            return None
        description = clean_text(str(node["description"]))
        phrase = instruction_like(description)
        if phrase:
            self.sink.warning(
                self.locate(f"{pointer}/description"),
                f"the description reads like an instruction to the model ({phrase[:60]!r})",
                "describe what the tool does, when to use it and what it returns",
            )
        stem = name[len(namespace) + 1 :]
        title = one_line(str(node.get("title") or "")) or common.default_title(stem)
        annotations = self.annotations(node, title, request)
        confirmation = node.get("confirmation") or ir.confirmation_for(
            self.options.confirmation, annotations
        )
        return ir.Tool(
            name=name,
            python_name=name,
            class_stem=naming.pascal(stem) or "Tool",
            title=title,
            description=description,
            input_schema=input_schema,
            output_schema=output_schema,
            output_wrap=wrap,
            examples=examples,
            annotations=annotations,
            request=request,
            security=() if request is None else self.security(node, pointer, known_schemes),
            operation_id=str(node["name"]),
            source=pointer,
            confirmation=confirmation,
            scopes=tuple(sorted(set(node.get("scopes", ())))),
            operator_confirmation="confirmation" in node
            or any(key in ir.CONFIRMATION_HINTS for key in node.get("annotations", {})),
        )

    def input_schema(self, node: Mapping[str, Any], pointer: str) -> dict[str, Any] | None:
        where = f"{pointer}/input_schema"
        raw = node["input_schema"]
        if raw.get("type", "object") != "object":
            self.sink.error(
                self.locate(where),
                "input_schema must describe an object (the tool's one argument object)",
                "use `type: object` with `properties`",
            )
            return None
        inputs = self.converter.root("input")
        converted = inputs.convert({**raw, "type": "object"}, where)
        schema = inputs.finish(converted)
        for argument in schema.get("properties", {}):
            if not _IDENTIFIER.match(argument) or naming.argument_name(argument) != argument:
                self.sink.error(
                    self.locate(refs.join(where, "properties", argument)),
                    f"argument name {argument!r} is not a plain identifier",
                    "use snake_case argument names; send another wire name with "
                    "http.arguments: {name: {in: header, name: X-Wire-Name}}",
                )
                return None
        return schema

    def output_schema(
        self, node: Mapping[str, Any], pointer: str
    ) -> tuple[dict[str, Any] | None, str | None]:
        if "output_schema" not in node:
            return None, None
        where = f"{pointer}/output_schema"
        outputs = self.converter.root("output")
        converted = outputs.convert(node["output_schema"], where)
        if converted.get("type") == "object":
            return outputs.finish(converted), None
        # structuredContent is always an object: any other result travels as `result`.
        wrapped = {"type": "object", "properties": {"result": converted}, "required": ["result"]}
        return outputs.finish(wrapped), "result"

    def examples(
        self, node: Mapping[str, Any], pointer: str, schema: dict[str, Any]
    ) -> tuple[dict[str, Any], ...]:
        """Each example must match the tool's (strict) input schema: an operator's example
        that does not is an error naming it (an OpenAPI spec's is only left out)."""
        validator = schema_validator(schema)
        kept: list[dict[str, Any]] = []
        for index, example in enumerate(node.get("examples", ())):
            error = next(iter(validator.iter_errors(example)), None)
            if error is None:
                kept.append(example)
                continue
            where = "/".join(str(p) for p in error.absolute_path)
            self.sink.error(
                self.locate(refs.join(pointer, "examples", index, *error.absolute_path)),
                f"example {index} of tool {node['name']!r} does not match its input_schema"
                + (f" at {where}" if where else "")
                + f": {one_line(error.message, 200)}",
                "fix the example or the schema; examples reach the model and the generated tests",
            )
        return tuple(kept)

    def request(
        self, http: Mapping[str, Any], pointer: str, input_schema: Mapping[str, Any]
    ) -> ir.Request | None:
        method = str(http["method"]).upper()
        path = str(http["path"])
        properties: Mapping[str, Any] = input_schema.get("properties", {})
        required = set(input_schema.get("required", ()))
        placeholders = _PLACEHOLDER.findall(path)
        ok = True
        for wire in placeholders:
            if wire not in properties:
                self.sink.error(
                    self.locate(f"{pointer}/path"),
                    f"path placeholder {{{wire}}} is not an argument of input_schema",
                    f"add {wire!r} to input_schema.properties (and to required)",
                )
                ok = False
        placements = self.placements(http, pointer, properties, placeholders, method)
        for argument, placement in placements.items():
            if placement.location == "path" and argument not in required:
                self.sink.error(
                    self.locate(placement.pointer),
                    f"path argument {argument!r} must be required",
                    "list it under input_schema.required",
                )
                ok = False
            if placement.location == "path" and placement.wire not in placeholders:
                self.sink.error(
                    self.locate(placement.pointer),
                    f"argument {argument!r} goes in the path, but {path} has no "
                    f"{{{placement.wire}}}",
                    "add the placeholder to http.path, or send it elsewhere",
                )
                ok = False
            if placement.location == "header" and placement.wire.lower() in RESERVED_HEADERS:
                self.sink.error(
                    self.locate(placement.pointer),
                    f"argument {argument!r} may not set the {placement.wire} header",
                    "credentials come from security_schemes; framing headers are the runtime's",
                )
                ok = False
        if not ok:
            return None
        parameters = tuple(
            sorted(
                (
                    ir.Parameter(
                        argument=argument,
                        name=placement.wire,
                        location=placement.location,  # type: ignore[arg-type]
                        style=_STYLES[placement.location],
                        explode=placement.location in ("query", "cookie"),
                        required=argument in required,
                    )
                    for argument, placement in placements.items()
                    if placement.location != "body"
                ),
                key=lambda p: (p.location, p.name),
            )
        )
        body_properties = tuple(
            sorted(
                (argument, placement.wire)
                for argument, placement in placements.items()
                if placement.location == "body"
            )
        )
        body = None
        if body_properties:
            body = ir.Body(
                media_type="application/json",
                required=any(argument in required for argument, _ in body_properties),
                argument=None,
                properties=body_properties,
            )
        return ir.Request(method, path, parameters, body, "application/json")

    def placements(
        self,
        http: Mapping[str, Any],
        pointer: str,
        properties: Mapping[str, Any],
        placeholders: list[str],
        method: str,
    ) -> dict[str, _Placement]:
        """Where each argument goes: as written in `http.arguments`, else the default (path
        for a placeholder, query for GET/HEAD/DELETE/OPTIONS, the JSON body otherwise)."""
        written = http.get("arguments", {})
        found: dict[str, _Placement] = {}
        for argument, where in written.items():
            at = refs.join(pointer, "arguments", argument)
            if argument not in properties:
                self.sink.error(
                    self.locate(at),
                    f"http.arguments names {argument!r}, which is not in input_schema",
                    "every argument placed must be a property of input_schema",
                )
                continue
            if isinstance(where, str):
                found[argument] = _Placement(where, argument, at)
            else:
                found[argument] = _Placement(where["in"], where.get("name", argument), at)
        for argument in properties:
            if argument in found:
                continue
            if argument in placeholders:
                location = "path"
            elif method in _QUERY_METHODS:
                location = "query"
            else:
                location = "body"
            found[argument] = _Placement(location, argument, f"{pointer}")
        return found

    def annotations(
        self, node: Mapping[str, Any], title: str, request: ir.Request | None
    ) -> ir.Annotations:
        """The manifest is the operator's word: its hints are taken as written. Unset ones
        come from the method (HTTP) or MCP's cautious defaults (a handler may do anything)."""
        written = node.get("annotations", {})
        if request is not None:
            base = common.method_annotations(request.method, title)
        else:
            base = ir.Annotations(title, read_only=False, destructive=True, idempotent=False)
        read_only = bool(written.get("readOnlyHint", base.read_only))
        return ir.Annotations(
            title,
            read_only=read_only,
            # A tool declared read-only destroys nothing unless the manifest says otherwise.
            destructive=bool(written.get("destructiveHint", base.destructive and not read_only)),
            idempotent=bool(written.get("idempotentHint", base.idempotent)),
            open_world=bool(written.get("openWorldHint", base.open_world)),
        )


_TEMPLATE_TOKEN = re.compile(r"\{\{|\}\}|\{([^{}]*)\}")


def placeholders(text: str) -> list[str]:
    """The `{name}` placeholders of a prompt message (`{{` and `}}` are literal braces); the
    runtime fills them the same way (runtime/content.py `render_text`)."""
    return [m.group(1) for m in _TEMPLATE_TOKEN.finditer(text) if m.group(1) is not None]
