"""Scrubbing secret values from text that leaves the server: results, errors and log records."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

__all__ = ["RedactingFilter", "redact"]


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
