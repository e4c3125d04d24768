"""Security, round two (S19-S26; S18 is test_runtime_doors.py, S22's fuzzing
test_runtime_fuzz.py): redaction in every encoding and every output, one policy for invisible
characters, upstream addresses, refusals recorded, requests answered, JSON Schema semantics,
header text, and what dynamic mode discloses."""

from __future__ import annotations

import io
import ipaddress
import json
import logging
import sys
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from runtime_support import (
    ENV,
    MCP_HEADERS,
    Answer,
    Recorder,
    catalog_data,
    listening_socket,
    one_tool_catalog,
    param,
    serve,
)
from security2_support import SECRET, door_catalog, door_server, encodings, knock, records

from mcpmint.runtime import upstream as upstream_module
from mcpmint.runtime.addresses import forbidden_address, numeric_host
from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.patterns import linear_pattern, pattern_search
from mcpmint.runtime.redaction import encoded_forms, redact
from mcpmint.runtime.server import build_server, http_app
from mcpmint.runtime.upstream import header_text
from mcpmint.runtime.visible import INVISIBLE, escape_invisible, strip_data, strip_invisible
from tests.support import in_a_child

pytestmark = pytest.mark.anyio

# ------------------------------------------------------------------------------ S19 redaction


@pytest.mark.parametrize("form", sorted(encodings(SECRET)))
def test_S19_every_encoding_of_a_secret_is_redacted(form: str) -> None:
    text = f"before {encodings(SECRET)[form]} after"
    assert SECRET not in redact(text, [SECRET])
    assert encodings(SECRET)[form] not in redact(text, [SECRET])
    assert "[REDACTED]" in redact(text, [SECRET])


def test_S19_base64_inside_longer_text_at_every_alignment() -> None:
    import base64

    for prefix in ("", "a", "ab", "abc"):
        blob = base64.b64encode(f"{prefix}token={SECRET}&x=1".encode()).decode()
        assert "[REDACTED]" in redact(blob, [SECRET]), prefix
    assert all(form for form in encoded_forms(SECRET))


async def test_S19_secrets_in_error_results_and_the_question(upstream: Recorder) -> None:
    escaped = json.dumps(SECRET + "/")[1:-1].replace("/", "\\/")
    upstream.respond = lambda request: httpx2.Response(400, text=f'{{"error": "{escaped}"}}')
    async with door_server(door_catalog(), upstream) as (client, _):
        outcome = await knock(client, "tools/call", "7")
    assert outcome.refused and "[REDACTED]" in outcome.text and escaped not in outcome.text
    # The question: an argument holding the URL-encoded secret is redacted.
    answer = Answer("decline")
    async with door_server(door_catalog(), upstream, answer=answer) as (client, _):
        await client.call_tool("pets_create_pet", {"name": f"x{encodings(SECRET)['url-encoded']}"})
    [question] = answer.messages
    assert "[REDACTED]" in question and encodings(SECRET)["url-encoded"] not in question


async def test_S19_logs_hide_query_tokens_and_tracebacks(
    caplog: pytest.LogCaptureFixture, upstream: Recorder
) -> None:
    data = one_tool_catalog(
        [param("access_token", "access_token", "query")], {"access_token": {"type": "string"}}
    )
    caplog.set_level(logging.DEBUG)
    names = ("httpx2", "mcpmint.runtime.server", "mcpmint.runtime.upstream")
    for name in names:
        logging.getLogger(name).setLevel(logging.DEBUG)
    try:
        async with Client(
            build_server(
                load_catalog(data),
                transport=upstream.transport,
                environ=dict(ENV),
                audit=AuditLog("off"),
            )
        ) as client:
            await client.call_tool("t", {"access_token": "tok-in-the-query-42"})
    finally:
        for name in names:
            logging.getLogger(name).setLevel(logging.NOTSET)
    assert upstream.last.url.params["access_token"] == "tok-in-the-query-42"
    logged = caplog.text + " ".join(r.getMessage() for r in caplog.records)
    assert "access_token=[REDACTED]" in logged
    assert "tok-in-the-query-42" not in logged


# ---------------------------------------------------------------------- S20 invisible text


