"""Scrubbing secret values from text that leaves the server: results, errors and log records."""

from __future__ import annotations

import base64
import functools
import json
import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote, quote_plus

__all__ = [
    "REDACTED",
    "SENSITIVE_NAME",
    "TOKEN_LIKE",
    "RedactingFilter",
    "encoded_forms",
    "redact",
    "redact_data",
    "redact_parameters",
    "redact_token_like",
    "scrub",
]

# Values that look like well-known credentials whatever name they travel under: GitHub, GitLab,
# OpenAI/Anthropic-style `sk-`, Stripe, Slack, AWS access key ids, Google API keys, npm, JWTs.
# Scrubbed from logs, audit records and confirmation questions (never from API results: data a
# user asked for, such as a token the API just created, is theirs to see).
REDACTED = "[REDACTED]"
TOKEN_LIKE = re.compile(
    r"\b(?:"
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|"
    r"sk-[A-Za-z0-9_-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|xox[abposr]-[A-Za-z0-9-]{10,}|"
    r"AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|npm_[A-Za-z0-9]{30,}|"
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r")"
)


# Values of secret-looking query and form parameters (`access_token=...`), in log lines.
_SECRET_PARAMETER = re.compile(
    r"(?i)((?:^|[?&;\s\"'])[\w.-]*(?:password|passwd|secret|token|api[-_]?key|apikey|"
    r"signature|credential|session[-_]?id|authorization)[\w.-]*=)[^&\s\"'#]+"
)
_MIN_BASE64_INNER = 8


@functools.lru_cache(maxsize=512)
def encoded_forms(secret: str) -> tuple[str, ...]:
    """`secret` as it may appear in text that leaves the server (S19): raw, JSON-escaped
    (with and without `\\/` and `\\uXXXX` for non-ASCII), URL-encoded (`%20` and `+`, upper
    and lower hex), and base64 (standard and URL-safe, padded or not, and the characters of its
    encoding inside a longer base64 text at each of the three byte alignments). Longest first.
    """
    forms = {secret}
    for escaped in (json.dumps(secret)[1:-1], json.dumps(secret, ensure_ascii=False)[1:-1]):
        forms.update((escaped, escaped.replace("/", "\\/")))
    for url in (quote(secret, safe=""), quote_plus(secret, safe=""), quote(secret)):
        forms.update((url, re.sub(r"%[0-9A-F]{2}", lambda m: m.group().lower(), url)))
    raw = secret.encode("utf-8", errors="surrogatepass")
    encoded: set[str] = set()
    for align in range(3):
        whole = base64.b64encode(b"\0" * align + raw).decode("ascii")
        inner = whole[-(-8 * align // 6) : 8 * (align + len(raw)) // 6]
        if align == 0:
            encoded.update((whole, whole.rstrip("=")))
        if len(inner) >= _MIN_BASE64_INNER:
            encoded.add(inner)
    forms.update(encoded)
    forms.update(f.replace("+", "-").replace("/", "_") for f in encoded)
    return tuple(sorted((f for f in forms if f), key=len, reverse=True))


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret value, in each of its `encoded_forms`, replaced."""
    for secret in sorted(secrets, key=len, reverse=True):
        if not secret:
            continue
        for form in encoded_forms(secret):
            if form in text:
                text = text.replace(form, REDACTED)
    return text


def redact_data(value: Any, secrets: Iterable[str]) -> Any:
    """A JSON value with `redact` applied to every string, keys included."""
    secret_values = tuple(secrets)
    if not secret_values:
        return value
    if isinstance(value, str):
        return redact(value, secret_values)
    if isinstance(value, Mapping):
        return {
            redact_data(k, secret_values): redact_data(v, secret_values) for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_data(v, secret_values) for v in value]
    return value


def redact_parameters(text: str) -> str:
    """`text` with the values of secret-looking `name=value` parameters replaced."""
    return _SECRET_PARAMETER.sub(lambda m: m.group(1) + REDACTED, text)


def redact_token_like(text: str) -> str:
    """`text` with every value shaped like a well-known credential replaced."""
    return TOKEN_LIKE.sub(REDACTED, text)


class RedactingFilter(logging.Filter):
    """Rewrites log records that contain a current secret (httpx2 logs every request URL)."""

    def __init__(self, secrets: Callable[[], Iterable[str]]) -> None:
        super().__init__()
        self._secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the record in place; never drops it."""
        secrets = tuple(self._secrets())
        try:
            message = record.getMessage()
        except Exception:  # a malformed record: its own text, unformatted
            message = str(record.msg)
        cleaned = redact_parameters(redact_token_like(redact(message, secrets)))
        if cleaned != message:
            record.msg, record.args = cleaned, None
        if record.exc_info:  # a traceback quotes values (an exception's text, a local's repr)
            record.exc_text = logging.Formatter().formatException(record.exc_info)
            record.exc_info = None
        if record.exc_text:
            record.exc_text = redact_parameters(redact_token_like(redact(record.exc_text, secrets)))
        return True


# Names whose values are never shown, wherever they appear (arguments, body keys, query names).
SENSITIVE_NAME = re.compile(
    r"password|passwd|passphrase|secret|token|api[-_]?key|apikey|authorization|credential|"
    r"private[-_]?key|session[-_]?id|cookie",
    re.IGNORECASE,
)


def scrub(value: Any, secrets: Iterable[str] = ()) -> Any:
    """A copy of a JSON value: values under secret-looking keys replaced, secrets redacted."""
    secret_values = tuple(secrets)
    if isinstance(value, Mapping):
        return {
            k: REDACTED
            if isinstance(k, str) and SENSITIVE_NAME.search(k)
            else scrub(v, secret_values)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [scrub(v, secret_values) for v in value]
    if isinstance(value, str):
        return redact_token_like(redact(value, secret_values))
    return value
