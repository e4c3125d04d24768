"""Messy specs (issue 7): unresolvable `$ref`s degrade one schema; `--allow-partial`.

A `$ref` that cannot be resolved (remote, never fetched; a missing file; a pointer to nothing)
is a located warning and that one schema becomes permissive. An operation that cannot become
a tool (its parameter, request body, operation or path item is such a `$ref`) is left out
with a warning naming it; `--allow-partial` (and `output.allow_partial` in mcpmint.yaml) is
still accepted: it is the default.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, build, generate
from mcpmint.render.templates import catalog
from mcpmint.runtime.catalog import load_catalog
from mcpmint.runtime.server import build_server
from mcpmint.write.quickcheck import up_to_date

from .support import clean_env, generate_spec_text, mcpmint, run

pytestmark = pytest.mark.anyio

REMOTE = "https://example.com/x.yaml#/Foo"
SPEC = f"""\
openapi: 3.0.3
info: {{title: Messy, version: "1"}}
servers: [{{url: "https://api.example.com"}}]
paths:
  /things:
    get:
      operationId: listThings
      parameters:
        - name: filter
          in: query
          schema: {{$ref: '{REMOTE}'}}
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {{$ref: '#/components/schemas/Nope'}}
    post:
      operationId: addThing
      parameters:
        - $ref: 'https://example.com/x.yaml#/P'
      responses: {{"200": {{description: ok}}}}
  /files:
    put:
      operationId: putFile
      requestBody:
        content:
          application/vnd.custom+xml:
            schema: {{type: object, properties: {{a: {{type: string}}}}}}
      responses: {{"200": {{description: ok}}}}
