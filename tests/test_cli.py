"""The command line, as a user meets it: exit codes, located diagnostics, nothing written."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from .invalid_cases import EXPECTED, INVALID_DIR
from .support import REPO, clean_env, run


def mcpmint(*args: str, cwd: Path = REPO) -> tuple[int, str, str]:
    done = run([sys.executable, "-m", "mcpmint", *args], cwd=cwd, env=clean_env())
    return done.returncode, done.stdout, done.stderr


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
    assert report["summary"]["bytes"] > sum(row["bytes"] for row in report["tools"]) // 2
    assert report["summary"]["estimatedTokens"] == report["summary"]["bytes"] // 4


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


def test_G4_every_error_is_listed_with_its_location_not_just_the_first(tmp_path: Path) -> None:
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
    assert code == 2
    assert f"{spec}:10:7: error: duplicate operationId 'same'" in stderr
    assert f"{spec}:11:19: error: security requirement names an undefined" in stderr
    assert f"{spec}:14:5: warning: validation: 'responses' is a required" in stderr
    assert not out.exists()
