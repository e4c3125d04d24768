"""The opt-in token fallback for clients that cannot ask the user (S11, the token half of S12).

Every test drives a real server in memory with the SDK client (no elicitation capability) and
asserts on what a recording upstream received.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from runtime_support import ENV, Answer, Recorder, catalog_data, with_twin_delete

import mcpmint.runtime.server as server_module
from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.confirm import argument_digest
from mcpmint.runtime.server import ConfigurationError, build_server
from mcpmint.runtime.store import MemoryStore
from mcpmint.runtime.tokens import TOKEN_ARGUMENT, TokenError, Tokens

pytestmark = pytest.mark.anyio

DELETE = ("pets_delete_pet", {"petId": "5"})
TOKEN_ENV = {**ENV, "PETS_CONFIRM_FALLBACK": "token"}
_TOKEN = re.compile(r'"_confirmation_token": "(mct2\.[^"]+)"')


@asynccontextmanager
async def connect(
    catalog: Catalog,
    upstream: Recorder,
    mode: str,
    env: dict[str, str] = TOKEN_ENV,
    answer: Answer | None = None,
    audit: AuditLog | None = None,
    store: MemoryStore | None = None,
) -> AsyncIterator[Client]:
    server = build_server(
        catalog, transport=upstream.transport, environ=env, audit=audit, store=store
    )
    async with Client(server, mode=mode, elicitation_callback=answer) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def get_token(client: Client, name: str, args: dict[str, Any]) -> str:
    """The first call: nothing sent, a preview and a token back."""
    result = await client.call_tool(name, args)
    assert result.is_error, "the first call must not look like a success"
    match = _TOKEN.search(text(result))
    assert match, text(result)
    return match.group(1)


async def call_with(
    client: Client, name: str, args: dict[str, Any], token: str
) -> types.CallToolResult:
    return await client.call_tool(name, {**args, TOKEN_ARGUMENT: token})


# ------------------------------------------------------------------------------ S11


async def test_S11_a_valid_token_runs_the_call_exactly_once(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    async with connect(catalog, upstream, mode) as client:
        first = await client.call_tool(*DELETE)
        assert upstream.requests == []
        preview = text(first)
        assert preview.startswith("CONFIRMATION NEEDED: nothing was sent.")
        assert "This will send: DELETE https://api.example.com/v1/pets/5" in preview
        assert "Only if the user agrees" in preview
        token = _TOKEN.search(preview)
        assert token is not None
        done = await call_with(client, *DELETE, token.group(1))
    assert not done.is_error, text(done)
    assert len(upstream.requests) == 1
    sent = upstream.last
    assert sent.method == "DELETE" and sent.url.path == "/v1/pets/5"
    assert TOKEN_ARGUMENT.encode() not in sent.url.raw_path + sent.content
    assert not any(TOKEN_ARGUMENT in value for value in sent.headers.values())


async def test_S11_a_used_token_cannot_be_replayed(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    async with connect(catalog, upstream, mode) as client:
        token = await get_token(client, *DELETE)
        assert not (await call_with(client, *DELETE, token)).is_error
        replay = await call_with(client, *DELETE, token)
    assert replay.is_error and "already used" in text(replay)
    assert "Nothing was sent" in text(replay)
    assert len(upstream.requests) == 1


async def test_S11_without_the_fallback_the_client_is_refused_and_the_token_argument_is_unknown(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    async with connect(catalog, upstream, mode, env=ENV) as client:
        first = await client.call_tool(*DELETE)
        assert first.is_error and "cannot ask the user" in text(first)
        assert _TOKEN.search(text(first)) is None
        # A token minted by a server that has the fallback on means nothing to this one.
    async with connect(catalog, upstream, mode) as other:
        token = await get_token(other, *DELETE)
    async with connect(catalog, upstream, mode, env=ENV) as client:
        smuggled = await call_with(client, *DELETE, token)
    assert smuggled.is_error and "Invalid arguments" in text(smuggled)
    assert upstream.requests == []


async def test_S11_a_client_that_can_elicit_is_still_asked_and_its_token_ignored(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    async with connect(catalog, upstream, mode) as tokenless:
        token = await get_token(tokenless, *DELETE)
    no = Answer(action="decline", confirm=None)
    async with connect(catalog, upstream, mode, answer=no) as client:
        result = await call_with(client, *DELETE, token)
    assert result.is_error and "declined" in text(result)
    assert len(no.asked) == 1
    assert upstream.requests == []


# ------------------------------------------------------------------------------ S12 (tokens)


def flips(token: str) -> list[str]:
    """The token with one character changed in each of its parts (expiry, epoch, nonce, MAC)."""
    version, expires, epoch, nonce, mac = token.split(".")
    other = {"0": "1"}
    bumped = expires[:-1] + other.get(expires[-1], "0")
    epoch_flipped = ("b" if epoch[0] == "a" else "a") + epoch[1:]
    return [
        f"{version}.{bumped}.{epoch}.{nonce}.{mac}",
        f"{version}.{expires}.{epoch_flipped}.{nonce}.{mac}",
        f"{version}.{expires}.{epoch}.{('B' if nonce[0] == 'A' else 'A')}{nonce[1:]}.{mac}",
        f"{version}.{expires}.{epoch}.{nonce}.{mac[:10]}{'B' if mac[10] == 'A' else 'A'}{mac[11:]}",
        token[:-1],
        "",
        "confirm",
    ]


async def test_S12_a_tampered_token_is_refused_and_nothing_is_sent(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    async with connect(catalog, upstream, mode) as client:
        token = await get_token(client, *DELETE)
        for forged in flips(token):
            result = await call_with(client, *DELETE, forged)
            assert result.is_error and "confirmation token was refused" in text(result), forged
        # None of the forgeries used it up: the genuine token still works, once.
        assert not (await call_with(client, *DELETE, token)).is_error
    assert len(upstream.requests) == 1


async def test_S12_a_token_for_other_arguments_is_refused(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    async with connect(catalog, upstream, mode) as client:
        token = await get_token(client, *DELETE)
        result = await call_with(client, "pets_delete_pet", {"petId": "6"}, token)
    assert result.is_error and "not issued for this tool with these arguments" in text(result)
    assert upstream.requests == []


async def test_S12_a_token_for_another_tool_is_refused(upstream: Recorder, mode: str) -> None:
    async with connect(with_twin_delete(), upstream, mode) as client:
        token = await get_token(client, *DELETE)
        result = await call_with(client, "pets_purge_pet", {"petId": "5"}, token)
    assert result.is_error and "confirmation token was refused" in text(result)
    assert upstream.requests == []


@contextmanager
def signed_in(subject: str) -> Iterator[None]:
    """Calls made in this block come from `subject`, as the SDK's auth middleware says over
    authenticated HTTP (it sets this context variable from the verified token)."""
    token = AccessToken(token=f"jwt-of-{subject}", client_id="app", scopes=[], subject=subject)
    reset = auth_context_var.set(AuthenticatedUser(token))
    try:
        yield
    finally:
        auth_context_var.reset(reset)


async def test_S12_another_callers_token_is_refused(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    server = build_server(catalog, transport=upstream.transport, environ=TOKEN_ENV)
    with signed_in("alice"):
        async with Client(server, mode=mode) as alice:
            token = await get_token(alice, *DELETE)
    with signed_in("mallory"):
        async with Client(server, mode=mode) as mallory:
            stolen = await call_with(mallory, *DELETE, token)
    assert stolen.is_error and "confirmation token was refused" in text(stolen)
    async with Client(server, mode=mode) as local:  # no token at all: the caller is `local`
        assert (await call_with(local, *DELETE, token)).is_error
    assert upstream.requests == []
    with signed_in("alice"):
        async with Client(server, mode=mode) as alice:
            assert not (await call_with(alice, *DELETE, token)).is_error
    assert len(upstream.requests) == 1


async def test_S12_an_expired_token_is_refused(
    catalog: Catalog, upstream: Recorder, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A TTL of a nanosecond: the expiry, whole seconds rounded down, has passed at issue.
    monkeypatch.setattr(server_module, "STATE_TTL_SECONDS", 1e-9)
    async with connect(catalog, upstream, mode) as client:
        token = await get_token(client, *DELETE)
        result = await call_with(client, *DELETE, token)
    assert result.is_error and "expired" in text(result)
    assert upstream.requests == []


async def test_S12_a_token_from_a_server_with_another_key_is_refused(
    catalog: Catalog, upstream: Recorder
) -> None:
    async with connect(catalog, upstream, "auto") as one:
        token = await get_token(one, *DELETE)
    async with connect(catalog, upstream, "auto") as two:  # a fresh per-process key
        result = await call_with(two, *DELETE, token)
    assert result.is_error and "confirmation token was refused" in text(result)
    assert upstream.requests == []


async def test_replicas_sharing_a_state_key_and_a_store_accept_each_others_tokens_once(
    catalog: Catalog, upstream: Recorder
) -> None:
    env = {**TOKEN_ENV, "PETS_STATE_KEY": "s" * 40}
    store = MemoryStore()  # what a Redis store is to replicas (tests/test_state_store.py)
    async with connect(catalog, upstream, "legacy", env=env, store=store) as one:
        token = await get_token(one, *DELETE)
    async with connect(catalog, upstream, "legacy", env=env, store=store) as two:
        result = await call_with(two, *DELETE, token)
    async with connect(catalog, upstream, "legacy", env=env, store=store) as three:
        replayed = await call_with(three, *DELETE, token)
    assert not result.is_error, text(result)
    assert replayed.is_error and "already used" in text(replayed)
    assert len(upstream.requests) == 1


async def test_replicas_sharing_only_a_state_key_refuse_each_others_tokens(
    catalog: Catalog, upstream: Recorder
) -> None:
    env = {**TOKEN_ENV, "PETS_STATE_KEY": "s" * 40}
    async with connect(catalog, upstream, "legacy", env=env) as one:
        token = await get_token(one, *DELETE)
    async with connect(catalog, upstream, "legacy", env=env) as two:
        result = await call_with(two, *DELETE, token)
    assert result.is_error and "another server process" in text(result)
    assert upstream.requests == []


async def test_S13_a_confirm_argument_does_not_bypass_the_token(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    async with connect(catalog, upstream, mode) as client:
        for args in ({"petId": "5", "confirm": True}, {"petId": "5", "confirmed": "yes"}):
            result = await client.call_tool("pets_delete_pet", args)
            assert result.is_error and "Invalid arguments" in text(result)
        result = await call_with(client, *DELETE, "true")
        assert result.is_error and "confirmation token was refused" in text(result)
        result = await client.call_tool("pets_delete_pet", {"petId": "5", TOKEN_ARGUMENT: True})
        assert result.is_error and "confirmation token was refused" in text(result)
    assert upstream.requests == []


async def test_invalid_arguments_get_no_token(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    async with connect(catalog, upstream, mode) as client:
        result = await client.call_tool("pets_delete_pet", {"petId": 5})
    assert result.is_error and "Invalid arguments" in text(result)
    assert _TOKEN.search(text(result)) is None


async def test_token_calls_are_audited_without_the_token(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    stream = io.StringIO()
    async with connect(catalog, upstream, mode, audit=AuditLog(stream=stream)) as client:
        token = await get_token(client, *DELETE)
        await call_with(client, *DELETE, token)
        await call_with(client, *DELETE, token)
    lines = stream.getvalue().splitlines()
    assert token not in stream.getvalue()
    got = [json.loads(line) for line in lines]
    assert [(r["decision"], r["reason"]) for r in got] == [
        ("pending", "confirmation token issued"),
        ("confirmed", ""),
        ("refused", "bad confirmation token"),
    ]
    digest = argument_digest(*DELETE)
    assert {r["argumentsSha256"] for r in got} == {digest}
    assert all(r["arguments"] == {"petId": "5"} for r in got)


def test_an_unknown_fallback_value_stops_the_server(catalog: Catalog) -> None:
    with pytest.raises(ConfigurationError, match="PETS_CONFIRM_FALLBACK must be one of"):
        build_server(catalog, environ={**ENV, "PETS_CONFIRM_FALLBACK": "yes"})


async def test_S12_tokens_bind_caller_tool_arguments_expiry_and_single_use() -> None:
    now = [1000.0]
    store = MemoryStore(clock=lambda: now[0])
    tokens = Tokens(b"k" * 32, ttl=60, clock=lambda: now[0], store=store)
    token = await tokens.issue("alice", "t", "d1")
    for caller, tool, digest in (("bob", "t", "d1"), ("alice", "u", "d1"), ("alice", "t", "d2")):
        with pytest.raises(TokenError, match="not issued for"):
            await tokens.redeem(token, caller, tool, digest)
    same_key = Tokens(b"k" * 32, ttl=60, clock=lambda: now[0], store=store)
    other_key = Tokens(b"j" * 32, ttl=60, clock=lambda: now[0], store=store)
    other_process = Tokens(b"k" * 32, ttl=60, clock=lambda: now[0])  # a store of its own
    with pytest.raises(TokenError, match="not issued for"):
        await other_key.redeem(token, "alice", "t", "d1")
    with pytest.raises(TokenError, match="another server process"):
        await other_process.redeem(token, "alice", "t", "d1")
    epoch = token.split(".")[2]
    forged = token.replace(f".{epoch}.", f".{'0' * 16}.")  # the epoch is under the MAC
    with pytest.raises(TokenError, match="not issued for"):
        await same_key.redeem(forged, "alice", "t", "d1")
    now[0] += 61
    with pytest.raises(TokenError, match="expired"):
        await tokens.redeem(token, "alice", "t", "d1")
    now[0] -= 30
    await same_key.redeem(token, "alice", "t", "d1")
    with pytest.raises(TokenError, match="already used"):
        await same_key.redeem(token, "alice", "t", "d1")


async def test_S11_dynamic_modes_dispatcher_carries_the_token_inside_or_beside_the_arguments(
    upstream: Recorder, mode: str
) -> None:
    data = catalog_data()
    data["toolModes"] = {"mode": "dynamic"}
    catalog = load_catalog(data)
    name, args = DELETE
    async with connect(catalog, upstream, mode) as client:
        for placement in ("inside", "beside"):
            first = await client.call_tool("pets_call_tool", {"name": name, "arguments": args})
            match = _TOKEN.search(text(first))
            assert first.is_error and match, text(first)
            token = match.group(1)
            if placement == "inside":
                wrapped = {"name": name, "arguments": {**args, TOKEN_ARGUMENT: token}}
            else:
                wrapped = {"name": name, "arguments": args, TOKEN_ARGUMENT: token}
            done = await client.call_tool("pets_call_tool", wrapped)
            assert not done.is_error, text(done)
            replay = await client.call_tool("pets_call_tool", wrapped)
            assert replay.is_error and "already used" in text(replay)
    assert [r.method for r in upstream.requests] == ["DELETE", "DELETE"]
