"""Shared test options and fixtures."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from .test_corpus import CorpusRuns

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


@pytest.fixture(scope="session")
def corpus_runs(tmp_path_factory: pytest.TempPathFactory) -> CorpusRuns:
    """Corpus specs generated once per session (tests/test_corpus.py)."""
    from .test_corpus import CorpusRuns

    return CorpusRuns(tmp_path_factory.mktemp("corpus"))
