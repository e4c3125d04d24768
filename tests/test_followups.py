"""Small follow-ups to issues 3, 4, 6, 7 and 8: each test here failed before its fix."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
import yaml
from mcp import Client

from mcpmint.config import load_config, scaffold_text
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.lock import lock_document
from mcpmint.pipeline import build, build_config
from mcpmint.render import catalog, settings_rows
from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.server import build_server as build_runtime_server

from .conftest import SPECS
from .support import clean_env, run

# One tool answers a bare JSON string, one plain text, one a JSON object.
BARE_STRING_SPEC = """\
openapi: 3.0.3
info: {title: Words, version: "1"}
servers: [{url: "https://words.example/api"}]
paths:
  /word:
    get:
      operationId: getWord
      responses:
        "200":
          description: A word, as a JSON string.
          content:
            application/json:
              schema: {type: string}
  /anything:
    get:
      operationId: getAnything
      responses:
        "200":
          description: Any JSON value (an unknown schema).
          content:
            application/json:
              schema: {}
  /note:
    get:
      operationId: getNote
      responses:
        "200":
          description: A note, as text.
          content:
            text/plain:
              schema: {type: string}
  /count:
    get:
      operationId: getCount
      responses:
        "200":
          description: A count.
          content:
            application/json:
              schema:
                type: object
                properties: {count: {type: integer}}
"""


def _generate(folder: Path, spec: str) -> tuple[Path, str]:
    """`mcpmint generate spec.yaml -o out` in `folder`; the output folder and what it printed."""
    (folder / "spec.yaml").write_text(spec, encoding="utf-8")
    out = folder / "out"
    done = run(
        [sys.executable, "-m", "mcpmint", "generate", "spec.yaml", "-o", str(out)],
        cwd=folder,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return out, done.stdout + done.stderr


def test_generated_tests_answer_a_bare_json_string_as_json_and_pass(tmp_path: Path) -> None:
    out, _ = _generate(tmp_path, BARE_STRING_SPEC)
    cases = json.loads((out / "tests" / "generated_cases.json").read_text(encoding="utf-8"))
    calls = cases["calls"]
    assert calls["words_get_word"]["responseText"] is False
    assert isinstance(calls["words_get_word"]["response"], str)
    assert calls["words_get_anything"]["responseText"] is False
    assert calls["words_get_note"]["responseText"] is True
    assert calls["words_get_count"]["responseText"] is False
    done = run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests"],
        cwd=out,
        env=clean_env(PYTHONPATH=str(out / "src")),
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


SAFETY_CONFIG = """\
sources:
  - spec: petstore.yaml
tools:
  mode: {mode}
settings:
  CONFIRM_FALLBACK: {fallback}
  TIMEOUT: {timeout}
