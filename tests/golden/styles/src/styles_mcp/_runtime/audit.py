"""The audit log: one JSON line for every call that is not read-only and every refusal.

A record holds the time (UTC, ISO 8601), the caller (the token subject over authenticated HTTP,
else `local`), the tool, the arguments with secrets redacted and the SHA-256 digest of their
canonical JSON, the decision (`allowed`, `confirmed`, `declined`, `refused`) and its reason,
the upstream status and the duration in milliseconds. `<P>_AUDIT` chooses where records go:
`stderr` (the default), a file path (appended to), or `off`.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any, TextIO

from .redaction import redact, scrub

__all__ = ["AuditLog", "canonical_digest", "load_audit"]


def canonical_digest(tool_name: str, arguments: Any) -> str:
    """SHA-256 of the canonical JSON of the tool name and arguments (as `confirm` computes)."""
    try:
        canonical = json.dumps(
            {"tool": tool_name, "arguments": arguments},
            sort_keys=True,
            separators=(",", ":"),
            ensure_ascii=True,
            allow_nan=False,
        )
    except (TypeError, ValueError, RecursionError):
        canonical = repr(arguments)
    return hashlib.sha256(canonical.encode("ascii", errors="backslashreplace")).hexdigest()


class AuditLog:
    """Writes audit records as JSON lines; `destination` is `stderr`, `off` or a file path."""

    def __init__(self, destination: str = "stderr", *, stream: TextIO | None = None) -> None:
        self.destination = destination or "stderr"
        self._stream = stream

    @property
    def enabled(self) -> bool:
        return self.destination != "off"

    def record(
        self,
        *,
        caller: str,
        tool: str,
        arguments: Any,
        decision: str,
        reason: str = "",
        status: int | None = None,
        duration_ms: float = 0.0,
        secrets: Iterable[str] = (),
        include_arguments: bool = True,
    ) -> None:
        """Write one record; a failure to write is reported on stderr, never raised.

        With `include_arguments=False` (arguments over the size cap) only their digest is kept.
        """
        if not self.enabled:
            return
        secret_values = tuple(secrets)
        keep = include_arguments and isinstance(arguments, Mapping)
        redacted = scrub(arguments, secret_values) if keep else None
        entry = {
            "time": datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            "caller": redact(caller, secret_values),
            "tool": tool,
            "arguments": redacted,
            "argumentsSha256": canonical_digest(tool, arguments),
            "decision": decision,
            "reason": redact(reason, secret_values),
            "upstreamStatus": status,
            "durationMs": round(duration_ms, 1),
        }
        try:
            line = json.dumps(entry, ensure_ascii=True, sort_keys=True, default=repr)
        except (ValueError, RecursionError):
            entry["arguments"] = None
            line = json.dumps(entry, ensure_ascii=True, sort_keys=True, default=repr)
        try:
            if self._stream is not None:
                self._stream.write(line + "\n")
                self._stream.flush()
            elif self.destination == "stderr":
                sys.stderr.write(line + "\n")
                sys.stderr.flush()
            else:
                with open(self.destination, "a", encoding="utf-8") as file:
                    file.write(line + "\n")
        except OSError as exc:
            sys.stderr.write(f"audit log: cannot write to {self.destination}: {exc}\n")


def load_audit(prefix: str, environ: Mapping[str, str]) -> AuditLog:
    """The audit log `<prefix>_AUDIT` names (`stderr` by default)."""
    return AuditLog(environ.get(f"{prefix}_AUDIT", "").strip() or "stderr")
