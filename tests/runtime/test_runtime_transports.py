"""The server over its real transports: stdio in a subprocess, streamable HTTP under uvicorn."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from anyio.streams.text import TextReceiveStream
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from runtime_support import MCP_HEADERS, PING, Recorder, catalog_data, listening_socket, serve

from mcpmint.runtime.catalog import Catalog
from mcpmint.runtime.server import build_server, http_app, main

pytestmark = pytest.mark.anyio

# Runs the server's `main` over stdio and records, through audit hooks, every internet socket
# created and every bind: a listener needs both.
STDIO_CHILD = """
import json, socket, sys

events = []

def audit(event, args):
    if event == "socket.__new__" and args[1] in (socket.AF_INET, socket.AF_INET6):
        events.append(event)
    elif event == "socket.bind":
        events.append(f"{event} {args[1]!r}")

sys.addaudithook(audit)

from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.server import main

catalog_path, report_path = sys.argv[1], sys.argv[2]
with open(catalog_path, encoding="utf-8") as f:
    catalog = load_catalog(json.load(f))
code = main(catalog, ["--transport", "stdio"])
with open(report_path, "w", encoding="utf-8") as f:
    json.dump({"events": events, "code": code}, f)
"""


class StdioSession:
    """A raw JSON-RPC conversation over a child process's stdin and stdout."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self._process = process
        self._lines = TextReceiveStream(process.stdout)
        self._buffer = ""

    async def send(self, raw: str) -> None:
        assert self._process.stdin is not None
        await self._process.stdin.send((raw + "\n").encode())

    async def request(self, id_: int, raw: str) -> dict[str, Any]:
        await self.send(raw)
        while True:
            while "\n" not in self._buffer:
                self._buffer += await self._lines.receive()
            line, self._buffer = self._buffer.split("\n", 1)
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == id_:
                return message


def call_line(id_: int, arguments_json: str) -> str:
    # Written by hand: these literals (1e309, NaN) are what a JSON encoder would never produce.
    return (
        f'{{"jsonrpc":"2.0","id":{id_},"method":"tools/call",'
        f'"params":{{"name":"pets_get_pet","arguments":{arguments_json}}}}}'
    )


async def run_stdio(tmp_path: Path, talk: Any) -> dict[str, Any]:
    catalog_file = tmp_path / "tools.json"
    catalog_file.write_text(json.dumps(catalog_data()), encoding="utf-8")
    report = tmp_path / "report.json"
    command = [sys.executable, "-c", STDIO_CHILD, str(catalog_file), str(report)]
    with anyio.fail_after(60):
        async with await anyio.open_process(command, stderr=subprocess.DEVNULL) as process:
            session = StdioSession(process)
            init = {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "test", "version": "0"},
            }
            reply = await session.request(
                1, json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": init})
            )
            assert reply["result"]["serverInfo"]["name"] == "pets-mcp"
            await session.send('{"jsonrpc":"2.0","method":"notifications/initialized"}')
            await talk(session)
            assert process.stdin is not None
            await process.stdin.aclose()
            assert await process.wait() == 0
    result: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    return result


async def test_H10_stdio_opens_no_http_listener(tmp_path: Path) -> None:
    async def talk(session: StdioSession) -> None:
        reply = await session.request(2, '{"jsonrpc":"2.0","id":2,"method":"tools/list"}')
        assert "pets_get_pet" in [t["name"] for t in reply["result"]["tools"]]

    report = await run_stdio(tmp_path, talk)
    assert report == {"events": [], "code": 0}


async def test_S3_non_finite_numbers_in_raw_json_are_refused(tmp_path: Path) -> None:
    async def talk(session: StdioSession) -> None:
        for id_, literal, shown in [
            (3, "1e309", "inf"),
            (4, "NaN", "nan"),
            (5, "-Infinity", "-inf"),
        ]:
            reply = await session.request(id_, call_line(id_, f'{{"petId":"1","limit":{literal}}}'))
            result = reply["result"]
            assert result["isError"] is True
            assert f"limit: {shown} is not a finite number" in result["content"][0]["text"]

    report = await run_stdio(tmp_path, talk)
    # The refusal happened before any request: not even a socket was created.
    assert report["events"] == []


async def test_S22_stdio_answers_what_its_parser_refuses(tmp_path: Path) -> None:
    deep = "[" * 3000 + "1" + "]" * 3000

    async def talk(session: StdioSession) -> None:
        for id_, arguments in [
            (6, '{"petId": "\\ud800"}'),
            (7, '{"petId": "1", "\\udc00x": 1}'),
            (8, f'{{"petId": {deep}}}'),
            (9, '{"petId": ' + "[" * 70 + '"x"' + "]" * 70 + "}"),
        ]:
            reply = await session.request(id_, call_line(id_, arguments))
            assert "error" in reply or reply["result"]["isError"], reply
        for id_, raw in [
            (11, '{"jsonrpc":"2.0","id":11,"method":"tools/call","params":"x"}'),
            (12, '{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":5}}'),
            (13, '{"jsonrpc":"2.0","id":13}'),
        ]:
            reply = await session.request(id_, raw)
            assert reply["error"]["code"] in (-32600, -32602), reply
        reply = await session.request(10, '{"jsonrpc":"2.0","id":10,"method":"ping"}')
        assert reply == {"jsonrpc": "2.0", "id": 10, "result": {}}

    report = await run_stdio(tmp_path, talk)
    assert report["events"] == []  # nothing reached for the network


# ------------------------------------------------------------------------------ main


def test_main_refuses_a_public_host_without_inbound_auth(
    catalog: Catalog, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(catalog, ["--transport", "http", "--host", "0.0.0.0"]) == 2
    assert "inbound authentication" in capsys.readouterr().err
    assert main(catalog, ["--transport", "http", "--host", "example.com"]) == 2


# ------------------------------------------------------------------------------ HTTP


@pytest.fixture
async def http_url(catalog: Catalog, upstream: Recorder, env: dict[str, str]) -> AsyncIterator[str]:
    app = http_app(build_server(catalog, transport=upstream.transport, environ=env))
    async with serve(app, listening_socket()) as url:
        yield url


async def test_streamable_http_lists_tools_and_calls_one(
    http_url: str, upstream: Recorder, mode: str
) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        transport = streamable_http_client(f"{http_url}/mcp", http_client=http)
        async with Client(transport, mode=mode) as client:
            tools = (await client.list_tools()).tools
            assert "pets_get_pet" in [t.name for t in tools]
            result = await client.call_tool("pets_get_pet", {"petId": "a/b", "q": "x&y"})
    assert isinstance(result, types.CallToolResult) and not result.is_error
    assert result.structured_content == {"id": 1, "name": "Rex"}
    assert upstream.target == "/v1/pets/a%2Fb?q=x%26y"


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"Host": "evil.example.com"}, 421),
        ({"Origin": "https://evil.example"}, 403),
    ],
)
async def test_http_refuses_foreign_host_and_origin(
    http_url: str, headers: dict[str, str], status: int
) -> None:
    async with httpx2.AsyncClient(timeout=10) as http:
        response = await http.post(f"{http_url}/mcp", json=PING, headers=MCP_HEADERS | headers)
    assert response.status_code == status