def _cf_zl_zp() -> list[str]:
    return [
        chr(c)
        for c in range(sys.maxunicode + 1)
        if unicodedata.category(chr(c)) in ("Cf", "Zl", "Zp")
    ]


def test_S20_the_policy_covers_every_format_and_separator_character() -> None:
    missing = [f"U+{ord(c):04X}" for c in _cf_zl_zp() if not INVISIBLE.fullmatch(c)]
    assert missing == []
    for filler in "\u115f\u1160\u3164\uffa0\u034f\u2800\ufe0f\U000e0100":
        assert INVISIBLE.fullmatch(filler)
    assert escape_invisible("a\u202eb\U000e0041") == "a\\u202eb\\U000e0041"
    assert strip_invisible("a\u202eb\tc\nd") == "ab\tc\nd"


def test_S20_strip_data_removes_every_invisible_character_wherever_it_hides() -> None:
    """Every character the policy covers (the controls too, which JSON text escapes), in a
    key or a value, at any depth, is removed; data without any is returned unchanged."""
    covered = [chr(c) for c in range(sys.maxunicode + 1) if INVISIBLE.fullmatch(chr(c))]
    assert "\x00" in covered and "\x1f" in covered and "\x7f" in covered and "\r" in covered
    for char in covered:
        data = {"a": [{"b" + char: 1}, ("c" + char, 2.5, None, True)], "d": {"e": "f" + char}}
        assert strip_data(data) == {"a": [{"b": 1}, ["c", 2.5, None, True]], "d": {"e": "f"}}
    plain = {"path": "C:\\dir\\file\\back", "tab": "a\tb\nc", "n": [1, 2.5, None]}
    assert strip_data(plain) == plain


HIDDEN = "\u202e\u2066\u200b\u2060\u2028\u2029\ufeff\u00ad\u3164\U000e0049\U000e0067"


def _invisible_catalog() -> dict[str, Any]:
    data = catalog_data()
    data["server"]["title"] = f"Pets{HIDDEN}"
    for tool in data["tools"]:
        tool["title"] += HIDDEN
        tool["description"] += HIDDEN
        for prop in tool["inputSchema"]["properties"].values():
            prop["description"] = f"d{HIDDEN}"
            prop["examples"] = [f"e{HIDDEN}"]
            prop["title"] = f"t{HIDDEN}"
        if tool["name"] == "pets_get_pet":
            tool["inputSchema"]["properties"]["theme"] = {
                "type": "string",
                "enum": [f"dark{HIDDEN}"],
                "default": f"dark{HIDDEN}",
            }
    data["resources"] = [
        {
            "name": "pets_policy",
            "title": f"Policy{HIDDEN}",
            "description": f"The policy{HIDDEN}",
            "uri": "pets://policy",
            "handler": True,
        }
    ]
    data["prompts"] = [
        {
            "name": "pets_triage",
            "title": f"Triage{HIDDEN}",
            "description": f"Triage{HIDDEN}",
            "arguments": [{"name": "pet", "description": f"p{HIDDEN}", "required": True}],
            "messages": [{"role": "user", "text": f"Look at {{pet}}{HIDDEN}"}],
        }
    ]
    return data


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)


@pytest.mark.parametrize("mode", ["all", "dynamic"])
async def test_S20_nothing_the_model_lists_holds_an_invisible_character(
    upstream: Recorder, mode: str
) -> None:
    data = _invisible_catalog()
    data["toolModes"] = {"mode": mode}
    server = build_server(
        load_catalog(data), transport=upstream.transport, environ=dict(ENV), audit=AuditLog("off")
    )
    async with Client(server) as client:
        listed = [
            (await client.list_tools()).model_dump(),
            (await client.list_resources()).model_dump(),
            (await client.list_prompts()).model_dump(),
            (await client.get_prompt("pets_triage", {"pet": f"Rex{HIDDEN}"})).model_dump(),
        ]
        if mode == "dynamic":
            found = await client.call_tool("pets_search_tools", {"query": "pet"})
            described = await client.call_tool("pets_describe_tool", {"name": "pets_get_pet"})
            listed += [found.model_dump(), described.model_dump()]
    strings = [s for item in listed for s in _strings(item)]
    assert len(strings) > 50
    assert [
        (i, s) for i, item in enumerate(listed) for s in _strings(item) if INVISIBLE.search(s)
    ] == []


