"""Load test: replicas of a generated server behind nginx, with the memory or the Redis store.

    .venv/bin/python benchmarks/replicas.py [--calls 2000] [--concurrency 8] [--writes 0.2]
        [--json rows.json]

petstore-plus is generated once. For each configuration (1 replica with the memory store; 1, 2
and 3 replicas with a Redis store) the script starts a real redis-server, the replicas
(`python -m petstore_mcp --transport http` under uvicorn on loopback), nginx in front (round
robin) and a loopback upstream that counts the writes it receives. Then `--concurrency` MCP SDK
clients (2026-07-28, one long-lived `Client` each) make `--calls` calls in all through nginx:
reads (`petstore_get_pet`, no confirmation) and, a `--writes` share of them, confirmed writes
(`petstore_delete_pet`: a question, the user's yes, the repeated call with the sealed state).
The write rate limit is set high enough never to refuse, so that its bucket is still counted
in the store on every write.

It reports, per configuration: calls per second through nginx; p50 and p99 latency of reads
and of confirmed writes (a write is its two rounds); the confirmed count (write results
without error) against the upstream's count of DELETE requests (must be equal); and errors.
Everything runs on this machine's loopback, clients included: the figures are the machine's,
bounded by its cores, not a server's capacity in isolation.
"""

from __future__ import annotations

import argparse
import json
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from contextlib import ExitStack
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client import ClientRequestContext
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from mcpmint.diagnostics import DiagnosticSink  # noqa: E402
from mcpmint.pipeline import GenerateOptions, generate  # noqa: E402
from tests.services import nginx, redis_server  # noqa: E402
from tests.support import PLUS, clean_env, free_port, stop, wait_for_port  # noqa: E402

STATE_KEY = "k" * 64


class Upstream:
    """A threaded loopback API: 200 with a pet for GET, 204 for anything else; counts writes."""

    def __init__(self) -> None:
        self.writes = 0
        self.reads = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def setup(self) -> None:
                super().setup()
                # Headers and body go in two writes: without this, Nagle's algorithm and the
                # client's delayed ACK hold each GET's body back 40 ms.
                self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

            def do_GET(self) -> None:
                with lock:
                    outer.reads += 1
                body = b'{"id": 5, "name": "Rex"}'
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_DELETE(self) -> None:
                with lock:
                    outer.writes += 1
                self.send_response(204)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                return

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


async def yes(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"confirm": True})


async def load(port: int, calls: int, concurrency: int, writes: float) -> dict[str, Any]:
    reads_ms: list[float] = []
    writes_ms: list[float] = []
    confirmed = errors = 0
    every = max(1, round(1 / writes)) if writes > 0 else 0
    counter = iter(range(calls))

    async def worker() -> None:
        nonlocal confirmed, errors
        async with (
            httpx2.AsyncClient(timeout=60) as http,
            Client(
                streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
                elicitation_callback=yes,
            ) as client,
        ):
            for n in counter:
                write = every > 0 and n % every == 0
                started = time.perf_counter()
                try:
                    if write:
                        result = await client.call_tool("petstore_delete_pet", {"petId": n})
                    else:
                        result = await client.call_tool("petstore_get_pet", {"petId": 5})
                except Exception:
                    errors += 1
                    continue
                elapsed = (time.perf_counter() - started) * 1000
                if result.is_error:
                    errors += 1
                elif write:
                    confirmed += 1
                    writes_ms.append(elapsed)
                else:
                    reads_ms.append(elapsed)

    started = time.perf_counter()
    async with anyio.create_task_group() as group:
        for _ in range(concurrency):
            group.start_soon(worker)
    seconds = time.perf_counter() - started
    return {
        "seconds": round(seconds, 2),
        "calls_per_second": round(calls / seconds, 1),
        "read_p50_ms": percentile(reads_ms, 50),
        "read_p99_ms": percentile(reads_ms, 99),
        "write_p50_ms": percentile(writes_ms, 50),
        "write_p99_ms": percentile(writes_ms, 99),
        "confirmed": confirmed,
        "errors": errors,
    }


def percentile(values: list[float], p: int) -> float | None:
    if not values:
        return None
    if len(values) == 1:
        return round(values[0], 2)
    return round(statistics.quantiles(values, n=100, method="inclusive")[p - 1], 2)


def run(
    package: Path, replicas: int, store: str, redis_url: str, args: argparse.Namespace
) -> dict[str, Any]:
    upstream = Upstream()
    processes = []
    ports = []
    env = clean_env(
        PYTHONPATH=str(package / "src"),
        PETSTORE_BASE_URL=f"{upstream.url}/v2",
        PETSTORE_BEARER_AUTH="bearer",
        PETSTORE_API_KEY_AUTH="key",
        PETSTORE_AUDIT="off",
        PETSTORE_STATE_KEY=STATE_KEY,
        PETSTORE_WRITE_RATE="100000000",
        PETSTORE_MAX_CONCURRENCY="64",
    )
    if store == "redis":
        env["PETSTORE_STATE_STORE"] = redis_url
    try:
        for _ in range(replicas):
            port = free_port()
            command = [sys.executable, "-m", "petstore_mcp", "--transport", "http",
                       "--port", str(port)]  # fmt: skip
            process = subprocess.Popen(
                command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
            )
            processes.append(process)
            ports.append(port)
        for port, process in zip(ports, processes, strict=True):
            wait_for_port(port, process)
        with nginx(ports) as balancer:
            anyio.run(load, balancer, 50, args.concurrency, args.writes)  # warm-up
            warm_writes = upstream.writes
            row = anyio.run(load, balancer, args.calls, args.concurrency, args.writes)
        row["upstream_writes"] = upstream.writes - warm_writes
    finally:
        for process in processes:
            stop(process)
        upstream.close()
    return {"replicas": replicas, "store": store, **row}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--writes", type=float, default=0.2, help="share of confirmed writes")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    if not 1 <= args.calls <= 20000 or not 1 <= args.concurrency <= 64:
        parser.error("--calls 1..20000, --concurrency 1..64 (the test is bounded)")
    with ExitStack() as stack:
        folder = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="mcpmint-load-")))
        package = folder / "petstore-mcp"
        sink = DiagnosticSink()
        generate(PLUS, GenerateOptions(output=package), sink)
        if sink.has_errors:
            print("\n".join(d.render() for d in sink), file=sys.stderr)
            return 2
        redis = stack.enter_context(redis_server())
        rows = []
        for replicas, store in ((1, "memory"), (1, "redis"), (2, "redis"), (3, "redis")):
            row = run(package, replicas, store, redis.url, args)
            rows.append(row)
            print(json.dumps(row), flush=True)
    header = ("replicas", "store", "calls/s", "read p50", "read p99", "write p50", "write p99",
              "confirmed", "upstream writes", "errors")  # fmt: skip
    print("\n| " + " | ".join(header) + " |\n|" + "---|" * len(header))
    for r in rows:
        cells = (r["replicas"], r["store"], r["calls_per_second"], r["read_p50_ms"],
                 r["read_p99_ms"], r["write_p50_ms"], r["write_p99_ms"], r["confirmed"],
                 r["upstream_writes"], r["errors"])  # fmt: skip
        print("| " + " | ".join(str(c) for c in cells) + " |")
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    bad = [r for r in rows if r["confirmed"] != r["upstream_writes"] or r["errors"]]
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
