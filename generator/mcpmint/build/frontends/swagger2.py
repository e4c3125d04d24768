"""Swagger 2.0 -> the OpenAPI 3.0 shape, so that one frontend builds both.

`convert(data)` is pure: it never touches its input, never opens a network connection, and
returns a new document that `frontends/openapi.py` reads as OpenAPI 3.0. `converted_document`
wraps the result in a `RawDocument` whose `locate()` maps pointers of the converted shape back
to where the values were written in the 2.0 files, so diagnostics keep their `file:line:col`.

Rules (see docs/corpus.md for the list with examples):

- `host` + `basePath` + `schemes` -> `servers` (https first, then http);
- `definitions`, root `parameters`, root `responses`, `securityDefinitions` -> `components/...`,
  and every `#/definitions/X` (`#/parameters/X`, `#/responses/X`) `$ref` rewritten, in mounted
  files too;
- a `body` parameter -> `requestBody` with one content entry per `consumes` media type
  (default `application/json`); `formData` parameters -> one object schema under
  `application/x-www-form-urlencoded`, or `multipart/form-data` when `consumes` asks only for
  it or a parameter has `type: file`;
- other parameters: `type`/`format`/`items`/`enum`/`default`/bounds -> `schema`;
  `collectionFormat` -> `style`/`explode`;
- a response `schema` -> `content` per `produces` (default `application/json`);
- `basic` -> http basic, `apiKey` as is, `oauth2` flows renamed to their 3.0 names;
- `x-nullable: true` -> `nullable: true`, `type: file` -> a binary string.

Operations stay at their `#/paths/...` pointers. `$ref`'d parameters and responses are
inlined, converted, into the operation that uses them (a shared one can need different media
types in different operations); their pointers map back to where they were defined.

One module, over 600 lines: a conversion table, one rule per Swagger construct, each small;
split, the rules would lose the one place that maps converted pointers back to the 2.0 files.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mcpmint import refs
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import RawDocument
from mcpmint.load.specversion import SpecVersion

OPENAPI_VERSION = "3.0.3"
HTTP_METHODS = ("get", "put", "post", "delete", "options", "head", "patch")
_FORM = "application/x-www-form-urlencoded"
_MULTIPART = "multipart/form-data"
_JSON = "application/json"
# Root sections that move under `components`: (2.0 name, 3.0 name).
_SECTIONS = (
    ("definitions", "schemas"),
    ("parameters", "parameters"),
    ("responses", "responses"),
    ("securityDefinitions", "securitySchemes"),
)
_REF_PREFIXES = (
    ("#/definitions/", "#/components/schemas/"),
    ("#/parameters/", "#/components/parameters/"),
    ("#/responses/", "#/components/responses/"),
)
# Parameter-level keywords of 2.0 that describe the value: they become the 3.0 `schema`.
_SCHEMA_KEYS = (
    "type",
    "format",
    "items",
    "default",
    "maximum",
    "exclusiveMaximum",
    "minimum",
    "exclusiveMinimum",
    "maxLength",
    "minLength",
    "pattern",
    "maxItems",
    "minItems",
    "uniqueItems",
    "enum",
    "multipleOf",
    "example",
)
# Keys a 2.0 parameter keeps as they are in 3.0.
_PARAMETER_KEYS = ("name", "in", "description", "required", "deprecated", "allowEmptyValue")
_FLOWS = {
    "implicit": "implicit",
    "password": "password",
    "application": "clientCredentials",
    "accessCode": "authorizationCode",
}
_FLOW_URLS = {
    "implicit": ("authorizationUrl",),
    "password": ("tokenUrl",),
    "clientCredentials": ("tokenUrl",),
    "authorizationCode": ("authorizationUrl", "tokenUrl"),
}


@dataclass
class Conversion:
    """The converted document, where its pieces came from, and what could not be kept."""

    data: dict[str, Any]
    # Pointer prefix in the converted document -> pointer in the 2.0 document.
    origins: dict[str, str] = field(default_factory=dict)
    # (2.0 pointer, message): things converted with a loss, for warnings.
    notes: list[tuple[str, str]] = field(default_factory=list)

    def origin(self, pointer: str) -> str:
        """The 2.0 pointer a converted pointer came from (longest known prefix wins)."""
        prefix = pointer
        while True:
            found = self.origins.get(prefix)
            if found is not None:
                return found + pointer[len(prefix) :]
            if "/" not in prefix:
                return pointer
            prefix = prefix.rsplit("/", 1)[0]


@dataclass(frozen=True)
class ConvertedDocument(RawDocument):
    """A 2.0 document in the 3.0 shape; `locate` answers with the 2.0 file's positions."""

    original: RawDocument | None = None
    conversion: Conversion | None = None

    def locate(self, pointer: str) -> str:
        if self.original is None or self.conversion is None:
            return super().locate(pointer)
        return self.original.locate(self.conversion.origin(pointer))


