"""Test cases for a generated package's own tests (`tests/generated_cases.json`).

For every tool: arguments (the spec's example, or a small instance sampled from the schema),
the exact request the runtime must send for them, a response the upstream can answer with,
and arguments the server must refuse. Expected requests are computed with the runtime's own
request builder, the same code the package ships, so a generated test fails when the
package's runtime, catalogue or validation drift from what the generator saw.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote, urlsplit

import orjson

from mcpmint import ir
from mcpmint.build.frontends.manifest import is_manifest
from mcpmint.build.frontends.swagger2 import convert
from mcpmint.build.sample import sample_instance
from mcpmint.build.toolmemo import encode, record_text
from mcpmint.build.toolmodes import tools_listed
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.forked import FORK_MIN_TOOLS, Beside, beside
from mcpmint.load.document import RawDocument
from mcpmint.render.templates import (
    TEST_REQUIREMENTS,
    catalog,
    converted_file,
    dump_json,
    spec_folder,
    tool_definition,
)
from mcpmint.runtime.arguments import schema_validator
from mcpmint.runtime.catalog import CatalogError, Tool, load_catalog
from mcpmint.runtime.request import ArgumentError, build_request
from mcpmint.runtime.upstreams import operation_base_url
from mcpmint.runtime.visible import strip_data
from mcpmint.write.cache import Memo, StageCache
from mcpmint.write.lock import digest

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
_SPEC_SUFFIXES = (".json", ".yaml", ".yml")


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


# Where the generated tests read their cases from.
CASES_PATH = "tests/generated_cases.json"


def start_cases(server: ir.Server, cache: StageCache | None) -> Beside[str]:
    """The text of `CASES_PATH`, begun (in a forked child on a large server), with the
    previous run's cases from `cache`."""

    def cases_text(sink: DiagnosticSink) -> str:
        memo = cache.memo("cases") if cache is not None else None
        cases = build_cases(server, sink, memo)
        if cache is not None and memo is not None:
            cache.keep("cases", memo)
        return dump_json(cases)

    return beside(cases_text, cache, fork=len(server.tools) >= FORK_MIN_TOOLS)


def build_cases(
    server: ir.Server, sink: DiagnosticSink, memo: Memo | None = None
) -> dict[str, Any]:
    """The cases of every tool. `memo`: the previous run's cases, by a digest of everything
    a tool's case is made from (`_case_key`); a tool whose inputs did not change keeps its
    case, and the cases made or kept are added to its `used`."""
    document = catalog(server)
    try:
        runtime_catalog = load_catalog(document, copy=False)  # made here, read only
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
    calls: dict[str, Any] = {}
    wide_calls: dict[str, Any] = {}  # the same tools called with every argument (`_wide`)
    rejections: dict[str, Any] = {}
    unsampled: list[str] = []
    listed: dict[str, str | None] = {}  # tool name -> its tools/list definition's digest
    meta_definitions, listed_tools = tools_listed(server)
    listed_names = {tool.name for tool in listed_tools}
    context = _case_context(server, document, environ) if memo is not None else None
    for tool, entry in zip(server.tools, document["tools"], strict=True):
        shown = tool.name in listed_names
        key = _case_key(context, tool, entry, shown) if context is not None else None
        case = _reused_case(memo, key)
        if case is None:
            reported = len(sink.items)
            case = _case(server, tool, runtime_tools[tool.name], environ, shown, sink)
            if memo is not None and key is not None and len(sink.items) == reported:
                _remember_case(memo, key, case)  # a case that warned is made every run
        rejections[tool.name] = case["rejections"]
        listed[tool.name] = case["listed"]
        if case.get("wide") is not None:
            wide_calls[tool.name] = case["wide"]
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
        "wideCalls": wide_calls,
        "rejections": rejections,
        "unsampled": unsampled,
        "upstreamOrigin": _origin(base_url),
        # What the generated tests judge requests and confirmations by (oracle below).
        "oracle": _oracle(server),
        "confirmationPolicy": server.confirmation_policy,
        # Tools whose confirmation the operator's own files set (an mcpmint.yaml override,
        # a manifest tool's fields): the rule is theirs, not the method's.
        "confirmationSetByOperator": {
            tool.name: tool.confirmation
            for tool in server.tools
            if tool.operator_confirmation and tool.name in calls
        },
        # One tool of each kind the upstream's failures are tried on (`_kinds`).
        "errorKinds": _kinds(server, calls),
        # Tools whose calls wait for the user's yes (docs/safety.md), among those with a call.
        "confirmationRequired": sorted(
            name for name in calls if calls[name]["confirmation"] == "required"
        ),
    }


