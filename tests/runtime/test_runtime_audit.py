"""The audit log (S16): a JSON line for every write and every refusal, with no secret in it."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from runtime_support import ENV, Answer, Recorder

from mcpmint.runtime.audit import AuditLog, canonical_digest, load_audit
from mcpmint.runtime.catalog import Catalog
from mcpmint.runtime.confirm import argument_digest
from mcpmint.runtime.server import build_server

pytestmark = pytest.mark.anyio


def records(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


async def run(
    catalog: Catalog,
    upstream: Recorder,
    env: dict[str, str],
    mode: str,
    calls: list[tuple[str, dict[str, Any]]],
    answer: Answer | None = None,
) -> list[dict[str, Any]]:
    stream = io.StringIO()
    server = build_server(
        catalog, transport=upstream.transport, environ=env, audit=AuditLog(stream=stream)
    )
    async with Client(server, mode=mode, elicitation_callback=answer or Answer()) as client:
        for name, args in calls:
            with contextlib.suppress(MCPError):
                await client.call_tool(name, args)
    return records(stream)


async def test_writes_and_refusals_are_audited_reads_are_not(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(201, json={"id": 7, "name": "Rex"})
    got = await run(
        catalog,
        upstream,
        env,
        mode,
        [
            ("pets_get_pet", {"petId": "1"}),  # a read: no record
            ("pets_create_pet", {"name": "Rex"}),
            ("pets_drop_db", {"x": 1}),
            ("pets_get_pet", {"petId": 5}),
        ],
    )
    assert [(r["tool"], r["decision"], r["reason"]) for r in got] == [
        ("pets_create_pet", "confirmed", ""),
        ("pets_drop_db", "refused", "unknown tool"),
        ("pets_get_pet", "refused", "invalid arguments"),
    ]
    write = got[0]
    assert write["caller"] == "local" and write["upstreamStatus"] == 201
    assert write["arguments"] == {"name": "Rex"}
    assert write["argumentsSha256"] == argument_digest("pets_create_pet", {"name": "Rex"})
    assert write["time"].endswith("Z") and write["durationMs"] >= 0
    assert set(write) == {
        "time",
        "caller",
        "tool",
        "arguments",
        "argumentsSha256",
        "decision",
        "reason",
        "upstreamStatus",
        "durationMs",
    }


async def test_declined_calls_are_audited(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    got = await run(
        catalog,
        upstream,
        env,
        mode,
        [("pets_delete_pet", {"petId": "1"})],
        answer=Answer("decline", None),
    )
    assert [(r["decision"], r["reason"], r["upstreamStatus"]) for r in got] == [
        ("declined", "declined by the user", None)
    ]
    assert upstream.requests == []


async def test_S16_no_secret_reaches_the_audit_log(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    upstream.respond = lambda request: httpx2.Response(401, text=f"bad key {ENV['PETS_API_KEY']}")
    got = await run(
        catalog,
        upstream,
        env,
        mode,
        [
            ("pets_create_pet", {"name": f"leak {ENV['PETS_API_KEY']}", "tag": "t"}),
            ("pets_get_pet", {"petId": "1", "q": ENV["PETS_BEARER"], "x_request_id": 5}),
        ],
    )
    text = json.dumps(got)
    for secret in ENV.values():
        if len(secret) >= 8:
            assert secret not in text
    assert got[0]["arguments"]["name"] == "leak [REDACTED]"
    assert got[0]["upstreamStatus"] == 401


def test_sensitive_argument_names_are_redacted_and_the_digest_is_canonical() -> None:
    stream = io.StringIO()
    args = {"password": "hunter2", "nested": {"api_key": "k", "ok": [1, "x"]}}
    AuditLog(stream=stream).record(caller="local", tool="t", arguments=args, decision="allowed")
    [record] = records(stream)
    assert record["arguments"] == {
        "password": "[REDACTED]",
        "nested": {"api_key": "[REDACTED]", "ok": [1, "x"]},
    }
    assert record["argumentsSha256"] == canonical_digest("t", dict(reversed(args.items())))


def test_destinations(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert load_audit("PETS", {}).destination == "stderr"
    off = load_audit("PETS", {"PETS_AUDIT": "off"})
    off.record(caller="local", tool="t", arguments={}, decision="allowed")
    path = tmp_path / "audit.jsonl"
    to_file = load_audit("PETS", {"PETS_AUDIT": str(path)})
    to_file.record(caller="local", tool="t", arguments={}, decision="allowed")
    to_file.record(caller="local", tool="u", arguments={}, decision="refused", reason="x")
    assert [json.loads(line)["tool"] for line in path.read_text().splitlines()] == ["t", "u"]
    load_audit("PETS", {}).record(caller="local", tool="s", arguments={}, decision="allowed")
    assert json.loads(capsys.readouterr().err)["tool"] == "s"


def test_an_unwritable_destination_is_reported_not_raised(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = AuditLog(str(tmp_path / "missing" / "audit.jsonl"))
    log.record(caller="local", tool="t", arguments={}, decision="allowed")
    assert "audit log: cannot write" in capsys.readouterr().err
