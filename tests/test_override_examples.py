"""Overrides gain `examples` and `scopes` (issue 6).

Examples replace the spec's in the tool's input schema and are checked against it when the
server is generated: an invalid one is an error at its place in mcpmint.yaml, naming it.
Scopes are the inbound OAuth scopes a caller needs for the tool.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

from mcpmint.config import load_config
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build_config
from mcpmint.render.templates import catalog

from .support import REPO, clean_env, run

CONFIG = """\
sources:
  - spec: petstore-plus.yaml
    overrides:
      listPets:
        examples:
          - {limit: 5, status: sold}
          - {status: pending}
        scopes: [pets.read]
      getPet:
        examples:
          - {petId: 7}
        scopes: [pets.read, "pets:admin"]
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    shutil.copy(REPO / "specs" / "petstore-plus.yaml", tmp_path / "petstore-plus.yaml")
    return tmp_path


def test_override_examples_and_scopes_reach_the_tool_and_its_catalog(project: Path) -> None:
    (project / "mcpmint.yaml").write_text(CONFIG, encoding="utf-8")
    sink = DiagnosticSink()
    config = load_config(project / "mcpmint.yaml", sink)
    assert config is not None, [d.render() for d in sink]

    server = build_config(config, sink)

    tools = {tool.name: tool for tool in server.tools}
    listing = tools["petstore_list_pets"]
    assert listing.examples == ({"limit": 5, "status": "sold"}, {"status": "pending"})
    assert listing.input_schema["examples"] == [
        {"limit": 5, "status": "sold"},
        {"status": "pending"},
    ]
    assert listing.scopes == ("pets.read",)
    assert tools["petstore_get_pet"].scopes == ("pets.read", "pets:admin")
    entries = {entry["name"]: entry for entry in catalog(server)["tools"]}
    assert entries["petstore_get_pet"]["scopes"] == ["pets.read", "pets:admin"]
    assert entries["petstore_get_pet"]["inputSchema"]["examples"] == [{"petId": 7}]
    assert "scopes" not in entries["petstore_create_pet"]


def test_an_invalid_override_example_is_a_located_error_naming_it(project: Path) -> None:
    (project / "mcpmint.yaml").write_text(
        CONFIG.replace("- {status: pending}", '- {limit: "ten"}'), encoding="utf-8"
    )
    done = run(
        [sys.executable, "-m", "mcpmint", "generate", "mcpmint.yaml"], cwd=project, env=clean_env()
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert (
        "mcpmint.yaml:7:13: error: example 2 of the override for 'listPets' does not fit the "
        "input schema of petstore_list_pets: limit: 'ten' is not of type 'integer'"
    ) in done.stderr
    assert "Traceback" not in done.stderr
    assert sorted(p.name for p in project.iterdir()) == ["mcpmint.yaml", "petstore-plus.yaml"]


def test_an_override_scope_with_a_space_is_refused_by_the_config_schema(project: Path) -> None:
    (project / "mcpmint.yaml").write_text(
        CONFIG.replace("scopes: [pets.read]", 'scopes: ["pets read"]'), encoding="utf-8"
    )
    sink = DiagnosticSink()
    assert load_config(project / "mcpmint.yaml", sink) is None
    [error] = sink.errors
    assert error.location.endswith("mcpmint.yaml:8:18")
