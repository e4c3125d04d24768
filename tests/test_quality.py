"""mcpmint's own code meets the bar it sets for generated code."""

from __future__ import annotations

import sys

import pytest

from .support import REPO, run


@pytest.mark.parametrize(
    "command",
    [
        ["-m", "ruff", "check", "--no-cache", "generator", "tests"],
        ["-m", "ruff", "format", "--check", "--no-cache", "generator", "tests"],
        ["-m", "mypy", "--strict", "generator/mcpmint"],
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict"],
)
def test_mcpmint_source_is_clean(command: list[str]) -> None:
    done = run([sys.executable, *command], cwd=REPO)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
