"""Shared test options and fixtures."""

from __future__ import annotations

import csv
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from .test_corpus import CorpusRuns

REPO = Path(__file__).resolve().parents[1]
SPECS = REPO / "specs"
CORPUS = REPO.parent / "shared" / "corpus"


def corpus_rows() -> list[dict[str, str]]:
    """The rows of the shared corpus's INDEX.tsv; none when the corpus is not checked out."""
    index = CORPUS / "INDEX.tsv"
    if not index.exists():
        return []
    with index.open(encoding="utf-8", newline="") as handle:
        return list(csv.DictReader(handle, delimiter="\t"))


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--update-golden",
        action="store_true",
        help="rewrite tests/golden/ from the current generator instead of comparing",
    )


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> list[tuple[Any, ...]]:
    """Records (and refuses) every attempt to resolve a host or open a connection."""
    attempts: list[tuple[Any, ...]] = []

    def refuse(*args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise AssertionError(f"network access attempted: {args!r}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)
    return attempts


@pytest.fixture(scope="session")
def corpus_runs(tmp_path_factory: pytest.TempPathFactory) -> CorpusRuns:
    """Corpus specs generated once per session (tests/test_corpus.py)."""
    from .test_corpus import CorpusRuns

    return CorpusRuns(tmp_path_factory.mktemp("corpus"))
