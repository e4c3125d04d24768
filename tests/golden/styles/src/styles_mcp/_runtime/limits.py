"""Run-time limits: retries, response and argument caps, concurrency and write rates.

Every limit is read from an environment variable prefixed with the catalog's `envPrefix`
(`docs/safety.md` lists them). The write rate's buckets live in the state store (`store.py`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

from .catalog import Tool
from .store import MemoryStore, StateStore

__all__ = [
    "MAX_RETRY_DELAY",
    "PAGINATION_NAMES",
    "RETRY_METHODS",
    "RETRY_STATUSES",
    "Limits",
    "LimitsError",
    "RateLimiter",
    "argument_bytes",
    "is_read_only",
    "load_limits",
    "pagination_arguments",
    "retry_delay",
]

RETRY_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
RETRY_STATUSES = frozenset({502, 503, 504})
MAX_RETRY_DELAY = 30.0
BASE_RETRY_DELAY = 0.5
PAGINATION_NAMES = ("limit", "per_page", "page_size", "page", "cursor", "max_results")


class LimitsError(ValueError):
    """A limit variable is unusable; the message names the variable."""


@dataclass(frozen=True)
class Limits:
    """The limits of one server."""

    retries: int = 2
    max_response_bytes: int = 1024 * 1024
    max_argument_bytes: int = 256 * 1024
    max_concurrency: int = 8
    write_rate: float = 60.0  # calls per minute and caller, tools that are not read-only
    timeout: float = 0.0  # seconds per upstream exchange; 0: the catalog's `timeoutSeconds`


def load_limits(prefix: str, environ: Mapping[str, str]) -> Limits:
    """The limits set by `<prefix>_RETRIES`, `_MAX_RESPONSE_BYTES`, ... or their defaults.

    Raises:
        LimitsError: a value is not a number in its range.
    """
    default = Limits()

    def number(suffix: str, fallback: float, low: float, *, integer: bool = True) -> float:
        variable = f"{prefix}_{suffix}"
        raw = environ.get(variable, "").strip()
        if not raw:
            return fallback
        try:
            value = int(raw) if integer else float(raw)
        except ValueError:
            kind = "an integer" if integer else "a number"
            raise LimitsError(f"{variable} must be {kind}, at least {low:g}") from None
        if not math.isfinite(value) or value < low:
            raise LimitsError(f"{variable} must be at least {low:g}")
        return value

    return Limits(
        retries=int(number("RETRIES", default.retries, 0)),
        max_response_bytes=int(number("MAX_RESPONSE_BYTES", default.max_response_bytes, 1)),
        max_argument_bytes=int(number("MAX_ARGUMENT_BYTES", default.max_argument_bytes, 1)),
        max_concurrency=int(number("MAX_CONCURRENCY", default.max_concurrency, 1)),
        write_rate=number("WRITE_RATE", default.write_rate, 0, integer=False),
        timeout=number("TIMEOUT", default.timeout, 0.001, integer=False),
    )


def is_read_only(tool: Tool) -> bool:
    """Read-only only when the (operator-controlled) annotations say so explicitly."""
    return tool.annotations.get("readOnlyHint") is True


def argument_bytes(arguments: Any) -> int:
    """The size of the arguments as compact JSON (UTF-8); non-JSON values count as their repr."""
    try:
        text = json.dumps(arguments, ensure_ascii=False, separators=(",", ":"), default=repr)
    except (ValueError, RecursionError):
        return 1 << 62  # circular or too deep: never under any cap
    return len(text.encode("utf-8", errors="replace"))


def pagination_arguments(tool: Tool) -> list[str]:
    """The tool's arguments that look like pagination or size controls, in a fixed order."""
    properties = tool.input_schema.get("properties")
    if not isinstance(properties, Mapping):
        return []
    return [name for name in PAGINATION_NAMES if name in properties]


def retry_delay(
    attempt: int,
    retry_after: str,
    *,
    now: Callable[[], datetime] = lambda: datetime.now(UTC),
) -> float | None:
    """Seconds to wait before retry number `attempt + 1` (attempt counts from 0).

    Exponential backoff (0.5 s, 1 s, 2 s, ...), or the upstream's `Retry-After` (seconds or an
    HTTP date) when it asks for longer. None when `Retry-After` asks for more than
    `MAX_RETRY_DELAY`: then the call is not retried at all.
    """
    delay: float = min(BASE_RETRY_DELAY * 2.0 ** min(attempt, 16), MAX_RETRY_DELAY)
    value = retry_after.strip()
    if not value:
        return delay
    asked: float | None
    if value.isdigit():
        asked = float(value)
    else:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return delay
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        asked = max(0.0, (when - now()).total_seconds())
    if asked > MAX_RETRY_DELAY:
        return None
    return max(delay, asked)


class RateLimiter:
    """A token bucket per caller: `rate` calls per minute, bursts of up to `rate` calls.

    The buckets live in the state store (`store.py`): per process in memory, or one bucket per
    caller for every replica sharing a Redis store.
    """

    def __init__(
        self,
        rate: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        store: StateStore | None = None,
    ) -> None:
        self._rate = rate
        self._store = MemoryStore(monotonic=clock) if store is None else store

    async def wait_time(self, caller: str) -> float:
        """Seconds until `caller` may make a call; 0 when one is allowed now. Uses nothing.

        Raises:
            StoreError: the state store did not answer.
        """
        if self._rate <= 0:  # 0 turns the limit off
            return 0.0
        return await self._store.rate(caller, self._rate, take=False)

    async def take(self, caller: str) -> float:
        """Use one call of `caller`'s budget; returns 0, or the wait when none is left.

        Raises:
            StoreError: the state store did not answer.
        """
        if self._rate <= 0:
            return 0.0
        return await self._store.rate(caller, self._rate, take=True)
