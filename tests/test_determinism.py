"""R5: the same inputs give byte-identical trees, whatever the hash seed."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

import pytest

from .support import REPO, clean_env, run


def tree_digest(folder: Path) -> dict[str, str]:
    return {
        p.relative_to(folder).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


@pytest.mark.parametrize("spec", ["petstore-plus.yaml", "wire-plan-3.1/oas31.yaml"])
def test_R5_two_runs_with_different_hash_seeds_give_identical_bytes(
    spec: str, tmp_path: Path
) -> None:
    digests = []
    for seed in ("1", "4242"):
        out = tmp_path / f"seed-{seed}"
        done = run(
            [
                sys.executable,
                "-m",
                "mcpmint",
                "generate",
                str(REPO / "specs" / spec),
                "-o",
                str(out),
            ],
            env=clean_env(PYTHONHASHSEED=seed),
        )
        assert done.returncode == 0, done.stderr
        digests.append(tree_digest(out))
    assert digests[0] == digests[1]
    assert len(digests[0]) > 10
