"""The generated tests' oracle (docs/generated-package.md): what the package ships for it, and
the warning for a project whose own pyproject.toml predates it."""

from __future__ import annotations

from pathlib import Path

import pytest

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.render.cases import warn_without_oracle

from .conftest import SPECS
from .test_golden import GOLDEN


@pytest.mark.parametrize(
    ("golden", "source", "files"),
    [
        ("wire-plan-3.1", SPECS / "wire-plan-3.1", ["codes.json", "oas31.yaml", "shared.yaml"]),
        ("petstore-v2", SPECS, ["petstore-v2.yaml"]),
        ("mixed", SPECS, ["petstore.yaml"]),  # the OpenAPI source; the manifest has no oracle
    ],
)
def test_a_package_ships_every_file_of_its_openapi_spec_as_it_was(
    golden: str, source: Path, files: list[str]
) -> None:
    shipped = GOLDEN / golden / "tests" / "spec"
    assert sorted(p.relative_to(shipped).as_posix() for p in shipped.rglob("*")) == files
    for name in files:
        assert (shipped / name).read_bytes() == (source / name).read_bytes(), name


def test_a_swagger_2_package_also_ships_the_openapi_3_reading() -> None:
    tests = GOLDEN / "petstore-v2" / "tests"
    assert '"openapi": "3.0.3"' in (tests / "spec.openapi3.json").read_text(encoding="utf-8")
    assert '"document": "spec.openapi3.json"' in (tests / "generated_cases.json").read_text(
        encoding="utf-8"
    )


ORACLE = {"tests/spec_oracle.py": "..."}


def warnings_for(folder: Path, pyproject: str | None) -> list[str]:
    if pyproject is not None:
        (folder / "pyproject.toml").write_text(pyproject, encoding="utf-8")
    sink = DiagnosticSink()
    warn_without_oracle(folder, ORACLE, sink)
    return [d.render() for d in sink]


def test_a_project_whose_test_extra_lacks_openapi_core_is_warned(tmp_path: Path) -> None:
    golden = (GOLDEN / "petstore" / "pyproject.toml").read_text(encoding="utf-8")
    assert '"openapi-core>=0.23.1,<0.24"' in golden  # a new project's test extra names it
    assert warnings_for(tmp_path, golden) == []
    older = "".join(line for line in golden.splitlines(keepends=True) if "openapi-core" not in line)
    (warning,) = warnings_for(tmp_path, older)
    assert warning.startswith(f"{tmp_path / 'pyproject.toml'}: warning:")
    assert 'add "openapi-core>=0.23.1,<0.24" to [project.optional-dependencies] test' in warning


def test_no_warning_without_an_oracle_or_a_pyproject(tmp_path: Path) -> None:
    assert warnings_for(tmp_path, None) == []  # a first run: the scaffold brings it
    (tmp_path / "pyproject.toml").write_text("[project]\n", encoding="utf-8")
    sink = DiagnosticSink()
    warn_without_oracle(tmp_path, {}, sink)  # a manifest's package: no oracle
    assert list(sink) == []
