"""Cleaning of untrusted spec text that the model will read (titles, descriptions)."""

from __future__ import annotations

import re
import unicodedata

MAX_DESCRIPTION = 4000

_ANSI = re.compile(r"\x1b(\[[0-?]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[@-Z\\-_])")
# Bidi overrides and isolates, zero-width characters and the BOM: invisible to a reviewer,
# visible to a model.
_INVISIBLE = re.compile("[\u200b-\u200f\u202a-\u202e\u2060-\u2064\u2066-\u2069\ufeff]")
# In ASCII the control (Cc) characters are these and there is no format (Cf) one: most spec
# text is ASCII, and one `translate` is much faster than a category per character.
_ASCII_CONTROLS = {code: None for code in [*range(0x20), 0x7F] if chr(code) not in "\n\t"}


def clean_text(text: str, max_length: int = MAX_DESCRIPTION) -> str:
    """Strip ANSI escapes, control, bidi and zero-width characters; normalise line ends; cap."""
    text = _ANSI.sub("", text)
    text = _INVISIBLE.sub("", text)
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\u2028", "\n")
    if text.isascii():
        text = text.translate(_ASCII_CONTROLS)
    else:
        text = "".join(
            ch for ch in text if ch in "\n\t" or unicodedata.category(ch) not in ("Cc", "Cf")
        )
    text = text.strip()
    if len(text) > max_length:
        text = text[: max_length - 1].rstrip() + "…"
    return text


def one_line(text: str, max_length: int = 120) -> str:
    """A title: the first line of cleaned text."""
    cleaned = clean_text(text, max_length * 4)
    first = cleaned.split("\n", 1)[0].strip()
    if len(first) > max_length:
        first = first[: max_length - 1].rstrip() + "…"
    return first


# Phrases that address the model rather than describe the API: the shape of a tool-poisoning
# attack. Flagged for the operator to review (an override in mcpmint.yaml replaces the text);
# never silently rewritten, because legitimate descriptions can match too.
_INSTRUCTION_PATTERNS = (
    re.compile(r"<\s*/?\s*(important|system|instructions?|secret)\b", re.IGNORECASE),
    re.compile(r"\bignore\s+(all\s+)?(previous|prior|above)\s+instructions\b", re.IGNORECASE),
    re.compile(r"\b(do\s+not|don't)\s+(tell|mention|inform)\s+the\s+user\b", re.IGNORECASE),
    re.compile(
        r"\b(read|open|cat|send|upload)\b[^.\n]{0,40}(~/\.ssh|id_rsa|\.env\b|/etc/passwd)",
        re.IGNORECASE,
    ),
)


def instruction_like(text: str) -> str:
    """The first phrase of `text` that reads like an instruction to the model, or ""."""
    for pattern in _INSTRUCTION_PATTERNS:
        found = pattern.search(text)
        if found:
            return found.group(0)
    return ""
