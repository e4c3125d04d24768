"""Metrics: per-tool counts and latencies by outcome, through OpenTelemetry and the summary.

OpenTelemetry's own SDK with its in-memory reader plays the operator's exporter: what it reads
is what any exporter would send.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from runtime_support import ENV, Answer, Recorder, catalog_data

from mcpmint.runtime.audit import AuditLog
from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.metrics import Metrics, classify
from mcpmint.runtime.server import build_server

pytestmark = pytest.mark.anyio

Key = tuple[Any, ...]  # (tool, outcome, reason, HTTP status); None where absent


def respond_by_path(request: httpx2.Request) -> httpx2.Response:
    """200 for pet 1, 404 for pet 404, a read timeout for pet 504, 201 for a new pet."""
    path = request.url.path
    if path.endswith("/pets/404"):
        return httpx2.Response(404, json={"message": "no such pet"})
    if path.endswith("/pets/504"):
        raise httpx2.ReadTimeout("timed out", request=request)
    if request.method == "POST":
        return httpx2.Response(201, json={"id": 7, "name": "Rex"})
    return httpx2.Response(200, json={"id": 1, "name": "Rex"})


async def calls(
    server: Any, mode: str, answer: Answer, batch: list[tuple[str, dict[str, Any]]]
) -> None:
    async with Client(server, mode=mode, elicitation_callback=answer) as client:
        for name, arguments in batch:
            with contextlib.suppress(MCPError):
                await client.call_tool(name, arguments)


def exported(reader: InMemoryMetricReader) -> tuple[Counter[Key], Counter[Key]]:
    """Call counts and histogram counts by (tool, outcome, reason, status), as exported."""
    counts: Counter[Key] = Counter()
    durations: Counter[Key] = Counter()
    data = reader.get_metrics_data()
    assert data is not None
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            assert scope.scope.name == "pets-mcp" and scope.scope.version == "1.2.3"
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    a = point.attributes or {}
                    key: Key = (
                        a.get("gen_ai.tool.name"),
                        str(a["mcpmint.outcome"]),
                        a.get("mcpmint.reason"),
                        a.get("http.response.status_code"),
                    )
                    if metric.name == "mcpmint.tool.calls":
                        counts[key] += int(point.value)  # type: ignore[union-attr]
                    elif metric.name == "mcpmint.tool.duration":
                        assert isinstance(point, HistogramDataPoint) and metric.unit == "s"
                        assert point.min >= 0
                        durations[key] += point.count
    return counts, durations


async def test_every_outcome_is_counted_per_tool_with_its_latency_in_opentelemetry(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str
) -> None:
    reader = InMemoryMetricReader()
    metrics = Metrics("pets-mcp", "1.2.3", meter_provider=MeterProvider(metric_readers=[reader]))
    env["PETS_MAX_ARGUMENT_BYTES"] = "1000"
    upstream.respond = respond_by_path
    server = build_server(catalog, transport=upstream.transport, environ=env, metrics=metrics)
    await calls(
        server,
        mode,
        Answer(),
        [
            ("pets_get_pet", {"petId": "1"}),
            ("pets_get_pet", {"petId": "1"}),
            ("pets_get_pet", {"petId": "404"}),
            ("pets_get_pet", {"petId": "504"}),
            ("pets_get_pet", {"petId": 5}),
            ("pets_get_pet", {"petId": "1", "q": "x" * 2000}),
            ("pets_drop_database", {}),
            ("pets_create_pet", {"name": "Rex"}),
        ],
    )
    await calls(server, mode, Answer("decline", None), [("pets_create_pet", {"name": "Rex"})])

    counts, durations = exported(reader)
    expected: Counter[Key] = Counter(
        {
            ("pets_get_pet", "ok", None, 200): 2,
            ("pets_get_pet", "upstream_error", None, 404): 1,
            ("pets_get_pet", "timeout", None, None): 1,
            ("pets_get_pet", "argument_error", None, None): 1,
            ("pets_get_pet", "refused", "arguments too large", None): 1,
            # The unknown name itself is never an attribute: a client could send any text.
            (None, "unknown_tool", None, None): 1,
            ("pets_create_pet", "ok", None, 201): 1,
            ("pets_create_pet", "declined", "declined by the user", None): 1,
        }
    )
    if mode == "auto":  # 2026-07-28: each confirmation question is a round of its own
        expected[("pets_create_pet", "input_required", None, None)] = 2
    assert counts == expected
    assert durations == expected
    # Two reads, the 404, the timeout (not retried: only connect errors are) and one write.
    assert len(upstream.requests) == 5


async def test_the_summary_counts_outcomes_reasons_latencies_and_unknown_names(
    catalog: Catalog, upstream: Recorder, env: dict[str, str], mode: str, tmp_path: Path
) -> None:
    destination = tmp_path / "summary.json"
    env["PETS_METRICS_SUMMARY"] = str(destination)
    upstream.respond = respond_by_path
    # No meter provider given and none installed: OpenTelemetry's API alone, a no-op.
    server = build_server(catalog, transport=upstream.transport, environ=env)
    await calls(
        server,
        mode,
        Answer(),
        [
            ("pets_get_pet", {"petId": "1"}),
            ("pets_get_pet", {"petId": "404"}),
            ("pets_get_pet", {"petId": []}),
            ("pets_guess", {}),
            ("pets_guess", {}),
            ("pets_other_guess", {}),
        ],
    )
    # Written when the server stops (here: when its last client leaves).
    summary = json.loads(destination.read_text())
    assert summary["server"] == "pets-mcp"
    assert summary["calls"] == 6
    assert summary["outcomes"] == {
        "argument_error": 1,
        "ok": 1,
        "unknown_tool": 3,
        "upstream_error": 1,
    }
    assert summary["unknownTools"] == {"pets_guess": 2, "pets_other_guess": 1}
    get_pet = summary["tools"]["pets_get_pet"]
    assert get_pet["calls"] == 3
    assert get_pet["outcomes"] == {"argument_error": 1, "ok": 1, "upstream_error": 1}
    latency = get_pet["latencyMs"]
    assert 0 <= latency["p50"] <= latency["p95"] <= latency["max"]
    assert 0 <= latency["mean"] <= latency["max"]
    assert set(summary["tools"]) == {"pets_get_pet"}


def test_unknown_tool_names_in_the_summary_are_bounded() -> None:
    metrics = Metrics("pets-mcp")
    for n in range(150):
        metrics.record_unknown(f"made_up_{n}", 0.001)
    metrics.record_unknown("made_up_0", 0.001)
    unknown = metrics.summary()["unknownTools"]
    assert len(unknown) == 101
    assert unknown["made_up_0"] == 2 and unknown["(other)"] == 50
    assert metrics.summary()["outcomes"] == {"unknown_tool": 151}


def test_the_summary_is_written_on_sigusr1_while_the_server_runs(tmp_path: Path) -> None:
    destination = tmp_path / "summary.json"
    metrics = Metrics("pets-mcp", destination=str(destination))
    metrics.record("pets_get_pet", "ok", 0.25, status=200)
    previous = signal.getsignal(signal.SIGUSR1)
    try:
        metrics.on_signal()
        os.kill(os.getpid(), signal.SIGUSR1)
    finally:
        signal.signal(signal.SIGUSR1, previous)
    summary = json.loads(destination.read_text())
    assert summary["tools"]["pets_get_pet"]["latencyMs"]["max"] == 250.0


def test_the_summary_is_off_by_default_and_says_so_when_it_cannot_write(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    Metrics("pets-mcp").write_summary()
    assert capsys.readouterr().err == ""
    Metrics("pets-mcp", destination=str(tmp_path / "missing" / "summary.json")).write_summary()
    assert "metrics summary: cannot write to" in capsys.readouterr().err
    Metrics("pets-mcp", destination="stderr").write_summary()
    assert json.loads(capsys.readouterr().err.removeprefix("metrics summary: "))["calls"] == 0


@pytest.mark.parametrize(
    ("decision", "reason", "status", "outcome"),
    [
        ("allowed", "", 200, "ok"),
        ("confirmed", "", 204, "ok"),
        ("allowed", "", 500, "upstream_error"),
        ("allowed", "upstream failed", None, "upstream_error"),
        ("confirmed", "credentials failed", None, "upstream_error"),
        ("allowed", "upstream timeout", None, "timeout"),
        ("refused", "invalid arguments", None, "argument_error"),
        ("refused", "unknown tool", None, "unknown_tool"),
        ("refused", "rate limit", None, "refused"),
        ("refused", "no confirmation", None, "refused"),
        ("refused", "internal error KeyError", None, "internal_error"),
        ("declined", "cancelled by the user", None, "declined"),
    ],
)
def test_outcomes_are_classified_from_the_audit_decision(
    decision: str, reason: str, status: int | None, outcome: str
) -> None:
    assert classify(decision, reason, status) == outcome


# --------------------------------------------------------------------- dynamic mode's own tools
def _dynamic_catalog() -> Any:
    data = catalog_data()
    data["toolModes"] = {"mode": "dynamic", "core": []}
    return load_catalog(data)


async def test_dynamic_modes_search_and_describe_calls_are_metered_like_any_tool(
    upstream: Recorder, mode: str
) -> None:
    metrics = Metrics("pets-mcp")
    server = build_server(
        _dynamic_catalog(),
        transport=upstream.transport,
        environ=ENV,
        audit=AuditLog(stream=io.StringIO()),
        metrics=metrics,
    )
    async with Client(server, mode=mode) as client:
        await client.call_tool("pets_search_tools", {"query": "list pets"})
        await client.call_tool("pets_search_tools", {"query": "find a pet"})
        await client.call_tool("pets_describe_tool", {"name": "pets_list_pets"})
        await client.call_tool("pets_describe_tool", {"name": "no_such_tool"})
        await client.call_tool("pets_call_tool", {"name": "pets_list_pets", "arguments": {}})
    tools = metrics.summary()["tools"]
    assert tools["pets_search_tools"]["outcomes"] == {"ok": 2}
    assert tools["pets_describe_tool"]["outcomes"] == {"argument_error": 1, "ok": 1}
    # A call through call_tool counts as a call of the tool it names, as before.
    assert tools["pets_list_pets"]["outcomes"] == {"ok": 1}
    assert "pets_call_tool" not in tools
    assert metrics.summary()["calls"] == 5