async def test_S20_the_question_shows_what_is_hidden(upstream: Recorder) -> None:
    answer = Answer("decline")
    async with door_server(door_catalog(), upstream, answer=answer) as (client, _):
        await client.call_tool("pets_create_pet", {"name": "Rex\u202e\u2028Confirmed: yes"})
    [question] = answer.messages
    assert "Rex\\u202e\\u2028Confirmed: yes" in question
    assert not INVISIBLE.search(question)


# ------------------------------------------------------------------------- S23 addresses


@pytest.mark.parametrize(
    ("host", "address"),
    [
        ("0xa9fea9fe", "169.254.169.254"),
        ("0251.0376.0251.0376", "169.254.169.254"),
        ("169.254.43518", "169.254.169.254"),
        ("2852039166", "169.254.169.254"),
        ("0x7f000001", "127.0.0.1"),
        ("127.1", "127.0.0.1"),
        ("\uff11\uff12\uff17.0.0.1", "127.0.0.1"),
    ],
)
def test_S23_numeric_hosts_in_every_spelling_are_read_and_not_canonical(
    host: str, address: str
) -> None:
    assert numeric_host(host) == (ipaddress.IPv4Address(address), False)
    assert numeric_host(address) == (ipaddress.IPv4Address(address), True)
    assert numeric_host("api.example.com") is None


def test_S23_metadata_and_link_local_addresses_are_forbidden() -> None:
    for text in (
        "169.254.169.254",
        "169.254.1.1",
        "fe80::1",
        "fd00:ec2::254",
        "100.100.100.200",
        "::ffff:169.254.169.254",
        "64:ff9b::a9fe:a9fe",
    ):
        assert forbidden_address(ipaddress.ip_address(text)), text
    for text in ("127.0.0.1", "10.0.0.1", "192.168.1.1", "::1", "93.184.216.34"):
        assert not forbidden_address(ipaddress.ip_address(text)), text


@pytest.fixture
def dns(monkeypatch: pytest.MonkeyPatch) -> dict[str, list[str]]:
    table: dict[str, list[str]] = {}

    async def resolve(host: str, port: int) -> list[str]:
        return table[host]

    monkeypatch.setattr(upstream_module, "_resolve", resolve)
    return table


async def test_S23_the_connected_address_is_checked_whatever_name_led_there(
    dns: dict[str, list[str]], tmp_path: Path
) -> None:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    seen: list[str] = []

    async def pet(request: Request) -> JSONResponse:
        seen.append(request.headers["host"])
        return JSONResponse({"id": 1, "name": "Rex"})

    app = Starlette(routes=[Route("/v1/pets/{pet_id}", pet)])
    async with serve(app, listening_socket()) as url:
        port = url.rsplit(":", 1)[1]
        dns["pets.test"] = ["127.0.0.1"]  # the operator's loopback upstream: allowed
        dns["rebound.test"] = ["169.254.169.254"]
        for host, refused in (("pets.test", False), ("rebound.test", True)):
            audit = io.StringIO()
            env = dict(ENV) | {"PETS_BASE_URL": f"http://{host}:{port}/v1"}
            server = build_server(
                load_catalog(catalog_data()), environ=env, audit=AuditLog(stream=audit)
            )
            async with Client(server) as client:
                result = await client.call_tool("pets_get_pet", {"petId": "1"})
            assert bool(result.is_error) is refused, result
    assert seen == [f"pets.test:{port}"]
    text = result.content[0].text  # type: ignore[union-attr]
    assert "169.254.169.254, a metadata or link-local address" in text


# ------------------------------------------------------------- S21 refusals are recorded