def convert(data: Mapping[str, Any]) -> dict[str, Any]:
    """The OpenAPI 3.0 form of a (bundled) Swagger 2.0 document. `data` is left untouched."""
    return convert_with_origins(data).data


def convert_with_origins(data: Mapping[str, Any]) -> Conversion:
    """Like `convert`, also saying where each converted piece came from."""
    return _Converter(data).run()


def converted_document(doc: RawDocument) -> tuple[ConvertedDocument, list[tuple[str, str]]]:
    """`doc` (Swagger 2.0) in the 3.0 shape, and the located notes about lossy conversions."""
    conversion = convert_with_origins(doc.data)
    converted = ConvertedDocument(
        path=doc.path,
        root=doc.root,
        data=conversion.data,
        files=doc.files,
        original=doc,
        conversion=conversion,
    )
    notes = [(doc.locate(pointer), message) for pointer, message in conversion.notes]
    return converted, notes


def as_openapi3(doc: RawDocument, sink: DiagnosticSink) -> tuple[RawDocument, SpecVersion]:
    """What `build_server` builds from a Swagger 2.0 document: the 3.0 shape, read as 3.0.

    Lossy conversions are reported as warnings at their place in the 2.0 files.
    """
    converted, notes = converted_document(doc)
    for location, message in notes:
        sink.warning(location, message)
    return converted, SpecVersion("openapi", 3, 0, OPENAPI_VERSION)


# ---------------------------------------------------------------------------- conversion


def _rewrite_ref(ref: str) -> str:
    for old, new in _REF_PREFIXES:
        if ref.startswith(old):
            return new + ref[len(old) :]
    return ref


def _fix_tree(node: Any) -> Any:
    """A deep copy with local `$ref`s moved to `components` and `x-nullable` made `nullable`.

    Iterative, so a deeply nested document cannot exhaust the stack; shared containers (YAML
    aliases) stay shared, as `copy.deepcopy` would keep them.
    """
    memo: dict[int, Any] = {}

    def shell(value: Any) -> tuple[Any, bool]:
        if isinstance(value, dict):
            if id(value) in memo:
                return memo[id(value)], False
            new: Any = {}
        elif isinstance(value, list):
            if id(value) in memo:
                return memo[id(value)], False
            new = []
        else:
            return value, False
        memo[id(value)] = new
        return new, True

    root, fresh = shell(node)
    stack = [(node, root)] if fresh else []
    while stack:
        source, target = stack.pop()
        if isinstance(source, dict):
            for key, value in source.items():
                child, child_fresh = shell(value)
                if key == "$ref" and isinstance(value, str):
                    child = _rewrite_ref(value)
                target[key] = child
                if child_fresh:
                    stack.append((value, child))
            if target.get("x-nullable") is True and "nullable" not in target:
                target["nullable"] = True
        else:
            for value in source:
                child, child_fresh = shell(value)
                target.append(child)
                if child_fresh:
                    stack.append((value, child))
    return root


def _media_list(value: Any) -> list[str] | None:
    if not isinstance(value, list):
        return None
    return [str(m) for m in value if isinstance(m, str) and m.strip()]


