"""Outbound credentials for the upstream API, read only from environment variables.

A tool's `security` is a list of alternatives (OR), each a list of schemes (AND). The first
alternative whose variables are all set is used; when none is, the call fails closed with a
message naming the variables to set. Tool arguments never supply credentials (G17), and
secret values are kept so that any text leaving the server can be scrubbed of them.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from urllib.parse import quote, urlencode, urljoin

import anyio

from .catalog import Catalog, SecurityRequirement, SecurityScheme, Tool
from .request import PreparedRequest
from .upstream import UpstreamError, UpstreamResponse
from .upstreams import split_base_url

__all__ = ["CredentialError", "Credentials", "Plan", "UpstreamCredential"]

Sender = Callable[[PreparedRequest, str], Awaitable[UpstreamResponse]]
"""Sends a request that must stay on the given origin (the token endpoint's)."""

_DEFAULT_TOKEN_LIFETIME = 300.0
_MAX_TOKEN_LIFETIME = 86400.0
_MIN_SECRET = 4
_REMEMBERED_SECRETS = 1024  # per-caller credentials kept for scrubbing text and logs


class CredentialError(Exception):
    """Credentials are missing or unusable; the message names variables, never values."""


@dataclass(frozen=True)
class UpstreamCredential:
    """A credential for one upstream security scheme, chosen per caller by the package's
    `auth.upstream_credentials` hook in place of the scheme's environment variables.

    `value` is the API key (apiKey schemes) or the access token (http bearer, oauth2,
    openIdConnect: sent as `Authorization: Bearer <value>`, no token endpoint involved);
    `username` and `password` are for http basic.
    """

    value: str = field(default="", repr=False)
    username: str = ""
    password: str = field(default="", repr=False)

    def secrets(self) -> tuple[str, ...]:
        basic = _basic(self.username, self.password) if self.username or self.password else ""
        return tuple(v for v in (self.value, self.password, basic) if v)


@dataclass(frozen=True)
class Plan:
    """The schemes chosen for one call: an alternative whose variables are all set (or whose
    schemes the caller's `overrides` cover)."""

    requirements: tuple[SecurityRequirement, ...]
    overrides: Mapping[str, UpstreamCredential] = field(default_factory=dict)


@dataclass
class _Token:
    value: str
    expires_at: float


@dataclass
class _Applied:
    headers: list[tuple[str, str]] = field(default_factory=list)
    query: list[str] = field(default_factory=list)
    cookies: list[str] = field(default_factory=list)


class Credentials:
    """Chooses and applies a tool's upstream credentials; caches client-credentials tokens."""

    def __init__(
        self,
        catalog: Catalog,
        environ: Mapping[str, str],
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._schemes = catalog.security_schemes
        self._environ = environ
        self._clock = clock
        self._tokens: dict[tuple[str, tuple[str, ...]], _Token] = {}
        self._locks: dict[tuple[str, tuple[str, ...]], anyio.Lock] = {}
        self._remembered: dict[str, None] = {}

    def select(self, tool: Tool, overrides: Mapping[str, UpstreamCredential] | None = None) -> Plan:
        """The first satisfied alternative of `tool.security`; no I/O. A scheme named in
        `overrides` (the caller's own credentials, from the `auth.py` hook) is satisfied by
        it whatever the environment holds.

        Raises:
            CredentialError: no alternative can be satisfied.
        """
        overrides = dict(overrides or {})
        if not tool.security:
            return Plan(())
        needs: list[str] = []
        for alternative in tool.security:
            missing = [
                m
                for req in alternative
                if req.scheme not in overrides
                for m in self._missing(self._schemes[req.scheme])
            ]
            if not missing:
                used = {r.scheme: overrides[r.scheme] for r in alternative if r.scheme in overrides}
                for credential in used.values():
                    self._remember(credential.secrets())
                return Plan(alternative, used)
            needs.append(_all(missing))
        raise CredentialError(
            f"The tool {tool.name} needs upstream credentials that are not configured. "
            f"Set {'; or '.join(needs)} in the server's environment. No request was sent."
        )

    async def apply(
        self, plan: Plan, request: PreparedRequest, base_url: str, send: Sender
    ) -> PreparedRequest:
        """`request` with the plan's credentials added; may fetch an OAuth2 token.

        Raises:
            CredentialError: a value is unusable or a token cannot be obtained.
        """
        applied = _Applied()
        for req in plan.requirements:
            scheme = self._schemes[req.scheme]
            override = plan.overrides.get(req.scheme)
            if override is None:
                await self._apply_one(scheme, req.scopes, applied, base_url, send)
            else:
                _apply_override(scheme, override, applied)
        names = [name.lower() for name, _ in applied.headers]
        clashing = sorted({n for n in names if names.count(n) > 1})
        if clashing:
            raise CredentialError(
                f"Two security schemes of this tool both set the {clashing[0]} header; "
                "configure only one of them. No request was sent."
            )
        headers = [h for h in request.headers if h[0].lower() != "cookie"]
        headers.extend(applied.headers)
        cookie = "; ".join(
            [v for k, v in request.headers if k.lower() == "cookie"] + applied.cookies
        )
        if cookie:
            headers.append(("Cookie", cookie))
        url = request.url
        if applied.query:
            url += ("&" if "?" in url else "?") + "&".join(applied.query)
        return replace(request, url=url, headers=tuple(headers))

    def forget_tokens(self, plan: Plan) -> None:
        """Drop cached OAuth2 tokens of the plan (after the upstream refused one)."""
        for req in plan.requirements:
            self._tokens.pop((req.scheme, tuple(sorted(req.scopes))), None)

    def secrets(self) -> frozenset[str]:
        """Every secret value in use, in the forms it may take on the wire, for `redact`."""
        values: set[str] = set()
        for scheme in self._schemes.values():
            for role, var in scheme.env.items():
                if role not in ("username", "clientId") and self._environ.get(var):
                    values.add(self._environ[var])
            user, password = scheme.env.get("username"), scheme.env.get("password")
            if scheme.scheme == "basic" and user and password:
                values.add(_basic(self._environ.get(user, ""), self._environ.get(password, "")))
        values.update(t.value for t in self._tokens.values())
        values.update(self._remembered)
        values.update({quote(v, safe="") for v in values})
        return frozenset(v for v in values if len(v) >= _MIN_SECRET)

    # ------------------------------------------------------------------------- internals

    def _remember(self, values: tuple[str, ...]) -> None:
        for value in values:
            self._remembered.pop(value, None)
            self._remembered[value] = None  # most recent last
        while len(self._remembered) > _REMEMBERED_SECRETS:
            del self._remembered[next(iter(self._remembered))]

    def _var(self, scheme: SecurityScheme, role: str) -> str:
        var = scheme.env.get(role, "")
        return self._environ.get(var, "") if var else ""

    def _missing(self, scheme: SecurityScheme) -> list[str]:
        """Variables still to set for `scheme`, or a note when it cannot be used at all."""
        env = scheme.env

        def unset(*roles: str) -> list[str]:
            return [
                env.get(r, f"<the {r} variable of {scheme.name}>")
                for r in roles
                if not self._var(scheme, r)
            ]

        if scheme.type == "apiKey":
            return unset("value")
        if scheme.type == "http" and scheme.scheme == "bearer":
            return unset("token")
        if scheme.type == "http" and scheme.scheme == "basic":
            return unset("username", "password")
        if scheme.type == "openIdConnect":
            return unset("token")
        if scheme.type == "oauth2":
            if self._var(scheme, "token"):
                return []
            if scheme.token_url and not unset("clientId", "clientSecret"):
                return []
            options = unset("token")
            if scheme.token_url:
                options.append(_all(unset("clientId", "clientSecret")))
            return [" (or ".join(options) + ")" * (len(options) - 1)]
        return [f"<a supported scheme instead of {scheme.name} ({scheme.type} {scheme.scheme})>"]

    async def _apply_one(
        self,
        scheme: SecurityScheme,
        scopes: tuple[str, ...],
        applied: _Applied,
        base_url: str,
        send: Sender,
    ) -> None:
        if scheme.type == "apiKey":
            _place_api_key(scheme, self._checked(scheme, "value"), applied)
        elif scheme.type == "http" and scheme.scheme == "basic":
            user, password = self._checked(scheme, "username"), self._checked(scheme, "password")
            applied.headers.append(("Authorization", "Basic " + _basic(user, password)))
        elif scheme.type == "oauth2" and not self._var(scheme, "token"):
            token = await self._client_credentials(scheme, scopes, base_url, send)
            applied.headers.append(("Authorization", f"Bearer {token}"))
        else:
            applied.headers.append(("Authorization", f"Bearer {self._checked(scheme, 'token')}"))

    def _checked(self, scheme: SecurityScheme, role: str) -> str:
        value = self._var(scheme, role)
        if any(ord(c) < 0x20 or ord(c) >= 0x7F for c in value):
            raise CredentialError(
                f"The variable {scheme.env[role]} holds characters that cannot be sent in an "
                "HTTP request (control or non-ASCII characters). No request was sent."
            )
        return value

    async def _client_credentials(
        self, scheme: SecurityScheme, scopes: tuple[str, ...], base_url: str, send: Sender
    ) -> str:
        key = (scheme.name, tuple(sorted(scopes)))
        lock = self._locks.setdefault(key, anyio.Lock())
        # One fetch at a time per key: concurrent calls wait for it and share the token.
        async with lock:
            cached = self._tokens.get(key)
            if cached is not None and cached.expires_at > self._clock():
                return cached.value
            token, lifetime = await self._fetch_token(scheme, scopes, base_url, send)
            # Renew shortly before expiry so a token never dies in flight.
            margin = min(30.0, lifetime / 10)
            self._tokens[key] = _Token(token, self._clock() + lifetime - margin)
            return token

    async def _fetch_token(
        self, scheme: SecurityScheme, scopes: tuple[str, ...], base_url: str, send: Sender
    ) -> tuple[str, float]:
        url = urljoin(base_url, scheme.token_url)
        try:
            origin, _ = split_base_url(url.split("?", 1)[0])
        except ValueError:
            raise CredentialError(
                f"The token URL of security scheme {scheme.name} is not an absolute http(s) URL."
            ) from None
        form = {
            "grant_type": "client_credentials",
            "client_id": self._checked(scheme, "clientId"),
            "client_secret": self._checked(scheme, "clientSecret"),
        }
        if scopes:
            form["scope"] = " ".join(scopes)
        request = PreparedRequest(
            method="POST",
            url=url,
            headers=(
                ("Accept", "application/json"),
                ("Content-Type", "application/x-www-form-urlencoded"),
            ),
            body=urlencode(form).encode("ascii"),
        )
        what = f"the OAuth2 token endpoint of security scheme {scheme.name}"
        try:
            response = await send(request, origin)
        except UpstreamError as exc:
            raise CredentialError(f"Could not obtain a token from {what}: {exc}") from None
        hint = f"check {scheme.env['clientId']} and {scheme.env['clientSecret']}"
        if not 200 <= response.status < 300:
            raise CredentialError(
                f"Could not obtain a token: {what} answered HTTP {response.status} "
                f"{response.reason}; {hint}. No request was sent."
            )
        try:
            data = json.loads(response.body)
        except ValueError:
            data = None
        token = data.get("access_token") if isinstance(data, dict) else None
        kind = data.get("token_type", "bearer") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token or str(kind).lower() != "bearer":
            raise CredentialError(
                f"Could not obtain a token: {what} did not return a bearer access_token. "
                "No request was sent."
            )
        if any(ord(c) < 0x21 or ord(c) >= 0x7F for c in token):
            raise CredentialError(f"{what} returned a token that cannot be sent in a header.")
        expires_in = data.get("expires_in") if isinstance(data, dict) else None
        lifetime = _DEFAULT_TOKEN_LIFETIME
        if isinstance(expires_in, int | float) and not isinstance(expires_in, bool):
            lifetime = min(max(0.0, float(expires_in)), _MAX_TOKEN_LIFETIME)
        return token, lifetime


def _place_api_key(scheme: SecurityScheme, value: str, applied: _Applied) -> None:
    """An API key where its scheme says: a header, a query parameter or a cookie."""
    if scheme.location == "header":
        applied.headers.append((scheme.param_name, value))
    elif scheme.location == "query":
        applied.query.append(f"{quote(scheme.param_name, safe='')}={quote(value, safe='')}")
    else:
        applied.cookies.append(f"{scheme.param_name}={quote(value, safe='')}")


def _apply_override(
    scheme: SecurityScheme, credential: UpstreamCredential, applied: _Applied
) -> None:
    """Send a hook's credential the way `scheme` says, with the same checks as the
    environment's values."""

    def checked(value: str, what: str) -> str:
        if not value or any(ord(c) < 0x20 or ord(c) >= 0x7F for c in value):
            raise CredentialError(
                f"The auth.py hook returned an unusable {what} for security scheme "
                f"{scheme.name} (empty, or control or non-ASCII characters). No request was sent."
            )
        return value

    if scheme.type == "apiKey":
        _place_api_key(scheme, checked(credential.value, "value"), applied)
    elif scheme.type == "http" and scheme.scheme == "basic":
        user = checked(credential.username, "username")
        password = checked(credential.password, "password")
        applied.headers.append(("Authorization", "Basic " + _basic(user, password)))
    elif (scheme.type == "http" and scheme.scheme == "bearer") or scheme.type in (
        "oauth2",
        "openIdConnect",
    ):
        applied.headers.append(("Authorization", f"Bearer {checked(credential.value, 'token')}"))
    else:
        raise CredentialError(
            f"Security scheme {scheme.name} cannot take a credential from the auth.py hook. "
            "No request was sent."
        )


def _basic(user: str, password: str) -> str:
    return base64.b64encode(f"{user}:{password}".encode()).decode("ascii")


def _all(names: list[str]) -> str:
    if len(names) == 1:
        return names[0]
    if len(names) == 2:
        return f"both {names[0]} and {names[1]}"
    return "all of " + ", ".join(names[:-1]) + " and " + names[-1]
