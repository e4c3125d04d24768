"""Scrubbing secret values from text that leaves the server: results, errors and log records."""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

__all__ = ["REDACTED", "SENSITIVE_NAME", "RedactingFilter", "redact", "scrub"]


def redact(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret value replaced by `[REDACTED]`."""
    for secret in sorted(secrets, key=len, reverse=True):
        text = text.replace(secret, "[REDACTED]")
    return text


class RedactingFilter(logging.Filter):
    """Rewrites log records that contain a current secret (httpx2 logs every request URL)."""

    def __init__(self, secrets: Callable[[], Iterable[str]]) -> None:
        super().__init__()
        self._secrets = secrets

    def filter(self, record: logging.LogRecord) -> bool:
        """Redact the record in place; never drops it."""
        message = record.getMessage()
        cleaned = redact(message, self._secrets())
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
        return redact(value, secret_values)
    return value
