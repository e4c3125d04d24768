"""What a new user meets in the first hour (issue 30): warnings that name what they can
change, --fail-on-warning, the next steps after generate, `mcpmint diff` inside a project,
progress on a terminal, --help that reads well."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from mcpmint.cli import app
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import build

from .support import clean_env

LENDING = """openapi: "3.0.3"
info: {title: Lending Library API, version: "1"}
servers: [{url: "https://library.example.com"}]
paths:
  /members/{member_id}/holds:
    post:
      operationId: createHold
      parameters:
        - name: member_id
          in: path
          required: true
          schema: {type: string, pattern: "^M[0-9]{4}$"}
          examples:
            one: {value: M1234}
      requestBody:
        required: true
        content:
          application/json:
            schema:
              type: object
              required: [member_id, book]
              properties:
                member_id: {type: integer}
                book: {type: string}
              example: {member_id: "M1", book: b1}
      responses: {"200": {description: ok}}
  /books/{isbn}:
    get:
      operationId: getBook
      parameters:
        - name: isbn
          in: path
          required: true
          example: 978-3-16
          schema: {type: string, pattern: "^[0-9]{13}$"}
      responses: {"200": {description: ok}}
"""

CLEAN = """openapi: "3.0.3"
info: {title: Lending Library API, version: "1"}
paths:
  /loans/{loanId}:
    get:
      operationId: getLoan
      parameters: [{name: loanId, in: path, required: true, schema: {type: string}}]
      responses: {"200": {description: ok}}
components:
  securitySchemes:
    key: {type: apiKey, in: header, name: X-Key}
