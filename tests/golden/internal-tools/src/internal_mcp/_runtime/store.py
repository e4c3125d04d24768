"""State that must hold across replicas, behind one interface: in memory or in Redis.

`<P>_STATE_STORE` chooses the store when the server starts:

- `memory` (the default): this process only, nothing to install. Right for stdio and for one
  HTTP process. Each process is a store of its own (its own epoch, below): a confirmation or a
  token issued by one process is refused by every other, and by the same server after a restart.
- `redis://[user:password@]host:port/db` or `rediss://...` (TLS): Redis 7 or Valkey through the
  `redis` library, the generated package's `redis` extra. One store for every replica.

What the store holds, each entry with a time to live so that nothing grows without bound:

- spent nonces (confirmation states of 2026-07-28 and fallback tokens): `spend` marks a nonce
  used, once, atomically (`SET NX` with a TTL in Redis). A second `spend` of the same nonce, from
  any replica, is refused.
- write-rate buckets: one token bucket per caller for the whole deployment (`rate`), updated
  atomically by a script that uses the store's own clock, so that replicas' clocks do not matter.

Keys are `mcpmint:<server>:<kind>:<digest>`, the digest an HMAC-SHA256 of the nonce or caller
under `<P>_STATE_KEY`: several servers can share one Redis, and who calls is never stored in a
form that can be read back or guessed by trying names.

**The epoch.** Every nonce is issued in an epoch of the store, carried inside the sealed state or
the MAC'd token, and `spend` refuses a nonce of another epoch. Redis's epoch is derived from its
`run_id`, which changes on every restart and failover whatever the persistence settings; the
check and the `SET NX` are one script. So a restart that lost the record of a redeemed nonce
cannot make it redeemable again: everything issued before the restart is refused (the user is
asked again), and nothing outlives the 10 minutes the state or token was valid for.

**Faults fail closed.** A store that cannot be reached, refuses the password, or does not answer
within `<P>_STATE_STORE_TIMEOUT` seconds (default 2) raises `StoreError`, whose message names the
store (never its password); the server refuses the call that needed it, sending nothing. Calls
that need nothing from the store (read-only tools without confirmation) go on.
"""

from __future__ import annotations

import hashlib
import hmac
import importlib
import math
import secrets
import time
from collections.abc import Callable, Mapping
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

import anyio

__all__ = [
    "MEMORY",
    "MemoryStore",
    "RedisStore",
    "StateStore",
    "StoreError",
    "StoreSettingsError",
    "load_store",
]

MEMORY = "memory"
DEFAULT_TIMEOUT = 2.0
# Replicas decide a state's expiry with their own clocks; a spent nonce is kept this much
# longer than its state could be valid, so that clocks apart by less still agree.
CLOCK_SKEW_SECONDS = 60.0


class StoreError(RuntimeError):
    """The state store did not answer; the message names it and says what failed."""


class StoreSettingsError(ValueError):
    """`<P>_STATE_STORE` or a companion is unusable; the message names the variable."""


class StateStore(Protocol):
    """The operations the server needs from its state store."""

    name: str  # what messages call it: `memory`, or the URL without its password

    async def check(self) -> None:
        """Raise `StoreError` unless the store answers now (start-up and `/readyz`)."""

    async def epoch(self) -> str:
        """The store's current epoch, issued with every nonce (see the module's text)."""

    async def spend(self, kind: str, nonce: str, expires: float, epoch: str) -> str | None:
        """Use up `nonce` (of `kind`: `state` or `token`), valid until `expires` (Unix time),
        issued in `epoch`: None, or why it cannot be used."""

    async def rate(self, caller: str, per_minute: float, *, take: bool) -> float:
        """Seconds until `caller` may make a write call (0: now), taking one when `take`."""

    async def aclose(self) -> None:
        """Release connections."""