async def test_S21_a_tampered_request_state_is_refused_and_recorded(upstream: Recorder) -> None:
    async with door_server(door_catalog(), upstream) as (client, audit):
        from mcp.shared.exceptions import MCPError

        with pytest.raises(MCPError):
            await client.session.send_request(  # type: ignore[attr-defined]
                types.CallToolRequest(
                    params=types.CallToolRequestParams(
                        name="pets_delete_pet",
                        arguments={"petId": "5"},
                        request_state="forged-state",  # type: ignore[call-arg]
                    )
                ),
                types.CallToolResult,
            )
    assert upstream.requests == []
    [record] = records(audit)
    assert (record["tool"], record["decision"]) == ("pets_delete_pet", "refused")
    assert "requeststate" in record["reason"].lower()
    assert record["arguments"] == {"petId": "5"}


# ------------------------------------------------------------- S22 every request answered


def _deep(levels: int) -> str:
    return "[" * levels + "1" + "]" * levels


RAW_CALLS = {
    "nested-70": f'{{"petId": {_deep(70)}}}',
    "nested-300": f'{{"petId": {_deep(300)}}}',
    "nested-3000": f'{{"petId": {_deep(3000)}}}',
    "lone-surrogate": '{"petId": "\\ud800"}',
    "lone-surrogate-key": '{"petId": "1", "\\udc00": 1}',
    "not-an-object": '"petId"',
}


async def test_S22_every_malformed_http_request_gets_an_answer_with_its_id(
    upstream: Recorder, tmp_path: Path
) -> None:
    audit = io.StringIO()
    server = build_server(
        load_catalog(catalog_data()),
        transport=upstream.transport,
        environ=dict(ENV),
        audit=AuditLog(stream=audit),
    )
    async with serve(http_app(server), listening_socket()) as url:
        headers = MCP_HEADERS | {"MCP-Protocol-Version": "2026-07-28"}
        meta = {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {},
        }
        async with httpx2.AsyncClient(timeout=10) as http:
            for i, (case, arguments) in enumerate(sorted(RAW_CALLS.items()), start=10):
                body = (
                    f'{{"jsonrpc":"2.0","id":{i},"method":"tools/call","params":'
                    f'{{"name":"pets_get_pet","arguments":{arguments},"_meta":{json.dumps(meta)}}}}}'
                )
                response = await http.post(f"{url}/mcp", content=body.encode(), headers=headers)
                answer = response.json()
                assert answer["id"] == i, (case, answer)
                assert "error" in answer or answer["result"]["isError"], (case, answer)
    assert upstream.requests == []
    assert len(records(audit)) >= len(RAW_CALLS)


# --------------------------------------------------------------- S24 JSON Schema semantics


@pytest.mark.parametrize(
    ("pattern", "text", "matches"),
    [
        ("^M[0-9]{5}$", "M00042", True),
        ("^M[0-9]{5}$", "M00042\n", False),
        ("^[a-z]+$", "abc\n", False),
        ("x[$]", "x$", True),
        ("^\\d+$", "\u0663", False),
        ("^\\w+$", "\u00e9t\u00e9", False),
        ("\\bx\\b", "\u00e9x\u00e9", True),  # ECMA's \b is ASCII: \u00e9 is not a word character
        ("^[\\d.]+$", "1.5", True),
        ("[]", "a", False),
        ("^[^]$", "\n", True),
        ("^[[]$", "[", True),
        ("^a{$", "a{", True),
        ("^{id}$", "{id}", True),
        ("^a{2}$", "aa", True),
        ("^x[&~]$", "x~", True),
        ("^\\u00e9$", "\u00e9", True),
        ("^(?<year>[0-9]{4})$", "2026", True),
    ],
)
def test_S24_patterns_are_ecma_262(pattern: str, text: str, matches: bool) -> None:
    assert pattern_search(pattern, text) is matches


FORMATS = {
    "date": ("2026-12-03", ["2026-13-01", "2026-12-3", "2026-02-30", "x"]),
    "date-time": ("2026-12-03T10:00:00Z", ["2026-12-03 10:00", "2026-12-03T25:00:00Z", "now"]),
    "email": ("a@example.com", ["a@", "a b@example.com", "example.com"]),
    "uri": ("https://example.com/x", ["not a uri", "/relative", "https://exa mple.com"]),
    "uuid": (
        "123e4567-e89b-12d3-a456-426614174000",
        ["123e4567", "z23e4567-e89b-12d3-a456-426614174000"],
    ),
    "ipv4": ("192.0.2.1", ["192.0.2", "0x7f.0.0.1", "256.1.1.1", "01.2.3.4"]),
    "ipv6": ("2001:db8::1", ["2001:db8::g", "192.0.2.1", "fe80::1%eth0"]),
}


