"""Scrubbing secret values from text that leaves the server: results, errors and log records."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "SENSITIVE_NAME",
    "TOKEN_LIKE",
    "RedactingFilter",
    "redact",
    "redact_token_like",
    "scrub",
]

# Values that look like well-known credentials whatever name they travel under: GitHub, GitLab,
# OpenAI/Anthropic-style `sk-`, Stripe, Slack, AWS access key ids, Google API keys, npm, JWTs.
# Scrubbed from logs, audit records and confirmation questions (never from API results: data a
# user asked for, such as a token the API just created, is theirs to see).
TOKEN_LIKE = re.compile(
    r"\b(?:"
    r"gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,}|"
    r"sk-[A-Za-z0-9_-]{20,}|[sr]k_(?:live|test)_[A-Za-z0-9]{10,}|xox[abposr]-[A-Za-z0-9-]{10,}|"
    r"AKIA[0-9A-Z]{16}|AIza[0-9A-Za-z_-]{30,}|npm_[A-Za-z0-9]{30,}|"
    r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*"
    r")"
)


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret value replaced by `[REDACTED]`."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[REDACTED]")
    return text


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
        message = record.getMessage()
        cleaned = redact_token_like(redact(message, self._secrets()))
        if cleaned != message:
            record.msg, record.args = cleaned, None
        return True


# Names whose values are never shown, wherever they appear (arguments, body keys, query names).
SENSITIVE_NAME = re.compile(
    r"password|passwd|passphrase|secret|token|api[-_]?key|apikey|authorization|credential|"
    r"private[-_]?key|session[-_]?id|cookie",
    re.IGNORECASE,
)
REDACTED = "[REDACTED]"


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
