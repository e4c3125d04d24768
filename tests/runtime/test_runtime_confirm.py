"""Confirmation flows: nothing is sent before the user explicitly says yes, in both eras."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from runtime_support import ENV, Answer, Recorder, catalog_data, json_body, with_twin_delete

from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.confirm import (
    CONFIRM_SCHEMA,
    Confirmer,
    StateError,
    argument_digest,
    elicitation_supported,
)
from mcpmint.runtime.server import ConfigurationError, build_server
from mcpmint.runtime.store import MemoryStore

pytestmark = pytest.mark.anyio

DELETE = ("pets_delete_pet", {"petId": "5"})
WRITES = [
    DELETE,
    ("pets_create_pet", {"name": "Rex", "body_id": 7}),
    ("pets_replace_tags", {"petId": "5", "body": ["a", "b"]}),
]
ACCEPT = types.ElicitResult(action="accept", content={"confirm": True})
STATE_KEY = "k" * 40


@asynccontextmanager
async def connect(
    catalog: Catalog,
    upstream: Recorder,
    mode: str,
    answer: Answer | None,
    env: dict[str, str] | None = None,
    store: MemoryStore | None = None,
) -> AsyncIterator[Client]:
    server = build_server(catalog, transport=upstream.transport, environ=env or ENV, store=store)
    async with Client(server, mode=mode, elicitation_callback=answer) as client:
        yield client


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


def variant(**changes: dict[str, Any]) -> Catalog:
    """The test catalog with some tools' entries changed (name -> fields)."""
    data = catalog_data()
    for tool in data["tools"]:
        tool.update(changes.get(tool["name"], {}))
    return load_catalog(data)


async def first_round(client: Client, name: str, args: dict[str, Any]) -> types.InputRequiredResult:
    result = await client.session.call_tool(name, args, allow_input_required=True)
    assert isinstance(result, types.InputRequiredResult), result
    return result


async def answer_round(
    client: Client,
    name: str,
    args: dict[str, Any],
    state: str | None,
    answer: types.ElicitResult | None = ACCEPT,
) -> types.CallToolResult:
    result = await client.session.call_tool(
        name,
        args,
        allow_input_required=True,
        input_responses=None if answer is None else {"confirm": answer},
        request_state=state,
    )
    assert isinstance(result, types.CallToolResult), result
    return result


# ------------------------------------------------------------------------------ S10


