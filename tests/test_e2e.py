"""End to end: petstore-plus generated, installed in a fresh virtual environment, its own
checks and tests run there, then served over stdio and streamable HTTP against a real Prism
mock of the same spec, which rejects any request that does not match the spec. The client
confirms every write through elicitation; the MCP Inspector, which cannot, is refused.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate

from .support import (
    BAR_COMMANDS,
    BAR_IDS,
    REPO,
    Loopback,
    User,
    clean_env,
    free_port,
    loopback,
    make_venv,
    node_tool,
    prism,
    run,
    serving,
)

pytestmark = [pytest.mark.slow, pytest.mark.anyio]
SPEC = REPO / "specs" / "petstore-plus.yaml"


@dataclass(frozen=True)
class Installed:
    folder: Path  # the generated package
    python: Path  # its fresh virtual environment's interpreter
    cases: dict[str, Any]


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    root = tmp_path_factory.mktemp("e2e")
    out = root / "petstore-mcp"
    sink = DiagnosticSink()
    generate(SPEC, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    python = make_venv(root / "venv", f"{out}[test]")
    cases = json.loads((out / "tests" / "generated_cases.json").read_text(encoding="utf-8"))
    return Installed(out, python, cases)


@pytest.fixture(scope="module")
def upstream() -> Iterator[str]:
    with prism(SPEC) as url:
        yield url


def server_env(installed: Installed, upstream: str) -> dict[str, str]:
    return clean_env(
        PETSTORE_BASE_URL=upstream,
        PETSTORE_API_KEY_AUTH="key-for-prism",
        PETSTORE_BEARER_AUTH="bearer-for-prism",
        PETSTORE_OAUTH2_ACCESS_TOKEN="oauth-for-prism",
    )


def text_of(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


def test_generated_package_passes_its_own_tests_in_a_fresh_venv(installed: Installed) -> None:
    done = run(
        [str(installed.python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=installed.folder,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout


@pytest.mark.parametrize("command", BAR_COMMANDS, ids=BAR_IDS)
def test_generated_package_meets_our_bar(installed: Installed, command: list[str]) -> None:
    done = run([str(installed.python), *command], cwd=installed.folder)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


async def call_every_tool(client: Client, user: User, cases: dict[str, Any]) -> dict[str, str]:
    listed = {tool.name for tool in (await client.list_tools()).tools}
    assert set(cases["calls"]) <= listed
    failures = {}
    for name, case in sorted(cases["calls"].items()):
        before = len(user.asked)
        result = await client.call_tool(name, case["arguments"])
        if result.is_error:
            failures[name] = text_of(result)
        confirmed = name in cases["confirmationRequired"]
        assert len(user.asked) - before == (1 if confirmed else 0), name
        if confirmed:
            assert user.asked[-1].startswith(f"Confirm {name}"), user.asked[-1]
    return failures


async def test_every_tool_called_over_stdio_is_accepted_by_prism(
    installed: Installed, upstream: str
) -> None:
    params = StdioServerParameters(
        command=str(installed.python),
        args=["-m", "petstore_mcp"],
        env=server_env(installed, upstream),
    )
    user = User()
    async with Client(params, elicitation_callback=user) as client:
        failures = await call_every_tool(client, user, installed.cases)
    assert len(installed.cases["calls"]) == 8
    assert len(user.asked) == len(installed.cases["confirmationRequired"]) >= 3
    assert failures == {}


async def test_every_tool_called_over_streamable_http_is_accepted_by_prism(
    installed: Installed, upstream: str
) -> None:
    port = free_port()
    command = [
        str(installed.python),
        "-m",
        "petstore_mcp",
        "--transport",
        "http",
        "--port",
        str(port),
    ]
    with serving(command, port, server_env(installed, upstream)):
        async with httpx2.AsyncClient(timeout=30) as http:
            transport = streamable_http_client(f"http://127.0.0.1:{port}/mcp", http_client=http)
            user = User()
            async with Client(transport, elicitation_callback=user) as client:
                failures = await call_every_tool(client, user, installed.cases)
    assert len(user.asked) == len(installed.cases["confirmationRequired"])
    assert failures == {}


def test_mcp_inspector_lists_the_tools_strictly(installed: Installed, tmp_path: Path) -> None:
    env = clean_env(MCP_CATALOG_PATH=str(tmp_path / "catalog.json"), PETSTORE_API_KEY_AUTH="k")
    done = run(
        [
            str(node_tool("mcp-inspector")),
            "--cli",
            "--method",
            "tools/list",
            "--strict",
            "--",
            str(installed.python),
            "-m",
            "petstore_mcp",
        ],
        env=env,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    listed = json.loads(done.stdout)
    assert sorted(t["name"] for t in listed["tools"]) == sorted(
        t["name"] for t in installed.cases["toolsList"]
    )
    assert "warn" not in done.stderr.lower(), done.stderr


@pytest.fixture
def recording_upstream() -> Iterator[Loopback]:
    """A loopback HTTP server that answers 200 and records every request it receives."""
    with loopback(lambda seen: (200, {})) as server:
        yield server


def test_mcp_inspector_cannot_confirm_so_a_destructive_call_is_refused(
    installed: Installed, recording_upstream: Loopback, tmp_path: Path
) -> None:
    env = clean_env(MCP_CATALOG_PATH=str(tmp_path / "catalog.json"))
    # The Inspector starts the server with a minimal environment: settings go through `-e`.
    settings = {
        "PETSTORE_BASE_URL": f"{recording_upstream.url}/v2",
        "PETSTORE_API_KEY_AUTH": "k-secret-value",
        "PETSTORE_BEARER_AUTH": "bearer-secret-value",
        "PETSTORE_OAUTH2_ACCESS_TOKEN": "oauth-secret-value",
    }
    server_env = [arg for k, v in settings.items() for arg in ("-e", f"{k}={v}")]

    def inspector(*call: str) -> Any:
        command = [str(node_tool("mcp-inspector")), "--cli", *server_env, "--method", "tools/call"]
        command += [*call, "--", str(installed.python), "-m", "petstore_mcp"]
        return run(command, env=env)

    refused = inspector("--tool-name", "petstore_delete_pet", "--tool-arg", "petId=42")
    output = refused.stdout + refused.stderr
    assert refused.returncode != 0, output[-3000:]
    assert "confirmation" in output and "Nothing was sent" in output, output[-3000:]
    assert "Traceback" not in output
    assert "secret-value" not in output
    assert recording_upstream.requests == []
    # The same server and upstream do answer a read-only call: the refusal is the confirmation.
    allowed = inspector("--tool-name", "petstore_get_pet", "--tool-arg", "petId=42")
    assert allowed.returncode == 0, (allowed.stdout + allowed.stderr)[-3000:]
    assert recording_upstream.requests == ["GET /v2/pets/42"]
