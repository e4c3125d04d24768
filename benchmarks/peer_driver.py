"""The measuring side of `peers.py`: run in a separate process, prints one JSON object.

    python peer_driver.py upstream PORT BODY
        a loopback API answering every request with 200 and the JSON text BODY (until killed)
    python peer_driver.py fastmcp SPEC_JSON BASE_URL
        FastMCP.from_openapi(SPEC) over stdio (run with the FastMCP environment's python)
    python peer_driver.py measure CONFIG_JSON
        spawn a stdio server, time its first tools/list, then N calls of one tool through it
        and N direct HTTP requests to the same upstream URL (run with mcpmint's .venv python)

CONFIG_JSON: {"command": [...], "env": {...}, "operation": "<operationId>",
"arguments": {...}, "direct_url": "...", "calls": N}. Whatever the server is, the client is the
same (`StdioPeer`, protocol 2025-06-18, which every peer speaks).
"""

from __future__ import annotations

import asyncio
import json
import re
import statistics
import sys
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


def upstream(port: int, body: bytes) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive, as a real API would
        disable_nagle_algorithm = True  # else each answer waits for a delayed ACK (~40 ms)

        def _any(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            if length:
                self.rfile.read(length)
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _any

        def log_message(self, format: str, *args: Any) -> None:
            return

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()


def fastmcp(spec_path: str, base_url: str) -> None:
    import httpx2
    from fastmcp import FastMCP  # type: ignore[import-not-found]  # its own venv only

    with open(spec_path, encoding="utf-8") as file:
        spec = json.load(file)
    server = FastMCP.from_openapi(spec, client=httpx2.AsyncClient(base_url=base_url, timeout=30))
    server.run(show_banner=False)


def _key(name: str) -> str:
    return re.sub(r"[^a-z0-9]", "", name.lower())


def pick(names: list[str], operation: str) -> str | None:
    """The listed tool made from `operation` (each peer spells names its own way)."""
    wanted = _key(operation)
    exact = [n for n in names if _key(n) == wanted]
    suffixed = sorted((n for n in names if _key(n).endswith(wanted)), key=len)
    found = exact or suffixed
    return found[0] if found else None


class StdioPeer:
    """A minimal MCP client over stdio: JSON-RPC lines, no validation of what comes back.

    Deliberately not the SDK's `Client`: that one checks results against output schemas (a
    client-side cost only some servers would pay) and refuses a `tools/list` whose schemas
    break the MCP schema (openapi-mcp-generator's can). Every server meets the same client.
    """

    def __init__(self, process: asyncio.subprocess.Process) -> None:
        self._process = process
        self._id = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        await self._send({"jsonrpc": "2.0", "id": self._id, "method": method, "params": params})
        assert self._process.stdout is not None
        while True:
            line = await self._process.stdout.readline()
            if not line:
                raise RuntimeError(f"the server closed stdout during {method}")
            message = json.loads(line)
            if message.get("id") == self._id and "method" not in message:
                if "error" in message:
                    raise RuntimeError(f"{method}: {message['error']}")
                return dict(message["result"])

    async def notify(self, method: str) -> None:
        await self._send({"jsonrpc": "2.0", "method": method})

    async def _send(self, message: dict[str, Any]) -> None:
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(message).encode() + b"\n")
        await self._process.stdin.drain()


async def measure(config: dict[str, Any]) -> dict[str, Any]:
    import httpx2

    calls = int(config["calls"])
    out: dict[str, Any] = {}
    started = time.perf_counter()
    process = await asyncio.create_subprocess_exec(
        *config["command"],
        env=config["env"],
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
        limit=1 << 30,  # a tools/list of thousands of tools is one line of many megabytes
    )
    try:
        peer = StdioPeer(process)
        await peer.request(
            "initialize",
            {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "mcpmint-benchmarks", "version": "1"},
            },
        )
        await peer.notify("notifications/initialized")
        tools: list[dict[str, Any]] = []
        cursor = None
        while True:
            page = await peer.request("tools/list", {"cursor": cursor} if cursor else {})
            tools.extend(page["tools"])
            cursor = page.get("nextCursor")
            if not cursor:
                break
        out["startup_s"] = round(time.perf_counter() - started, 3)
        out["tools"] = len(tools)
        out["bytes"] = len(json.dumps({"tools": tools}, separators=(",", ":")).encode())
        name = pick([t["name"] for t in tools], config["operation"])
        out["called"] = name
        if name is None:
            return out
        call = {"name": name, "arguments": config["arguments"]}
        errors = 0
        first_error = ""
        for _ in range(5):  # warm-up: connection pools, lazy imports, caches
            await peer.request("tools/call", call)
        through_server: list[float] = []
        for _ in range(calls):
            started = time.perf_counter()
            result = await peer.request("tools/call", call)
            through_server.append(time.perf_counter() - started)
            if result.get("isError"):
                errors += 1
                first_error = first_error or json.dumps(result.get("content"))[:300]
    finally:
        if process.stdin is not None:
            process.stdin.close()
        try:
            await asyncio.wait_for(process.wait(), 30)
        except TimeoutError:
            process.kill()
            await process.wait()
    async with httpx2.AsyncClient(timeout=30) as http:
        for _ in range(5):
            (await http.get(config["direct_url"])).raise_for_status()
        direct: list[float] = []
        for _ in range(calls):
            started = time.perf_counter()
            (await http.get(config["direct_url"])).raise_for_status()
            direct.append(time.perf_counter() - started)
    # Medians: a shared machine's hiccups move means, rarely medians.
    out["call_ms"] = round(statistics.median(through_server) * 1000, 2)
    out["direct_ms"] = round(statistics.median(direct) * 1000, 2)
    out["overhead_ms"] = round(out["call_ms"] - out["direct_ms"], 2)
    out["call_mean_ms"] = round(statistics.fmean(through_server) * 1000, 2)
    out["direct_mean_ms"] = round(statistics.fmean(direct) * 1000, 2)
    out["error_results"] = errors
    out["first_error"] = first_error
    return out


def main() -> int:
    command = sys.argv[1]
    if command == "upstream":
        upstream(int(sys.argv[2]), sys.argv[3].encode())
    elif command == "fastmcp":
        fastmcp(sys.argv[2], sys.argv[3])
    elif command == "measure":
        with open(sys.argv[2], encoding="utf-8") as file:
            config = json.load(file)
        print(json.dumps(asyncio.run(measure(config))))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
