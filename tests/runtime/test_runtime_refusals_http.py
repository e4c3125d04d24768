"""S21: every HTTP-layer refusal leaves one audit record (caller, tool when known, reason)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from runtime_support import PING, Recorder
from test_runtime_auth import (  # noqa: F401 (fixtures)
    Jwks,
    Key,
    call,
    claims,
    ec_key,
    jwks,
    rsa_key,
    running,
    sign,
)

pytestmark = pytest.mark.anyio


async def test_S21_http_refusals_are_each_recorded(
    jwks: Jwks, upstream: Recorder, env: dict[str, str], rsa_key: Key, tmp_path: Path
) -> None:
    audit = tmp_path / "audit.jsonl"
    async with running(jwks, upstream, env | {"PETS_AUDIT": str(audit)}) as stack:
        token = sign(rsa_key, claims(stack.resource, scope="reports:read", sub="carol"))
        statuses = [
            (await stack.post(call("pets_get_pet", {"petId": "1"}))).status_code,  # no token
            (await stack.post(PING, "not-a-jwt")).status_code,  # a bad token
            (await stack.post(call("pets_reports"), token)).status_code,  # a missing scope
            (await stack.post(PING, token, Host="evil.example")).status_code,  # rebinding
        ]
        big = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "ping",
            "pad": "x" * DEFAULT_MAX_REQUEST_BODY_SIZE,
        }
        statuses.append((await stack.post(big, token)).status_code)  # too large
    assert statuses[:3] == [401, 401, 403] and statuses[3] in (400, 421) and statuses[4] == 413
    records = [json.loads(line) for line in audit.read_text().splitlines()]
    assert len(records) == len(statuses), records
    assert [r["decision"] for r in records] == ["refused"] * len(statuses)
    assert [r["reason"].split()[1] for r in records] == [str(s) for s in statuses]
    assert (records[0]["tool"], records[0]["caller"]) == ("pets_get_pet", "anonymous")
    assert records[1]["caller"] == "anonymous"
    assert (records[2]["tool"], records[2]["caller"]) == ("pets_reports", "carol")
    assert upstream.requests == []
