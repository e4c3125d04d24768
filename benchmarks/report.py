"""Write a benchmark's figures into docs/benchmarks.md, in its own section.

Each script owns one section, between `<!-- begin NAME -->` and `<!-- end NAME -->`; a run with
`--write-docs` replaces that section's text (and adds the section at the end the first time),
so the page always holds the latest figures with the command and the date that made them,
and the history stays in git.
"""

from __future__ import annotations

import datetime
import platform
import re
from pathlib import Path

DOCS = Path(__file__).resolve().parents[1] / "docs" / "benchmarks.md"


def machine() -> str:
    """The date and the machine, for the line under a section's title."""
    now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC")
    return f"{now}; {platform.machine()}, Python {platform.python_version()}"


def write_section(name: str, text: str, docs: Path = DOCS) -> None:
    """Replace section `name` of `docs` with `text` (Markdown, its own heading included)."""
    begin, end = f"<!-- begin {name} -->", f"<!-- end {name} -->"
    block = f"{begin}\n{text.strip()}\n{end}"
    page = docs.read_text(encoding="utf-8") if docs.exists() else "# Benchmarks\n"
    pattern = re.compile(re.escape(begin) + r".*?" + re.escape(end), re.DOTALL)
    if pattern.search(page):
        page = pattern.sub(lambda _: block, page)
    else:
        page = page.rstrip("\n") + "\n\n" + block + "\n"
    docs.write_text(page, encoding="utf-8")
