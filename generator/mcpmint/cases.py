"""Test cases for a generated package's own tests (`tests/generated_cases.json`).

For every tool: arguments (the spec's example, or a small instance sampled from the schema),
the exact request the runtime must send for them, a response the upstream can answer with,
and arguments the server must refuse. Expected requests are computed with the runtime's own
request builder, the same code the package ships, so a generated test fails when the
package's runtime, catalogue or validation drift from what the generator saw.
"""

from __future__ import annotations

import base64
import json
from dataclasses import replace
from typing import Any
from urllib.parse import quote, urlsplit

from . import ir
from .diagnostics import DiagnosticSink
from .lock import digest
from .render import catalog, tool_definition
from .runtime.catalog import CatalogError, Tool, load_catalog
from .runtime.request import ArgumentError, build_request
from .runtime.visible import strip_data
from .sample import sample_instance
from .toolmemo import derived_key, digest_of, recall, remember
from .toolmodes import tools_listed

FALLBACK_BASE_URL = "http://upstream.test/api"
# The multipart boundary the recorded requests use (the server picks a fresh one per request;
# the generated test puts this one in its place before comparing).
CASES_BOUNDARY = "mcpmint-generated-test-boundary"
UNEXPECTED_ARGUMENT = "unexpected_argument"
_WRONG_VALUE = {
    "string": 12345,
    "integer": "ten",
    "number": "ten",
    "boolean": "yes",
    "array": "not a list",
    "object": "not an object",
}
_SECRET_ROLES = ("value", "token", "username", "password")


def test_environment(server: ir.Server) -> dict[str, str]:
    """Variables the generated tests run with: fake credentials, and a base URL if needed."""
    environ = {
        variable: f"test-{role}-{scheme.name.lower()}"
        for scheme in server.security_schemes
        for role, variable in scheme.env
        if role in _SECRET_ROLES
    }
    if not server.base_url:
        environ[f"{server.env_prefix}_BASE_URL"] = FALLBACK_BASE_URL
    for upstream in server.upstreams:  # several sources: each other one's base URL
        if not upstream.base_url:
            environ[upstream.env] = FALLBACK_BASE_URL
    # One request per call: the tests count what reaches the upstream, and retries (of safe
    # methods, after connection errors) would multiply it and add real back-off time.
    environ[f"{server.env_prefix}_RETRIES"] = "0"
    return dict(sorted(environ.items()))


def build_cases(server: ir.Server, sink: DiagnosticSink) -> dict[str, Any]:
    try:
        runtime_catalog = load_catalog(catalog(server), copy=False)  # made here, read only
    except CatalogError as exc:
        # The runtime refuses what the frontend should never have produced: a bug, said so.
        sink.error(
            server.source_file or "<spec>",
            f"the generated tool catalogue is invalid ({exc}); nothing was written",
            "this is a bug in mcpmint; please report it with the spec",
        )
        return {}
    runtime_tools = {tool.name: tool for tool in runtime_catalog.tools}
    base_url = server.base_url or FALLBACK_BASE_URL
    environ = test_environment(server)
    # What a tool's case reads besides the tool: the server's settings (base URLs, security
    # schemes, variables), never another tool. With the tool memo (toolmemo.py), a tool the
    # memo gave has the case it had, unless those settings changed.
    context = digest_of(replace(server, tools=(), cut_outputs=()))
    calls: dict[str, Any] = {}
    rejections: dict[str, Any] = {}
    unsampled: list[str] = []
    listed: dict[str, str | None] = {}  # tool name -> its tools/list definition's digest
    meta_definitions, listed_tools = tools_listed(server)
    listed_names = {tool.name for tool in listed_tools}
    for tool in server.tools:
        key = derived_key("case", tool, context) if context is not None else None
        case = recall(key)
        if case is None:
            warnings = len(sink.items)
            shown = tool.name in listed_names
            case = _case(server, tool, runtime_tools[tool.name], environ, shown, sink)
            if len(sink.items) == warnings:  # a warning belongs to every run
                remember(key, case)
        rejections[tool.name] = case["rejections"]
        listed[tool.name] = case["listed"]
        if case["call"] is not None:
            calls[tool.name] = case["call"]
        elif not tool.handler:
            unsampled.append(tool.name)
    return {
        "environ": environ,
        # What the tool mode lists: each definition's name and digest (the definitions
        # themselves are tools.json's, megabytes on a large API).
        "toolsList": [
            # As the runtime lists them: without invisible characters (docs/safety.md S20).
            *(
                {"name": meta["name"], "sha256": digest(strip_data(meta))}
                for meta in meta_definitions
            ),
            *({"name": tool.name, "sha256": listed[tool.name]} for tool in listed_tools),
        ],
        "calls": calls,
        "rejections": rejections,
        "unsampled": unsampled,
        "upstreamOrigin": _origin(base_url),
        # Tools whose calls wait for the user's yes (docs/safety.md), among those with a call.
        "confirmationRequired": sorted(
            name for name in calls if calls[name]["confirmation"] == "required"
        ),
    }


