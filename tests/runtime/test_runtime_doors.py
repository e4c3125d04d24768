"""S18: one gate for every door. Each check runs against each way in that can send an
upstream request: a direct tools/call, dynamic mode's `call_tool`, and resources/read of a
resource template that mirrors the tool (mcpmint.yaml's `resources:`)."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from runtime_support import Answer, Recorder
from security2_support import (
    DOORS,
    SECRET,
    TOOL,
    door_catalog,
    door_server,
    encodings,
    knock,
    records,
)

pytestmark = pytest.mark.anyio


@pytest.fixture(params=DOORS)
def door(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_S18_the_door_reads_through_when_allowed(door: str, upstream: Recorder) -> None:
    async with door_server(door_catalog(), upstream) as (client, audit):
        outcome = await knock(client, door, "7")
    assert not outcome.refused, outcome
    assert json.loads(outcome.text) == {"id": 1, "name": "Rex"}
    assert upstream.target == "/v1/pets/7"
    assert upstream.last.headers["X-API-Key"] == SECRET
    assert records(audit) == []  # an allowed read is not recorded


REFUSALS: dict[str, tuple[dict[str, Any], dict[str, str], str, str]] = {
    # check: (tool entry changes, environment, pet id, audit reason)
    "deny-list": ({}, {"PETS_TOOLS_DENY": TOOL}, "7", "unknown tool"),
    "allow-list": ({}, {"PETS_TOOLS_ALLOW": "pets_create_*"}, "7", "unknown tool"),
    "value-allowlist": (
        {},
        {"PETS_ALLOW_PETS_GET_PET_PETID": "1,2"},
        "7",
        "argument value not allowed",
    ),
    "schema": ({}, {}, "abc", "invalid arguments"),
    "pattern-is-ecma": ({}, {}, "7%0A", "invalid arguments"),
}


@pytest.mark.parametrize("check", sorted(REFUSALS))
async def test_S18_every_door_refuses_alike(door: str, check: str, upstream: Recorder) -> None:
    changes, env, pet_id, reason = REFUSALS[check]
    if door != "resources/read":
        pet_id = pet_id.replace("%0A", "\n")
    async with door_server(door_catalog(**changes), upstream, env) as (client, audit):
        outcome = await knock(client, door, pet_id)
    assert outcome.refused, outcome
    assert upstream.requests == []
    [record] = records(audit)
    assert (record["tool"], record["decision"], record["reason"]) == (TOOL, "refused", reason)


async def test_S18_scopes_are_checked_at_every_door(door: str, upstream: Recorder) -> None:
    catalog = door_catalog(security=[[{"scheme": "OAuth", "scopes": ["pets:read"]}]])
    async with door_server(catalog, upstream, scopes=["other"]) as (client, audit):
        outcome = await knock(client, door, "7")
    assert outcome.refused and "pets:read" in outcome.text, outcome
    assert upstream.requests == [] and upstream.token_requests == []
    [record] = records(audit)
    assert (record["caller"], record["reason"]) == ("mallory", "insufficient scope")


async def test_S18_the_rate_limit_counts_every_door(door: str, upstream: Recorder) -> None:
    # A GET the operator marked as changing something: limited like any write.
    annotations = {"readOnlyHint": False, "destructiveHint": False, "openWorldHint": True}
    catalog = door_catalog(annotations=annotations, confirmation="none")
    async with door_server(catalog, upstream, {"PETS_WRITE_RATE": "1"}) as (client, audit):
        first = await knock(client, door, "7")
        second = await knock(client, door, "8")
    assert not first.refused and second.refused, (first, second)
    assert "Rate limit" in second.text
    assert [r.url.path for r in upstream.requests] == ["/v1/pets/7"]
    assert [r["reason"] for r in records(audit)] == ["", "rate limit"]


async def test_S18_confirmation_is_never_skipped(door: str, upstream: Recorder) -> None:
    answer = Answer("decline")
    catalog = door_catalog(confirmation="required")
    async with door_server(catalog, upstream, answer=answer) as (client, audit):
        outcome = await knock(client, door, "7")
    assert outcome.refused, outcome
    assert upstream.requests == []
    # A resource read cannot ask the user: refused without asking.
    assert len(answer.asked) == (0 if door == "resources/read" else 1)
    [record] = records(audit)
    assert record["decision"] in ("declined", "refused")


@pytest.mark.parametrize("form", ["raw", "json-escaped", "url-encoded", "base64", "base64-inside"])
async def test_S18_S19_a_secret_echoed_by_the_upstream_leaves_no_door(
    door: str, form: str, upstream: Recorder
) -> None:
    echoed = encodings(SECRET)[form]
    upstream.respond = lambda request: httpx2.Response(
        200, json={"id": 1, "name": "Rex", "echo": f"key={echoed};"}
    )
    async with door_server(door_catalog(), upstream) as (client, _):
        outcome = await knock(client, door, "7")
    assert not outcome.refused, outcome
    shown = outcome.text + json.dumps(outcome.structured)
    assert "[REDACTED]" in shown
    for leaked in encodings(SECRET).values():
        assert leaked not in shown


async def test_S18_S20_invisible_characters_leave_no_door(door: str, upstream: Recorder) -> None:
    hidden = "Rex\u202e\u200b\U000e0041\u2028\u00ad\u3164"
    upstream.respond = lambda request: httpx2.Response(200, json={"id": 1, "name": hidden})
    async with door_server(door_catalog(), upstream) as (client, _):
        outcome = await knock(client, door, "7")
    assert not outcome.refused, outcome
    assert json.loads(outcome.text)["name"] == "Rex"