@pytest.mark.parametrize("name", sorted(FORMATS))
async def test_S24_input_formats_are_enforced(name: str, upstream: Recorder) -> None:
    good, bad = FORMATS[name]
    data = one_tool_catalog([param("v", "v", "query")], {"v": {"type": "string", "format": name}})
    server = build_server(
        load_catalog(data), transport=upstream.transport, environ=dict(ENV), audit=AuditLog("off")
    )
    async with Client(server) as client:
        accepted = await client.call_tool("t", {"v": good})
        assert not accepted.is_error, accepted
        for value in bad:
            refused = await client.call_tool("t", {"v": value})
            assert refused.is_error and "v:" in refused.content[0].text, (value, refused)  # type: ignore[union-attr]
    assert [r.url.params["v"] for r in upstream.requests] == [good]


# ------------------------------------------------- S27 spec patterns in linear time

# Each pattern backtracks exponentially in Python's `re` on the text beside it (2**40 steps
# and more): a check that completes at all was made by a linear-time engine. The calls run in
# a child process that a hang cannot take down with the test run.
CATASTROPHIC = [
    (
        r"^(https?:\/\/)?([\da-z\.-]+)\.([a-z\.]{2,6})([\/\w \.-]*)*\/?$",
        "http://a.io/" + "a" * 40 + "!",
    ),
    (r"^(a|aa)+$", "a" * 80 + "b"),
    (r"^([a-zA-Z0-9])(([\-.]|[_]+)?([a-zA-Z0-9]+))*(@)", "a" * 40 + "!"),
    (r"^(\d+)*[a-z]$", "1" * 40 + "!"),
]


@pytest.mark.parametrize(("pattern", "text"), CATASTROPHIC)
async def test_S27_a_catastrophic_pattern_answers_at_once(
    pattern: str, text: str, upstream: Recorder
) -> None:
    data = one_tool_catalog(
        [param("site", "site", "query")],
        {
            "site": {"type": "string", "pattern": pattern},
            "labels": {
                "type": "object",
                "patternProperties": {pattern: {"type": "string"}},
                "additionalProperties": False,
            },
        },
        method="POST",
        body={"mediaType": "application/json", "required": False, "argument": "labels"},
    )
    server = build_server(
        load_catalog(data), transport=upstream.transport, environ=dict(ENV), audit=AuditLog("off")
    )

    async def calls() -> tuple[list[tuple[bool, str]], int]:
        async with Client(server) as client:
            results = [
                await client.call_tool("t", {"site": text}),
                await client.call_tool("t", {"labels": {text: "x"}}),
            ]
        answers = [(r.is_error, r.content[0].text) for r in results]  # type: ignore[union-attr]
        return answers, len(upstream.requests)

    (site, labels), sent = in_a_child(lambda: anyio.run(calls))
    assert site[0] and "site" in site[1], site
    assert labels[0] and "labels" in labels[1], labels
    assert sent == 0


@pytest.mark.parametrize("pattern", ["^(?=.*[0-9])[a-z0-9]+$", "^(a)\\1$", "(?<!x)y"])
def test_S27_patterns_without_a_linear_time_reading_are_not_compiled(pattern: str) -> None:
    assert linear_pattern(pattern) is None
    assert pattern_search(pattern, "abc") is None


async def test_S27_a_look_around_pattern_is_left_to_the_upstream(upstream: Recorder) -> None:
    data = one_tool_catalog(
        [param("v", "v", "query")], {"v": {"type": "string", "pattern": "^(?=.*[0-9])[a-z0-9]+$"}}
    )
    server = build_server(
        load_catalog(data), transport=upstream.transport, environ=dict(ENV), audit=AuditLog("off")
    )
    async with Client(server) as client:
        result = await client.call_tool("t", {"v": "abc"})
    assert not result.is_error, result
    assert [r.url.params["v"] for r in upstream.requests] == ["abc"]