async def test_S10_destructive_call_without_confirmation_sends_nothing(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    seen_before_asking: list[int] = []

    class Watch(Answer):
        async def __call__(self, context: Any, params: types.ElicitRequestParams) -> Any:
            seen_before_asking.append(len(upstream.requests))
            return await super().__call__(context, params)

    if mode == "auto":
        # 2026-07-28: the first round is an input-required result; nothing has gone out.
        async with connect(catalog, upstream, mode, Answer()) as client:
            challenge = await first_round(client, *DELETE)
        [request] = challenge.input_requests.values()
        assert isinstance(request, types.ElicitRequest)
        assert challenge.request_state
        assert upstream.requests == []
    watch = Watch(action="decline", confirm=None)
    async with connect(catalog, upstream, mode, watch) as client:
        result = await client.call_tool(*DELETE)
    assert result.is_error and "declined" in text(result)
    assert seen_before_asking == [0]
    assert upstream.requests == []


# ------------------------------------------------------------------------------ answers


@pytest.mark.parametrize(("name", "args"), WRITES, ids=[w[0] for w in WRITES])
async def test_accept_runs_the_call_exactly_once(
    catalog: Catalog, upstream: Recorder, mode: str, name: str, args: dict[str, Any]
) -> None:
    answer = Answer()
    async with connect(catalog, upstream, mode, answer) as client:
        result = await client.call_tool(name, args)
    assert not result.is_error, text(result)
    assert len(answer.asked) == 1
    assert len(upstream.requests) == 1


@pytest.mark.parametrize(
    ("action", "confirm", "says"),
    [
        ("decline", None, "declined"),
        ("cancel", None, "cancelled"),
        ("accept", False, "not confirmed"),
        ("accept", None, "not confirmed"),
        ("accept", "true", "not confirmed"),
        ("accept", 1, "not confirmed"),
    ],
    ids=["decline", "cancel", "accept-false", "accept-empty", "accept-string", "accept-one"],
)
async def test_anything_but_an_explicit_yes_sends_nothing(
    catalog: Catalog, upstream: Recorder, mode: str, action: str, confirm: object, says: str
) -> None:
    answer = Answer(action, confirm)
    async with connect(catalog, upstream, mode, answer) as client:
        result = await client.call_tool(*DELETE)
    assert result.is_error
    assert says in text(result) and "Nothing was sent" in text(result)
    assert len(answer.asked) == 1
    assert upstream.requests == []


async def test_a_client_without_elicitation_is_refused_and_nothing_is_sent(
    upstream: Recorder, mode: str
) -> None:
    # Confirmation comes before credentials: not even the OAuth2 token request goes out.
    catalog = variant(pets_reports={"confirmation": "required"})
    async with connect(catalog, upstream, mode, None) as client:
        for name, args in [*WRITES, ("pets_reports", {})]:
            result = await client.call_tool(name, args)
            assert result.is_error, name
            assert "cannot ask the user" in text(result)
            assert "elicitation" in text(result)
            assert text(result).endswith("so the call is refused. Nothing was sent.")
    assert upstream.requests == [] and upstream.token_requests == []


async def test_read_only_tools_are_not_confirmed(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    answer = Answer()
    async with connect(catalog, upstream, mode, answer) as client:
        result = await client.call_tool("pets_get_pet", {"petId": "5"})
    assert not result.is_error and answer.asked == []
    assert len(upstream.requests) == 1


async def test_a_write_whose_confirmation_is_none_runs_without_asking(
    upstream: Recorder, mode: str
) -> None:
    catalog = variant(pets_delete_pet={"confirmation": "none"})
    async with connect(catalog, upstream, mode, None) as client:
        result = await client.call_tool(*DELETE)
    assert not result.is_error and len(upstream.requests) == 1


async def test_invalid_arguments_are_refused_before_asking(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    answer = Answer()
    async with connect(catalog, upstream, mode, answer) as client:
        result = await client.call_tool("pets_delete_pet", {"petId": 5})
    assert result.is_error and "petId" in text(result)
    assert answer.asked == [] and upstream.requests == []


# ------------------------------------------------------------------------------ S13


async def test_S13_confirm_argument_does_not_bypass_confirmation(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    answer = Answer("decline", None)
    async with connect(catalog, upstream, mode, answer) as client:
        smuggled = await client.call_tool("pets_delete_pet", {"petId": "5", "confirm": True})
        assert smuggled.is_error and "confirm" in text(smuggled)
        plain = await client.call_tool(*DELETE)
        assert plain.is_error and "declined" in text(plain)
    async with connect(catalog, upstream, mode, None) as client:
        smuggled = await client.call_tool("pets_delete_pet", {"petId": "5", "confirm": True})
        assert smuggled.is_error
    # The schema refused the extra argument before the question; the plain call was asked.
    assert len(answer.asked) == 1
    assert upstream.requests == []


# ------------------------------------------------------------------------------ S12 (state)


async def test_S12_state_for_other_arguments_is_refused(
    catalog: Catalog, upstream: Recorder
) -> None:
    async with connect(catalog, upstream, "auto", Answer()) as client:
        challenge = await first_round(client, *DELETE)
        with pytest.raises(MCPError) as info:
            await answer_round(client, "pets_delete_pet", {"petId": "6"}, challenge.request_state)
    assert info.value.error.code == types.INVALID_PARAMS
    assert upstream.requests == []


async def test_S12_state_for_another_tool_is_refused(upstream: Recorder) -> None:
    catalog = with_twin_delete()
    async with connect(catalog, upstream, "auto", Answer()) as client:
        challenge = await first_round(client, *DELETE)
        with pytest.raises(MCPError):
            await answer_round(client, "pets_purge_pet", {"petId": "5"}, challenge.request_state)
    assert upstream.requests == []


async def test_S12_tampered_state_is_refused(catalog: Catalog, upstream: Recorder) -> None:
    async with connect(catalog, upstream, "auto", Answer()) as client:
        challenge = await first_round(client, *DELETE)
        state = challenge.request_state
        assert state is not None
        flipped = state[:-3] + ("A" if state[-3] != "A" else "B") + state[-2:]
        for forged in (flipped, '{"v":1,"tool":"pets_delete_pet"}', "v1.AAAA"):
            with pytest.raises(MCPError):
                await answer_round(client, *DELETE, forged)
    assert upstream.requests == []


async def test_S12_state_minted_by_another_server_is_refused(
    catalog: Catalog, upstream: Recorder
) -> None:
    async with connect(catalog, upstream, "auto", Answer()) as client:
        challenge = await first_round(client, *DELETE)
    async with connect(catalog, upstream, "auto", Answer()) as other:
        with pytest.raises(MCPError):
            await answer_round(other, *DELETE, challenge.request_state)
    assert upstream.requests == []


async def test_S12_used_state_cannot_be_replayed(catalog: Catalog, upstream: Recorder) -> None:
    async with connect(catalog, upstream, "auto", Answer()) as client:
        challenge = await first_round(client, *DELETE)
        done = await answer_round(client, *DELETE, challenge.request_state)
        assert not done.is_error, text(done)
        replay = await answer_round(client, *DELETE, challenge.request_state)
    assert replay.is_error and "already used" in text(replay)
    assert len(upstream.requests) == 1


async def test_S12_a_declined_state_cannot_be_reused_to_accept(
    catalog: Catalog, upstream: Recorder
) -> None:
    no = types.ElicitResult(action="decline")
    async with connect(catalog, upstream, "auto", Answer()) as client:
        challenge = await first_round(client, *DELETE)
        declined = await answer_round(client, *DELETE, challenge.request_state, no)
        assert declined.is_error
        again = await answer_round(client, *DELETE, challenge.request_state)
    assert again.is_error and "already used" in text(again)
    assert upstream.requests == []


async def test_S12_an_answer_without_state_or_a_state_without_answer_is_refused(
    catalog: Catalog, upstream: Recorder
) -> None:
    async with connect(catalog, upstream, "auto", Answer()) as client:
        unsolicited = await answer_round(client, *DELETE, None)
        assert unsolicited.is_error and "did not ask for" in text(unsolicited)
        challenge = await first_round(client, *DELETE)
        silent = await answer_round(client, *DELETE, challenge.request_state, None)
        assert silent.is_error and "No confirmation" in text(silent)
    assert upstream.requests == []


async def test_S12_redeem_checks_tool_arguments_expiry_and_use() -> None:
    now = [1000.0]
    confirmer = Confirmer(ttl=60.0, clock=lambda: now[0])
    digest = argument_digest("t", {"id": 5})
    state = (await confirmer.challenge("t", digest, "m")).request_state
    assert state is not None
    with pytest.raises(StateError, match="another tool"):
        await confirmer.redeem(state, "u", digest)
    with pytest.raises(StateError, match="other arguments"):
        await confirmer.redeem(state, "t", argument_digest("t", {"id": 6}))
    for bad in ("not json", "[]", '{"v":1}', '{"v":2,"tool":"t","args":"x"}'):
        with pytest.raises(StateError, match="malformed"):
            await confirmer.redeem(bad, "t", digest)
    await confirmer.redeem(state, "t", digest)
    with pytest.raises(StateError, match="already used"):
        await confirmer.redeem(state, "t", digest)
    late = (await confirmer.challenge("t", digest, "m")).request_state
    assert late is not None
    now[0] += 61
    with pytest.raises(StateError, match="expired"):
        await confirmer.redeem(late, "t", digest)


async def test_S12_a_state_is_spent_only_in_the_store_that_issued_it() -> None:
    """Another process (its own memory store) or a restarted one refuses the state: the
    memory store's epoch is per process, so nothing redeemed before can be redeemed there."""
    now = [1000.0]
    store = MemoryStore(clock=lambda: now[0])
    confirmer = Confirmer(ttl=60.0, clock=lambda: now[0], store=store)
    digest = argument_digest("t", {"id": 5})
    state = (await confirmer.challenge("t", digest, "m")).request_state
    assert state is not None
    elsewhere = Confirmer(ttl=60.0, clock=lambda: now[0])
    with pytest.raises(StateError, match="another server process"):
        await elsewhere.redeem(state, "t", digest)
    sharing = Confirmer(ttl=60.0, clock=lambda: now[0], store=store)  # a store in common
    await sharing.redeem(state, "t", digest)
    with pytest.raises(StateError, match="already used"):
        await confirmer.redeem(state, "t", digest)


def test_argument_digest_is_canonical() -> None:
    assert argument_digest("t", {"a": 1, "b": [1, 2]}) == argument_digest(
        "t", {"b": [1, 2], "a": 1}
    )
    assert argument_digest("t", {"a": 1}) != argument_digest("u", {"a": 1})
    assert argument_digest("t", {"a": 1}) != argument_digest("t", {"a": 1.5})


# ------------------------------------------------------------------------------ shared key


async def test_replicas_sharing_a_state_key_and_a_store_accept_each_others_state_once(
    catalog: Catalog, upstream: Recorder
) -> None:
    env = ENV | {"PETS_STATE_KEY": STATE_KEY}
    store = MemoryStore()  # what a Redis store is to replicas (tests/test_state_store.py)
    async with connect(catalog, upstream, "auto", Answer(), env, store) as one:
        challenge = await first_round(one, *DELETE)
    async with connect(catalog, upstream, "auto", Answer(), env, store) as two:
        done = await answer_round(two, *DELETE, challenge.request_state)
    async with connect(catalog, upstream, "auto", Answer(), env, store) as one_again:
        replayed = await answer_round(one_again, *DELETE, challenge.request_state)
    assert not done.is_error, text(done)
    assert replayed.is_error and "already used" in text(replayed)
    assert len(upstream.requests) == 1


async def test_replicas_sharing_only_a_state_key_refuse_each_others_state(
    catalog: Catalog, upstream: Recorder
) -> None:
    """Each memory store is its own: the other replica opens the sealed state but cannot
    spend it once for the deployment, so it refuses (fail closed) and sends nothing."""
    env = ENV | {"PETS_STATE_KEY": STATE_KEY}
    async with connect(catalog, upstream, "auto", Answer(), env) as one:
        challenge = await first_round(one, *DELETE)
    async with connect(catalog, upstream, "auto", Answer(), env) as two:
        refused = await answer_round(two, *DELETE, challenge.request_state)
    assert refused.is_error and "another server process" in text(refused)
    assert upstream.requests == []


def test_a_short_state_key_is_refused(catalog: Catalog) -> None:
    with pytest.raises(ConfigurationError, match="PETS_STATE_KEY") as info:
        build_server(catalog, environ=ENV | {"PETS_STATE_KEY": "short-key"})
    assert "short-key" not in str(info.value)


# ------------------------------------------------------------------------------ the message


async def test_the_question_says_what_will_be_sent_with_secrets_redacted(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    answer = Answer()
    async with connect(catalog, upstream, mode, answer) as client:
        result = await client.call_tool(
            "pets_create_pet", {"name": "Rex\u202eevil\x1b[8m", "body_id": 7, "tag": None}
        )
    assert not result.is_error
    [asked] = answer.asked
    assert isinstance(asked, types.ElicitRequestFormParams)
    assert asked.requested_schema == CONFIRM_SCHEMA
    message = asked.message
    assert "POST https://api.example.com/v1/pets" in message
    assert "name = " in message and "body_id = 7" in message and "tag = null" in message
    assert '"id": 7' in message  # the body preview uses wire names
    assert "application/json" in message
    assert "ApiKey (header X-API-Key)" in message
    assert "\u202e" not in message and "\x1b" not in message
    assert "\\u202e" in message and "\\u001b" in message
    assert ENV["PETS_API_KEY"] not in message
    assert json_body(upstream.last) == {"name": "Rex\u202eevil\x1b[8m", "id": 7, "tag": None}


async def test_the_question_redacts_query_keys_and_sensitive_fields(
    upstream: Recorder, mode: str
) -> None:
    data = catalog_data()
    s = {"type": "string"}
    data["tools"].append(
        {
            **copy.deepcopy(next(t for t in data["tools"] if t["name"] == "pets_create_pet")),
            "name": "pets_login",
            "inputSchema": {
                "type": "object",
                "properties": {"user": s, "password": s, "next_token": s, "note": s},
                "additionalProperties": False,
            },
            "request": {
                "method": "POST",
                "path": "/login",
                "parameters": [
                    {
                        "argument": "next_token",
                        "name": "next_token",
                        "in": "query",
                        "style": "form",
                        "explode": True,
                        "required": False,
                    }
                ],
                "body": {
                    "mediaType": "application/json",
                    "required": True,
                    "argument": None,
                    "properties": {"user": "user", "password": "password", "note": "note"},
                },
                "accept": "application/json",
            },
            "outputSchema": None,
            "security": [[{"scheme": "QueryKey", "scopes": []}]],
        }
    )
    catalog = load_catalog(data)
    answer = Answer()
    args = {
        "user": "ada",
        "password": "hunter2-pw",
        "next_token": "page-tok-77",
        "note": "x" * 1000 + ENV["PETS_BEARER"],
    }
    async with connect(catalog, upstream, mode, answer) as client:
        result = await client.call_tool("pets_login", args)
    assert not result.is_error, text(result)
    [message] = answer.messages
    assert "POST https://api.example.com/v1/login?next_token=[REDACTED]&api_key=[REDACTED]" in (
        message
    )
    assert "QueryKey (query api_key)" in message
    for secret in (
        "hunter2-pw",
        "page-tok-77",
        ENV["PETS_QUERY_KEY"],
        "s3cr3t",
        ENV["PETS_BEARER"],
    ):
        assert secret not in message
    assert 'user = "ada"' in message
    assert "more characters" in message  # long values are trimmed
    assert len(message) < 2000
    # What is sent is untouched by the redaction of the question.
    assert "next_token=page-tok-77" in upstream.target
    assert json_body(upstream.last)["password"] == "hunter2-pw"


async def test_the_question_of_a_destructive_tool_says_so(
    catalog: Catalog, upstream: Recorder, mode: str
) -> None:
    answer = Answer()
    async with connect(catalog, upstream, mode, answer) as client:
        await client.call_tool(*DELETE)
    [message] = answer.messages
    assert message.startswith("Confirm pets_delete_pet")
    assert "DELETE https://api.example.com/v1/pets/5" in message
    assert "Bearer (bearer authorization)" in message
    assert "change or delete existing data" in message
    assert "Nothing is sent unless you confirm." in message


# ------------------------------------------------------------------------------ capabilities


@pytest.mark.parametrize(
    ("capabilities", "supported"),
    [
        (None, False),
        (types.ClientCapabilities(), False),
        (types.ClientCapabilities(elicitation=types.ElicitationCapability()), True),
        (
            types.ClientCapabilities(
                elicitation=types.ElicitationCapability(form=types.FormElicitationCapability())
            ),
            True,
        ),
        (
            types.ClientCapabilities(
                elicitation=types.ElicitationCapability(url=types.UrlElicitationCapability())
            ),
            False,
        ),
    ],
    ids=["none", "no-elicitation", "empty-means-form", "form", "url-only"],
)
def test_only_form_elicitation_counts(
    capabilities: types.ClientCapabilities | None, supported: bool
) -> None:
    assert elicitation_supported(capabilities) is supported
