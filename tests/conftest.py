"""Shared test options and fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs"
CORPUS = REPO.parent / "shared" / "corpus"


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/ from the current generator instead of comparing",
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"
