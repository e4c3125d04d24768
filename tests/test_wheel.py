"""`pip install .` (not editable) works: templates and runtime are in the wheel."""

from __future__ import annotations

import sys
import zipfile
from pathlib import Path

import pytest

from .support import REPO, clean_env, make_venv, run

pytestmark = pytest.mark.slow


def test_wheel_in_a_fresh_venv_generates_a_server_whose_tests_pass(tmp_path: Path) -> None:
    built = run(
        [sys.executable, "-m", "build", "--wheel", "--outdir", str(tmp_path / "dist"), str(REPO)],
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    wheel = next((tmp_path / "dist").glob("mcpmint-*.whl"))
    names = zipfile.ZipFile(wheel).namelist()
    assert "mcpmint/templates/package/server.py.jinja" in names
    assert "mcpmint/runtime/server.py" in names

    python = make_venv(tmp_path / "venv", str(wheel))
    mcpmint = python.parent / "mcpmint"
    out = tmp_path / "work" / "petstore-mcp"
    out.parent.mkdir()
    # Run from a folder outside the checkout, so nothing can be found there by accident.
    generated = run(
        [str(mcpmint), "generate", str(REPO / "specs" / "petstore.yaml"), "-o", str(out)],
        cwd=out.parent,
        env=clean_env(),
    )
    assert generated.returncode == 0, generated.stdout + generated.stderr
    server_python = make_venv(tmp_path / "server-venv", f"{out}[test]")
    tested = run(
        [str(server_python), "-m", "pytest", "-q", "-p", "no:cacheprovider"],
        cwd=out,
        env=clean_env(),
    )
    assert tested.returncode == 0, tested.stdout[-4000:] + tested.stderr[-2000:]
