"""Which tools exist, and which argument values they accept (operator allowlists).

- `<P>_TOOLS_ALLOW`, `<P>_TOOLS_DENY`: comma-separated tool names or globs (`fnmatch`,
  case-sensitive). A tool exists when it matches the allow list (if one is set) and does not
  match the deny list. `<P>_READ_ONLY=1` keeps only read-only tools.
- `<P>_ALLOW_<TOOL>_<ARGUMENT>` (upper case, every other character than A-Z and 0-9 as `_`):
  comma-separated values, or `re:<pattern>` (the whole value must match). A value outside it
  is refused, naming the argument, before anything is sent.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from .catalog import Tool
from .limits import is_read_only

__all__ = ["AllowlistError", "ToolFilter", "ValueAllowlist", "env_name", "tools_allow_variable"]

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"", "0", "false", "no", "off"})


class AllowlistError(ValueError):
    """An allowlist variable is unusable; the message names the variable."""


def env_name(*parts: str) -> str:
    """Upper case, every character other than A-Z and 0-9 replaced by `_`."""
    return "_".join(re.sub(r"[^A-Z0-9]", "_", part.upper()) for part in parts)


def tools_allow_variable(prefix: str) -> str:
    """The variable naming the tools that exist (`<prefix>_TOOLS_ALLOW`)."""
    return f"{prefix}_TOOLS_ALLOW"


def _patterns(raw: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in raw.split(",") if p.strip())


@dataclass(frozen=True)
class ToolFilter:
    """The operator's choice of tools."""

    allow: tuple[str, ...] = ()
    deny: tuple[str, ...] = ()
    read_only: bool = False

    @classmethod
    def from_environ(cls, prefix: str, environ: Mapping[str, str]) -> ToolFilter:
        """Read `<prefix>_TOOLS_ALLOW`, `_TOOLS_DENY` and `_READ_ONLY`.

        Raises:
            AllowlistError: `_READ_ONLY` is not a boolean.
        """
        flag = environ.get(f"{prefix}_READ_ONLY", "").strip().lower()
        if flag not in _TRUE | _FALSE:
            raise AllowlistError(f"{prefix}_READ_ONLY must be 1 or 0 (true or false)")
        return cls(
            allow=_patterns(environ.get(tools_allow_variable(prefix), "")),
            deny=_patterns(environ.get(f"{prefix}_TOOLS_DENY", "")),
            read_only=flag in _TRUE,
        )

    def allows(self, tool: Tool) -> bool:
        """Whether `tool` is listed and callable."""
        if self.allow and not any(fnmatchcase(tool.name, p) for p in self.allow):
            return False
        if any(fnmatchcase(tool.name, p) for p in self.deny):
            return False
        return not self.read_only or is_read_only(tool)


@dataclass(frozen=True)
class _Rule:
    variable: str
    values: frozenset[str]
    pattern: re.Pattern[str] | None

    def allows(self, value: Any) -> bool:
        items = value if isinstance(value, list) else [value]
        return all(self._allows_one(item) for item in items)

    def _allows_one(self, item: Any) -> bool:
        text = item if isinstance(item, str) else json.dumps(item, sort_keys=True)
        if self.pattern is not None:
            return self.pattern.fullmatch(text) is not None
        return text in self.values


class ValueAllowlist:
    """Per tool and argument, the values the operator allows."""

    def __init__(self, rules: Mapping[tuple[str, str], _Rule]) -> None:
        self._rules = dict(rules)

    @classmethod
    def from_environ(
        cls, prefix: str, tools: tuple[Tool, ...], environ: Mapping[str, str]
    ) -> ValueAllowlist:
        """Read `<prefix>_ALLOW_<TOOL>_<ARGUMENT>` for every argument of every tool.

        Raises:
            AllowlistError: a pattern does not compile.
        """
        rules: dict[tuple[str, str], _Rule] = {}
        for tool in tools:
            properties = tool.input_schema.get("properties")
            names = set(properties) if isinstance(properties, Mapping) else set()
            for argument in sorted(names | tool.argument_names):
                variable = env_name(prefix, "ALLOW", tool.name, argument)
                raw = environ.get(variable)
                if raw is None:
                    continue
                if raw.startswith("re:"):
                    try:
                        pattern = re.compile(raw[3:])
                    except re.error as exc:
                        raise AllowlistError(f"{variable} is not a valid pattern: {exc}") from None
                    rules[tool.name, argument] = _Rule(variable, frozenset(), pattern)
                else:
                    values = frozenset(v.strip() for v in raw.split(",") if v.strip())
                    rules[tool.name, argument] = _Rule(variable, values, None)
        return cls(rules)

    def refusal(self, tool: Tool, arguments: Mapping[str, Any]) -> str | None:
        """A message naming the first argument whose value is not allowed, or None."""
        for (tool_name, argument), rule in sorted(self._rules.items()):
            if tool_name != tool.name or argument not in arguments:
                continue
            if rule.allows(arguments[argument]):  # null too must be listed ("null")
                continue
            return (
                f"The value of argument {argument} is not allowed for {tool.name} by the "
                f"server's operator ({rule.variable}). Nothing was sent."
            )
        return None
