"""Opt-in: GET operations of an OpenAPI source that are also MCP resource templates.

`sources[i].resources` in mcpmint.yaml is a selection (the keys of `include`: tags,
operations, methods, paths; an operation matches when it matches every key given) over the
source's tools. Each selected tool must be a GET whose only required arguments are path
parameters; it becomes the template `<namespace>://<path>` (`petstore://pets/{petId}`), read
with the tool's own request (path parameters only), credentials and upstream. The tool stays a
tool. Reference: docs/manifests.md ("Resources from OpenAPI").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import replace
from fnmatch import fnmatchcase

from mcpmint import ir, refs
from mcpmint.config import Selection
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.document import RawDocument

_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def add_resource_templates(
    server: ir.Server, selection: Selection, document: RawDocument, sink: DiagnosticSink
) -> ir.Server:
    """`server` with a resource template for each tool the selection picks."""
    picked = [tool for tool in server.tools if _matches(selection, tool, document)]
    if not picked:
        sink.error(
            selection.location,
            "the resources selection picks none of this source's tools",
            "name GET operations by operationId, tag, method or path glob (docs/manifests.md)",
        )
        return server
    found = [r for tool in picked if (r := _template(server, tool, selection, sink)) is not None]
    resources = sorted([*server.resources, *found], key=lambda r: r.name)
    return replace(server, resources=tuple(resources))


def _template(
    server: ir.Server, tool: ir.Tool, selection: Selection, sink: DiagnosticSink
) -> ir.Resource | None:
    request = tool.request
    if request is None or request.method != "GET":
        method = "a handler" if request is None else request.method
        sink.error(
            selection.location,
            f"{tool.name} ({method}) cannot be a resource template: only GET operations can",
            "narrow the resources selection, e.g. methods: [GET]",
        )
        return None
    required = set(tool.input_schema.get("required", ()))
    path_args = {p.argument for p in request.parameters if p.location == "path"}
    others = sorted(required - path_args)
    if others:
        sink.error(
            selection.location,
            f"{tool.name} cannot be a resource template: it needs the argument(s) "
            f"{', '.join(others)}, which a resource URI cannot carry",
            "only operations whose required arguments are path parameters can be resources",
        )
        return None
    path_params = tuple(p for p in request.parameters if p.location == "path")
    by_wire = {p.name: p.argument for p in path_params}
    template = _PLACEHOLDER.sub(lambda m: "{" + by_wire[m.group(1)] + "}", request.path)
    return ir.Resource(
        name=tool.name,
        title=tool.title,
        description=tool.description,
        mime_type=request.accept or "application/json",
        uri_template=f"{server.namespace}://{template.lstrip('/')}",
        uri="",
        request=replace(request, parameters=path_params),
        security=tool.security,
        upstream=tool.upstream,
        source=tool.source,
    )


def _matches(selection: Selection, tool: ir.Tool, document: RawDocument) -> bool:
    method, path = tool.endpoint
    found = []
    if selection.tags:
        found.append(any(tag in selection.tags for tag in _tags(tool, document)))
    if selection.operations:
        found.append(bool(tool.operation_id) and tool.operation_id in selection.operations)
    if selection.methods:
        found.append(method in selection.methods)
    if selection.paths:
        found.append(any(fnmatchcase(path, glob) for glob in selection.paths))
    return all(found)


def _tags(tool: ir.Tool, document: RawDocument) -> list[str]:
    try:
        operation = refs.resolve_pointer(document.data, tool.source)
    except refs.PointerError:
        return []
    tags = operation.get("tags") if isinstance(operation, Mapping) else None
    return [str(tag) for tag in tags] if isinstance(tags, list) else []
