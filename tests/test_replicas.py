"""Many replicas, one truth: a generated server run three times behind a real nginx (round
robin), sharing a real redis-server, driven by the official MCP SDK client.

petstore-plus is generated once; each replica is its own `python -m petstore_mcp --transport
http` under uvicorn on loopback with `PETSTORE_STATE_STORE=redis://...` and one
`PETSTORE_STATE_KEY`. A loopback API records what reaches the upstream. Shown here:

- a confirmation (2026-07-28 `request_state`) or a confirmation token redeemed through one
  replica is refused by every replica when replayed, and the upstream gets the call once;
- the write rate limit holds for the deployment, not per replica;
- killing a replica mid-run loses no call the client saw confirmed and sends none twice;
- with Redis stopped, calls that need it are refused naming the store and reads go on; when
  it returns, confirmed calls go through again;
- 2025-11-25 sessions need affinity: through nginx with `ip_hash` they complete.
"""

from __future__ import annotations

import secrets
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import IO, Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate

from .services import Redis, nginx, redis_server
from .support import PLUS, Loopback, User, clean_env, free_port, loopback, stop, wait_for_port

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
STATE_KEY = secrets.token_hex(32)


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("replicas") / "petstore-mcp"
    sink = DiagnosticSink()
    generate(PLUS, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    return out


@pytest.fixture
def redis() -> Iterator[Redis]:
    with redis_server() as server:
        yield server


def answer(seen: Any) -> tuple[int, Any]:
    if seen.method == "GET":
        return 200, {"id": 5, "name": "Rex"}
    time.sleep(0.02)  # a write takes a moment: a replica can die while one is in flight
    return 204, None


@pytest.fixture
def upstream() -> Iterator[Loopback]:
    with loopback(answer) as server:
        yield server


class Replicas:
    """Replicas of the package, each a process on a free port, logging to a temporary file."""

    def __init__(self, package: Path, upstream: Loopback, env: dict[str, str]) -> None:
        self._package, self._upstream, self._env = package, upstream, env
        self.ports: list[int] = []
        self.processes: list[subprocess.Popen[bytes]] = []
        self._logs: list[IO[bytes]] = []

    def start(self, count: int) -> None:
        for _ in range(count):
            port = free_port()
            env = clean_env(
                PYTHONPATH=str(self._package / "src"),
                PETSTORE_BASE_URL=f"{self._upstream.url}/v2",
                PETSTORE_BEARER_AUTH="bearer-for-upstream",
                PETSTORE_API_KEY_AUTH="key-for-upstream",
                PETSTORE_AUDIT="off",
                **self._env,
            )
            command = [
                sys.executable, "-m", "petstore_mcp", "--transport", "http", "--port", str(port),
            ]  # fmt: skip
            log = tempfile.TemporaryFile()  # noqa: SIM115 (closed by `stop`)
            process = subprocess.Popen(command, env=env, stdout=log, stderr=subprocess.STDOUT)
            self.ports.append(port)
            self.processes.append(process)
            self._logs.append(log)
        for port, process in zip(self.ports, self.processes, strict=True):
            wait_for_port(port, process)

    def kill(self, index: int) -> None:
        self.processes[index].send_signal(signal.SIGKILL)
        self.processes[index].wait()

    def stop(self) -> None:
        for process in self.processes:
            if process.poll() is None:
                stop(process)
        for log in self._logs:
            log.close()

    def logs(self) -> str:
        texts = []
        for log in (log for log in self._logs if not log.closed):
            log.seek(0)
            texts.append(log.read().decode(errors="replace")[-2000:])
        return "\n---\n".join(texts)


@contextmanager
def deployment(
    package: Path, upstream: Loopback, count: int, **env: str
) -> Iterator[tuple[Replicas, int]]:
    """`count` replicas behind nginx; yields them and nginx's port."""
    replicas = Replicas(package, upstream, {"PETSTORE_STATE_KEY": STATE_KEY, **env})
    with ExitStack() as stack:
        stack.callback(replicas.stop)
        try:
            replicas.start(count)
            port = stack.enter_context(nginx(replicas.ports))
            yield replicas, port
        except BaseException:
            sys.stderr.write(replicas.logs())
            raise


def shared(redis: Redis, **env: str) -> dict[str, str]:
    return {"PETSTORE_STATE_STORE": redis.url, **env}


class Recording(httpx2.AsyncBaseTransport):
    """The client's HTTP, recorded: (headers, body) of every POST."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self.posts: list[tuple[dict[str, str], bytes]] = []

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if request.method == "POST":
            await request.aread()
            self.posts.append((dict(request.headers), request.content))
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self._inner.aclose()


async def call(
    port: int,
    name: str,
    arguments: dict[str, Any],
    *,
    mode: str = "auto",
    user: User | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
) -> types.CallToolResult:
    async with (
        httpx2.AsyncClient(transport=transport, timeout=30) as http,
        Client(
            streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http),
            mode=mode,
            elicitation_callback=user,
        ) as client,
    ):
        return await client.call_tool(name, arguments)


def text_of(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


def deletes(upstream: Loopback) -> list[str]:
    return [request for request in upstream.requests if request.startswith("DELETE")]


async def replay(port: int, headers: dict[str, str], body: bytes) -> str:
    """One captured request sent again as it was, to `port`: the response's text."""
    headers = {k: v for k, v in headers.items() if k.lower() not in ("host", "content-length")}
    async with httpx2.AsyncClient(timeout=30) as http:
        response = await http.post(f"http://127.0.0.1:{port}/mcp", headers=headers, content=body)
    return response.text


async def test_a_confirmation_redeemed_through_one_replica_is_refused_by_every_replica(
    package: Path, upstream: Loopback, redis: Redis
) -> None:
    with deployment(package, upstream, 3, **shared(redis)) as (replicas, port):
        recording = Recording()
        user = User()
        result = await call(
            port, "petstore_delete_pet", {"petId": 42}, user=user, transport=recording
        )
        assert not result.is_error, text_of(result)
        [(headers, body)] = [(h, b) for h, b in recording.posts if b"requestState" in b]
        # The attacker's replay: the answered request, again, to each replica directly.
        answers = [await replay(each, headers, body) for each in replicas.ports]
    assert len(user.asked) == 1
    assert deletes(upstream) == ["DELETE /v2/pets/42"]
    for text in answers:
        assert "the confirmation state does not match this call (it was already used)" in text


async def test_a_confirmation_token_redeemed_on_one_replica_is_refused_on_every_replica(
    package: Path, upstream: Loopback, redis: Redis
) -> None:
    env = shared(redis, PETSTORE_CONFIRM_FALLBACK="token")
    with deployment(package, upstream, 3, **env) as (replicas, _):
        one, two, _ = replicas.ports
        first = await call(one, "petstore_delete_pet", {"petId": 7})  # no elicitation
        token = text_of(first).split('"_confirmation_token": "')[1].split('"')[0]
        with_token = {"petId": 7, "_confirmation_token": token}
        redeemed = await call(two, "petstore_delete_pet", with_token)
        replays = [await call(each, "petstore_delete_pet", with_token) for each in replicas.ports]
    assert first.is_error and "CONFIRMATION NEEDED" in text_of(first)
    assert not redeemed.is_error, text_of(redeemed)
    for result in replays:
        assert result.is_error and "it was already used" in text_of(result)
    assert deletes(upstream) == ["DELETE /v2/pets/7"]


async def test_the_write_rate_holds_across_replicas(
    package: Path, upstream: Loopback, redis: Redis
) -> None:
    with deployment(package, upstream, 3, **shared(redis, PETSTORE_WRITE_RATE="4")) as (_, port):
        results = [
            await call(port, "petstore_delete_pet", {"petId": n}, user=User()) for n in range(8)
        ]
    refused = [r for r in results if r.is_error]
    assert len(refused) == 4 and all("Rate limit" in text_of(r) for r in refused)
    assert len(deletes(upstream)) == 4  # 4 a minute for the deployment, not 4 per replica


async def test_killing_a_replica_mid_run_loses_no_confirmed_call_and_sends_none_twice(
    package: Path, upstream: Loopback, redis: Redis
) -> None:
    calls, concurrency, kill_after = 60, 6, 20
    succeeded: list[int] = []
    failed: list[int] = []
    done = anyio.Event()
    with deployment(package, upstream, 3, **shared(redis)) as (replicas, port):
        started_after_kill: list[int] = []
        killed = [False]
        limiter = anyio.Semaphore(concurrency)

        async def one(pet: int) -> None:
            async with limiter:
                if killed[0]:
                    started_after_kill.append(pet)
                try:
                    result = await call(port, "petstore_delete_pet", {"petId": pet}, user=User())
                except Exception:
                    failed.append(pet)
                else:
                    (failed if result.is_error else succeeded).append(pet)
                if len(succeeded) + len(failed) == kill_after and not killed[0]:
                    replicas.kill(2)  # SIGKILL: whatever it had in flight dies with it
                    killed[0] = True
                if len(succeeded) + len(failed) == calls:
                    done.set()

        async with anyio.create_task_group() as group:
            for pet in range(1000, 1000 + calls):
                group.start_soon(one, pet)
    sent = Counter(int(r.rsplit("/", 1)[1]) for r in deletes(upstream))
    print(f"replica kill: {len(succeeded)} confirmed, {len(failed)} failed, {len(sent)} sent, "
          f"{sum(n > 1 for n in sent.values())} sent twice")  # fmt: skip
    assert killed[0] and len(succeeded) + len(failed) == calls
    assert [pet for pet, n in sent.items() if n > 1] == []  # none sent twice
    assert set(succeeded) <= set(sent)  # every call the client saw confirmed reached the API
    # A call that failed died with the replica (at most those it had in flight); once nginx
    # knows the replica is gone, calls complete on the other two.
    assert len(failed) <= concurrency, failed
    late = started_after_kill[concurrency:]
    assert late and set(late) <= set(succeeded)


async def test_stopping_redis_refuses_what_needs_it_and_recovers_when_it_returns(
    package: Path, upstream: Loopback, redis: Redis
) -> None:
    env = shared(redis, PETSTORE_STATE_STORE_TIMEOUT="0.5")
    with deployment(package, upstream, 2, **env) as (_, port):
        async with httpx2.AsyncClient(timeout=10) as http:
            base = f"http://127.0.0.1:{port}"
            assert (await http.get(f"{base}/readyz")).status_code == 200
            redis.stop()
            read = await call(port, "petstore_get_pet", {"petId": 5})
            write = await call(port, "petstore_delete_pet", {"petId": 9}, user=User())
            not_ready = await http.get(f"{base}/readyz")
            alive = await http.get(f"{base}/healthz")
            assert deletes(upstream) == []
            redis.start()
            again = await call(port, "petstore_delete_pet", {"petId": 9}, user=User())
            ready = await http.get(f"{base}/readyz")
    assert "GET /v2/pets/5" in upstream.requests, text_of(read)  # a read needs no store
    assert "state store" not in text_of(read)
    assert write.is_error
    assert f"The state store ({redis.url}) could not" in text_of(write)
    assert "Nothing was sent" in text_of(write)
    assert not_ready.status_code == 503 and not_ready.json()["store"] == redis.url
    assert alive.status_code == 200
    assert not again.is_error, text_of(again)
    assert ready.status_code == 200
    assert deletes(upstream) == ["DELETE /v2/pets/9"]


async def test_sessions_of_the_2025_era_complete_through_nginx_with_client_affinity(
    package: Path, upstream: Loopback, redis: Redis
) -> None:
    """A 2025-11-25 session lives in the memory of the replica that created it (the SDK's
    session manager); its event store would only replay a stream within that replica. So the
    load balancer must keep a client on one replica: `ip_hash` does. (Without affinity the
    other replicas answer 404 `Session not found`: tests/test_scale_out.py.)"""
    replicas = Replicas(package, upstream, {"PETSTORE_STATE_KEY": STATE_KEY, **shared(redis)})
    try:
        replicas.start(3)
        with nginx(replicas.ports, affinity=True) as sticky, anyio.fail_after(60):
            results = [
                await call(sticky, "petstore_delete_pet", {"petId": n}, mode="legacy", user=User())
                for n in (4, 5, 6)
            ]
    finally:
        replicas.stop()
    assert [r.is_error for r in results] == [False, False, False]
    assert deletes(upstream) == [f"DELETE /v2/pets/{n}" for n in (4, 5, 6)]
