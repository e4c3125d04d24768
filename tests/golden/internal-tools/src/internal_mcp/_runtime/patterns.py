"""Regular expressions from the spec, matched in time linear in the text (S24, S27).

A spec's `pattern` (and a `patternProperties` name) is untrusted text. Python's `re` backtracks:
`^([a-z.-]*)*$` takes exponential time on a text that almost matches, so one argument, or one
example at generation time, would stall the server's event loop for every caller. These
patterns therefore run on the Rust `regex` engine inside pydantic-core (already installed with
the MCP SDK through pydantic), which guarantees time linear in the text.

JSON Schema patterns are ECMA-262; `_rust_syntax` rewrites what the two dialects read
differently: `\\d`, `\\w` and `\\b` are ASCII-only in ECMA-262, `[]` matches nothing and `[^]`
anything, a `[` inside a class is a plain character, and a `{` that starts no quantifier is
itself. What no linear-time engine can do (look-around, back-references) does not compile:
`linear_pattern` returns None, and the generator drops such a pattern with a warning, so a
generated schema holds only patterns its server can check.
"""

from __future__ import annotations

import functools
import re

from pydantic_core import SchemaError, SchemaValidator, core_schema

__all__ = ["linear_pattern", "pattern_search"]

# ECMA-262 escapes whose Rust meaning differs, outside and inside a character class.
_OUTSIDE = {
    "d": "[0-9]",
    "D": "[^0-9]",
    "w": "[0-9A-Za-z_]",
    "W": "[^0-9A-Za-z_]",
    "b": r"(?-u:\b)",
    "B": r"(?-u:\B)",
    "0": r"\x00",
}
_INSIDE = {
    "d": "0-9",
    "D": "[^0-9]",
    "w": "0-9A-Za-z_",
    "W": "[^0-9A-Za-z_]",
    "b": r"\x08",
    "0": r"\x00",
}
_BRACED_ESCAPE = re.compile(r"\\[pPu]\{[^{}]*\}")
_QUANTIFIER = re.compile(r"\{[0-9]+(?:,[0-9]*)?\}")


@functools.lru_cache(maxsize=1024)
def linear_pattern(pattern: str) -> SchemaValidator | None:
    """A validator accepting the strings in which `pattern` (ECMA-262) finds a match, or None
    when the pattern does not compile for a linear-time engine."""
    try:
        return SchemaValidator(
            core_schema.str_schema(pattern=_rust_syntax(pattern), regex_engine="rust-regex")
        )
    except SchemaError:
        return None


def pattern_search(pattern: str, text: str) -> bool | None:
    """Whether `pattern` matches somewhere in `text` (JSON Schema's `pattern`), or None when
    the pattern cannot be checked in linear time (see the module's docstring)."""
    checker = linear_pattern(pattern)
    return None if checker is None else checker.isinstance_python(text)


def _rust_syntax(pattern: str) -> str:
    out: list[str] = []
    in_class = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\" and i + 1 < len(pattern):
            braced = _BRACED_ESCAPE.match(pattern, i)  # `\p{L}`, `\u{e9}`: one escape
            if braced:
                out.append(braced.group())
                i = braced.end()
                continue
            escaped = pattern[i + 1]
            table = _INSIDE if in_class else _OUTSIDE
            out.append(table.get(escaped, pattern[i : i + 2]))
            i += 2
            continue
        if in_class:
            if c == "]":
                in_class = False
            elif c in "[&~":  # Rust reads these as nested classes and set operations
                c = "\\" + c
        elif pattern.startswith("[]", i):
            out.append(r"[^\s\S]")
            i += 2
            continue
        elif pattern.startswith("[^]", i):
            out.append(r"[\s\S]")
            i += 3
            continue
        elif c == "[":
            in_class = True
            prefix = "[^" if pattern.startswith("[^", i) else "["
            out.append(prefix)
            i += len(prefix)
            continue
        elif c == "{":
            quantifier = _QUANTIFIER.match(pattern, i)
            if quantifier:
                out.append(quantifier.group())
                i = quantifier.end()
                continue
            c = r"\{"  # ECMA-262 reads a brace that starts no quantifier as itself
        elif c == "}":
            c = r"\}"
        out.append(c)
        i += 1
    return "".join(out)