class MemoryStore:
    """The state of one process (the default)."""

    name = MEMORY

    def __init__(
        self,
        *,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self._clock = clock  # wall clock: the expiry of states and tokens
        self._monotonic = monotonic  # the rate buckets
        self._epoch = secrets.token_hex(8)  # this process: nothing issued elsewhere is spent
        self._used: dict[str, float] = {}  # kind:nonce -> expiry
        self._buckets: dict[str, tuple[float, float]] = {}  # caller -> (tokens, when)

    async def check(self) -> None:
        return None

    async def epoch(self) -> str:
        return self._epoch

    async def spend(self, kind: str, nonce: str, expires: float, epoch: str) -> str | None:
        now = self._clock()
        for old in [key for key, until in self._used.items() if until <= now]:
            del self._used[old]
        if not now < expires:
            return "it has expired"
        if epoch != self._epoch:
            return (
                "it was issued by another server process or before a restart (the memory "
                "state store is per process: replicas need a shared store such as Redis)"
            )
        key = f"{kind}:{nonce}"
        if key in self._used:
            return "it was already used"
        self._used[key] = float(expires)
        return None

    async def rate(self, caller: str, per_minute: float, *, take: bool) -> float:
        capacity = max(1.0, per_minute)
        now = self._monotonic()
        tokens, when = self._buckets.get(caller, (capacity, now))
        tokens = min(capacity, tokens + max(0.0, now - when) * per_minute / 60.0)
        wait = 0.0 if tokens >= 1.0 else (1.0 - tokens) * 60.0 / per_minute
        if take and wait == 0.0:
            tokens -= 1.0
        self._buckets[caller] = (tokens, now)
        return wait

    async def aclose(self) -> None:
        return None


# The epoch: the first 16 hex digits of SHA-1 over the server's run_id (new on every restart).
_EPOCH = """
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
return redis.sha1hex(run):sub(1, 16)
"""
# KEYS[1]: the nonce's key; ARGV[1]: its TTL in ms; ARGV[2]: the epoch it was issued in.
_SPEND = """
local run = string.match(redis.call('INFO', 'server'), 'run_id:(%x+)')
local epoch = redis.sha1hex(run):sub(1, 16)
if epoch ~= ARGV[2] then return {'epoch', epoch} end
if redis.call('SET', KEYS[1], '1', 'NX', 'PX', ARGV[1]) then return {'ok', epoch} end
return {'used', epoch}
"""
# KEYS[1]: the caller's bucket; ARGV[1]: calls per minute; ARGV[2]: 1 to take one.
# A token bucket of capacity max(1, rate), on the store's clock; kept until it is full again.
_RATE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local per_second = tonumber(ARGV[1]) / 60
local capacity = math.max(1, tonumber(ARGV[1]))
local b = redis.call('HMGET', KEYS[1], 'tokens', 'at')
local tokens = tonumber(b[1]) or capacity
local at = tonumber(b[2]) or now
tokens = math.min(capacity, tokens + math.max(0, now - at) * per_second)
local wait = 0
if tokens >= 1 then
  if ARGV[2] == '1' then tokens = tokens - 1 end
else
  wait = (1 - tokens) / per_second
end
redis.call('HSET', KEYS[1], 'tokens', tostring(tokens), 'at', tostring(now))
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity / per_second * 1000) + 1000)
return tostring(wait)
"""


class RedisStore:
    """One store for every replica: Redis 7 or Valkey (`redis.asyncio`)."""

    def __init__(self, url: str, *, namespace: str, key: bytes, timeout: float) -> None:
        try:
            self._module: Any = importlib.import_module("redis.asyncio")
            self._retry: Any = importlib.import_module("redis.asyncio.retry")
            self._backoff: Any = importlib.import_module("redis.backoff")
        except ImportError:
            raise StoreSettingsError(
                "the Redis state store needs the `redis` library: install the package's "
                "`redis` extra (pip install '<this package>[redis]')"
            ) from None
        self._url = url
        self.name = _public_url(url)
        self._prefix = f"mcpmint:{namespace}:"
        self._key = hmac.new(key, b"mcpmint state store keys v1", hashlib.sha256).digest()
        self._timeout = timeout
        self._client: Any = None
        self._scripts: dict[str, Any] = {}

    def _connect(self) -> Any:
        # One quick retry (after a Redis restart the pool holds dead connections); no more:
        # a store that does not answer refuses calls fast instead of holding them.
        return self._module.Redis.from_url(
            self._url,
            socket_timeout=self._timeout,
            socket_connect_timeout=self._timeout,
            retry=self._retry.Retry(self._backoff.NoBackoff(), 1),
            decode_responses=True,
        )

    async def _run(self, what: str, script: str, keys: list[str], args: list[str]) -> Any:
        if self._client is None:
            self._client = self._connect()
            self._scripts = {}
        if script not in self._scripts:  # EVALSHA, and EVAL when the store lost the script
            self._scripts[script] = self._client.register_script(script)
        try:
            with anyio.fail_after(self._timeout * 3):
                return await self._scripts[script](keys=keys, args=args)
        except TimeoutError:
            raise StoreError(self._failed(what, "it did not answer in time")) from None
        except Exception as exc:  # the library's ConnectionError, AuthenticationError, ...
            raise StoreError(self._failed(what, _reason(exc))) from None

    def _failed(self, what: str, why: str) -> str:
        return f"The state store ({self.name}) could not {what}: {why}."

    async def check(self) -> None:
        await self._run("be reached", _EPOCH, [], [])

    async def epoch(self) -> str:
        # Asked every time (one round trip): an epoch remembered across a restart of Redis
        # would make the next confirmation fail for nothing.
        return str(await self._run("give its epoch", _EPOCH, [], []))

    async def spend(self, kind: str, nonce: str, expires: float, epoch: str) -> str | None:
        remaining = expires - time.time()
        if remaining <= 0:
            return "it has expired"
        ttl_ms = math.ceil((remaining + CLOCK_SKEW_SECONDS) * 1000)
        key = self._key_of(kind, nonce)
        verdict, _ = await self._run("record a used nonce", _SPEND, [key], [str(ttl_ms), epoch])
        if verdict == "ok":
            return None
        if verdict == "used":
            return "it was already used"
        return "it was issued before the state store restarted, or by another store"

    async def rate(self, caller: str, per_minute: float, *, take: bool) -> float:
        key = self._key_of("rate", caller)
        wait = await self._run(
            "count the write rate", _RATE, [key], [repr(per_minute), "1" if take else "0"]
        )
        return float(wait)

    async def aclose(self) -> None:
        client, self._client = self._client, None
        if client is not None:
            with anyio.move_on_after(self._timeout), anyio.CancelScope(shield=True):
                await client.aclose()

    def _key_of(self, kind: str, value: str) -> str:
        digest = hmac.new(self._key, f"{kind}\0{value}".encode(), hashlib.sha256).hexdigest()
        return f"{self._prefix}{kind}:{digest[:40]}"


def load_store(
    prefix: str,
    environ: Mapping[str, str],
    *,
    namespace: str,
    monotonic: Callable[[], float] = time.monotonic,
) -> StateStore:
    """The store `<prefix>_STATE_STORE` names (default `memory`); nothing is contacted yet.

    Args:
        namespace: the server's name: the Redis keys' prefix.

    Raises:
        StoreSettingsError: an unknown scheme, a Redis store without `<prefix>_STATE_KEY`
            (replicas must share it), a bad timeout, or the `redis` library missing.
    """
    variable = f"{prefix}_STATE_STORE"
    value = environ.get(variable, "").strip()
    if value in ("", MEMORY):
        return MemoryStore(monotonic=monotonic)
    scheme = urlsplit(value).scheme.lower()
    if scheme not in ("redis", "rediss") or not urlsplit(value).hostname:
        raise StoreSettingsError(
            f"{variable} must be `memory` or a redis:// or rediss:// URL with a host "
            "(for example redis://redis:6379/0)"
        )
    timeout_variable = f"{prefix}_STATE_STORE_TIMEOUT"
    raw = environ.get(timeout_variable, "").strip()
    try:
        timeout = float(raw) if raw else DEFAULT_TIMEOUT
    except ValueError:
        timeout = -1.0
    if not (math.isfinite(timeout) and 0.01 <= timeout <= 60):
        raise StoreSettingsError(f"{timeout_variable} must be a number of seconds, 0.01 to 60")
    key = environ.get(f"{prefix}_STATE_KEY", "")
    if not key:
        raise StoreSettingsError(
            f"{variable} is a shared store, and {prefix}_STATE_KEY is not set: replicas "
            "sharing a store must share the key that seals their confirmations"
        )
    return RedisStore(value, namespace=namespace, key=key.encode(), timeout=timeout)


def _public_url(url: str) -> str:
    """The URL without user name or password."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = host if parts.port is None else f"{host}:{parts.port}"
    return urlunsplit((parts.scheme, netloc, parts.path, "", ""))


def _reason(exc: Exception) -> str:
    """What failed, without the library's text (it may repeat the URL with its password)."""
    kind = type(exc).__name__
    if "Authentication" in kind or "NoPermission" in kind:
        return f"it refused the credentials ({kind})"
    if "Timeout" in kind:
        return f"it did not answer in time ({kind})"
    if "Connection" in kind or isinstance(exc, OSError):
        return f"it cannot be reached ({kind})"
    return f"it answered with an error ({kind})"