"""


def _mcpmint(folder: Path, *arguments: str) -> subprocess.CompletedProcess[str]:
    return run([sys.executable, "-m", "mcpmint", *arguments], cwd=folder, env=clean_env())


def test_tool_mode_and_safety_settings_are_locked_and_a_change_to_them_is_review(
    tmp_path: Path,
) -> None:
    shutil.copy(SPECS / "petstore.yaml", tmp_path / "petstore.yaml")
    config = tmp_path / "mcpmint.yaml"
    config.write_text(SAFETY_CONFIG.format(mode="all", fallback="refuse", timeout=30))
    done = _mcpmint(tmp_path, "generate")
    assert done.returncode == 0, done.stdout + done.stderr
    first = json.loads((tmp_path / "tools.lock.json").read_text(encoding="utf-8"))
    assert first["server"] == {
        "toolMode": {"core": [], "listedGroups": [], "mode": "all"},
        # TIMEOUT changes no safety control: not recorded, so changing it is not a finding.
        "settings": {"CONFIRM_FALLBACK": "refuse"},
    }
    shutil.copy(tmp_path / "tools.lock.json", tmp_path / "before.lock.json")

    config.write_text(SAFETY_CONFIG.format(mode="dynamic", fallback="token", timeout=5))
    done = _mcpmint(tmp_path, "generate")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "review (2):" in done.stdout, done.stdout
    assert (
        '(server): safety setting changed: settings.CONFIRM_FALLBACK: "refuse" -> "token"\n'
        in done.stdout
    ), done.stdout
    assert '(server): tool mode changed: tools.mode: "all" -> "dynamic"' in done.stdout
    assert "TIMEOUT" not in done.stdout

    diff = _mcpmint(tmp_path, "diff", "before.lock.json", "tools.lock.json", "--json")
    assert diff.returncode == 1, diff.stdout + diff.stderr
    report = json.loads(diff.stdout)
    server_changes = [c for c in report["changes"] if c["tool"] == "(server)"]
    assert {(c["kind"], c["what"]) for c in server_changes} == {
        ("review", "safety setting changed"),
        ("review", "tool mode changed"),
    }


def test_a_lock_without_tool_mode_or_settings_has_no_server_section() -> None:
    sink = DiagnosticSink()
    server = build(SPECS / "petstore.yaml", sink)
    assert "server" not in lock_document(server)


def _large_spec(operations: int = 150) -> str:
    """An API whose all-mode tools/list is ~130,000 estimated tokens (over LARGE_TOKENS)."""
    words = " ".join(f"word{i}" for i in range(300))
    fields = {f"f{j}": {"type": "string", "description": words[:200]} for j in range(20)}
    paths = {
        f"/things{i}/{{id}}": {
            "get": {
                "operationId": f"getThing{i}",
                "summary": f"Get thing {i}",
                "description": f"Returns thing {i}. {words}",
                "parameters": [
                    {"name": "id", "in": "path", "required": True, "schema": {"type": "string"}}
                ],
                "responses": {
                    "200": {
                        "description": "The thing.",
                        "content": {
                            "application/json": {"schema": {"type": "object", "properties": fields}}
                        },
                    }
                },
            }
        }
        for i in range(operations)
    }
    return json.dumps(
        {
            "openapi": "3.0.3",
            "info": {"title": "Big", "version": "1"},
            "servers": [{"url": "https://big.example/api"}],
            "paths": paths,
        }
    )


def test_a_large_api_gets_dynamic_mode_offered_in_its_config_and_a_warning_in_all_mode(
    tmp_path: Path,
) -> None:
    out, printed = _generate(tmp_path, _large_spec())
    text = (out / "mcpmint.yaml").read_text(encoding="utf-8")
    assert "tools" not in yaml.safe_load(text)  # the config rebuilds what was generated
    assert "# This API is large" in text and "#   mode: dynamic" in text
    assert "spec.yaml: warning: tools/list lists all 150 tools, ~" in printed
    assert "tools: {mode: dynamic}" in printed and "output: {token_budget: N}" in printed
    # The user uncomments dynamic mode: no warning; the mode change is review.
    (out / "mcpmint.yaml").write_text(
        text.replace("# tools:", "tools:").replace("#   mode: dynamic", "  mode: dynamic"),
        encoding="utf-8",
    )
    again = _mcpmint(out, "generate")
    assert again.returncode == 0, again.stdout + again.stderr
    assert "tools/list lists all" not in again.stdout + again.stderr
    assert '(server): tool mode changed: tools.mode: "all" -> "dynamic"' in again.stdout
    # Back to all mode with a budget that allows it: the user's choice, so no warning.
    (out / "mcpmint.yaml").write_text(
        "sources:\n  - spec: ../spec.yaml\noutput:\n  token_budget: 200000\n", encoding="utf-8"
    )
    budgeted = _mcpmint(out, "generate")
    assert budgeted.returncode == 0, budgeted.stdout + budgeted.stderr
    assert "tools/list lists all" not in budgeted.stdout + budgeted.stderr


def test_a_small_api_keeps_the_plain_scaffold_and_no_warning(tmp_path: Path) -> None:
    shutil.copy(SPECS / "petstore.yaml", tmp_path / "petstore.yaml")
    done = _mcpmint(tmp_path, "generate", "petstore.yaml", "-o", "out")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "tools/list lists all" not in done.stdout + done.stderr
    text = (tmp_path / "out" / "mcpmint.yaml").read_text(encoding="utf-8")
    assert text == scaffold_text("../petstore.yaml", "petstore")


GEO_SPEC = """\
openapi: 3.0.3
info: {title: Geo, version: "1"}
servers:
  - url: "https://{region}.geo.example.com/v1"
    variables:
      region: {default: eu, enum: [eu, us]}
paths:
  /places:
    get:
      operationId: listPlaces
      responses:
        "200":
          description: Places.
          content:
            application/json:
              schema: {type: object, properties: {count: {type: integer}}}
"""
GEO_CONFIG = """\
sources:
  - spec: petstore.yaml
  - spec: geo.yaml
    namespace: geo
"""


async def _call_geo(data: dict[str, Any], environ: dict[str, str]) -> tuple[Any, list[str]]:
    hosts: list[str] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        hosts.append(request.url.host)
        return httpx2.Response(200, json={"count": 2})

    server = build_runtime_server(
        load_catalog(data), transport=httpx2.MockTransport(answer), environ=environ
    )
    async with Client(server) as client:
        result = await client.call_tool("geo_list_places", {})
    return result, hosts


@pytest.mark.anyio
async def test_another_sources_server_variables_are_set_by_its_own_variables(
    tmp_path: Path,
) -> None:
    shutil.copy(SPECS / "petstore.yaml", tmp_path / "petstore.yaml")
    (tmp_path / "geo.yaml").write_text(GEO_SPEC, encoding="utf-8")
    (tmp_path / "mcpmint.yaml").write_text(GEO_CONFIG, encoding="utf-8")
    sink = DiagnosticSink()
    config = load_config(tmp_path / "mcpmint.yaml", sink)
    assert config is not None
    server = build_config(config, sink)
    data = json.loads(json.dumps(catalog(server)))
    assert data["upstreams"]["geo"]["urlTemplate"] == "https://{region}.geo.example.com/v1"
    rows = {row["name"]: row["meaning"] for row in settings_rows(server)}
    assert "`eu`, `us`" in rows["PETSTORE_GEO_SERVER_REGION"]

    audit = {"PETSTORE_AUDIT": "off"}
    result, hosts = await _call_geo(data, audit)
    assert not result.is_error and hosts == ["eu.geo.example.com"]  # the spec's default
    result, hosts = await _call_geo(data, {**audit, "PETSTORE_GEO_SERVER_REGION": "us"})
    assert not result.is_error and hosts == ["us.geo.example.com"]
    # The same enum rule as the first source's: a value outside it sends nothing.
    result, hosts = await _call_geo(data, {**audit, "PETSTORE_GEO_SERVER_REGION": "evil.com"})
    assert result.is_error and hosts == []
    message = " ".join(getattr(c, "text", "") for c in result.content)
    assert "'region' (PETSTORE_GEO_SERVER_REGION) must be one of: eu, us" in message
    # The first source's variable does not reach another source.
    result, hosts = await _call_geo(data, {**audit, "PETSTORE_SERVER_REGION": "us"})
    assert hosts == ["eu.geo.example.com"]
