"""Fixtures of the runtime tests."""

from __future__ import annotations

import copy
from collections.abc import Iterator

import pytest
from runtime_support import ENV, MODES, Recorder, catalog_data

from mcpmint.runtime.catalog import Catalog, load_catalog


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def catalog() -> Catalog:
    return load_catalog(catalog_data())


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def upstream() -> Iterator[Recorder]:
    yield Recorder()


@pytest.fixture
def env() -> dict[str, str]:
    return copy.deepcopy(ENV)
