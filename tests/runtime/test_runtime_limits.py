"""Limits (S9, S14, S17): retries, response and argument caps, concurrency, write rates."""

from __future__ import annotations

import io
import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from runtime_support import Answer, Clock, Recorder, catalog_data

from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.limits import (
    MAX_RETRY_DELAY,
    Limits,
    LimitsError,
    RateLimiter,
    load_limits,
    retry_delay,
)
from mcpmint.runtime.server import ConfigurationError, build_server

pytestmark = pytest.mark.anyio


class Sleeps:
    """A sleep function that records the delays and does not wait."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


@asynccontextmanager
async def connect(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str],
    mode: str,
    *,
    sleeps: Sleeps | None = None,
    clock: Clock | None = None,
    audit: io.StringIO | None = None,
) -> AsyncIterator[Client]:
    server = build_server(
        catalog,
        transport=upstream.transport,
        environ=env,
        sleep=sleeps or Sleeps(),
        clock=clock or Clock(),
        audit=AuditLog(stream=audit or io.StringIO()),
    )
    async with Client(server, mode=mode, elicitation_callback=Answer()) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    [content] = result.content
    assert isinstance(content, types.TextContent)
    return content.text


# ------------------------------------------------------------------------------ settings


def test_limits_defaults_and_variables() -> None:
    assert load_limits("PETS", {}) == Limits(2, 1024 * 1024, 256 * 1024, 8, 60.0)
    env = {
        "PETS_RETRIES": "0",
        "PETS_MAX_RESPONSE_BYTES": "100",
        "PETS_MAX_ARGUMENT_BYTES": "50",
        "PETS_MAX_CONCURRENCY": "1",
        "PETS_WRITE_RATE": "0.5",
    }
    assert load_limits("PETS", env) == Limits(0, 100, 50, 1, 0.5)


@pytest.mark.parametrize(
    ("name", "value"),
    [("PETS_RETRIES", "-1"), ("PETS_MAX_CONCURRENCY", "0"), ("PETS_WRITE_RATE", "nan")],
)
def test_bad_limits_are_refused_naming_the_variable(name: str, value: str) -> None:
    with pytest.raises(LimitsError, match=name):
        load_limits("PETS", {name: value})
    with pytest.raises(ConfigurationError, match=name):
        build_server(load_catalog(catalog_data()), environ={name: value})


def test_retry_delay_backs_off_and_honours_retry_after() -> None:
    assert [retry_delay(n, "") for n in range(3)] == [0.5, 1.0, 2.0]
    assert retry_delay(0, "3") == 3.0
    assert retry_delay(2, "1") == 2.0  # never shorter than the backoff
    now = datetime(2026, 1, 1, tzinfo=UTC)
    date = format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_delay(0, date, now=lambda: now) == 7.0
    assert retry_delay(0, str(int(MAX_RETRY_DELAY) + 1)) is None  # asks too much: no retry
    assert retry_delay(0, "soon") == 0.5


async def test_rate_limiter_is_a_token_bucket_per_caller() -> None:
    clock = Clock()
    limiter = RateLimiter(2, clock=clock)
    assert await limiter.take("a") == 0 and await limiter.take("a") == 0
    assert await limiter.wait_time("a") == pytest.approx(30.0)  # asking takes nothing
    assert await limiter.take("a") == pytest.approx(30.0)
    assert await limiter.take("b") == 0  # another caller has its own budget
    clock.now += 30
    assert await limiter.take("a") == 0
    assert await RateLimiter(0, clock=clock).take("a") == 0  # 0 turns the limit off


# ------------------------------------------------------------------------------ S14


async def test_S14_hanging_upstream_times_out_within_bound(mode: str) -> None:
    data = catalog_data()
    data["upstream"]["timeoutSeconds"] = 0.2
    never = anyio.Event()
    hits: list[httpx2.Request] = []

    async def hang(request: httpx2.Request) -> httpx2.Response:
        hits.append(request)
        await never.wait()
        raise AssertionError("unreachable")

    upstream = Recorder()
    upstream.transport = httpx2.MockTransport(hang)
    sleeps = Sleeps()
    start = anyio.current_time()
    async with connect(load_catalog(data), upstream, {}, mode, sleeps=sleeps) as client:
        result = await client.call_tool("pets_get_pet", {"petId": "1"})
    elapsed = anyio.current_time() - start
    assert result.is_error and "did not answer within 0.2 seconds" in text(result)
    assert elapsed < 2.0
    assert len(hits) == 1 and sleeps.delays == []  # a timeout is not retried


async def test_S14_post_is_never_retried(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(503, headers={"Retry-After": "1"})
    sleeps = Sleeps()
    async with connect(catalog, upstream, env, mode, sleeps=sleeps) as client:
        result = await client.call_tool("pets_create_pet", {"name": "Rex"})
    assert result.is_error and "HTTP 503" in text(result)
    assert len(upstream.requests) == 1 and sleeps.delays == []

    def refused(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("refused", request=request)

    upstream.requests.clear()
    upstream.respond = refused
    async with connect(catalog, upstream, env, mode, sleeps=sleeps) as client:
        result = await client.call_tool("pets_create_pet", {"name": "Rex"})
    assert result.is_error and "Could not connect" in text(result)
    assert len(upstream.requests) == 1 and sleeps.delays == []


async def test_S14_get_503_with_retry_after_is_retried_boundedly(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(503, headers={"Retry-After": "4"})
    sleeps = Sleeps()
    async with connect(catalog, upstream, env, mode, sleeps=sleeps) as client:
        result = await client.call_tool("pets_get_pet", {"petId": "1"})
    assert result.is_error and "HTTP 503" in text(result)
    assert len(upstream.requests) == 3  # the call and PETS_RETRIES=2 retries
    assert sleeps.delays == [4.0, 4.0]


async def test_S14_get_retry_succeeds_after_a_503_and_a_connect_error(
    catalog: Catalog, env: dict[str, str], mode: str
) -> None:
    answers: list[Any] = [
        httpx2.Response(503),
        httpx2.ConnectError("refused"),
        httpx2.Response(200, json={"id": 1, "name": "Rex"}),
    ]

    def respond(request: httpx2.Request) -> httpx2.Response:
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer  # type: ignore[no-any-return]

    upstream = Recorder()
    upstream.respond = respond
    sleeps = Sleeps()
    async with connect(catalog, upstream, env, mode, sleeps=sleeps) as client:
        result = await client.call_tool("pets_get_pet", {"petId": "1"})
    assert not result.is_error and result.structured_content == {"id": 1, "name": "Rex"}
    assert sleeps.delays == [0.5, 1.0]


async def test_S14_retries_respect_the_variable_and_a_too_long_retry_after(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(502)
    env["PETS_RETRIES"] = "0"
    async with connect(catalog, upstream, env, mode) as client:
        await client.call_tool("pets_get_pet", {"petId": "1"})
    assert len(upstream.requests) == 1
    upstream.requests.clear()
    del env["PETS_RETRIES"]
    upstream.respond = lambda request: httpx2.Response(503, headers={"Retry-After": "3600"})
    async with connect(catalog, upstream, env, mode) as client:
        await client.call_tool("pets_get_pet", {"petId": "1"})
    assert len(upstream.requests) == 1


async def test_S14_oversized_response_is_truncated_naming_pagination_arguments(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    pets = [{"id": n, "name": "x" * 50} for n in range(100)]
    body = json.dumps(pets).encode()
    upstream.respond = lambda request: httpx2.Response(200, content=body)
    env["PETS_MAX_RESPONSE_BYTES"] = "1000"
    async with connect(catalog, upstream, env, mode) as client:
        listed = await client.call_tool("pets_list_pets", {})
        stats = await client.call_tool("pets_stats", {})
    # With an output schema: a cut JSON document cannot be structured, so an error result that
    # says the call succeeded, names the cut and the arguments that ask for less.
    assert listed.is_error and listed.structured_content is None
    message = text(listed)
    assert message.startswith("The upstream API call SUCCEEDED (HTTP 200 OK)")
    assert f"only its first 1000 bytes are shown above; {len(body) - 1000} bytes were cut" in (
        message
    )
    assert "Ask for less with `limit`." in message
    assert body[:1000].decode() in message
    # Without one: an ordinary text result, the partial body first, then the note.
    assert not stats.is_error and stats.structured_content is None
    assert text(stats).startswith(body[:1000].decode())
    assert text(stats).endswith("Narrow the request (filters) to get a smaller response.]")


async def test_S14_concurrency_is_limited(catalog: Catalog, env: dict[str, str]) -> None:
    env["PETS_MAX_CONCURRENCY"] = "2"
    in_flight = 0
    peak = 0

    async def slow(request: httpx2.Request) -> httpx2.Response:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        await anyio.sleep(0.02)
        in_flight -= 1
        return httpx2.Response(200, json={"id": 1, "name": "Rex"})

    upstream = Recorder()
    upstream.transport = httpx2.MockTransport(slow)
    async with (
        connect(catalog, upstream, env, "legacy") as client,
        anyio.create_task_group() as group,
    ):
        for n in range(6):
            group.start_soon(client.call_tool, "pets_get_pet", {"petId": str(n)})
    assert peak == 2


# ------------------------------------------------------------------------------ S9, S17


async def test_S9_oversized_argument_refused_before_validation(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    env["PETS_MAX_ARGUMENT_BYTES"] = "1000"
    audit = io.StringIO()
    async with connect(catalog, upstream, env, mode, audit=audit) as client:
        # Invalid too (an unknown property): the size is what is reported, not the schema.
        result = await client.call_tool("pets_get_pet", {"petId": "1", "junk": "x" * 2000})
        ok = await client.call_tool("pets_get_pet", {"petId": "1", "q": "x" * 900})
    assert result.is_error
    assert text(result).startswith("The arguments are too large (")
    assert "at most 1000). Nothing was sent." in text(result)
    assert not ok.is_error and len(upstream.requests) == 1
    [record] = [json.loads(line) for line in audit.getvalue().splitlines()]
    assert record["decision"] == "refused" and record["reason"] == "arguments too large"
    assert record["arguments"] is None and len(record["argumentsSha256"]) == 64


async def test_S17_write_calls_are_rate_limited(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    env["PETS_WRITE_RATE"] = "2"
    clock = Clock()
    async with connect(catalog, upstream, env, mode, clock=clock) as client:
        first = await client.call_tool("pets_create_pet", {"name": "a"})
        second = await client.call_tool("pets_create_pet", {"name": "b"})
        third = await client.call_tool("pets_delete_pet", {"petId": "1"})
        reads = [await client.call_tool("pets_get_pet", {"petId": "1"}) for _ in range(5)]
        clock.now += 30
        later = await client.call_tool("pets_create_pet", {"name": "c"})
    assert not first.is_error and not second.is_error and not later.is_error
    assert third.is_error
    assert text(third) == (
        "Rate limit: this server allows 2 calls per minute to tools that change something. "
        "Retry in 30 seconds. Nothing was sent."
    )
    assert not any(r.is_error for r in reads)  # read-only tools are not limited
    assert [r.method for r in upstream.requests].count("DELETE") == 0
    assert len(upstream.requests) == 8
