"""Cleaning of untrusted spec text that the model will read (titles, descriptions)."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

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
        text = cut_words(text, max_length)
    return text


def one_line(text: str, max_length: int = 120) -> str:
    """A title: cleaned text on one line (its lines joined), cut at a word's end."""
    return cut_words(" ".join(clean_text(text, max_length * 4).split()), max_length)


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


# ---------------------------------------------------------------------- text a model reads
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(\s[^<>]*)?/?>")
_LINK = re.compile(r"(!?)\[([^\]\n]*)\]\(([^()\s]*(?:\([^()\s]*\)[^()\s]*)*)(\s+\"[^\"\n]*\")?\)")
_BLANK_LINES = re.compile(r"\n[ \t]*\n(\s*\n)+")
_SENTENCE_END = re.compile(r"(?<=[a-z0-9)\]`'\"])[.!?](\s|$)")


def html_to_markdown(text: str) -> str:
    """Markdown for text that holds HTML tags (`<p>`, `<code>`, `<a href>`); other text as is.

    markdownify (a well-kept converter, used at generation time only) does the work; the
    runtime never sees HTML.
    """
    if not _TAG.search(text):
        return text
    from markdownify import markdownify  # here: only specs with HTML pay its import

    converted = markdownify(
        text,
        heading_style="ATX",
        bullets="-",
        escape_asterisks=False,
        escape_underscores=False,
        escape_misc=False,
    )
    lines = [line.rstrip() for line in converted.split("\n")]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def docs_base(data: Mapping[str, Any]) -> str:
    """The origin relative documentation links are read against: the spec's externalDocs,
    else its contact's or terms' URL (`https://stripe.com` for "/docs/connect"); "" if none."""
    info = data.get("info") if isinstance(data.get("info"), Mapping) else {}
    assert isinstance(info, Mapping)
    external = data.get("externalDocs") if isinstance(data.get("externalDocs"), Mapping) else {}
    contact = info.get("contact") if isinstance(info.get("contact"), Mapping) else {}
    assert isinstance(external, Mapping) and isinstance(contact, Mapping)
    for url in (external.get("url"), contact.get("url"), info.get("termsOfService")):
        if isinstance(url, str):
            parts = urlsplit(url.strip())
            if parts.scheme in ("http", "https") and parts.netloc:
                return f"{parts.scheme}://{parts.netloc}"
    return ""


def absolute_links(text: str, base: str) -> str:
    """Markdown links made absolute against `base` ("/docs/x" -> base + "/docs/x"); a link
    that cannot be (an anchor, a relative path without a base) keeps only its text."""

    def fix(match: re.Match[str]) -> str:
        bang, label, target = match.group(1), match.group(2), match.group(3)
        parts = urlsplit(target)
        if parts.scheme in ("http", "https", "mailto"):
            return match.group(0)
        if base and target.startswith("/") and not target.startswith("//"):
            return f"{bang}[{label}]({base}{target})"
        return label

    return _LINK.sub(fix, text)


def plain(text: str) -> str:
    """Markdown read as plain words: links to their text, code and bold marks dropped."""
    text = _LINK.sub(lambda m: m.group(2), text)
    text = re.sub(r"`+|\*\*+|^#+\s+", "", text, flags=re.MULTILINE)
    return " ".join(text.split())


def cut_words(text: str, max_length: int) -> str:
    """`text` cut to at most `max_length` characters at a word's end, marked with an ellipsis."""
    if len(text) <= max_length:
        return text
    cut = text[: max_length - 1]
    if " " in cut and not text[max_length - 1].isspace():
        cut = cut.rsplit(" ", 1)[0]
    return cut.rstrip(" ,;:-") + "…"


def first_sentence(text: str) -> str:
    """The first sentence of plain `text`, without its full stop."""
    found = _SENTENCE_END.search(text)
    return (text[: found.start()] if found else text).strip()


def describe_operation(
    summary: str, description: str, fallback_title: str, base: str = ""
) -> tuple[str, str]:
    """An operation's title and description as a model should read them.

    The summary's lines are joined (never cut at the first line); HTML becomes Markdown;
    relative links are made absolute against `base` or reduced to their text. The title is
    the summary, else the description's first sentence, else `fallback_title` (made from the
    name); titles are cut only at a word's end. The description leads with the summary unless
    it already says it.
    """
    summary_text = plain(html_to_markdown(clean_text(summary, 1000)))
    body = absolute_links(html_to_markdown(clean_text(description, MAX_DESCRIPTION * 2)), base)
    body = clean_text(body)
    if summary_text:
        title = cut_words(summary_text.rstrip("."), 120)
    elif body:
        title = cut_words(first_sentence(plain(body)), 120) or fallback_title
    else:
        title = fallback_title
    opening = plain(body)[: len(summary_text) + 1]
    if summary_text and body and not _same_words(opening, summary_text):
        full = f"{summary_text}\n\n{body}"
    else:
        full = body or summary_text
    return title, cut_words(full, MAX_DESCRIPTION) if len(full) > MAX_DESCRIPTION else full


def _same_words(a: str, b: str) -> bool:
    def norm(s: str) -> str:
        return " ".join(re.findall(r"[a-z0-9]+", s.lower()))

    return norm(a).startswith(norm(b)) if norm(b) else False