security: [{key: []}]
"""

runner = CliRunner()


def test_example_warnings_name_the_spec_s_value_where_it_is(tmp_path: Path) -> None:
    spec = tmp_path / "lending.yaml"
    spec.write_text(LENDING)
    sink = DiagnosticSink()
    server = build(spec, sink)
    assert server is not None
    warnings = [d.render() for d in sink.warnings]
    # The body's property as the spec names it (not the argument `body_member_id` mcpmint
    # chose beside the path parameter), located at the example's own line.
    body = next(w for w in warnings if "request body's example" in w)
    assert body.startswith(f"{spec.as_posix()}:25:")
    assert "property 'member_id' of the request body's example" in body
    assert "body_member_id" not in body
    parameter = next(w for w in warnings if "parameter 'isbn'" in w)
    assert parameter.startswith(f"{spec.as_posix()}:34:")
    assert "the example of path parameter 'isbn' does not match its schema" in parameter
    assert len(warnings) == 2, warnings
    # The bad body value is left out; the required argument it was has no real value to put
    # in its place (a bare integer), so the tool has no example rather than a made-up one.
    hold = next(t for t in server.tools if t.name.endswith("create_hold"))
    assert "examples" not in hold.input_schema


def test_fail_on_warning_fails_validate_and_generate_even_when_up_to_date(
    tmp_path: Path,
) -> None:
    spec = tmp_path / "lending.yaml"
    # A $ref typo: the body is read as accepting any value, with a warning.
    spec.write_text(
        CLEAN.replace(
            "      responses:",
            "      requestBody:\n        content:\n          application/json:\n"
            "            schema: {$ref: '#/components/schemas/Lonn'}\n      responses:",
        ).replace("/loans/{loanId}:\n    get:", "/loans/{loanId}:\n    put:")
    )
    result = runner.invoke(app, ["validate", str(spec)])
    assert result.exit_code == 0, result.output
    assert "ok, 1 tools, 1 warnings (--fail-on-warning makes them fail)" in result.stdout
    result = runner.invoke(app, ["validate", str(spec), "--fail-on-warning"])
    assert result.exit_code == 1
    assert "broken $ref '#/components/schemas/Lonn'" in result.output
    assert "--fail-on-warning" in result.output
    out = tmp_path / "out"
    result = runner.invoke(app, ["generate", str(spec), "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    # Up to date: the quick check would see no warning; --fail-on-warning looks again.
    result = runner.invoke(app, ["generate", str(spec), "-o", str(out), "--fail-on-warning"])
    assert result.exit_code == 1, result.output
    assert "broken $ref" in result.output
    result = runner.invoke(app, ["generate", str(spec), "-o", str(out), "--check"])
    assert result.exit_code == 0, result.output


def test_generate_prints_next_steps_and_q_silences_them(tmp_path: Path) -> None:
    spec = tmp_path / "lending.yaml"
    spec.write_text(CLEAN)
    out = tmp_path / "server"
    result = runner.invoke(app, ["generate", str(spec), "-o", str(out)])
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "Next steps:" in text
    assert f"pip install -e '{out.as_posix()}[test]'" in text
    # No server URL in the spec: the base URL is a variable to set; so is the credential.
    assert "export LENDING_BASE_URL=" in text and "export LENDING_KEY=" in text
    assert "python -m lending_mcp --transport http" in text
    assert f"npx @modelcontextprotocol/inspector {sys.executable} -m lending_mcp" in text
    snippet = json.loads(text[text.index("{") :])
    assert snippet == {
        "mcpServers": {
            "lending-mcp": {
                "command": sys.executable,
                "args": ["-m", "lending_mcp"],
                "env": {
                    "LENDING_BASE_URL": "https://the-api.example.com",
                    "LENDING_KEY": "<key credential>",
                },
            }
        }
    }
    # A regeneration is no new package: no next steps; -q leaves them out of a new one too.
    spec.write_text(CLEAN.replace("getLoan", "readLoan"))
    result = runner.invoke(app, ["generate", str(spec), "-o", str(out), "--accept-breaking"])
    assert result.exit_code == 0, result.output
    assert " written, 0 scaffolded" in result.stdout and "Next steps" not in result.stdout
    result = runner.invoke(app, ["generate", str(spec), "-o", str(tmp_path / "other"), "-q"])
    assert result.exit_code == 0, result.output
    assert " scaffolded" in result.stdout and "Next steps" not in result.stdout


def test_diff_in_a_project_compares_the_lock_with_the_current_inputs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    spec = tmp_path / "lending.yaml"
    spec.write_text(CLEAN)
    out = tmp_path / "server"
    assert runner.invoke(app, ["generate", str(spec), "-o", str(out), "-q"]).exit_code == 0
    monkeypatch.chdir(out)
    result = runner.invoke(app, ["diff"])
    assert result.exit_code == 0, result.output
    assert "no changes to the tool surface" in result.stdout
    spec.write_text(CLEAN.replace("getLoan", "readLoan"))
    for args in (["diff"], ["diff", "mcpmint.yaml"], ["diff", "tools.lock.json", "mcpmint.yaml"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 1, (args, result.output)
        assert "lending_get_loan: tool renamed: now lending_read_loan" in result.stdout, args
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["diff"])
    assert result.exit_code == 2
    assert "needs OLD and NEW, or a project config" in result.output
    result = runner.invoke(app, ["diff", str(spec)])
    assert result.exit_code == 2


def test_progress_shows_on_a_terminal_only(tmp_path: Path) -> None:
    spec = tmp_path / "lending.yaml"
    spec.write_text(CLEAN)
    primary, secondary = pty.openpty()
    try:
        done = subprocess.run(
            [sys.executable, "-m", "mcpmint", "generate", str(spec), "-o", str(tmp_path / "a")],
            stderr=secondary,
            stdout=subprocess.PIPE,
            env=clean_env(MCPMINT_PROGRESS_AFTER="0"),
            check=False,
        )
        os.close(secondary)
        shown = b""
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            shown += chunk
    finally:
        os.close(primary)
    assert done.returncode == 0
    assert f"\rmcpmint: generating from {spec.as_posix()} (0 s)".encode() in shown
    assert shown.endswith(b"\r\x1b[K") or b"\r\x1b[K" in shown
    quiet = subprocess.run(
        [sys.executable, "-m", "mcpmint", "generate", str(spec), "-o", str(tmp_path / "b")],
        capture_output=True,
        env=clean_env(MCPMINT_PROGRESS_AFTER="0"),
        check=False,
    )
    assert quiet.returncode == 0 and b"generating from" not in quiet.stderr


@pytest.mark.slow  # two pytest starts that import the MCP SDK: about 8 s
def test_the_generated_tests_say_reinstall_when_the_installed_copy_is_older(
    tmp_path: Path,
) -> None:
    """An installed copy that is not the tree and differs from it (a regeneration since a
    `pip install .`) stops the generated tests with "reinstall", before any test fails on a
    difference that is only its age; REFERENCE.md lists each tool's arguments."""
    import shutil

    spec = tmp_path / "lending.yaml"
    spec.write_text(CLEAN)
    out = tmp_path / "server"
    assert runner.invoke(app, ["generate", str(spec), "-o", str(out), "-q"]).exit_code == 0
    reference = (out / "REFERENCE.md").read_text()
    assert "| `lending_get_loan` | `GET /loans/{loanId}` | `loanId`\\* string |" in reference
    installed = tmp_path / "site-packages"
    shutil.copytree(out / "src" / "lending_mcp", installed / "lending_mcp")
    # Collecting is enough: the check runs as pytest starts.
    pytest_here = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider", "tests"]
    done = subprocess.run(
        pytest_here,
        cwd=out,
        env=clean_env(PYTHONPATH=str(installed)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr  # installed from this generation
    spec.write_text(CLEAN.replace("getLoan", "readLoan"))
    result = runner.invoke(app, ["generate", str(spec), "-o", str(out), "-q", "--accept-breaking"])
    assert result.exit_code == 0, result.output
    done = subprocess.run(
        pytest_here,
        cwd=out,
        env=clean_env(PYTHONPATH=str(installed)),
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode != 0
    assert "older than this tree" in done.stderr
    assert "pip install -e '.[test]'" in done.stderr


def test_help_reads_well_at_any_width_and_completion_is_on() -> None:
    """Docstring paragraphs are reflowed to the terminal (never cut where the source lines
    end), placeholders survive, and typer's shell completion is offered."""
    import inspect

    import typer.main

    group = typer.main.get_command(app)
    wide = {"COLUMNS": "400", "TERMINAL_WIDTH": "400"}
    top = runner.invoke(app, ["--help"], env=wide)
    assert "--install-completion" in top.output and "--show-completion" in top.output
    for name, command in group.commands.items():  # type: ignore[attr-defined]
        shown = runner.invoke(app, [name, "--help"], env=wide).output
        lines = [" ".join(line.strip(" │").split()) for line in shown.splitlines()]
        for paragraph in inspect.cleandoc(command.help or "").split("\n\n"):
            words = " ".join(paragraph.replace("`", "").split())
            assert words in lines, (name, words)
    generate = runner.invoke(app, ["generate", "--help"], env=wide).output
    assert "./NAME-mcp" in generate


def test_the_generated_server_s_version_and_help_name_its_own_variables(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mcpmint.runtime.catalog import load_catalog_text
    from mcpmint.runtime.server import main

    from .support import REPO

    tools = REPO / "tests/golden/petstore/src/petstore_mcp/_generated/tools.json"
    catalog = load_catalog_text(tools.read_text())
    with pytest.raises(SystemExit) as exited:
        main(catalog, ["--version"], environ={})
    assert exited.value.code == 0
    assert capsys.readouterr().out.startswith("petstore-mcp (API version 1.0.0)")
    with pytest.raises(SystemExit):
        main(catalog, ["--help"], environ={})
    shown = capsys.readouterr().out
    assert "PETSTORE_AUTH=jwt" in shown and "PETSTORE_BASE_URL" in shown
    assert "<PREFIX>" not in shown and "--version" in shown
