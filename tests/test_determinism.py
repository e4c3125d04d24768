"""R5: the same inputs give byte-identical trees, whatever the hash seed."""

from __future__ import annotations

from pathlib import Path

import pytest

from .support import REPO, trees_by_hash_seed


@pytest.mark.parametrize("spec", ["petstore-plus.yaml", "wire-plan-3.1/oas31.yaml"])
def test_R5_two_runs_with_different_hash_seeds_give_identical_bytes(
    spec: str, tmp_path: Path
) -> None:
    digests = trees_by_hash_seed(REPO / "specs" / spec, tmp_path)
    assert digests[0] == digests[1]
    assert len(digests[0]) > 10
