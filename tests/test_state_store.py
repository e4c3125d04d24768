"""The state store (runtime/store.py) against a real redis-server: single use across stores
(replicas), the epoch across a Redis restart, one write-rate bucket for every replica, keys
namespaced, hashed and with a TTL, and faults that fail closed with a message naming the store.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Iterator

import pytest

from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.server import main
from mcpmint.runtime.store import (
    MemoryStore,
    RedisStore,
    StoreError,
    StoreSettingsError,
    load_store,
)

from .services import Redis, redis_server
from .support import free_port

pytestmark = pytest.mark.anyio
KEY = secrets.token_hex(32)


@pytest.fixture(scope="module")
def redis() -> Iterator[Redis]:
    with redis_server() as server:
        yield server


def store(url: str, namespace: str = "pets-mcp", timeout: float = 1.0) -> RedisStore:
    return RedisStore(url, namespace=namespace, key=KEY.encode(), timeout=timeout)


def later(seconds: float = 60.0) -> float:
    return time.time() + seconds


async def test_a_nonce_is_spent_once_across_every_store_sharing_redis(redis: Redis) -> None:
    one, two, three = store(redis.url), store(redis.url), store(redis.url)
    epoch = await one.epoch()
    assert epoch == await two.epoch() and len(epoch) == 16
    nonce = secrets.token_urlsafe(16)
    assert await two.spend("state", nonce, later(), epoch) is None
    assert await one.spend("state", nonce, later(), epoch) == "it was already used"
    assert await three.spend("state", nonce, later(), epoch) == "it was already used"
    # A token with the same nonce is another kind of thing: its own key.
    assert await three.spend("token", nonce, later(), epoch) is None
    assert await one.spend("state", nonce, time.time() - 1, epoch) == "it has expired"
    for each in (one, two, three):
        await each.aclose()


async def test_a_redis_restart_cannot_make_a_spent_nonce_spendable_again(redis: Redis) -> None:
    """Redis without persistence forgets every key on a restart; the epoch (from its run_id)
    changes with it, so everything issued before is refused, spent or not."""
    replica = store(redis.url)
    epoch = await replica.epoch()
    spent, pending = secrets.token_urlsafe(16), secrets.token_urlsafe(16)
    assert await replica.spend("token", spent, later(), epoch) is None
    redis.restart()
    assert redis.keys() == []  # the record of the spent nonce is gone
    for nonce in (spent, pending):
        refused = await replica.spend("token", nonce, later(), epoch)
        assert refused is not None and "restarted" in refused
    fresh = await replica.epoch()
    assert fresh != epoch
    assert await replica.spend("token", pending, later(), fresh) is None  # a new issue works
    await replica.aclose()


async def test_one_write_rate_bucket_serves_every_replica(redis: Redis) -> None:
    one, two = store(redis.url), store(redis.url)
    caller = f"alice-{secrets.token_hex(4)}@example.com"
    assert await one.rate(caller, 3, take=True) == 0
    assert await two.rate(caller, 3, take=True) == 0
    assert await one.rate(caller, 3, take=False) == 0  # asking takes nothing
    assert await two.rate(caller, 3, take=True) == 0
    wait = await one.rate(caller, 3, take=True)
    assert 19 < wait <= 20  # three per minute: the next in 20 s
    assert await two.rate(caller, 3, take=False) == pytest.approx(wait, abs=0.5)
    assert await two.rate(f"bob-{secrets.token_hex(4)}", 3, take=True) == 0  # per caller
    await one.aclose()
    await two.aclose()


async def test_keys_are_namespaced_hashed_and_all_expire(redis: Redis) -> None:
    redis.cli("FLUSHALL")
    replica = store(redis.url, namespace="billing-mcp")
    caller, nonce = "carol@example.com", secrets.token_urlsafe(16)
    await replica.rate(caller, 5, take=True)
    await replica.spend("state", nonce, later(600), await replica.epoch())
    keys = redis.keys()
    assert len(keys) == 2
    assert all(key.startswith("mcpmint:billing-mcp:") for key in keys)
    assert not any(caller in key or nonce in key for key in keys)
    assert not any(caller in redis.cli("HGETALL", key) for key in keys if ":rate:" in key)
    ttls = {key.split(":")[2]: int(redis.cli("PTTL", key)) for key in keys}
    assert 59_000 < ttls["rate"] <= 61_000  # until the bucket is full again (5 in 60 s), +1 s
    assert 600_000 < ttls["state"] <= 661_000  # the state's life and the clock margin
    await replica.aclose()


async def test_a_store_that_cannot_be_reached_fails_closed_naming_it_without_password() -> None:
    port = free_port()
    replica = store(f"redis://:hunter2-secret@127.0.0.1:{port}/3")
    for call in (replica.check(), replica.spend("state", "n" * 16, later(), "0" * 16)):
        with pytest.raises(StoreError) as failed:
            await call
        message = str(failed.value)
        assert f"The state store (redis://127.0.0.1:{port}/3)" in message
        assert "cannot be reached" in message and "hunter2" not in message
    await replica.aclose()


async def test_a_store_that_hangs_fails_closed_within_its_timeout(redis: Redis) -> None:
    replica = store(redis.url, timeout=0.3)
    await replica.check()
    redis.pause()
    try:
        started = time.monotonic()
        with pytest.raises(StoreError, match="did not answer in time"):
            await replica.rate("dave", 5, take=True)
        assert time.monotonic() - started < 5
    finally:
        redis.resume()
    assert await replica.rate("dave", 5, take=True) == 0  # and it recovers
    await replica.aclose()


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"P_STATE_STORE": "memcached://x"}, "P_STATE_STORE must be `memory` or a redis://"),
        ({"P_STATE_STORE": "redis://"}, "with a host"),
        ({"P_STATE_STORE": "redis://r:6379"}, "P_STATE_KEY is not set"),
        (
            {"P_STATE_STORE": "redis://r", "P_STATE_KEY": KEY, "P_STATE_STORE_TIMEOUT": "0"},
            "P_STATE_STORE_TIMEOUT must be a number of seconds",
        ),
    ],
)
def test_unusable_store_settings_are_refused_by_name(environ: dict[str, str], message: str) -> None:
    with pytest.raises(StoreSettingsError, match=message):
        load_store("P", environ, namespace="p")


def test_the_default_store_is_memory_and_a_redis_url_gives_redis() -> None:
    assert isinstance(load_store("P", {}, namespace="p"), MemoryStore)
    assert isinstance(load_store("P", {"P_STATE_STORE": "memory"}, namespace="p"), MemoryStore)
    shared = load_store(
        "P", {"P_STATE_STORE": "rediss://u:pw@cache.internal:6380/2", "P_STATE_KEY": KEY},
        namespace="p",
    )  # fmt: skip
    assert isinstance(shared, RedisStore) and shared.name == "rediss://cache.internal:6380/2"


def test_a_server_whose_store_does_not_answer_stops_at_start_up_saying_why(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`python -m <package> --transport http` checks the store before it listens."""
    port = free_port()
    environ = {
        "PETS_STATE_STORE": f"redis://127.0.0.1:{port}/0",
        "PETS_STATE_KEY": KEY,
        "PETS_STATE_STORE_TIMEOUT": "0.5",
    }
    assert main(catalog(), ["--transport", "http", "--port", "0"], environ=environ) == 2
    error = capsys.readouterr().err
    assert f"The state store (redis://127.0.0.1:{port}/0) could not be reached" in error
    assert "PETS_STATE_STORE" in error and "Traceback" not in error


def catalog() -> Catalog:
    data = {
        "format": 1,
        "server": {"name": "pets-mcp", "namespace": "pets", "envPrefix": "PETS", "version": "1"},
        "upstream": {"baseUrl": "https://api.example.com", "timeoutSeconds": 5.0},
        "securitySchemes": {},
        "tools": [],
    }
    return load_catalog(data)
