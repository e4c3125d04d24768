"""The command line, as a user meets it: exit codes, located diagnostics, nothing written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build
from mcpmint.render.templates import tool_definition

from .invalid_cases import DEGRADED, DEGRADED_DIR, EXPECTED, INVALID_DIR
from .support import REPO, mcpmint


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_invalid_spec_gives_its_located_error_exit_2_and_writes_nothing(
    name: str, tmp_path: Path
) -> None:
    location, message = EXPECTED[name]
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", f"{INVALID_DIR}/{name}", "-o", str(out))
    assert code == 2, stdout + stderr
    assert f"{location}: error: " in stderr, stderr
    assert message in stderr, stderr
    assert "Traceback" not in stderr + stdout
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", sorted(DEGRADED))
def test_each_degraded_spec_gives_a_server_and_its_located_warning(
    name: str, tmp_path: Path
) -> None:
    location, message = DEGRADED[name]
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", f"{DEGRADED_DIR}/{name}", "-o", str(out))
    assert code == 0, stdout + stderr
    assert f"{location}: warning: " in stderr, stderr
    assert message in stderr, stderr
    assert ": error: " not in stderr and "Traceback" not in stderr + stdout
    assert (out / "tools.lock.json").exists()


def test_degraded_specs_all_have_an_expected_warning() -> None:
    on_disk = {p.name for p in (REPO / DEGRADED_DIR).iterdir() if p.is_file()}
    assert on_disk == set(DEGRADED)


def test_invalid_specs_all_have_an_expected_diagnostic() -> None:
    on_disk = {p.name for p in (REPO / INVALID_DIR).iterdir() if p.is_file()}
    assert on_disk == set(EXPECTED)


def test_validate_reports_tools_and_writes_nothing(tmp_path: Path) -> None:
    code, stdout, _ = mcpmint("validate", str(REPO / "specs" / "petstore-plus.yaml"), cwd=tmp_path)
    assert code == 0
    assert "ok, 8 tools" in stdout
    assert list(tmp_path.iterdir()) == []


def test_tools_reports_the_surface_and_its_size() -> None:
    code, stdout, _ = mcpmint("tools", "specs/petstore-plus.yaml", "--json")
    assert code == 0
    report = json.loads(stdout)
    names = [row["name"] for row in report["tools"]]
    assert "petstore_delete_pet" in names and len(names) == 8
    server = build(REPO / "specs" / "petstore-plus.yaml", DiagnosticSink())
    whole = {"tools": [tool_definition(tool) for tool in server.tools]}
    compact = json.dumps(whole, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    assert report["summary"]["bytes"] == len(compact)  # the whole tools/list, to the byte
    assert [row["bytes"] for row in report["tools"]] == [
        len(json.dumps(d, separators=(",", ":"), ensure_ascii=False).encode("utf-8"))
        for d in whole["tools"]
    ]
    assert report["summary"]["estimatedTokens"] == report["summary"]["bytes"] // 4
    # How many tools carry a whole, real example call.
    with_example = sum(1 for tool in server.tools if tool.examples)
    assert 0 < report["summary"]["toolsWithExample"] == with_example < len(names)


def test_bad_namespace_is_bad_input() -> None:
    code, _, stderr = mcpmint("validate", "specs/petstore.yaml", "--namespace", "Bad-Name")
    assert code == 2 and "--namespace" in stderr


def test_generate_then_check_is_up_to_date_and_a_spec_change_makes_it_stale(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        (REPO / "specs" / "petstore.yaml").read_text(encoding="utf-8"), encoding="utf-8"
    )
    out = tmp_path / "server"
    assert mcpmint("generate", str(spec), "-o", str(out))[0] == 0
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, stdout, _ = mcpmint("generate", str(spec), "-o", str(out), "--check")
    assert code == 0 and "up to date" in stdout
    spec.write_text(
        spec.read_text(encoding="utf-8").replace("List all pets", "List every pet"),
        encoding="utf-8",
    )
    code, stdout, _ = mcpmint("generate", str(spec), "-o", str(out), "--check")
    assert code == 1 and "out of date" in stdout
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before


def test_R1_hand_edited_generated_file_is_refused_then_forced(tmp_path: Path) -> None:
    spec = REPO / "specs" / "petstore.yaml"
    out = tmp_path / "server"
    assert mcpmint("generate", str(spec), "-o", str(out))[0] == 0
    server_py = out / "src" / "petstore_mcp" / "server.py"
    edited = server_py.read_text(encoding="utf-8") + "\nEDITED = True\n"
    server_py.write_text(edited, encoding="utf-8")
    readme = out / "README.md"
    readme.write_text("my own words\n", encoding="utf-8")
    before = {p: p.read_bytes() for p in out.rglob("*") if p.is_file()}
    code, _, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert code == 1
    assert "edited by hand" in stderr and "EDITED = True" in stderr
    assert {p: p.read_bytes() for p in out.rglob("*") if p.is_file()} == before
    code, _, stderr = mcpmint("generate", str(spec), "-o", str(out), "--force")
    assert code == 0, stderr
    assert "EDITED" not in server_py.read_text(encoding="utf-8")
    assert readme.read_text(encoding="utf-8") == "my own words\n"


def test_G4_every_problem_is_listed_with_its_location_not_just_the_first(tmp_path: Path) -> None:
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        """openapi: 3.0.3
info: {title: Broken, version: "1"}
paths:
  /a:
    get:
      operationId: same
      responses: {"200": {description: ok}}
  /b:
    get:
      operationId: same
      security: [{nowhere: []}]
      responses: {"200": {description: ok}}
  /c:
    get:
      operationId: other
