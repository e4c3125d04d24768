"""Scale out: two replicas of a generated server behind one round-robin "load balancer".

petstore-plus is generated once and served twice under uvicorn on loopback (its own
`python -m petstore_mcp --transport http`, imported from the generated tree with this repo's
interpreter: the package needs nothing the test environment lacks). One MCP client talks to
both: its HTTP transport sends each request to the next replica in turn.

- 2026-07-28 (stateless): a confirmation asked by one replica is answered on the other, because
  both seal `request_state` with the same `PETSTORE_STATE_KEY` and spend it in one Redis store;
  the upstream gets the call once. With a shared key but each its own memory store, the other
  replica refuses the state (it cannot spend it once for both); without a shared key it cannot
  open it. Either way nothing is sent. (More in tests/test_replicas.py.)
- 2025-11-25 (sessions): a session lives in the replica that created it; a request routed to the
  other replica is refused (404 "Session not found"), so that era needs sticky sessions.

And one replica's operator view: its metrics summary, written on SIGUSR1 and at exit.
"""

from __future__ import annotations

import json
import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate

from .services import redis_server
from .support import REPO, Loopback, User, clean_env, free_port, loopback, stop, wait_for_port

pytestmark = pytest.mark.anyio
SPEC = REPO / "specs" / "petstore-plus.yaml"


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("scale") / "petstore-mcp"
    sink = DiagnosticSink()
    generate(SPEC, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    return out


@pytest.fixture
def upstream() -> Iterator[Loopback]:
    """A loopback API that answers 204 and records every request it receives."""
    with loopback(lambda seen: (204, None)) as server:
        yield server


def replica_env(package: Path, upstream: Loopback, **extra: str) -> dict[str, str]:
    return clean_env(
        PYTHONPATH=str(package / "src"),
        PETSTORE_BASE_URL=f"{upstream.url}/v2",
        PETSTORE_BEARER_AUTH="bearer-for-upstream",
        PETSTORE_AUDIT="off",
        **extra,
    )


@contextmanager
def replica(package: Path, upstream: Loopback, state_key: str, store: str = "") -> Iterator[int]:
    """One replica on a free port; yields the port. Its stderr is shown if a test fails."""
    port = free_port()
    env = replica_env(package, upstream)
    if state_key:
        env["PETSTORE_STATE_KEY"] = state_key
    if store:
        env["PETSTORE_STATE_STORE"] = store
    command = [sys.executable, "-m", "petstore_mcp", "--transport", "http", "--port", str(port)]
    with tempfile.TemporaryFile() as log:
        process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_for_port(port, process)
            yield port
        except BaseException:
            log.seek(0)
            sys.stderr.write(log.read().decode(errors="replace")[-3000:])
            raise
        finally:
            stop(process)


@contextmanager
def two_replicas(
    package: Path, upstream: Loopback, *, shared_key: bool, store: str = ""
) -> Iterator[list[int]]:
    key = secrets.token_hex(32)
    first = key if shared_key else ""  # without a shared key each replica makes its own
    with (
        replica(package, upstream, first, store) as a,
        replica(package, upstream, first, store) as b,
    ):
        yield [a, b]


class RoundRobin(httpx2.AsyncBaseTransport):
    """The load balancer: each request goes to the next replica's port, and is logged."""

    def __init__(self, ports: list[int]) -> None:
        self._ports = ports
        self._next = 0
        self._inner = httpx2.AsyncHTTPTransport()
        self.log: list[tuple[int, str, dict[str, Any]]] = []  # (replica, HTTP method, body)

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        index = self._next % len(self._ports)
        self._next += 1
        request.url = request.url.copy_with(port=self._ports[index])
        body = json.loads(request.content) if request.content else {}
        self.log.append((index, request.method, body))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()

    def tool_calls(self) -> list[tuple[int, bool]]:
        """(replica, whether it carried `request_state`) of every tools/call, in order."""
        return [
            (index, "requestState" in body.get("params", {}))
            for index, method, body in self.log
            if method == "POST" and body.get("method") == "tools/call"
        ]


async def delete_pet(balancer: RoundRobin, mode: str) -> tuple[types.CallToolResult, User]:
    """One confirmed call of `petstore_delete_pet`, every request through `balancer`."""
    user = User()
    async with httpx2.AsyncClient(transport=balancer, timeout=30) as http:
        url = "http://127.0.0.1:1/mcp"  # the balancer picks the port
        async with Client(
            streamable_http_client(url, http_client=http), mode=mode, elicitation_callback=user
        ) as client:
            result = await client.call_tool("petstore_delete_pet", {"petId": 42})
    return result, user


def leaves(error: BaseException) -> list[BaseException]:
    """The errors inside (nested) exception groups."""
    if isinstance(error, BaseExceptionGroup):
        return [leaf for inner in error.exceptions for leaf in leaves(inner)]
    return [error]


def text_of(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def test_a_confirmation_asked_by_one_replica_completes_on_the_other_with_a_shared_store(
    package: Path, upstream: Loopback
) -> None:
    with (
        redis_server() as redis,
        two_replicas(package, upstream, shared_key=True, store=redis.url) as ports,
    ):
        balancer = RoundRobin(ports)
        result, user = await delete_pet(balancer, "auto")
    assert not result.is_error, text_of(result)
    assert len(user.asked) == 1 and user.asked[0].startswith("Confirm petstore_delete_pet")
    # The question came from one replica; the repeated call with the answer went to the other.
    (asked_by, first_had_state), (answered_by, second_had_state) = balancer.tool_calls()
    assert (first_had_state, second_had_state) == (False, True)
    assert asked_by != answered_by
    assert upstream.requests == ["DELETE /v2/pets/42"]


async def test_with_only_a_shared_key_the_other_replica_refuses_the_answer_and_sends_nothing(
    package: Path, upstream: Loopback
) -> None:
    """The memory store is per process: the other replica opens the state and refuses it."""
    with two_replicas(package, upstream, shared_key=True) as ports:
        balancer = RoundRobin(ports)
        result, _ = await delete_pet(balancer, "auto")
    assert result.is_error and "another server process" in text_of(result)
    (asked_by, _), (answered_by, _) = balancer.tool_calls()
    assert asked_by != answered_by
    assert upstream.requests == []


async def test_without_a_shared_key_the_other_replica_refuses_the_answer_and_sends_nothing(
    package: Path, upstream: Loopback
) -> None:
    balancer = RoundRobin([])
    with (
        two_replicas(package, upstream, shared_key=False) as ports,
        pytest.raises(ExceptionGroup) as refused,
    ):
        balancer = RoundRobin(ports)
        await delete_pet(balancer, "auto")
    # The SDK's boundary answers the other replica's sealed state with a JSON-RPC error.
    errors = leaves(refused.value)
    assert [str(e) for e in errors] == ["Invalid or expired requestState"], repr(refused.value)
    (asked_by, _), (answered_by, _) = balancer.tool_calls()
    assert asked_by != answered_by
    assert upstream.requests == []


async def test_in_the_2025_era_a_session_lives_in_one_replica_so_routing_must_be_sticky(
    package: Path, upstream: Loopback
) -> None:
    with two_replicas(package, upstream, shared_key=True) as ports:
        # Round robin: the session made by `initialize` on one replica is unknown to the other.
        with pytest.raises(ExceptionGroup) as refused:
            await delete_pet(RoundRobin(ports), "legacy")
        assert upstream.requests == []
        # Sticky (every request of the session to one replica): the same flow completes.
        result, user = await delete_pet(RoundRobin(ports[:1]), "legacy")
    errors = leaves(refused.value)
    assert [type(e).__name__ for e in errors] == ["MCPError"], repr(refused.value)
    assert str(errors[0]) == "Session not found"
    assert not result.is_error, text_of(result)
    assert len(user.asked) == 1
    assert upstream.requests == ["DELETE /v2/pets/42"]


def test_a_running_replica_writes_its_metrics_summary_on_sigusr1_and_when_it_stops(
    package: Path, upstream: Loopback, tmp_path: Path
) -> None:
    summary = tmp_path / "summary.json"
    port = free_port()
    env = replica_env(package, upstream, PETSTORE_METRICS_SUMMARY=str(summary))
    command = [sys.executable, "-m", "petstore_mcp", "--transport", "http", "--port", str(port)]
    process = subprocess.Popen(command, env=env, stderr=subprocess.DEVNULL)
    try:
        wait_for_port(port, process)
        anyio.run(calls_over_http, port)
        assert not summary.exists()  # not after every request: only when asked, or at exit
        process.send_signal(signal.SIGUSR1)
        asked = wait_for_summary(summary)
        assert asked["outcomes"] == {"ok": 1, "unknown_tool": 1, "input_required": 1}
    finally:
        stop(process)
    at_exit = json.loads(summary.read_text())
    assert at_exit["calls"] == 3 and at_exit["unknownTools"] == {"petstore_guess": 1}
    assert upstream.requests == ["DELETE /v2/pets/42"]


async def calls_over_http(port: int) -> None:
    async with (
        httpx2.AsyncClient(timeout=30) as http,
        Client(
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
            elicitation_callback=User(),
        ) as client,
    ):
        assert not (await client.call_tool("petstore_delete_pet", {"petId": 42})).is_error
        with pytest.raises(MCPError):
            await client.call_tool("petstore_guess", {})


def wait_for_summary(path: Path) -> Any:
    for _ in range(100):
        if path.exists() and path.read_text().endswith("}\n"):
            return json.loads(path.read_text())
        time.sleep(0.05)
    raise AssertionError(f"{path} was not written")