# -------------------------------------------------------------------- S25 header text


@pytest.mark.parametrize("version", ["1.0\u2013beta", "\u03b2-2", "1.0.0\u2026", "v1\r\nX: y"])
async def test_S25_spec_text_in_headers_never_breaks_a_call(
    version: str, upstream: Recorder
) -> None:
    data = catalog_data()
    data["server"]["version"] = version
    data["tools"][0]["request"]["accept"] = "application/json; charset=\u00e9"
    server = build_server(
        load_catalog(data), transport=upstream.transport, environ=dict(ENV), audit=AuditLog("off")
    )
    async with Client(server) as client:
        result = await client.call_tool("pets_get_pet", {"petId": "1"})
    assert not result.is_error, result
    agent = upstream.last.headers["user-agent"]
    assert agent.isascii() and "\r" not in agent and "\n" not in agent
    assert header_text("a\u2026") == "a%E2%80%A6"
    assert header_text("X Na\u00efve", name=True) == "X%20Na%C3%AFve"


# ------------------------------------------------------------ S26 what dynamic mode shows


@pytest.mark.parametrize(("scopes", "shown"), [(["pets:read"], True), (["other"], False)])
async def test_S26_search_and_describe_disclose_only_permitted_tools(
    upstream: Recorder, scopes: list[str], shown: bool
) -> None:
    catalog = door_catalog(security=[[{"scheme": "OAuth", "scopes": ["pets:read"]}]])
    env = {"PETS_LIST_TOOLS": "permitted"}
    async with door_server(catalog, upstream, env, scopes=scopes) as (client, _):
        found = await client.call_tool("pets_search_tools", {"query": "get pet", "limit": 25})
        described = await client.call_tool("pets_describe_tool", {"name": "pets_get_pet"})
    names = [t["name"] for t in (found.structured_content or {})["tools"]]
    assert ("pets_get_pet" in names) is shown
    assert bool(described.is_error) is not shown
    assert names  # the tools it may call are still found


@pytest.mark.parametrize(
    ("raw", "ident", "code"),
    [
        ('{"jsonrpc":"2.0","id":4,"method":"tools/call","params":"x"}', 4, -32602),
        ('{"jsonrpc":"2.0","id":"a","method":"tools/call","params":{"p":"\\ud800"}}', "a", -32602),
        (
            '{"jsonrpc":"2.0","id":5,"method":"m","params":' + "[" * 5000 + "]" * 5000 + "}",
            5,
            -32602,
        ),
        ('{"jsonrpc":"2.0","id":6}', 6, -32600),
        ('{"jsonrpc":"2.0","id":true,"method":"ping"}', None, -32600),
        ("[1, 2]", None, -32600),
        ("not json", None, -32700),
    ],
)
def test_S22_a_message_the_parser_refuses_is_answered_with_its_id(
    raw: str, ident: object, code: int
) -> None:
    from mcpmint.runtime.boundary import malformed_answer

    found = malformed_answer(raw)
    assert found is not None
    answer, _, reason = found
    assert (answer["id"], answer["error"]["code"]) == (ident, code), answer
    assert reason
    assert malformed_answer('{"jsonrpc":"2.0","method":"notifications/x"}') is None


@pytest.mark.parametrize(
    "base",
    ["http://0xa9fea9fe:81", "http://169.254.43518:81", "http://[::ffff:169.254.169.254]:81"],
)
async def test_S23_a_base_url_at_a_metadata_address_in_any_spelling_is_refused(
    base: str,
) -> None:
    audit = io.StringIO()
    env = dict(ENV) | {"PETS_BASE_URL": f"{base}/v1"}
    server = build_server(load_catalog(catalog_data()), environ=env, audit=AuditLog(stream=audit))
    async with Client(server) as client:
        result = await client.call_tool("pets_get_pet", {"petId": "1"})
    assert result.is_error
    assert "a metadata or link-local address; nothing was sent" in result.content[0].text  # type: ignore[union-attr]