""",
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code, _, stderr = mcpmint("generate", str(spec), "-o", str(out))
    # None of them is fatal: a spec that can be read gives a server (issue 26).
    assert code == 0, stderr
    assert f"{spec}:10:7: warning: GET /b: duplicate operationId 'same'" in stderr
    assert f"{spec}:11:19: warning: security requirement names an undefined" in stderr
    assert f"{spec}:14:5: warning: validation: 'responses' is a required" in stderr
    tools = json.loads((out / "src" / "broken_mcp" / "_generated" / "tools.json").read_text())
    assert sorted(t["name"] for t in tools["tools"]) == [
        "broken_other",
        "broken_same",
        "broken_same_db78",  # GET /b: the short hash of its key (no path parameter)
    ]


def assert_refused(code: int, stdout: str, stderr: str, out: Path, located: str) -> None:
    """Exit 2, the located diagnostic, no traceback, nothing written."""
    assert code == 2, stdout + stderr
    assert located in stderr, stderr
    assert "Traceback" not in stdout + stderr
    assert not out.exists()


def test_G3_alias_bomb_is_refused_at_the_command_line_before_expansion(tmp_path: Path) -> None:
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", f"{INVALID_DIR}/billion-laughs.yaml", "-o", str(out))
    assert_refused(
        code, stdout, stderr, out, "specs/invalid/billion-laughs.yaml:20:6: error: more than"
    )
    assert "(max_nodes)" in stderr


def test_G3_a_50_mb_spec_is_refused_by_its_size_without_being_read(tmp_path: Path) -> None:
    spec = tmp_path / "huge.yaml"
    with spec.open("wb") as handle:
        handle.truncate(50 * 1024 * 1024)  # sparse: the size is what is checked, first
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert_refused(code, stdout, stderr, out, f"{spec}: error: file is 52428800 bytes")
    assert "(max_bytes)" in stderr


CYCLE_SPEC = """\
openapi: 3.0.3
info: {{title: Cycle, version: "1"}}
paths:
  /a:
    get:
      operationId: getA
      responses:
        "200":
          description: ok
          content:
            application/json:
              schema: {{$ref: '#/components/schemas/A'}}
