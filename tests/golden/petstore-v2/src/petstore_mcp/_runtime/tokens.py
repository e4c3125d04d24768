"""Confirmation tokens: the opt-in fallback for clients that cannot ask the user.

With `<PREFIX>_CONFIRM_FALLBACK=token`, the first call of a tool that needs confirmation, from
a client without elicitation, sends nothing and returns a preview and a token; the call goes
through only when repeated with that token in the reserved argument `_confirmation_token`.

A token is `mct2.<expiry>.<epoch>.<nonce>.<mac>`: an HMAC-SHA256 over the caller, the tool, the
digest of the canonical arguments (`confirm.argument_digest`), the expiry, the state store's
epoch and the nonce. Only expiry, epoch and nonce travel in the clear; everything else is bound
by the MAC, so a token minted for another caller, tool or argument set fails exactly like a
tampered one. A token is used up on its first successful check, in the state store
(`store.py`): once per deployment with a shared store, and never again after the store
restarted (the epoch).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import time
from collections.abc import Callable, Mapping

from .store import MemoryStore, StateStore

__all__ = [
    "FALLBACKS",
    "TOKEN_ARGUMENT",
    "ConfirmSettingsError",
    "TokenError",
    "Tokens",
    "load_fallback",
]

TOKEN_ARGUMENT = "_confirmation_token"
_VERSION = "mct2"
_SHAPE = re.compile(
    r"^mct2\.([0-9]{1,12})\.([0-9a-f]{16})\.([A-Za-z0-9_-]{16,64})\.([A-Za-z0-9_-]{43})$"
)
# Separates the token key from the AES-GCM key the SDK derives from the same `<P>_STATE_KEY`.
_KEY_LABEL = b"mcpmint confirmation token v1"


# What a client that cannot elicit gets: `refuse` (fail closed, the default) or `token`.
FALLBACKS = ("refuse", "token")


class ConfirmSettingsError(ValueError):
    """`<PREFIX>_CONFIRM_FALLBACK` is unusable; the message names the variable."""


def load_fallback(prefix: str, environ: Mapping[str, str]) -> str:
    """`<prefix>_CONFIRM_FALLBACK`: `refuse` (default) or `token`. Here, free of the SDK, so
    that the generator can check a `settings:` value with the server's own reader.

    Raises:
        ConfirmSettingsError: any other value.
    """
    variable = f"{prefix}_CONFIRM_FALLBACK"
    value = environ.get(variable, "").strip().lower() or "refuse"
    if value not in FALLBACKS:
        raise ConfirmSettingsError(f"{variable} must be one of: {', '.join(FALLBACKS)}")
    return value


class TokenError(ValueError):
    """A confirmation token does not allow this call; the message says why, without secrets."""


class Tokens:
    """Issues and redeems confirmation tokens with one HMAC key."""

    def __init__(
        self,
        key: bytes | None = None,
        *,
        ttl: float = 600.0,
        clock: Callable[[], float] = time.time,
        store: StateStore | None = None,
    ) -> None:
        """`key`: the operator's shared secret (`<P>_STATE_KEY`); None: a per-process key.
        `store`: where used tokens are remembered (a memory store of its own by default)."""
        base = secrets.token_bytes(32) if key is None else key
        self._key = hmac.new(base, _KEY_LABEL, hashlib.sha256).digest()
        self._ttl = ttl
        self._clock = clock
        self._store = MemoryStore(clock=clock) if store is None else store

    async def issue(self, caller: str, tool: str, digest: str) -> str:
        """A token for exactly this caller, tool and argument digest, valid for `ttl`.

        Raises:
            StoreError: the state store did not give its epoch.
        """
        expires = int(self._clock() + self._ttl)
        epoch = await self._store.epoch()
        nonce = secrets.token_urlsafe(16)
        mac = self._mac(caller, tool, digest, expires, epoch, nonce)
        return f"{_VERSION}.{expires}.{epoch}.{nonce}.{mac}"

    async def redeem(self, token: str, caller: str, tool: str, digest: str) -> None:
        """Check `token` against this call and use it up.

        Raises:
            TokenError: malformed, tampered or minted for another caller, tool or arguments
                (indistinguishable by design), expired, already used, or issued before the
                store restarted.
            StoreError: the state store did not answer.
        """
        match = _SHAPE.match(token)
        if match is None:
            raise TokenError("it is not a confirmation token this server issued")
        expires, epoch, nonce, mac = (
            int(match.group(1)),
            match.group(2),
            match.group(3),
            match.group(4),
        )
        expected = self._mac(caller, tool, digest, expires, epoch, nonce)
        if not hmac.compare_digest(mac, expected):
            raise TokenError(
                "it was not issued for this tool with these arguments and this caller, "
                "or it was altered"
            )
        if not self._clock() < expires:  # before the store: an old token costs it nothing
            raise TokenError("it has expired")
        refused = await self._store.spend("token", nonce, expires, epoch)
        if refused:
            raise TokenError(refused)

    def _mac(
        self, caller: str, tool: str, digest: str, expires: int, epoch: str, nonce: str
    ) -> str:
        # Length-prefixed fields: no two different tuples give the same message.
        message = b"".join(
            len(part).to_bytes(4, "big") + part
            for part in (
                _VERSION.encode(),
                caller.encode("utf-8", "surrogatepass"),
                tool.encode("utf-8", "surrogatepass"),
                digest.encode("ascii", "replace"),
                str(expires).encode(),
                epoch.encode(),
                nonce.encode(),
            )
        )
        raw = hmac.new(self._key, message, hashlib.sha256).digest()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")
