"""G11, G12: spec text full of code-injection payloads never becomes code.

The spec is built here with a payload in every string field a spec can have; the generated
package must parse, carry each payload only as data (string constants, JSON), never in a
comment or an identifier, and importing it and running its own tests must run none of them.
"""

from __future__ import annotations

import ast
import io
import json
import os
import subprocess
import sys
import tokenize
from pathlib import Path
from typing import Any

import pytest

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import GenerateOptions, generate

MARKER = Path("/tmp/mcpmint-canary-pwned")
PAYLOADS = [
    f'\'"""\nimport os;os.system("touch {MARKER}")\n#',
    f"\r__import__('os').system('touch {MARKER}')",
    f"'+str(exec(\"open('{MARKER}','w')\"))+'",
    f'{{__import__("os").system("touch {MARKER}")}}',
    "trailing backslash \\",
    "line\u2028separator",
    "nul\x00byte",
    "*/ -->\n# ]]",
]
# Fragments that would show a payload escaped into code.
DANGEROUS_NAMES = {"system", "exec", "eval", "__import__", "open", "compile"}


def payload(i: int) -> str:
    return PAYLOADS[i % len(PAYLOADS)]


def canary_spec() -> dict[str, Any]:
    schema: dict[str, Any] = {
        "type": "object",
        "title": payload(0),
        "description": payload(1),
        "required": [payload(2)],
        "properties": {
            payload(2): {
                "type": "string",
                "description": payload(3),
                "default": payload(4),
                "pattern": "^.*$",
                "enum": [payload(4), payload(5), payload(6), "plain"],
                "example": payload(5),
            },
            payload(3): {"type": "string", "const": payload(7), "x-python-import": "os"},
            "limit": {"type": "integer", "default_factory": "__import__('os').system('id')"},
        },
        "x-code": payload(0),
    }
    return {
        "openapi": "3.0.3",
        "info": {"title": "Canary " + payload(0), "version": payload(1), "description": payload(2)},
        "servers": [
            {
                "url": "http://127.0.0.1:9/{v}",
                "description": payload(3),
                "variables": {"v": {"default": "v1", "description": payload(4)}},
            }
        ],
        "x-python-import": "os",
        "tags": [{"name": payload(5), "description": payload(6)}],
        "paths": {
            "/items/{" + "id" + "}": {
                "get": {
                    "operationId": payload(0),
                    "summary": payload(1),
                    "description": payload(2),
                    "tags": [payload(5)],
                    "parameters": [
                        {
                            "name": "id",
                            "in": "path",
                            "required": True,
                            "description": payload(3),
                            "schema": {"type": "string", "example": payload(4)},
                        },
                        {
                            "name": payload(6),
                            "in": "query",
                            "description": payload(7),
                            "schema": {"type": "string", "enum": [payload(0), payload(1)]},
                            "example": payload(0),
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": payload(3),
                            "content": {
                                "application/json": {
                                    "schema": {"$ref": "#/components/schemas/Item"}
                                }
                            },
                        }
                    },
                },
                "post": {
                    "operationId": "create" + payload(1),
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/Item"}}
                        },
                    },
                    "responses": {"201": {"description": payload(4)}},
                },
            }
        },
        "components": {
            "schemas": {"Item": schema},
            "securitySchemes": {
                "key": {
                    "type": "apiKey",
                    "in": "header",
                    "name": "X-Key",
                    "description": payload(2),
                }
            },
        },
        "security": [{"key": []}],
    }


@pytest.fixture(scope="module")
def package(tmp_path_factory: pytest.TempPathFactory) -> Path:
    MARKER.unlink(missing_ok=True)
    folder = tmp_path_factory.mktemp("canary")
    spec = folder / "canary.json"
    spec.write_text(json.dumps(canary_spec()), encoding="utf-8")
    out = folder / "out"
    sink = DiagnosticSink()
    generate(spec, GenerateOptions(output=out), sink)
    assert not sink.has_errors, [d.render() for d in sink]
    return out


def python_files(out: Path) -> list[Path]:
    return sorted(out.rglob("*.py"))


def test_G11_every_generated_python_file_parses(package: Path) -> None:
    files = python_files(package)
    assert len(files) > 5
    for path in files:
        ast.parse(path.read_text(encoding="utf-8"), filename=str(path))


def test_G11_payloads_appear_only_as_data_never_as_code_or_comments(package: Path) -> None:
    for path in python_files(package):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        names = {n.id for n in ast.walk(tree) if isinstance(n, ast.Name)}
        names |= {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
        names |= {n.name for n in ast.walk(tree) if isinstance(n, ast.alias)}
        if "_runtime" not in path.parts:
            assert not names & DANGEROUS_NAMES, (path, names & DANGEROUS_NAMES)
        comments = [
            tok.string
            for tok in tokenize.generate_tokens(io.StringIO(source).readline)
            if tok.type == tokenize.COMMENT
        ]
        for comment in comments:
            assert "touch" not in comment and "canary" not in comment.lower(), (path, comment)
    tools = json.loads(next(package.rglob("tools.json")).read_text(encoding="utf-8"))
    # The payloads are still there, as data, where the model reads them.
    assert any("__import__" in tool["description"] for tool in tools["tools"])


def test_G12_code_carrying_extensions_are_never_emitted(package: Path) -> None:
    for path in python_files(package):
        source = path.read_text(encoding="utf-8")
        assert "default_factory" not in source or "_runtime" in path.parts, path
        assert "x-python-import" not in source, path


def test_G11_importing_and_testing_the_package_runs_no_payload(package: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(package / "src")}
    imported = subprocess.run(
        [sys.executable, "-c", "import canary_mcp.server as s; s.build_server()"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert imported.returncode == 0, imported.stderr
    tested = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(package / "tests")],
        cwd=package,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert tested.returncode == 0, tested.stdout[-3000:] + tested.stderr[-2000:]
    assert not MARKER.exists()