def _case(
    server: ir.Server,
    tool: ir.Tool,
    runtime_tool: Tool,
    environ: dict[str, str],
    shown: bool,
    sink: DiagnosticSink,
) -> dict[str, Any]:
    """One tool's part of the cases: the arguments it must refuse, its call (None for a
    handler tool or one whose arguments could not be made) and, when `tools/list` shows it,
    its definition's digest."""
    arguments = _arguments(tool)
    if arguments is not None:
        # The cases file is written with sorted keys; expect the body built from that order.
        arguments = json.loads(json.dumps(arguments, sort_keys=True))
    case: dict[str, Any] = {
        "rejections": _rejections(tool, arguments or {}),
        "call": None,
        "listed": digest(strip_data(tool_definition(tool))) if shown else None,
    }
    if tool.handler or arguments is None:
        return case  # a handler has no request to check; hooks.py answers it
    try:
        prepared = build_request(
            runtime_tool, arguments, _base_url(server, tool), boundary=CASES_BOUNDARY
        )
    except ArgumentError as exc:
        sink.warning(
            tool.source,
            f"tool {tool.name}: its example arguments cannot build a request ({exc}); "
            "the generated tests leave it out",
        )
        return case
    headers = {k.lower(): v for k, v in prepared.headers if k.lower() == "content-type"}
    query, credential_headers = _credentials(server, tool, environ)
    headers.update(credential_headers)
    url = prepared.url
    if query:
        url += ("&" if "?" in url else "?") + "&".join(query)
    case["call"] = {
        "arguments": arguments,
        "confirmation": tool.confirmation,
        "request": {
            "method": prepared.method,
            "url": url,
            "body": (prepared.body or b"").decode("utf-8"),
            "headers": headers,
        },
        "response": _response(tool),
        # Sent as text/plain, not as JSON: a bare JSON string must still go as JSON.
        "responseText": _text_response(tool),
    }
    return case


def _base_url(server: ir.Server, tool: ir.Tool) -> str:
    """Where the tool's request goes in the generated tests (several sources: its own)."""
    for upstream in server.upstreams:
        if upstream.name == tool.upstream:
            return upstream.base_url or FALLBACK_BASE_URL
    return server.base_url or FALLBACK_BASE_URL


def _credentials(
    server: ir.Server, tool: ir.Tool, environ: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """Where the test credentials of the tool's first security alternative must appear.

    The generated tests set every credential variable, so the runtime picks the first
    alternative; cookies are left out (they share one header with cookie parameters).
    """
    schemes = {scheme.name: scheme for scheme in server.security_schemes}
    query: list[str] = []
    headers: dict[str, str] = {}
    for use in tool.security[0] if tool.security else ():
        scheme = schemes[use.scheme]
        env = dict(scheme.env)
        if scheme.type == "apiKey" and scheme.location == "query":
            value = environ[env["value"]]
            query.append(f"{quote(scheme.parameter, safe='')}={quote(value, safe='')}")
        elif scheme.type == "apiKey" and scheme.location == "header":
            headers[scheme.parameter.lower()] = environ[env["value"]]
        elif scheme.type == "http" and scheme.scheme == "basic":
            pair = f"{environ[env['username']]}:{environ[env['password']]}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif "token" in env:
            headers["authorization"] = f"Bearer {environ[env['token']]}"
    return query, headers


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _arguments(tool: ir.Tool) -> dict[str, Any] | None:
    if tool.examples:
        return dict(tool.examples[0])
    ok, value = sample_instance(tool.input_schema, tool.input_schema.get("$defs"))
    return value if ok and isinstance(value, dict) else None


def _text_response(tool: ir.Tool) -> bool:
    """Whether the upstream answers the tool in text, not JSON (its Accept names no JSON)."""
    return bool(tool.request and tool.request.accept and "json" not in tool.request.accept)


def _response(tool: ir.Tool) -> Any:
    if _text_response(tool):
        return "ok"
    schema = tool.output_schema
    if schema is None:
        return {}
    if tool.output_wrap:
        schema = {**schema["properties"][tool.output_wrap], "$defs": schema.get("$defs", {})}
    ok, value = sample_instance(schema, schema.get("$defs"))
    return value if ok else {}


def _rejections(tool: ir.Tool, arguments: dict[str, Any]) -> list[dict[str, Any]]:
    """Arguments the server must refuse, each with the name the error must mention."""
    found = [{"arguments": {**arguments, UNEXPECTED_ARGUMENT: 1}, "names": UNEXPECTED_ARGUMENT}]
    properties = tool.input_schema.get("properties", {})
    for name in sorted(properties):
        kind = properties[name].get("type")
        if isinstance(kind, str) and kind in _WRONG_VALUE:
            found.append({"arguments": {**arguments, name: _WRONG_VALUE[kind]}, "names": name})
            break
    return found