def _case_context(
    server: ir.Server, catalog_document: Mapping[str, Any], environ: dict[str, str]
) -> bytes | None:
    """What every tool's case is made from besides the tool: the catalogue but its tools,
    the test environment, the credentials' schemes, the upstreams and which of them ship a
    spec. None when it is not JSON data (then no case is reused)."""
    shared = [
        {key: value for key, value in catalog_document.items() if key != "tools"},
        environ,
        encode(server.security_schemes),
        encode(server.upstreams),
        server.base_url,
        [spec.upstream for spec in server.specs],
    ]
    try:
        return orjson.dumps(shared, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return None


def _case_key(context: bytes, tool: ir.Tool, entry: Any, shown: bool) -> str | None:
    """A digest of everything one tool's case is made from: `context`, the tool, its
    catalogue entry (what the runtime builds its request from), and whether it is listed."""
    try:
        own = orjson.dumps([encode(tool), entry, shown], option=orjson.OPT_SORT_KEYS)
    except TypeError:  # not JSON data (a big integer): made every run
        return None
    return hashlib.sha256(context + b"\n" + own).hexdigest()


def _reused_case(memo: Memo | None, key: str | None) -> dict[str, Any] | None:
    if memo is None or key is None or not isinstance(memo.previous.get(key), str):
        return None
    try:
        case = orjson.loads(memo.previous[key])
    except ValueError:  # a corrupt entry is a miss
        return None
    memo.used[key] = memo.previous[key]
    return case if isinstance(case, dict) else None


def _remember_case(memo: Memo, key: str, case: dict[str, Any]) -> None:
    try:
        memo.used[key] = record_text(case)  # what JSON carries exactly, as the tool memo
    except (TypeError, ValueError):  # a big integer, a NaN: made every run
        return
    memo.missed += 1


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
        case["call"] = _call(server, tool, runtime_tool, arguments, environ)
    except ArgumentError as exc:
        sink.warning(
            tool.source,
            f"tool {tool.name}: its example arguments cannot build a request ({exc}); "
            "the generated tests leave it out",
        )
        return case
    wide = _wide(tool, arguments)
    # A sample a request cannot carry (ArgumentError): the first call stands alone.
    with contextlib.suppress(ArgumentError):
        if wide is not None:
            case["wide"] = _call(server, tool, runtime_tool, wide, environ)
    return case


def _call(
    server: ir.Server,
    tool: ir.Tool,
    runtime_tool: Tool,
    arguments: dict[str, Any],
    environ: dict[str, str],
) -> dict[str, Any]:
    """A call of `tool` with `arguments`, the request it must send, the answer it gets."""
    assert tool.request is not None  # an HTTP tool's
    prepared = build_request(
        runtime_tool, arguments, _base_url(server, tool), boundary=CASES_BOUNDARY
    )
    # Every header the request carries besides the HTTP client's own (`Host`, ...): the
    # generated test refuses any other (and its oracle, any the spec does not declare).
    headers = {k.lower(): v for k, v in prepared.headers}
    query, credential_headers = _credentials(server, tool, environ)
    if "cookie" in headers and "cookie" in credential_headers:
        credential_headers["cookie"] = headers["cookie"] + "; " + credential_headers["cookie"]
    headers.update(credential_headers)
    url = _as_sent(prepared.url)
    if query:
        url += ("&" if "?" in url else "?") + "&".join(query)
    return {
        "arguments": arguments,
        "confirmation": tool.confirmation,
        # Where the spec describes the operation (its JSON pointer in the shipped spec), for
        # the oracle; None for a manifest's tool (no OpenAPI document describes it).
        "operation": _operation(tool.source, tool.request.path, prepared.method)
        if _has_spec(server, tool)
        else None,
        "upstream": tool.upstream,
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


def _as_sent(url: str) -> str:
    """`url` as the HTTP client sends it: scheme and host lower case, as RFC 3986 (6.2.2.1)
    compares them; a server variable's default may be written in capitals (GitHub
    Enterprise's `{protocol}://{hostname}`, `hostname: HOSTNAME`)."""
    parts = urlsplit(url)
    user, at, host = parts.netloc.rpartition("@")
    return parts._replace(scheme=parts.scheme.lower(), netloc=user + at + host.lower()).geturl()


def _operation(source: str, path: str, method: str) -> str:
    """The JSON pointer of the tool's operation in the spec's `paths` (where the oracle finds
    it, whether the path item is written there or `$ref`'d): its source when that is in
    `paths` (a path key may hold more than the request's path: `/#X-Amz-Target=...`), else
    built from the path."""
    if source.startswith("#/paths/"):
        return source
    return "#/paths/" + path.replace("~", "~0").replace("/", "~1") + "/" + method.lower()


def _wide(tool: ir.Tool, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """`arguments` with every optional argument added and every array of fewer than two
    items given two (what an example or a minimal sample leaves out is where a request is
    built wrongly unseen: an optional header, `explode` on a list), when that differs from
    `arguments` and is valid; else None. Top-level arguments only: the parameters and a
    body's members."""
    if tool.nulls_absent:  # strict-mode schemas: every argument is there already
        return None
    schema, defs = tool.input_schema, tool.input_schema.get("$defs")
    wide = dict(arguments)
    for name, node in sorted(schema.get("properties", {}).items()):
        value = wide.get(name)
        if name in wide and not (isinstance(value, list) and len(value) < 2):
            continue
        if isinstance(node, dict) and node.get("type") == "array":
            node = {**node, "minItems": max(2, node.get("minItems", 0))}
        elif isinstance(node, dict) and node.get("properties"):  # its members, not {}
            node = {**node, "minProperties": len(node["properties"])}
        ok, sampled = sample_instance(node, defs)
        # The default (often "", which a query may not carry) says nothing the upstream
        # would not assume.
        default = node.get("default", ...) if isinstance(node, dict) else ...
        if ok and sampled != "" and sampled != default:
            wide[name] = sampled
    wide = json.loads(json.dumps(wide, sort_keys=True))
    if wide == arguments or not schema_validator(schema).is_valid(wide):
        return None
    return dict(wide)


def spec_source(document: RawDocument, upstream: str, sink: DiagnosticSink) -> ir.SpecSource | None:
    """An OpenAPI source's files as the package ships them (`tests/spec/`), or None for a
    tool manifest, or files that cannot be shipped as plain data (said in a warning)."""
    if is_manifest(document.data):
        return None
    files = []
    for path in document.files:
        real = Path(os.path.realpath(path))
        try:
            relative = real.relative_to(document.root).as_posix()
        except ValueError:  # the loader reads nothing outside the root: never here
            relative = ""
        if not relative or real.suffix.lower() not in _SPEC_SUFFIXES:
            sink.warning(
                str(path),
                "this file of the spec is not shipped in the package (only .json, .yaml and "
                ".yml files are, as data); its generated tests check requests without the spec",
                "name the spec's files with a .json, .yaml or .yml suffix",
            )
            return None
        try:
            text = real.read_text(encoding="utf-8-sig")
        except (OSError, UnicodeDecodeError):  # read already by the loader; changed since
            return None
        files.append((relative, text))
    entry = files[0][0]
    converted = ""
    if document.data.get("swagger") is not None:  # 2.0: the oracle reads OpenAPI 3 only
        converted = dump_json(convert(document.data))
    return ir.SpecSource(upstream=upstream, entry=entry, files=tuple(files), converted=converted)


def _has_spec(server: ir.Server, tool: ir.Tool) -> bool:
    return any(spec.upstream == tool.upstream for spec in server.specs)


def _oracle(server: ir.Server) -> dict[str, Any]:
    """For each OpenAPI source (by upstream): the document the oracle reads, relative to
    `tests/`, and the server URL to read it with when the spec names no absolute one (the
    tests' fallback base URL then stands for the operator's)."""
    found = {}
    for spec in server.specs:
        base = server.base_url
        for upstream in server.upstreams:
            if upstream.name == spec.upstream:
                base = upstream.base_url
        document = f"{spec_folder(spec)}/{spec.entry}"
        found[spec.upstream] = {
            "document": converted_file(spec) if spec.converted else document,
            "server": None if base else FALLBACK_BASE_URL,
            "sentSchemes": _sent_schemes(server, spec.upstream),
        }
    return found


def _sent_schemes(server: ir.Server, upstream: str) -> list[str]:
    """The spec's names of the security schemes the package sends credentials for, of the
    source of `upstream` ("" the first): the others were left out, with a warning, and the
    oracle does not hold a request to them. Another source's schemes are `<ns>.<name>`."""
    others = [u.name for u in server.upstreams if u.name and u.name != upstream]
    names = []
    for scheme in server.security_schemes:
        if upstream:
            if scheme.name.startswith(upstream + "."):
                names.append(scheme.name[len(upstream) + 1 :])
        elif not any(scheme.name.startswith(name + ".") for name in others):
            names.append(scheme.name)
    return sorted(names)


def _kinds(server: ir.Server, calls: dict[str, Any]) -> list[str]:
    """The first tool (by name) of each kind that an upstream failure may be handled
    differently for: confirmed or not, with a body or not, text or JSON answer, output
    schema (none, wrapped, an object), upstream."""
    kinds: dict[tuple[Any, ...], str] = {}
    tools = {tool.name: tool for tool in server.tools}
    for name in sorted(calls):
        tool = tools[name]
        assert tool.request is not None  # a call is an HTTP tool's
        kind = (
            tool.confirmation,
            tool.request.body is not None,
            calls[name]["responseText"],
            tool.output_schema is None,
            tool.output_wrap is not None,
            tool.upstream,
        )
        kinds.setdefault(kind, name)
    return sorted(kinds.values())


def _base_url(server: ir.Server, tool: ir.Tool) -> str:
    """Where the tool's request goes in the generated tests (several sources: its own; an
    operation with servers of its own: there, by the runtime's rule)."""
    base = server.base_url
    for upstream in server.upstreams:
        if upstream.name == tool.upstream:
            base = upstream.base_url
    own = tool.request.server if tool.request is not None else ""
    # No base URL in the spec: the tests set the fallback, as an operator would.
    return operation_base_url(base or FALLBACK_BASE_URL, own, configured=not base)


def _credentials(
    server: ir.Server, tool: ir.Tool, environ: dict[str, str]
) -> tuple[list[str], dict[str, str]]:
    """Where the test credentials of the tool's first security alternative must appear
    (query pairs, and headers; an API key in a cookie as a "cookie" header's pairs, which
    go after the cookie parameters').

    The generated tests set every credential variable, so the runtime picks the first
    alternative.
    """
    schemes = {scheme.name: scheme for scheme in server.security_schemes}
    query: list[str] = []
    headers: dict[str, str] = {}
    cookies: list[str] = []
    for use in tool.security[0] if tool.security else ():
        scheme = schemes[use.scheme]
        env = dict(scheme.env)
        if scheme.type == "apiKey" and scheme.location == "cookie":
            cookies.append(f"{scheme.parameter}={quote(environ[env['value']], safe='')}")
        elif scheme.type == "apiKey" and scheme.location == "query":
            value = environ[env["value"]]
            query.append(f"{quote(scheme.parameter, safe='')}={quote(value, safe='')}")
        elif scheme.type == "apiKey" and scheme.location == "header":
            headers[scheme.parameter.lower()] = environ[env["value"]]
        elif scheme.type == "http" and scheme.scheme == "basic":
            pair = f"{environ[env['username']]}:{environ[env['password']]}"
            headers["authorization"] = "Basic " + base64.b64encode(pair.encode()).decode()
        elif "token" in env:
            headers["authorization"] = f"Bearer {environ[env['token']]}"
    if cookies:
        headers["cookie"] = "; ".join(cookies)
    return query, headers


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}"


def _arguments(tool: ir.Tool) -> dict[str, Any] | None:
    if tool.examples:
        return dict(tool.examples[0])
    ok, value = sample_instance(tool.input_schema, tool.input_schema.get("$defs"))
    if not ok or not isinstance(value, dict):
        return None
    if tool.nulls_absent:  # strict-mode schemas: an optional argument is null, "not given"
        properties = tool.input_schema.get("properties", {})
        value = {k: None if _null_allowed(properties.get(k)) else v for k, v in value.items()}
    return value


def _null_allowed(schema: Any) -> bool:
    """Whether a strict-mode property takes null (`anyOf: [..., {type: null}]`)."""
    branches = schema.get("anyOf", []) if isinstance(schema, dict) else []
    return any(isinstance(b, dict) and b.get("type") == "null" for b in branches)


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


def warn_without_oracle(output: Path, generated: Mapping[str, str], sink: DiagnosticSink) -> None:
    """A package whose tests judge requests by the spec (`tests/spec_oracle.py`) but whose
    `pyproject.toml`, the user's and written once, names no openapi-core in its test extra:
    written by an older mcpmint. Its tests would fail to import the oracle."""
    pyproject = output / "pyproject.toml"
    if "tests/spec_oracle.py" not in generated or not pyproject.is_file():
        return
    try:
        text = pyproject.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return
    requirement = next(r for r in TEST_REQUIREMENTS if r.startswith("openapi-core"))
    if "openapi-core" not in text and "openapi_core" not in text:
        sink.warning(
            pyproject.as_posix(),
            "the generated tests now judge each request by the spec with openapi-core, which "
            "this project's test dependencies do not name",
            f'add "{requirement}" to [project.optional-dependencies] test '
            "(docs/generated-package.md)",
        )