components:
  schemas:
{schemas}
"""


def test_G5_a_cycle_through_the_data_generates_bounded_defs(tmp_path: Path) -> None:
    spec = tmp_path / "cycle.yaml"
    spec.write_text(
        CYCLE_SPEC.format(
            schemas="    A: {type: object, properties: {b: {$ref: '#/components/schemas/B'}}}\n"
            "    B: {type: object, properties: {a: {$ref: '#/components/schemas/A'}}}\n"
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code, _, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert code == 0, stderr
    tools = json.loads((out / "src" / "cycle_mcp" / "_generated" / "tools.json").read_text())
    [tool] = tools["tools"]
    assert sorted(tool["outputSchema"]["$defs"]) == ["A", "B"]


def test_G5_a_ref_loop_that_describes_nothing_leaves_its_tool_out_naming_it(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "cycle.yaml"
    spec.write_text(
        CYCLE_SPEC.format(
            schemas="    A: {$ref: '#/components/schemas/B'}\n"
            "    B: {$ref: '#/components/schemas/A'}\n"
        ),
        encoding="utf-8",
    )
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert_left_out(
        code, stdout, stderr, out, f"{spec}:12:24: warning: $ref '#/components/schemas/A'"
    )
    assert "only leads to other $refs in a loop" in stderr


def assert_left_out(code: int, stdout: str, stderr: str, out: Path, located: str) -> None:
    """Exit 0, the located warning, the operation left out (no tool), no traceback."""
    assert code == 0, stdout + stderr
    assert located in stderr, stderr
    assert "cannot become a tool" in stderr and "; left out" in stderr, stderr
    assert "Traceback" not in stdout + stderr
    [catalog] = out.glob("src/*/_generated/tools.json")
    assert json.loads(catalog.read_text(encoding="utf-8"))["tools"] == []


def _one_post(name: str, schema: dict[str, Any]) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "Limits", "version": "1"},
        "paths": {
            "/x": {
                "post": {
                    "operationId": "postX",
                    "requestBody": {
                        "content": {
                            "application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}
                        }
                    },
                    "responses": {"200": {"description": "ok"}},
                }
            }
        },
        "components": {"schemas": {name: schema}},
    }


def test_G13_a_schema_500_levels_deep_is_refused_with_a_limit_message(tmp_path: Path) -> None:
    # Written as text: json.dumps itself would recurse too deeply.
    level = '{"type": "object", "properties": {"x": '
    deep = level * 500 + '{"type": "string"}' + "}}" * 500
    text = json.dumps(_one_post("Deep", {})).replace('"Deep": {}', '"Deep": ' + deep)
    spec = tmp_path / "deep.json"
    spec.write_text(text, encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert_refused(code, stdout, stderr, out, f"{spec}:1:")
    assert "nested deeper than 256 levels (max_depth)" in stderr


def test_G13_ten_thousand_allof_branches_leave_the_tool_out_with_a_limit_message(
    tmp_path: Path,
) -> None:
    huge = {"allOf": [{"properties": {f"p{i}": {"type": "string"}}} for i in range(10_000)]}
    spec = tmp_path / "huge.json"
    spec.write_text(json.dumps(_one_post("Huge", huge)), encoding="utf-8")
    out = tmp_path / "out"
    code, stdout, stderr = mcpmint("generate", str(spec), "-o", str(out))
    assert_left_out(code, stdout, stderr, out, f"{spec}#/components/schemas/Huge/allOf: warning: ")
    assert "10000 branches, more than the limit of 1000" in stderr


def test_G13_five_thousand_operations_are_validated_and_listed(tmp_path: Path) -> None:
    document = {
        "openapi": "3.0.3",
        "info": {"title": "Many", "version": "1"},
        "paths": {
            f"/items{i}": {
                "get": {"operationId": f"getItem{i}", "responses": {"200": {"description": "ok"}}}
            }
            for i in range(5000)
        },
    }
    spec = tmp_path / "many.json"
    spec.write_text(json.dumps(document), encoding="utf-8")
    code, stdout, stderr = mcpmint("tools", str(spec), "--json")
    assert code == 0, stderr
    report = json.loads(stdout)
    assert report["summary"]["tools"] == 5000
    assert len({row["name"] for row in report["tools"]}) == 5000


QUALITY_SPEC = """\
openapi: 3.0.3
info: {title: Shop, version: "1"}
paths:
  /good:
    get:
      operationId: good
      summary: List the orders of a customer.
      description: Use it when the user asks about past orders. Returns the newest first.
      responses: {"200": {description: ok}}
  /bare:
    get:
      operationId: bare
      responses: {"200": {description: ok}}
  /same1:
    get:
      operationId: same1
      description: Fetches things.
      responses: {"200": {description: ok}}
  /same2:
    get:
      operationId: same2
      description: Fetches things.
      responses: {"200": {description: ok}}
  /long:
    get:
      operationId: long
      description: "Use it when you must. {padding}"
      responses: {"200": {description: ok}}
"""


def test_tools_flags_missing_overlong_duplicate_and_no_when_descriptions_without_blocking(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "shop.yaml"
    spec.write_text(QUALITY_SPEC.replace("{padding}", "x" * 1100), encoding="utf-8")

    code, stdout, stderr = mcpmint("tools", str(spec))
    assert code == 0, stderr
    assert "5 tools" in stdout
    assert "shop_bare: warning: has no description in the spec" in stderr
    assert "shop_long: warning: description is 1122 characters, more than 1024" in stderr
    assert "shop_same2: warning: description is the same as shop_same1's" in stderr
    assert "shop_same1: warning: description does not say when to use the tool" in stderr
    assert "shop_good: warning" not in stderr
    assert 'hint: a description the model can choose by reads "What it does. Use it when' in (
        stderr
    )

    code, stdout, _ = mcpmint("tools", str(spec), "--json")
    assert code == 0
    report = json.loads(stdout)
    kinds = {
        row["name"]: [f["kind"] for f in row["descriptionFindings"]] for row in report["tools"]
    }
    assert kinds == {
        "shop_bare": ["missing"],
        "shop_good": [],
        "shop_long": ["overlong"],
        "shop_same1": ["no-when"],
        "shop_same2": ["duplicate", "no-when"],
    }
    assert report["summary"]["descriptionFindings"] == 5
