"""Tool manifests: the frontend, its schema, its located errors, and regeneration with hooks.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from mcpmint import ir
from mcpmint.build.frontends.manifest import is_manifest, manifest_schema
from mcpmint.config import load_config
from mcpmint.diagnostics import Aborted, DiagnosticSink
from mcpmint.load.document import load_document
from mcpmint.pipeline import GenerateOptions, build, build_config, generate

from .conftest import REPO, SPECS
from .invalid_manifest_cases import EXPECTED_MANIFESTS, INVALID_MANIFEST_DIR
from .support import clean_env, run

INTERNAL = SPECS / "internal-tools.yaml"


def build_internal(path: Path = INTERNAL) -> ir.Server:
    sink = DiagnosticSink()
    server = build(path, sink)
    assert not sink.has_errors, [d.render() for d in sink]
    return server


def tools_by_name(server: ir.Server) -> dict[str, ir.Tool]:
    return {tool.name: tool for tool in server.tools}


def errors_of(path: Path | str) -> list[str]:
    sink = DiagnosticSink()
    with pytest.raises(Aborted):
        build(Path(path), sink)
    return [d.render() for d in sink.errors]


# ------------------------------------------------------------------------------ the schema


def test_the_manifest_schema_is_valid_json_schema_2020_12_and_the_example_passes_it() -> None:
    Draft202012Validator.check_schema(manifest_schema())
    sink = DiagnosticSink()
    document = load_document(INTERNAL, sink)
    assert document is not None
    assert not list(Draft202012Validator(manifest_schema()).iter_errors(document.data))


def test_a_manifest_is_told_apart_from_openapi_by_its_top_level_keys() -> None:
    assert is_manifest({"mcpmint_manifest": 1, "tools": []})
    assert is_manifest({"tools": []})
    assert not is_manifest({"openapi": "3.1.0", "tools": []})
    assert not is_manifest({"swagger": "2.0"})
    assert not is_manifest(["tools"])


# ------------------------------------------------------------------------------ the IR


def test_a_manifest_gives_namespaced_http_and_handler_tools() -> None:
    server = build_internal()
    assert server.namespace == "internal" and server.env_prefix == "INTERNAL"
    assert server.base_url == "https://backoffice.example.com/api"
    tools = tools_by_name(server)
    assert sorted(tools) == ["internal_add_note", "internal_get_customer", "internal_score_lead"]
    lead = tools["internal_score_lead"]
    assert lead.handler and lead.request is None and lead.security == ()
    assert lead.class_stem == "ScoreLead"
    get = tools["internal_get_customer"]
    assert not get.handler and get.request is not None
    assert get.request.method == "GET" and get.request.path == "/customers/{customer_id}"
    assert [(p.argument, p.location) for p in get.request.parameters] == [
        ("customer_id", "path"),
        ("expand", "query"),
    ]
    assert get.security == ((ir.SchemeUse("token"),),)


def test_input_schemas_are_made_strict_and_output_refs_are_resolved() -> None:
    tools = tools_by_name(build_internal())
    schema = tools["internal_get_customer"].input_schema
    assert schema["additionalProperties"] is False and schema["required"] == ["customer_id"]
    output = tools["internal_get_customer"].output_schema
    assert output is not None and set(output["properties"]) == {"id", "name", "tier"}
    assert "$ref" not in json.dumps(output)


def test_arguments_go_where_the_binding_says_and_the_rest_to_the_json_body() -> None:
    note = tools_by_name(build_internal())["internal_add_note"]
    assert note.request is not None
    assert [(p.argument, p.name, p.location) for p in note.request.parameters] == [
        ("request_id", "Idempotency-Key", "header"),
        ("customer_id", "customer_id", "path"),
    ]
    body = note.request.body
    assert body is not None and body.media_type == "application/json"
    assert body.argument is None and body.properties == (("text", "text"),)


def test_manifest_annotations_are_the_operators_word_and_scopes_are_kept() -> None:
    tools = tools_by_name(build_internal())
    lead = tools["internal_score_lead"]
    assert lead.annotations.read_only and not lead.annotations.open_world
    assert not lead.annotations.destructive  # read-only as declared: destroys nothing
    assert lead.endpoint == ("HANDLER", "hooks.py")
    assert lead.confirmation == "none"  # read-only, under the default `writes` policy
    note = tools["internal_add_note"]
    assert note.confirmation == "required" and note.scopes == ("notes:write",)


def test_valid_examples_reach_the_input_schema() -> None:
    tools = tools_by_name(build_internal())
    assert tools["internal_add_note"].examples == (
        {"customer_id": "12345", "text": "Prefers email."},
    )
    assert tools["internal_add_note"].input_schema["examples"] == [
        {"customer_id": "12345", "text": "Prefers email."}
    ]


def test_a_file_with_a_tools_key_and_any_name_is_read_as_a_manifest(
    tmp_path: Path,
) -> None:
    path = tmp_path / "whatever.yaml"
    path.write_text(
        "tools:\n  - name: ping\n    description: Checks it. Use it when unsure. Returns ok.\n"
        "    input_schema: {type: object}\n    handler: true\n",
        encoding="utf-8",
    )
    rendered = "\n".join(errors_of(path))
    # Read as a manifest (not as a broken OpenAPI document), whose schema wants the version key.
    assert f"{path.as_posix()}:1:1: error: the manifest: missing required key " in rendered
    assert "'mcpmint_manifest'" in rendered and "docs/manifests.md" in rendered


# ------------------------------------------------------------------------------ invalid


@pytest.mark.parametrize("name", sorted(EXPECTED_MANIFESTS))
def test_each_invalid_manifest_gives_its_located_error(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(REPO)
    location, message = EXPECTED_MANIFESTS[name]
    rendered = "\n".join(errors_of(f"{INVALID_MANIFEST_DIR}/{name}"))
    assert f"{location}: error: " in rendered, rendered
    assert message in rendered, rendered
    assert "hint: " in rendered


def test_invalid_manifests_all_have_an_expected_diagnostic() -> None:
    on_disk = {p.name for p in (REPO / INVALID_MANIFEST_DIR).iterdir() if p.is_file()}
    assert on_disk == set(EXPECTED_MANIFESTS)


def test_an_invalid_manifest_on_the_command_line_exits_2_with_no_traceback(
    tmp_path: Path,
) -> None:
    out = tmp_path / "out"
    name = "manifest-bad-example.yaml"
    done = run(
        [
            sys.executable,
            "-m",
            "mcpmint",
            "generate",
            f"{INVALID_MANIFEST_DIR}/{name}",
            "-o",
            str(out),
        ],
        cwd=REPO,
        env=clean_env(),
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert EXPECTED_MANIFESTS[name][1] in done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert not out.exists()


# ------------------------------------------------------------------------------ mcpmint.yaml


def write_config(folder: Path, body: str) -> Path:
    path = folder / "mcpmint.yaml"
    path.write_text(body, encoding="utf-8")
    return path


def test_a_manifest_is_a_source_of_mcpmint_yaml_with_its_own_namespace(tmp_path: Path) -> None:
    shutil.copy(INTERNAL, tmp_path / "tools.yaml")
    path = write_config(tmp_path, "sources:\n  - manifest: tools.yaml\n    namespace: acme\n")
    sink = DiagnosticSink()
    config = load_config(path, sink)
    assert config is not None, [d.render() for d in sink]
    server = build_config(config, sink)
    assert sorted(tools_by_name(server)) == [
        "acme_add_note",
        "acme_get_customer",
        "acme_score_lead",
    ]


@pytest.mark.parametrize(
    ("body", "line", "message"),
    [
        (
            "sources:\n  - manifest: tools.yaml\n    spec: tools.yaml\n",
            2,
            "give exactly one of 'spec' (an OpenAPI document) or 'manifest'",
        ),
        (
            "sources:\n  - manifest: tools.yaml\n    overrides: {x: {hidden: true}}\n",
            3,
            "'overrides' applies to OpenAPI specs, not manifests",
        ),
        ("sources:\n  - manifest: missing.yaml\n", 2, "manifest 'missing.yaml' not found"),
    ],
)
def test_manifest_sources_are_checked_with_located_errors(
    tmp_path: Path, body: str, line: int, message: str
) -> None:
    shutil.copy(INTERNAL, tmp_path / "tools.yaml")
    path = write_config(tmp_path, body)
    sink = DiagnosticSink()
    assert load_config(path, sink) is None
    rendered = "\n".join(d.render() for d in sink.errors)
    assert message in rendered and f"{path.as_posix()}:{line}:" in rendered, rendered


def test_an_openapi_file_named_as_a_manifest_source_is_a_located_error(tmp_path: Path) -> None:
    shutil.copy(SPECS / "petstore.yaml", tmp_path / "petstore.yaml")
    path = write_config(tmp_path, "sources:\n  - manifest: petstore.yaml\n")
    sink = DiagnosticSink()
    config = load_config(path, sink)
    assert config is not None
    with pytest.raises(Aborted):
        build_config(config, sink)
    assert "'petstore.yaml' is not a tool manifest" in "\n".join(d.render() for d in sink)


# ------------------------------------------------------------------------------ regeneration

NEW_HANDLER = """
  - name: forecast_churn
    description: >-
      Estimates how likely a customer is to leave. Use it when planning retention calls.
      Returns a probability.
    input_schema:
      type: object
      properties:
        customer_id: {type: string}
      required: [customer_id]
    output_schema:
      type: object
      properties:
        probability: {type: number}
    handler: true
