"""`settings:` in mcpmint.yaml: run-time defaults in tools.json, overridden by the environment."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp import Client

from mcpmint.runtime.catalog import Catalog, load_catalog
from mcpmint.runtime.server import ConfigurationError, build_server
from mcpmint.settings import known_settings

from .support import REPO, mcpmint, package_tests

SPEC = (REPO / "specs" / "petstore-plus.yaml").as_posix()
CONFIG = f"""\
sources:
  - spec: {SPEC}
    namespace: petstore
settings:
  CONFIRM_FALLBACK: token
  TIMEOUT: 20
  MAX_RESPONSE_BYTES: 64
  AUDIT: "off"
  READ_ONLY: false
"""
SECRET = "bearer-secret-123"


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("settings")
    (folder / "mcpmint.yaml").write_text(CONFIG)
    code, stdout, stderr = mcpmint("generate", str(folder / "mcpmint.yaml"))
    assert code == 0, stdout + stderr
    yield folder


def generated_catalog(folder: Path) -> Catalog:
    return load_catalog(json.loads((folder / "src/petstore_mcp/_generated/tools.json").read_text()))


def test_settings_are_written_into_tools_json_by_full_variable_name(generated: Path) -> None:
    data = json.loads((generated / "src/petstore_mcp/_generated/tools.json").read_text())
    assert data["settings"] == {
        "PETSTORE_AUDIT": "off",
        "PETSTORE_CONFIRM_FALLBACK": "token",
        "PETSTORE_MAX_RESPONSE_BYTES": "64",
        "PETSTORE_READ_ONLY": "false",
        "PETSTORE_TIMEOUT": "20",
    }
    reference = (generated / "REFERENCE.md").read_text()
    assert "`PETSTORE_CONFIRM_FALLBACK`" in reference and "`PETSTORE_TIMEOUT`" in reference


class Upstream:
    def __init__(self) -> None:
        self.requests: list[httpx2.Request] = []
        self.transport = httpx2.MockTransport(self.handle)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(request)
        return httpx2.Response(200, text="x" * 500)


def text(result: types.CallToolResult) -> str:
    return " ".join(c.text for c in result.content if isinstance(c, types.TextContent))


async def delete_once(catalog: Catalog, environ: dict[str, str], upstream: Upstream) -> str:
    server = build_server(catalog, transport=upstream.transport, environ=environ)
    async with Client(server) as client:  # a client without elicitation
        return text(await client.call_tool("petstore_delete_pet", {"petId": 1}))


@pytest.mark.anyio
async def test_a_setting_in_the_config_takes_effect_in_the_generated_server(
    generated: Path,
) -> None:
    catalog = generated_catalog(generated)
    upstream = Upstream()
    said = await delete_once(catalog, {"PETSTORE_BEARER_AUTH": SECRET}, upstream)
    # CONFIRM_FALLBACK: token from mcpmint.yaml: a token, not a refusal.
    assert said.startswith("CONFIRMATION NEEDED"), said
    token = re.search(r'"_confirmation_token": "([^"]+)"', said)
    assert token is not None and upstream.requests == []
    server = build_server(
        catalog, transport=upstream.transport, environ={"PETSTORE_BEARER_AUTH": SECRET}
    )
    async with Client(server) as client:
        first = await client.call_tool("petstore_delete_pet", {"petId": 1})
        again = re.search(r'"_confirmation_token": "([^"]+)"', text(first))
        assert again is not None
        done = await client.call_tool(
            "petstore_delete_pet", {"petId": 1, "_confirmation_token": again.group(1)}
        )
    assert len(upstream.requests) == 1
    # MAX_RESPONSE_BYTES: 64 from mcpmint.yaml: the 500-byte answer is cut.
    assert "The response was truncated: only its first 64 bytes" in text(done)


@pytest.mark.anyio
async def test_the_environment_overrides_a_setting_from_the_config(generated: Path) -> None:
    catalog = generated_catalog(generated)
    upstream = Upstream()
    environ = {"PETSTORE_BEARER_AUTH": SECRET, "PETSTORE_CONFIRM_FALLBACK": "refuse"}
    said = await delete_once(catalog, environ, upstream)
    assert "cannot ask the user" in said and "_confirmation_token" not in said
    assert upstream.requests == []
    with pytest.raises(ConfigurationError, match="PETSTORE_TIMEOUT"):
        build_server(catalog, environ={"PETSTORE_TIMEOUT": "soon"})


def test_an_unusable_setting_in_tools_json_stops_the_server_naming_the_variable(
    generated: Path,
) -> None:
    data: dict[str, Any] = json.loads(
        (generated / "src/petstore_mcp/_generated/tools.json").read_text()
    )
    data["settings"]["PETSTORE_WRITE_RATE"] = "lots"
    with pytest.raises(ConfigurationError, match="PETSTORE_WRITE_RATE"):
        build_server(load_catalog(data), environ={})


def write_config(tmp_path: Path, settings: str) -> Path:
    config = tmp_path / "mcpmint.yaml"
    config.write_text(f"sources:\n  - spec: {SPEC}\nsettings:\n{settings}")
    return config


@pytest.mark.parametrize(
    "key", ["API_KEY", "BEARER_AUTH", "BEARER_AUTH_TOKEN", "STATE_KEY", "OAUTH2_CLIENT_SECRET"]
)
def test_a_secret_in_settings_is_a_located_error_that_says_use_the_environment(
    tmp_path: Path, key: str
) -> None:
    config = write_config(tmp_path, f"  TIMEOUT: 5\n  {key}: hunter2\n")
    code, stdout, stderr = mcpmint("generate", str(config))
    assert code == 2, stdout + stderr
    assert f"{config}:5:3: error: settings: {key} looks like a secret" in stderr, stderr
    assert f"hint: set it in the environment: <PREFIX>_{key}" in stderr
    assert "hunter2" not in stdout + stderr
    assert "Traceback" not in stdout + stderr
    assert not (tmp_path / "src").exists()


def test_an_unknown_setting_is_a_located_error_with_the_close_names(tmp_path: Path) -> None:
    config = write_config(tmp_path, "  TIMEOUT: 3\n  MAX_RESPONSE: 10\n")
    code, _, stderr = mcpmint("validate", str(config))
    assert code == 2
    assert f"{config}:5:3: error: settings: unknown setting 'MAX_RESPONSE'" in stderr, stderr
    assert "did you mean MAX_ARGUMENT_BYTES, MAX_CONCURRENCY, MAX_RESPONSE_BYTES" in stderr


def test_a_lower_case_setting_is_refused_with_the_expected_form(tmp_path: Path) -> None:
    config = write_config(tmp_path, "  timeout: 3\n")
    code, _, stderr = mcpmint("validate", str(config))
    assert code == 2
    assert f"{config}:3:1: error: settings: 'timeout' does not match" in stderr, stderr
    assert "TIMEOUT for PETSTORE_TIMEOUT" in stderr


def test_every_known_setting_is_read_by_the_runtime() -> None:
    # The list the generator checks against is the one REFERENCE.md prints; each name in it
    # must appear in the runtime's source, so the list cannot drift from what is read.
    runtime = "".join(
        p.read_text() for p in (REPO / "generator" / "mcpmint" / "runtime").glob("*.py")
    )
    unread = [
        key for key in known_settings() if f'"{key}"' not in runtime and f"_{key}" not in runtime
    ]
    assert unread == []


@pytest.mark.parametrize(
    ("setting", "says"),
    [
        ("TIMEOUT: soon", "<PREFIX>_TIMEOUT must be a number"),
        ("MAX_RESPONSE_BYTES: 0", "<PREFIX>_MAX_RESPONSE_BYTES must be at least 1"),
        ("CONFIRM_FALLBACK: ask", "<PREFIX>_CONFIRM_FALLBACK must be one of: refuse, token"),
        ("READ_ONLY: maybe", "<PREFIX>_READ_ONLY must be 1 or 0"),
    ],
)
def test_an_unusable_setting_value_is_a_located_error_at_generation(
    tmp_path: Path, setting: str, says: str
) -> None:
    config = write_config(tmp_path, f"  {setting}\n")
    code, _, stderr = mcpmint("validate", str(config))
    assert code == 2
    assert f"{config}:4:3: error: settings: {says}" in stderr, stderr


def test_a_yaml_boolean_for_a_setting_that_is_not_yes_or_no_is_refused(tmp_path: Path) -> None:
    # YAML 1.1 reads `off` as false: the audit log would go to a file named "false".
    config = write_config(tmp_path, "  READ_ONLY: yes\n  AUDIT: off\n")
    code, _, stderr = mcpmint("validate", str(config))
    assert code == 2
    assert f"{config}:5:3: error: settings: AUDIT is not a yes/no setting" in stderr, stderr
    assert 'write the value in quotes, for example AUDIT: "off"' in stderr
    assert "READ_ONLY" not in stderr


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_the_generated_tests_pass_whatever_the_settings_say(tmp_path: Path) -> None:
    # They test the tools, not one deployment: READ_ONLY would hide most of them, a 64-byte
    # response cap would cut every answer, and the token fallback changes the refusal.
    config = write_config(
        tmp_path,
        "  READ_ONLY: true\n  MAX_RESPONSE_BYTES: 64\n  CONFIRM_FALLBACK: token\n",
    )
    code, stdout, stderr = mcpmint("generate", str(config))
    assert code == 0, stdout + stderr
    done = package_tests(tmp_path)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert " passed" in done.stdout
