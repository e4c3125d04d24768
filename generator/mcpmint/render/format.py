"""Formatting of generated Python with one pinned formatter: import order, then layout.

Runs ruff once over all Python files of the tree in a temporary folder, so the cost is one
process start whatever the number of files. The runtime's files are already formatted and
pass through unchanged (they are copied byte for byte, and ruff agrees with itself).

`output: {formatter: black}` in mcpmint.yaml lays the code out with black instead (pinned in
pyproject.toml, for the same reason ruff is: the bytes must not depend on what the user has
installed), for teams whose house style it is. Imports are still sorted by ruff's `I` rule,
which black leaves alone; the result passes `ruff check` and `black --check` alike.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Literal

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.render.templates import FileTree
from mcpmint.write.cache import StageCache, cache_key, library_version

RUFF_CONFIG = """\
line-length = 100
target-version = "py311"

[lint]
select = ["I"]
"""


# An import statement, at any depth (a line that begins with one): what the lint pass sorts.
_IMPORT = re.compile(r"^[ \t]*(?:import|from)[ \t]", re.MULTILINE)

Formatter = Literal["ruff", "black"]
FORMATTERS: tuple[Formatter, ...] = ("ruff", "black")
BLACK_OPTIONS = ("--line-length", "100", "--target-version", "py311")


def formatter_version(formatter: Formatter) -> str:
    """What lays generated code out: ruff (which sorts imports in either case) and the
    formatter, with their versions."""
    names = ["ruff"] if formatter == "ruff" else ["ruff", formatter]
    return " ".join(f"{name} {library_version(name)}" for name in names)


def _ruff() -> str:
    from ruff.__main__ import find_ruff_bin  # type: ignore[import-untyped]

    return str(find_ruff_bin())


def format_tree(
    tree: FileTree,
    sink: DiagnosticSink,
    formatter: Formatter = "ruff",
    cache: StageCache | None = None,
) -> FileTree:
    """The same tree with every `.py` file formatted; unchanged (with an error) on failure.

    With a `cache`, the previous runs' results are reused when every Python file of the tree
    is the same text (and the formatter and its version are): a regeneration whose Python
    did not change (a description edited, say) starts no formatter. The whole tree is one
    key, not each file: ruff sorts imports by which packages it finds in the tree."""
    python = {p: t for p, t in {**tree.generated, **tree.scaffold}.items() if p.endswith(".py")}
    key = cache_key("formatted", {"formatter": formatter, "files": python}, "ruff", "black")
    known = cache.get("formatted", key) if cache is not None else None
    if isinstance(known, dict) and all(isinstance(t, str) for t in known.values()):
        return _with(tree, {p: known.get(p, t) for p, t in python.items()})
    formatted = _format(python, sink, formatter)
    if formatted is None:
        return tree
    if cache is not None:  # only what the formatter changed: the runtime's files pass as is
        cache.put("formatted", key, {p: t for p, t in formatted.items() if t != python[p]})
    return _with(tree, formatted)


def format_texts(
    texts: list[str], sink: DiagnosticSink, formatter: Formatter = "ruff"
) -> list[str] | None:
    """Each of `texts` (Python source) formatted as `format_tree` formats a file, in one
    formatter run; None with an error."""
    files = {f"part_{index}.py": text for index, text in enumerate(texts)}
    formatted = _format(files, sink, formatter)
    return [formatted[path] for path in files] if formatted is not None else None


def _with(tree: FileTree, formatted: dict[str, str]) -> FileTree:
    return replace(
        tree,
        generated={p: formatted.get(p, t) for p, t in tree.generated.items()},
        scaffold={p: formatted.get(p, t) for p, t in tree.scaffold.items()},
    )


def _format(
    python: dict[str, str], sink: DiagnosticSink, formatter: Formatter
) -> dict[str, str] | None:
    """`python` formatted (paths -> texts), or None with an error."""
    with tempfile.TemporaryDirectory(prefix="mcpmint-format-") as folder:
        root = Path(folder)
        (root / "ruff.toml").write_text(RUFF_CONFIG, encoding="utf-8")
        (root / "black.toml").write_text("", encoding="utf-8")
        for path, text in python.items():
            target = root / path
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
        ruff = _ruff()
        layout = (
            [ruff, "format", "--quiet", "--no-cache", "."]
            if formatter == "ruff"
            # An empty config of its own: no user or parent-folder black settings apply.
            else [
                sys.executable,
                "-m",
                "black",
                "--quiet",
                "--config",
                "black.toml",
                *BLACK_OPTIONS,
                ".",
            ]
        )
        fix = [ruff, "check", "--fix", "--quiet", "--exit-zero", "--no-cache", "."]
        # The lint pass only sorts imports (`select = ["I"]`): texts without an import
        # statement need only the layout.
        sorts = any(_IMPORT.search(text) for text in python.values())
        for command in [fix, layout] if sorts else [layout]:
            done = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                sink.error(
                    "<generated code>",
                    f"{formatter} could not format the generated code: "
                    + (done.stderr or done.stdout).strip()[:500],
                    "this is a bug in mcpmint; please report it with the spec",
                )
                return None
        return {p: (root / p).read_text(encoding="utf-8") for p in python}