class _Converter:
    def __init__(self, data: Mapping[str, Any]) -> None:
        self.source = data
        self.conversion = Conversion(data={})
        self.origins = self.conversion.origins
        self.consumes = _media_list(data.get("consumes")) or []
        self.produces = _media_list(data.get("produces")) or []

    # ------------------------------------------------------------------ helpers
    def note(self, pointer: str, message: str) -> None:
        self.conversion.notes.append((pointer, message))

    def map(self, new: str, old: str) -> None:
        """Record that the converted `new` pointer came from the 2.0 `old` pointer."""
        if new != old:
            self.origins[new] = old

    def deref(self, node: Any, pointer: str) -> tuple[Any, str]:
        """Follow `$ref`s in the 2.0 document; a broken chain gives the node itself."""
        try:
            return refs.deref(self.source, node, pointer)
        except refs.PointerError:
            return node, pointer

    # ------------------------------------------------------------------ document
    def run(self) -> Conversion:
        out: dict[str, Any] = {"openapi": OPENAPI_VERSION}
        skip = {"swagger", "host", "basePath", "schemes", "consumes", "produces", "paths"}
        skip |= {old for old, _ in _SECTIONS}
        for key, value in self.source.items():
            if key not in skip:
                out[key] = _fix_tree(value)
        servers = self.servers()
        if servers:
            out["servers"] = servers
            self.map("#/servers", "#/host" if "host" in self.source else "#/basePath")
        components = self.components()
        if components:
            out["components"] = components
        paths = self.source.get("paths")
        if isinstance(paths, list):  # a list of `$ref`s to mappings of path items: merged
            merged: dict[str, Any] = {}
            for index, element in enumerate(paths):
                chunk, _ = self.deref(element, refs.join("#/paths", index))
                if isinstance(chunk, Mapping):
                    for path, item in chunk.items():
                        merged.setdefault(str(path), item)
            paths = merged if merged else paths
        if isinstance(paths, Mapping):
            out["paths"] = {
                str(path): self.path_item(item, refs.join("#/paths", str(path)))
                for path, item in paths.items()
            }
        elif "paths" in self.source:
            out["paths"] = _fix_tree(paths)
        # Keep the familiar key order: openapi, info, servers, ..., paths, components.
        order = ["openapi", "info", "servers", "tags", "security", "paths", "components"]
        ordered = {key: out[key] for key in order if key in out}
        ordered.update((key, value) for key, value in out.items() if key not in ordered)
        self.conversion.data = ordered
        return self.conversion

    def servers(self) -> list[dict[str, Any]]:
        host = self.source.get("host")
        base = self.source.get("basePath")
        base_path = base if isinstance(base, str) else ""
        if base_path and not base_path.startswith("/"):
            base_path = "/" + base_path
        base_path = base_path.rstrip("/")
        if not isinstance(host, str) or not host.strip():
            return [{"url": base_path}] if base_path else []
        listed = self.source.get("schemes")
        schemes = (
            [s.lower() for s in listed if isinstance(s, str)] if isinstance(listed, list) else []
        )
        usable = [s for s in ("https", "http") if s in schemes] or ["https"]
        return [{"url": f"{scheme}://{host.strip()}{base_path}"} for scheme in usable]

    def components(self) -> dict[str, Any]:
        components: dict[str, Any] = {}
        for old, new in _SECTIONS:
            self.map(f"#/components/{new}", f"#/{old}")
            section = self.source.get(old)
            if not isinstance(section, Mapping):
                continue
            if old == "definitions":
                components[new] = _fix_tree(section)
            elif old == "parameters":
                converted = {}
                for name, param in section.items():
                    pointer = refs.join("#/parameters", str(name))
                    if isinstance(param, Mapping) and param.get("in") not in ("body", "formData"):
                        new_pointer = refs.join("#/components/parameters", str(name))
                        converted[str(name)] = self.parameter(param, pointer, new_pointer)
                # Body and form parameters have no 3.0 component: they are inlined where used.
                components[new] = converted
            elif old == "responses":
                components[new] = {
                    str(name): self.response(
                        response,
                        refs.join("#/responses", str(name)),
                        refs.join("#/components/responses", str(name)),
                        self.produces,
                    )
                    for name, response in section.items()
                }
            else:
                components[new] = {
                    str(name): self.security_scheme(
                        scheme, refs.join("#/securityDefinitions", str(name))
                    )
                    for name, scheme in section.items()
                }
        return components

    # ------------------------------------------------------------------ security
    def security_scheme(self, scheme: Any, pointer: str) -> Any:
        if not isinstance(scheme, Mapping):
            return _fix_tree(scheme)
        kind = scheme.get("type")
        extras = {k: _fix_tree(v) for k, v in scheme.items() if str(k).startswith("x-")}
        if "description" in scheme:
            extras["description"] = scheme["description"]
        if kind == "basic":
            return {"type": "http", "scheme": "basic", **extras}
        if kind == "oauth2":
            flow = _FLOWS.get(str(scheme.get("flow")))
            if flow is None:
                self.note(pointer, f"unknown oauth2 flow {scheme.get('flow')!r}")
                return {"type": "oauth2", "flows": {}, **extras}
            scopes = scheme.get("scopes")
            body: dict[str, Any] = {
                key: scheme[key] for key in _FLOW_URLS[flow] if isinstance(scheme.get(key), str)
            }
            body["scopes"] = dict(scopes) if isinstance(scopes, Mapping) else {}
            return {"type": "oauth2", "flows": {flow: body}, **extras}
        return _fix_tree(scheme)  # apiKey is the same in 3.0; anything else is reported later

    # ------------------------------------------------------------------ paths
    def path_item(self, node: Any, pointer: str) -> Any:
        item, item_pointer = self.deref(node, pointer)
        if not isinstance(item, Mapping):
            return _fix_tree(node)
        self.map(pointer, item_pointer)
        out: dict[str, Any] = {}
        shared: list[tuple[Any, str]] = []
        listed = item.get("parameters")
        if isinstance(listed, list):
            shared = [(p, refs.join(item_pointer, "parameters", i)) for i, p in enumerate(listed)]
        plain, _ = self.split_parameters(shared)
        for key, value in item.items():
            if key in HTTP_METHODS and isinstance(value, Mapping):
                # An operation given by `$ref` (to another file): followed.
                op, op_pointer = self.deref(value, refs.join(item_pointer, key))
                if not isinstance(op, Mapping) or refs.unresolved(op) is not None:
                    out[key] = _fix_tree(value)
                    continue
                out[key] = self.operation(op, refs.join(pointer, key), op_pointer, shared)
            elif key == "parameters":
                out[key] = self.parameter_list(plain, refs.join(pointer, "parameters"))
            elif key != "$ref":
                out[key] = _fix_tree(value)
        return out

    def split_parameters(
        self, entries: list[tuple[Any, str]]
    ) -> tuple[list[tuple[Mapping[str, Any], str]], list[tuple[Mapping[str, Any], str]]]:
        """Parameters (resolved, with their 2.0 pointers) that stay parameters; body and form."""
        plain: list[tuple[Mapping[str, Any], str]] = []
        body: list[tuple[Mapping[str, Any], str]] = []
        for node, pointer in entries:
            param, param_pointer = self.deref(node, pointer)
            if not isinstance(param, Mapping):
                continue
            (body if param.get("in") in ("body", "formData") else plain).append(
                (param, param_pointer)
            )
        return plain, body

    def parameter_list(
        self, params: list[tuple[Mapping[str, Any], str]], new_pointer: str
    ) -> list[Any]:
        return [
            self.parameter(param, old, refs.join(new_pointer, index))
            for index, (param, old) in enumerate(params)
        ]

    def operation(
        self,
        operation: Mapping[str, Any],
        pointer: str,
        old_pointer: str,
        shared: list[tuple[Any, str]],
    ) -> dict[str, Any]:
        self.map(pointer, old_pointer)
        consumes = _media_list(operation.get("consumes"))
        produces = _media_list(operation.get("produces"))
        consumes = self.consumes if consumes is None else consumes
        produces = self.produces if produces is None else produces
        listed = operation.get("parameters")
        own: list[tuple[Any, str]] = []
        if isinstance(listed, list):
            own = [(p, refs.join(old_pointer, "parameters", i)) for i, p in enumerate(listed)]
        own_plain, own_body = self.split_parameters(own)
        _, shared_body = self.split_parameters(shared)
        # Operation-level parameters override path-level ones with the same name and place.
        own_keys = {(p.get("in"), p.get("name")) for p, _ in [*own_plain, *own_body]}
        body_params = [
            *[(p, o) for p, o in shared_body if (p.get("in"), p.get("name")) not in own_keys],
            *own_body,
        ]
        out: dict[str, Any] = {}
        for key, value in operation.items():
            if key in ("consumes", "produces", "schemes"):
                continue
            if key == "parameters":
                if own_plain:
                    out[key] = self.parameter_list(own_plain, refs.join(pointer, "parameters"))
            elif key == "responses" and isinstance(value, Mapping):
                out[key] = {
                    str(code): self.response(
                        response,
                        refs.join(old_pointer, "responses", str(code)),
                        refs.join(pointer, "responses", str(code)),
                        produces,
                    )
                    for code, response in value.items()
                }
            else:
                out[key] = _fix_tree(value)
        if body_params:
            body = self.request_body(body_params, consumes, pointer, old_pointer)
            if body is not None:
                out["requestBody"] = body
        return out

    # ------------------------------------------------------------------ parameters
    def parameter(self, param: Any, old: str, new: str) -> Any:
        if not isinstance(param, Mapping):
            return _fix_tree(param)
        self.map(new, old)
        out: dict[str, Any] = {k: param[k] for k in _PARAMETER_KEYS if k in param}
        out.update((k, _fix_tree(v)) for k, v in param.items() if str(k).startswith("x-"))
        out.pop("x-nullable", None)
        if "x-example" in param and "example" not in param:
            out["example"] = _fix_tree(param["x-example"])
        location = param.get("in")
        if "schema" in param:  # not 2.0, but messy specs have it; keep it as it is
            out["schema"] = _fix_tree(param["schema"])
            return out
        schema = self.value_schema(param, old)
        out["schema"] = schema
        self.map(refs.join(new, "schema"), old)
        if schema.get("type") == "array":
            fmt = param.get("collectionFormat", "csv")
            style, explode = self.collection_style(fmt, location, old)
            out["style"], out["explode"] = style, explode
        return out

    def value_schema(self, node: Mapping[str, Any], pointer: str) -> dict[str, Any]:
        """The 3.0 schema of a 2.0 parameter, header or `items` object."""
        schema: dict[str, Any] = {}
        for key in _SCHEMA_KEYS:
            if key not in node:
                continue
            value = node[key]
            if key == "items" and isinstance(value, Mapping):
                if "$ref" in value:
                    schema[key] = _fix_tree(value)
                else:
                    schema[key] = self.value_schema(value, refs.join(pointer, "items"))
                    if "collectionFormat" in value:
                        self.note(
                            refs.join(pointer, "items", "collectionFormat"),
                            "a collectionFormat inside items has no OpenAPI 3 form; ignored",
                        )
            else:
                schema[key] = _fix_tree(value)
        if node.get("x-nullable") is True:
            schema["nullable"] = True
        if schema.get("type") == "file":
            schema["type"] = "string"
            schema["format"] = "binary"
        return schema

    def collection_style(self, fmt: Any, location: Any, pointer: str) -> tuple[str, bool]:
        simple = location in ("path", "header")
        if fmt == "multi":
            if location in ("query", "formData"):
                return "form", True
            self.note(pointer, "collectionFormat multi is only for query and form parameters")
            return ("simple" if simple else "form"), False
        if fmt == "ssv" and location == "query":
            return "spaceDelimited", False
        if fmt == "pipes" and location == "query":
            return "pipeDelimited", False
        if fmt not in ("csv", None):
            self.note(
                refs.join(pointer, "collectionFormat"),
                f"collectionFormat {fmt!r} has no OpenAPI 3 form here; values are sent "
                "comma-separated",
            )
        return ("simple" if simple else "form"), False

    def request_body(
        self,
        params: list[tuple[Mapping[str, Any], str]],
        consumes: list[str],
        pointer: str,
        old_pointer: str,
    ) -> dict[str, Any] | None:
        new = refs.join(pointer, "requestBody")
        body = [(p, o) for p, o in params if p.get("in") == "body"]
        form = [(p, o) for p, o in params if p.get("in") == "formData"]
        if body:
            param, old = body[0]
            if form or len(body) > 1:
                self.note(
                    old_pointer,
                    "an operation has both a body and form parameters, or several bodies; "
                    "only the first body is used",
                )
            self.map(new, old)
            media_types = [m for m in consumes if m not in (_FORM, _MULTIPART)] or [_JSON]
            content = {}
            for media in media_types:
                content[media] = {"schema": _fix_tree(param.get("schema", {}))}
                self.map(refs.join(new, "content", media, "schema"), refs.join(old, "schema"))
                examples = param.get("x-examples")
                if isinstance(examples, Mapping) and media in examples:
                    content[media]["example"] = _fix_tree(examples[media])
            out: dict[str, Any] = {"content": content}
            if "description" in param:
                out["description"] = param["description"]
            if param.get("required") is True:
                out["required"] = True
            return out
        properties: dict[str, Any] = {}
        required: list[str] = []
        encoding: dict[str, Any] = {}
        has_file = False
        for param, old in form:
            name = param.get("name")
            if not isinstance(name, str):
                continue
            schema = self.value_schema(param, old)
            if "description" in param and isinstance(param["description"], str):
                schema["description"] = param["description"]
            has_file = has_file or param.get("type") == "file"
            properties[name] = schema
            if param.get("required") is True and name not in required:
                required.append(name)
            fmt = param.get("collectionFormat", "csv")
            if schema.get("type") == "array" and fmt != "multi":
                # Kept as the 3.0 `encoding` for the record; the runtime repeats the field.
                style, explode = self.collection_style(fmt, "query", old)
                encoding[name] = {"style": style, "explode": explode}
                self.note(
                    refs.join(old, "collectionFormat"),
                    f"form arrays are sent as repeated fields (collectionFormat multi), "
                    f"not {fmt!r}",
                )
        if not properties:
            return None
        self.map(new, refs.join(old_pointer, "parameters"))
        wanted = [m for m in consumes if m.split(";")[0].strip().lower() in (_FORM, _MULTIPART)]
        if has_file:
            media_types = [_MULTIPART]
        elif any(m.split(";")[0].strip().lower() == _FORM for m in wanted):
            media_types = [_FORM]
        else:
            media_types = wanted or [_FORM]
        object_schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            object_schema["required"] = required
        content = {}
        for media in media_types:
            content[media] = {"schema": copy.deepcopy(object_schema)}
            if encoding and media == _FORM:
                content[media]["encoding"] = copy.deepcopy(encoding)
            schema_pointer = refs.join(new, "content", media, "schema")
            self.map(schema_pointer, refs.join(old_pointer, "parameters"))
            for param, old in form:
                if isinstance(param.get("name"), str):
                    self.map(refs.join(schema_pointer, "properties", param["name"]), old)
        out = {"content": content}
        if required:
            out["required"] = True
        return out

    # ------------------------------------------------------------------ responses
    def response(self, node: Any, old: str, new: str, produces: list[str]) -> Any:
        response, old = self.deref(node, old)
        if not isinstance(response, Mapping):
            return _fix_tree(node)
        self.map(new, old)
        out: dict[str, Any] = {}
        for key, value in response.items():
            if key in ("schema", "examples", "$ref"):
                continue
            if key == "headers" and isinstance(value, Mapping):
                out[key] = {
                    str(name): self.header(header, refs.join(old, "headers", str(name)))
                    for name, header in value.items()
                }
            else:
                out[key] = _fix_tree(value)
        out.setdefault("description", "")
        if "schema" in response:
            examples = response.get("examples")
            content: dict[str, Any] = {}
            for media in produces or [_JSON]:
                schema = _fix_tree(response["schema"])
                if isinstance(schema, dict) and schema.get("type") == "file":
                    schema = {k: v for k, v in schema.items() if k != "type"}
                    schema.update(type="string", format="binary")
                content[media] = {"schema": schema}
                self.map(refs.join(new, "content", media, "schema"), refs.join(old, "schema"))
                if isinstance(examples, Mapping) and media in examples:
                    content[media]["example"] = _fix_tree(examples[media])
            out["content"] = content
        return out

    def header(self, header: Any, pointer: str) -> Any:
        if not isinstance(header, Mapping):
            return _fix_tree(header)
        out: dict[str, Any] = {}
        if "description" in header:
            out["description"] = header["description"]
        out["schema"] = self.value_schema(header, pointer)
        return out
