"""One policy for characters a reader cannot see (S20): escaped where a user judges, removed
where the model reads.

`INVISIBLE` matches every Unicode format character (category Cf: bidi controls and isolates,
zero-width space/joiners, word joiner, soft hyphen, U+FEFF, the tag characters U+E0000-E007F,
...), the line and paragraph separators (Zl, Zp: U+2028, U+2029), the C0 and C1 controls
other than tab and newline, and the blank-looking characters that are not in those categories
(Hangul fillers, the combining grapheme joiner, Khmer inherent vowels, Mongolian free variation
selectors, variation selectors, the Braille blank). The Cf/Zl/Zp ranges are those of Unicode 16
(tests/runtime/test_runtime_visible.py checks them against the running Python's `unicodedata`).

- `escape_invisible`: each one as `\\uXXXX` (`\\UXXXXXXXX` beyond the BMP): the confirmation
  question, so that a user sees what they confirm;
- `strip_invisible` / `strip_data`: each one removed: tool results (text and structured
  content), error messages, every string of `tools/list` (names, titles, descriptions and every
  string inside the schemas: descriptions, titles, enum values, examples, defaults, keys),
  resources, resource templates and prompts.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

__all__ = ["INVISIBLE", "escape_invisible", "has_invisible", "strip_data", "strip_invisible"]

# Cf, Zl and Zp (Unicode 16), then the blank-looking others.
_RANGES = (
    "\u00ad\u0600-\u0605\u061c\u06dd\u070f\u0890\u0891\u08e2\u180e\u200b-\u200f\u2028-\u202e"
    "\u2060-\u2064\u2066-\u206f\ufeff\ufff9-\ufffb\U000110bd\U000110cd\U00013430-\U0001343f"
    "\U0001bca0-\U0001bca3\U0001d173-\U0001d17a\U000e0000-\U000e007f"
    "\u034f\u115f\u1160\u17b4\u17b5\u180b-\u180d\u180f\u2800\u3164\ufe00-\ufe0f\uffa0"
    "\U000e0100-\U000e01ef"
)
_CONTROLS = "\x00-\x08\x0b-\x1f\x7f-\x9f"
INVISIBLE = re.compile(f"[{_CONTROLS}{_RANGES}]")


def has_invisible(text: str) -> bool:
    return INVISIBLE.search(text) is not None


def escape_invisible(text: str) -> str:
    """`text` with every invisible character shown as its escape (`\\u202e`)."""
    return INVISIBLE.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


def strip_invisible(text: str) -> str:
    """`text` without its invisible characters."""
    return INVISIBLE.sub("", text)


# How JSON text (`json.dumps`, ensure_ascii off) shows a C0 control: as an escape. Every other
# invisible character it writes as it is.
_ESCAPED_CONTROL = re.compile(r"\\(?:u00[01]|[bfr])")


def strip_data(value: Any) -> Any:
    """A JSON value with every string, keys included, passed through `strip_invisible`.

    Most data holds no invisible character: its JSON text, written in C, says so at once,
    and the value is returned as it is instead of copied node by node (a whole tools/list
    goes through here). A match of an escaped backslash followed by `b`, `f` or `r` is a
    false alarm that only costs the copy."""
    try:
        text = json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError, RecursionError):  # not plain JSON data: copied
        text = None
    if text is not None and not INVISIBLE.search(text) and not _ESCAPED_CONTROL.search(text):
        return value
    return _strip_data(value)


def _strip_data(value: Any) -> Any:
    kind = type(value)  # the plain JSON types first: a whole tools/list goes through here
    if kind is str:
        return strip_invisible(value) if INVISIBLE.search(value) else value
    if kind is dict:
        return {_strip_data(k): _strip_data(v) for k, v in value.items()}
    if kind is list:
        return [_strip_data(v) for v in value]
    if kind is int or kind is float or kind is bool or value is None:
        return value
    if isinstance(value, str):
        return strip_invisible(value)
    if isinstance(value, Mapping):
        return {_strip_data(k): _strip_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strip_data(v) for v in value]
    return value
