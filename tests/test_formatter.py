"""`output: {formatter: black}` (issue 6): generated code laid out by black, for teams whose
house style it is. It must be black-clean, still pass `ruff check` and `mypy --strict`, and the
package's own tests must pass."""

from __future__ import annotations

import ast
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.pipeline import RenderOptions, build, render_server
from mcpmint.render import format as format_module
from mcpmint.render.format import BLACK_OPTIONS, Formatter, format_texts

from .support import (
    BAR_COMMANDS,
    BAR_IDS,
    REPO,
    clean_env,
    generate_plus_project,
    package_tests,
    run,
)

CONFIG = """\
sources:
  - spec: petstore-plus.yaml
output:
  formatter: black
"""


@pytest.fixture(scope="module")
def black_package(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    folder = tmp_path_factory.mktemp("black")
    generate_plus_project(folder, CONFIG)
    yield folder


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_black_output_is_black_clean(black_package: Path) -> None:
    (black_package / "empty-black.toml").write_text("", encoding="utf-8")
    done = run(
        [
            sys.executable,
            "-m",
            "black",
            "--check",
            "--config",
            "empty-black.toml",
            *BLACK_OPTIONS,
            "src",
            "tests",
        ],
        cwd=black_package,
        env=clean_env(),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "would be left unchanged" in done.stderr


def test_the_option_changes_the_layout_and_only_the_layout() -> None:
    sink = DiagnosticSink()
    server = build(REPO / "specs" / "petstore-plus.yaml", sink)
    by_ruff = render_server(server, RenderOptions("petstore-plus.yaml"), sink).generated
    by_black = render_server(
        server, RenderOptions("petstore-plus.yaml", formatter="black"), sink
    ).generated

    changed = sorted(p for p in by_ruff if by_ruff[p] != by_black[p])
    assert changed, "black and ruff laid out every file the same: was black run at all?"
    assert all(p.endswith(".py") for p in changed), changed
    for path in changed:
        assert ast.dump(ast.parse(by_ruff[path])) == ast.dump(ast.parse(by_black[path])), path


@pytest.mark.slow  # runs a generated package's own tools: seconds
@pytest.mark.parametrize(
    "command",
    [c for c in BAR_COMMANDS if "format" not in c],
    ids=[i for i in BAR_IDS if i != "ruff-format"],
)
def test_black_output_still_meets_the_bar(black_package: Path, command: list[str]) -> None:
    done = run([sys.executable, *command], cwd=black_package, env=clean_env())
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.slow  # runs a generated package's own tools: seconds
def test_the_black_formatted_package_passes_its_own_tests(black_package: Path) -> None:
    done = package_tests(black_package)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


@pytest.mark.parametrize("formatter", ["ruff", "black"])
def test_texts_without_imports_are_laid_out_as_with_the_import_pass(formatter: Formatter) -> None:
    """format_texts skips the lint pass (it only sorts imports) when no text has an import
    statement; with one, the imports are still sorted."""
    classes = [
        "class Arguments( BaseModel ):\n  x : int|None=None\n  y: str = 'a'\n",
        "class Other(BaseModel):\n    '''Reads from a file.'''\n    z: list[ int ]\n",
    ]
    ran: list[list[str]] = []
    original = subprocess.run

    def counting(command: list[str], *args: Any, **kwargs: Any) -> Any:
        ran.append([str(part) for part in command])
        return original(command, *args, **kwargs)

    sink = DiagnosticSink()
    with pytest.MonkeyPatch.context() as patched:
        patched.setattr(format_module.subprocess, "run", counting)
        alone = format_texts(classes, sink, formatter)
    assert alone is not None and not sink.has_errors
    assert not any("check" in command for command in ran)  # the layout pass only
    # The same texts, each after an import (both passes): the same classes.
    imported = format_texts(["import os\n\n\n" + text for text in classes], sink, formatter)
    assert imported is not None
    assert [text.split("\n\n\n", 1)[1] for text in imported] == alone
    unsorted = format_texts(["import sys\nimport os\n\nx = os, sys\n"], sink, formatter)
    assert unsorted == ["import os\nimport sys\n\nx = os, sys\n"]