"""


@pytest.fixture
def spec(tmp_path: Path) -> Path:
    path = tmp_path / "messy.yaml"
    path.write_text(SPEC, encoding="utf-8")
    return path


def test_an_operation_that_cannot_become_a_tool_is_left_out_with_a_warning_naming_it(
    spec: Path, no_network: list[tuple[Any, ...]]
) -> None:
    sink = DiagnosticSink()
    server = build(spec, sink)

    # PUT /files: an XML body is sent as raw bytes (base64 in one argument): a tool too.
    assert [tool.name for tool in server.tools] == ["messy_list_things", "messy_put_file"]
    assert sink.errors == []
    left_out = [d.location for d in sink.warnings if d.message.endswith("; left out")]
    assert left_out == [f"{spec}:18:5"]
    assert [s.split(":")[0] for s in server.skipped] == ["POST /things"]
    assert [d.message for d in sink.warnings if d.location == f"{spec}:21:11"] == [
        "network $ref not fetched: 'https://example.com/x.yaml#/P'; the parameter it names is "
        "unknown",
        "operation POST /things cannot become a tool: its parameter network $ref not fetched: "
        "'https://example.com/x.yaml#/P'",
    ]
    # The parameter's placeholder has a name and `in`: the validator still checks the rest.
    assert not [d for d in sink.warnings if "validation skipped" in d.message]
    assert no_network == []


def test_allow_partial_is_still_accepted_and_changes_nothing(spec: Path) -> None:
    plain, partial = DiagnosticSink(), DiagnosticSink()
    assert build(spec, plain) == build(spec, partial, allow_partial=True)
    assert plain.items == partial.items


def test_an_unresolvable_schema_ref_degrades_only_that_schema(spec: Path) -> None:
    sink = DiagnosticSink()
    server = build(spec, sink, allow_partial=True)

    tool = server.tools[0]
    note = f"Not described: the spec's $ref {REMOTE!r} could not be resolved."
    # The argument's value is unknown, so any JSON value is accepted; its name is still
    # checked (the argument object stays closed) and the upstream judges the value.
    assert tool.input_schema["properties"]["filter"] == {"description": note}
    assert tool.input_schema["additionalProperties"] is False
    assert tool.output_schema is not None
    result = tool.output_schema["properties"]["result"]
    assert "'#/components/schemas/Nope' could not be resolved" in result["description"]
    located = {d.location: d.message for d in sink.warnings}
    assert located[f"{spec}:11:20"].startswith(f"network $ref not fetched: {REMOTE!r}")
    assert located[f"{spec}:17:24"].startswith("broken $ref '#/components/schemas/Nope'")


async def test_the_degraded_argument_reaches_the_upstream_and_strictness_stays(
    spec: Path,
) -> None:
    server = build(spec, DiagnosticSink(), allow_partial=True)
    requests: list[httpx2.Request] = []

    def answer(request: httpx2.Request) -> httpx2.Response:
        requests.append(request)
        return httpx2.Response(200, json={"anything": [1, 2]})

    mcp_server = build_server(
        load_catalog(catalog(server)), environ={}, transport=httpx2.MockTransport(answer)
    )
    async with Client(mcp_server) as client:
        listed = (await client.list_tools()).tools
        ok = await client.call_tool("messy_list_things", {"filter": "red"})
        unknown = await client.call_tool("messy_list_things", {"colour": "red"})

    assert [tool.name for tool in listed] == ["messy_list_things", "messy_put_file"]
    assert not ok.is_error, ok
    assert ok.structured_content == {"result": {"anything": [1, 2]}}
    assert unknown.is_error
    assert [str(r.url) for r in requests] == ["https://api.example.com/things?filter=red"]


def test_cli_generate_leaves_the_operation_out_by_default(spec: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert code == 0, stdout + stderr
    assert f"{spec}:18:5: warning: operation POST /things cannot become a tool" in stderr
    assert "Traceback" not in stdout + stderr
    reference = (out / "REFERENCE.md").read_text(encoding="utf-8")
    assert "POST /things" in reference


def test_cli_allow_partial_on_validate_tools_and_generate(spec: Path, tmp_path: Path) -> None:
    code, stdout, stderr = mcpmint("validate", str(spec), "--allow-partial")
    assert code == 0, stderr
    assert "ok, 2 tools" in stdout
    assert f"{spec}:18:5: warning: operation POST /things cannot become a tool" in stderr

    code, stdout, _ = mcpmint("tools", str(spec), "--allow-partial", "--json")
    assert code == 0
    assert [row["name"] for row in json.loads(stdout)["tools"]] == [
        "messy_list_things",
        "messy_put_file",
    ]

    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out), "--allow-partial")
    assert code == 0, stderr
    reference = (out / "REFERENCE.md").read_text(encoding="utf-8")
    assert "POST /things" in reference


def test_output_allow_partial_in_the_project_config(spec: Path) -> None:
    config = spec.parent / "mcpmint.yaml"
    config.write_text(
        "sources:\n  - spec: messy.yaml\noutput:\n  allow_partial: true\n", encoding="utf-8"
    )
    code, stdout, stderr = mcpmint("validate", str(config))
    assert code == 0, stderr
    assert "ok, 2 tools" in stdout


# ------------------------------------------------------------------- bare JSON string responses
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


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_generated_tests_answer_a_bare_json_string_as_json_and_pass(tmp_path: Path) -> None:
    out, _ = generate_spec_text(tmp_path, BARE_STRING_SPEC)
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


def test_a_run_without_the_flag_gives_what_a_partial_one_gives(spec: Path, tmp_path: Path) -> None:
    """Partial is the default: a run without `--allow-partial` succeeds where a partial one
    does, with the same tools."""
    out = tmp_path / "out"
    sink = DiagnosticSink()
    generate(spec, GenerateOptions(output=out, allow_partial=True), sink)
    assert not sink.has_errors
    assert up_to_date(spec, GenerateOptions(output=out, check=True, allow_partial=True))
    sink = DiagnosticSink()
    generate(spec, GenerateOptions(output=tmp_path / "other"), sink)
    assert not sink.has_errors
    assert (out / "tools.lock.json").read_bytes() == (
        tmp_path / "other" / "tools.lock.json"
    ).read_bytes()
