"""`settings:` in mcpmint.yaml: run-time settings of the generated server, checked here.

Keys are the suffixes of the variables the runtime reads (`TIMEOUT` for `PETSTORE_TIMEOUT`);
the list of known suffixes is `RUNTIME_SETTINGS` (the same table the generated
REFERENCE.md prints), plus `BASE_URL`, the families `SERVER_<NAME>` (server URL variables)
and `ALLOW_<TOOL>_<ARGUMENT>` (value allowlists). Values become strings in `tools.json`
(`"settings": {"PETSTORE_TIMEOUT": "20"}`); at run time the environment overrides each.

Secrets never go here: `mcpmint.yaml` is committed, and `tools.json` is shipped. A key that
names a credential or the state key is an error that says to set it in the environment.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from typing import Any

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.refs import escape_token

__all__ = ["RUNTIME_SETTINGS", "SECRET_NAME", "check_settings", "known_settings"]

# Credential roles (`_API_KEY`, `_TOKEN`, `_PASSWORD`, `_CLIENT_SECRET`, `_STATE_KEY`, ...):
# checked before known-ness, so the hint says where a secret belongs.
SECRET_NAME = re.compile(
    r"SECRET|PASSWORD|PASSWD|PASSPHRASE|TOKEN|API_?KEY|(^|_)KEY$|CREDENTIAL|BEARER|COOKIE|"
    r"(^|_)USERNAME$|(^|_)CLIENT_ID$"
)
_FAMILIES = ("SERVER_", "ALLOW_")
_BOOLEAN_SETTINGS = frozenset({"READ_ONLY"})  # the settings whose value is a yes/no
_DOCS = "see docs/config.md (settings) for the known settings"


# Run-time settings every generated server reads (docs/safety.md, docs/auth.md),
# what `check_settings` knows and the generated REFERENCE.md prints: one table.
RUNTIME_SETTINGS = (
    ("RETRIES", "retries of GET/HEAD/OPTIONS after connection errors or 502/503/504 (default 2)"),
    ("MAX_RESPONSE_BYTES", "response bytes kept; the rest is cut with a note (default 1 MiB)"),
    ("MAX_ARGUMENT_BYTES", "largest argument object accepted (default 256 KiB)"),
    ("MAX_CONCURRENCY", "upstream requests in flight at once (default 8)"),
    ("WRITE_RATE", "calls per minute per caller to tools that are not read-only (default 60)"),
    ("AUDIT", "audit records: `stderr` (default), a file path, or `off`"),
    ("TIMEOUT", "seconds one upstream exchange may take, connect to last byte (default 30)"),
    (
        "CONFIRM_FALLBACK",
        "clients that cannot ask the user: `refuse` (default) or `token` (a single-use "
        "confirmation token, docs/safety.md)",
    ),
    (
        "METRICS_SUMMARY",
        "call counts and latencies per tool as JSON at exit and on SIGUSR1: `off` (default), "
        "`stderr` or a file path",
    ),
    ("TOOLS_ALLOW", "tools offered: comma-separated names or globs (default all)"),
    ("TOOLS_DENY", "tools hidden: comma-separated names or globs"),
    ("READ_ONLY", "`1` offers only read-only tools"),
    ("TOOL_GROUPS", "tool mode `groups`: the groups listed, comma-separated (default: config)"),
    (
        "AUTH",
        "inbound auth over HTTP: `none` (loopback only, default), `jwt` or `introspection`",
    ),
    ("INTROSPECTION_URL", "RFC 7662 endpoint for opaque tokens (with AUTH=introspection)"),
    (
        "INTROSPECTION_CLIENT_ID",
        "this server's client id at the introspection endpoint (with AUTH=introspection)",
    ),
    ("INTROSPECTION_CLIENT_SECRET", "its client secret (with AUTH=introspection)"),
    ("LIST_TOOLS", "`all` (default) or `permitted`: list only the tools the caller's scopes allow"),
    ("JWKS_URL", "JWKS of the authorization server (with AUTH=jwt)"),
    ("ISSUER", "expected token issuer (with AUTH=jwt)"),
    ("RESOURCE_URL", "this server's canonical URL, the tokens' audience (with AUTH=jwt)"),
)


def known_settings() -> tuple[str, ...]:
    """Every setting suffix the generated server reads (besides the `_FAMILIES`)."""
    return ("BASE_URL", *(suffix for suffix, _ in RUNTIME_SETTINGS))


def check_settings(
    raw: Mapping[str, Any], locate: Callable[[str], str], sink: DiagnosticSink
) -> tuple[tuple[str, str], ...]:
    """The settings as (suffix, text) pairs, sorted; errors (located at the key) in `sink`."""
    known = set(known_settings())
    result: list[tuple[str, str]] = []
    for key, value in raw.items():
        where = locate(f"/settings/{escape_token(str(key))}")
        if SECRET_NAME.search(key):
            sink.error(
                where,
                f"settings: {key} looks like a secret (a credential or the state key); "
                "secrets do not belong in mcpmint.yaml or tools.json",
                f"set it in the environment: <PREFIX>_{key} when the server runs",
            )
            continue
        if key not in known and not (key.startswith(_FAMILIES) and key not in _FAMILIES):
            close = sorted(k for k in known if k.split("_")[0] == key.split("_")[0])
            sink.error(
                where,
                f"settings: unknown setting {key!r}",
                (f"did you mean {', '.join(close)}? " if close else "") + _DOCS,
            )
            continue
        if isinstance(value, bool) and key not in _BOOLEAN_SETTINGS:
            # YAML 1.1 reads off/on/yes/no as booleans: `AUDIT: off` would become "false".
            sink.error(
                where,
                f"settings: {key} is not a yes/no setting, and YAML read its value as a boolean",
                f'write the value in quotes, for example {key}: "off"',
            )
            continue
        text = _text(value)
        if text is None:
            sink.error(where, f"settings: {key} must be a finite number, a string or a boolean")
            continue
        problem = _runtime_problem(key, text)
        if problem is not None:
            sink.error(where, f"settings: {problem}", _DOCS)
            continue
        result.append((key, text))
    return tuple(sorted(result))


def _runtime_problem(key: str, value: str) -> str | None:
    """What the generated server would say about this value at start, from its own readers
    (limits, confirmation fallback, tool filter); None when they accept it."""
    from mcpmint.runtime.allowlist import AllowlistError, ToolFilter
    from mcpmint.runtime.limits import LimitsError, load_limits
    from mcpmint.runtime.tokens import ConfirmSettingsError, load_fallback

    prefix = "<PREFIX>"
    environ = {f"{prefix}_{key}": value}
    try:
        load_limits(prefix, environ)
        load_fallback(prefix, environ)
        ToolFilter.from_environ(prefix, environ)
    except (LimitsError, ConfirmSettingsError, AllowlistError) as exc:
        return str(exc)
    return None


def _text(value: Any) -> str | None:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return repr(value) if math.isfinite(value) else None
    if isinstance(value, str):
        return value
    return None
