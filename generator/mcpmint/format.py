"""Formatting of generated Python with the one pinned ruff: import order, then layout.

Runs ruff once over all Python files of the tree in a temporary folder, so the cost is one
process start whatever the number of files. The runtime's files are already formatted and
pass through unchanged (they are copied byte for byte, and ruff agrees with itself).
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

from .diagnostics import DiagnosticSink
from .render import FileTree

RUFF_CONFIG = """\
line-length = 100
target-version = "py311"

[lint]
select = ["I"]
"""


def _ruff() -> str:
    from ruff.__main__ import find_ruff_bin  # type: ignore[import-untyped]

    return str(find_ruff_bin())


def format_tree(tree: FileTree, sink: DiagnosticSink) -> FileTree:
    """The same tree with every `.py` file formatted; unchanged (with an error) on failure."""
    python = {p: t for p, t in {**tree.generated, **tree.scaffold}.items() if p.endswith(".py")}
    with tempfile.TemporaryDirectory(prefix="mcpmint-format-") as folder:
        root = Path(folder)
        (root / "ruff.toml").write_text(RUFF_CONFIG, encoding="utf-8")
        for path, text in python.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        ruff = _ruff()
        for command in (
            [ruff, "check", "--fix", "--quiet", "--exit-zero", "--no-cache", "."],
            [ruff, "format", "--quiet", "--no-cache", "."],
        ):
            done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sink.error(
                    "<generated code>",
                    "ruff could not format the generated code: "
                    + (done.stderr or done.stdout).strip()[:500],
                    "this is a bug in mcpmint; please report it with the spec",
                )
                return tree
        formatted = {p: (root / p).read_text(encoding="utf-8") for p in python}
    return replace(
        tree,
        generated={p: formatted.get(p, t) for p, t in tree.generated.items()},
        scaffold={p: formatted.get(p, t) for p, t in tree.scaffold.items()},
    )