"""


def test_a_user_edit_in_hooks_py_survives_generate_after_the_manifest_gains_a_handler(
    tmp_path: Path,
) -> None:
    manifest = tmp_path / "tools.yaml"
    shutil.copy(INTERNAL, manifest)
    out = tmp_path / "out"
    generate(manifest, GenerateOptions(output=out), DiagnosticSink())
    hooks_py = out / "src" / "internal_mcp" / "hooks.py"
    stubs = out / "src" / "internal_mcp" / "_generated" / "handler_stubs.py"
    assert "async def internal_score_lead(" in hooks_py.read_text(encoding="utf-8")
    edited = hooks_py.read_text(encoding="utf-8").replace(
        "    raise NotImplementedError",
        "    return models.ScoreLeadResult(score=len(arguments.company))",
    )
    hooks_py.write_text(edited, encoding="utf-8")
    if shutil.which("git"):  # the way a team works: the edit is committed, then regenerated
        for command in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "first"]):
            subprocess.run(
                ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *command],
                cwd=out,
                check=True,
            )

    manifest.write_text(manifest.read_text(encoding="utf-8") + NEW_HANDLER, encoding="utf-8")
    sink = DiagnosticSink()
    report = generate(manifest, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    assert not report.blocked
    assert hooks_py.read_text(encoding="utf-8") == edited
    stub_text = stubs.read_text(encoding="utf-8")
    assert "async def internal_forecast_churn(" in stub_text
    assert "models.ForecastChurnArguments" in stub_text
    catalog: dict[str, Any] = json.loads(
        (out / "src" / "internal_mcp" / "_generated" / "tools.json").read_text(encoding="utf-8")
    )
    assert "internal_forecast_churn" in [tool["name"] for tool in catalog["tools"]]
    if shutil.which("git"):
        status = subprocess.run(
            ["git", "status", "--porcelain", "--", "src/internal_mcp/hooks.py"],
            cwd=out,
            check=True,
            capture_output=True,
            text=True,
        )
        assert status.stdout == ""


CANARY = """mcpmint_manifest: 1
namespace: canary
base_url: https://api.example.com
tools:
  - name: ping
    title: "'''; import os; os.system('touch /tmp/pwned') #"
    description: "\\"\\"\\"\\nimport os\\nos.system('touch /tmp/pwned')\\n{{ 7*7 }}"
    input_schema:
      type: object
      properties:
        x: {type: string, description: "__import__('os').system('id')"}
    http: {method: GET, path: /ping}
  - name: run_it
    description: "exec('print(1)')"
    input_schema: {type: object}
    handler: true
prompts:
  - name: p
    description: "{{ config.__class__ }}"
    arguments: [{name: a}]
    messages: [{role: user, text: "{{ 7*7 }} {a} ${a} %(a)s"}]
"""


def test_G_manifest_text_never_becomes_python_source(tmp_path: Path) -> None:
    manifest = tmp_path / "canary.yaml"
    manifest.write_text(CANARY, encoding="utf-8")
    out = tmp_path / "out"
    sink = DiagnosticSink()
    generate(manifest, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    for path in out.rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        compile(text, str(path), "exec")  # every generated file parses
        if "_runtime" in path.parts:
            continue  # mcpmint's own code, copied verbatim: nothing of the manifest in it
        for payload in ("pwned", "__import__", "exec(", "7*7", "config.__class__"):
            assert payload not in text, (path, payload)
