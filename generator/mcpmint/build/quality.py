"""Description quality, as `mcpmint tools` reports it: warnings that never block.

A model picks a tool from its description alone. A good one follows the form "What it does.
Use it when ... Returns ...". Flagged: a missing description (none in the spec, so mcpmint
fell back to `METHOD /path`), an overlong one, one shared word for word with another tool,
and one that never says when to use the tool. Fix them with a `description` override in
mcpmint.yaml (docs/config.md).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from mcpmint import ir

MAX_DESCRIPTION = 1024  # characters; more crowds the model's context for every call
FORM = "What it does. Use it when ... Returns ..."
QUALITY_HINT = (
    f'a description the model can choose by reads "{FORM}"; set one with a `description` '
    "override in mcpmint.yaml (docs/config.md)"
)
# "Use it when", "use this tool to", "use when", "call it if", "when you need", ...
_WHEN = re.compile(
    r"\b(use|call)( (it|this|this tool|me))? (when|to|if|for|whenever|before|after)\b"
    r"|\bwhen (you|the user|a user|an agent)\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Finding:
    tool: str
    kind: str  # missing, overlong, duplicate, no-when
    message: str


def description_findings(tools: Iterable[ir.Tool]) -> list[Finding]:
    """Every finding about the tools' descriptions, in tool order."""
    tools = list(tools)
    first_with: dict[str, str] = {}
    for tool in tools:
        first_with.setdefault(_normal(tool.description), tool.name)
    found: list[Finding] = []
    for tool in tools:
        text = tool.description.strip()
        if _is_missing(tool):
            found.append(Finding(tool.name, "missing", "has no description in the spec"))
            continue  # the fallback text says nothing more worth judging
        if len(text) > MAX_DESCRIPTION:
            found.append(
                Finding(
                    tool.name,
                    "overlong",
                    f"description is {len(text)} characters, more than {MAX_DESCRIPTION}",
                )
            )
        twin = first_with[_normal(tool.description)]
        if twin != tool.name:
            found.append(Finding(tool.name, "duplicate", f"description is the same as {twin}'s"))
        if not _WHEN.search(text):
            found.append(
                Finding(
                    tool.name,
                    "no-when",
                    "description does not say when to use the tool",
                )
            )
    return found


def _is_missing(tool: ir.Tool) -> bool:
    text = tool.description.strip()
    if not text:
        return True
    fallback = (
        f"{tool.request.method} {tool.request.path}" if tool.request is not None else tool.name
    )
    return text.removeprefix("Deprecated. ") == fallback


def _normal(text: str) -> str:
    return " ".join(text.lower().split())
