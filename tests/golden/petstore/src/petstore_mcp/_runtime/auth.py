"""Inbound authentication over streamable HTTP: the server as an OAuth 2.1 resource server.

Settings come from environment variables named after the catalog's `envPrefix`
(`<P>_AUTH`, `<P>_JWKS_URL`, ...; see `load_settings`). With `<P>_AUTH=jwt` every request to
`/mcp` must carry `Authorization: Bearer <JWT>`; the token's signature is checked against the
authorization server's JWKS, and its algorithm, issuer, audience (the server's canonical
resource URL), expiry and not-before. With `<P>_AUTH=introspection` an opaque token is
checked by the authorization server instead (RFC 7662, `IntrospectionVerifier`). The SDK
serves the RFC 9728 Protected Resource Metadata and answers 401 with a `WWW-Authenticate`
challenge naming it. A `tools/call` whose tool needs OAuth2 scopes the token lacks is refused
with 403 `insufficient_scope` before it reaches the server (`ScopeGate`), and again inside the
handler (`refused_scopes`) for defence in depth; `<P>_LIST_TOOLS=permitted` lists only the
tools a caller may call (`permitted_tools`).

The caller's token never goes upstream: upstream credentials come from the server's own
environment (`credentials.py`) or, per verified caller, from the package's `auth.py` hook
(`caller_credentials`), which may not hand the caller's token back.

One module, over 600 lines: it is copied into every generated package, and keeping inbound
authentication (settings, JWT and introspection verifiers, the scope gate, the metadata)
in one file keeps the security review of a generated server to one place.
"""

from __future__ import annotations

import base64
import hashlib
import ipaddress
import json
import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeGuard
from urllib.parse import quote, urlencode, urlsplit

import anyio
import httpx2
import jwt
import mcp_types as types
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken, TokenVerifier
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.auth.settings import AuthSettings
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE
from pydantic import AnyHttpUrl, BaseModel, ConfigDict
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .catalog import Catalog, Tool
from .content import ResourceSpec
from .credentials import CredentialError, UpstreamCredential
from .modes import meta_names

__all__ = [
    "ALLOWED_ALGORITHMS",
    "DEFAULT_ALGORITHMS",
    "LEEWAY_SECONDS",
    "Caller",
    "InboundAuth",
    "InboundSettings",
    "IntrospectionSettings",
    "IntrospectionVerifier",
    "JwtSettings",
    "JwtVerifier",
    "ScopeGate",
    "ServingSettings",
    "SettingsError",
    "UpstreamCredential",
    "UpstreamCredentialsHook",
    "caller_credentials",
    "is_loopback_host",
    "lists_permitted_only",
    "load_settings",
    "permitted_tools",
    "refused_scopes",
    "scope_alternatives",
]

logger = logging.getLogger(__name__)

ALLOWED_ALGORITHMS = frozenset(
    {"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"}
)
"""Asymmetric signature algorithms only: never `none`, never a shared-secret (HS*) one."""
DEFAULT_ALGORITHMS = ("RS256", "ES256")
LEEWAY_SECONDS = 60.0
MAX_TOKEN_CHARS = 16 * 1024
MAX_JWKS_BYTES = 512 * 1024
JWKS_MAX_AGE_SECONDS = 3600.0
JWKS_MIN_REFRESH_SECONDS = 10.0
_JWKS_TIMEOUT = 10.0
INTROSPECTION_CACHE_SECONDS = 60.0
"""How long an `active` introspection answer is reused at most (a revoked token keeps working
for this long at worst); never past the token's own `exp`."""
MAX_INTROSPECTION_CACHE_SECONDS = 3600.0
MAX_INTROSPECTION_BYTES = 64 * 1024
INTROSPECTION_CACHE_ENTRIES = 10_000

# The key type (and curve) each algorithm family may be verified with.
_KEY_TYPES: Mapping[str, tuple[str, str | None]] = {
    "RS256": ("RSA", None),
    "RS384": ("RSA", None),
    "RS512": ("RSA", None),
    "PS256": ("RSA", None),
    "PS384": ("RSA", None),
    "PS512": ("RSA", None),
    "ES256": ("EC", "P-256"),
    "ES384": ("EC", "P-384"),
    "ES512": ("EC", "P-521"),
    "EdDSA": ("OKP", None),
}


class SettingsError(ValueError):
    """An inbound-auth or serving setting is unusable; the message names the variable."""


@dataclass(frozen=True)
class JwtSettings:
    """What a JWT access token is checked against."""

    jwks_url: str
    issuer: str
    resource_url: str
    authorization_servers: tuple[str, ...]
    algorithms: tuple[str, ...] = DEFAULT_ALGORITHMS
    admin_scopes: tuple[str, ...] = ()
    leeway: float = LEEWAY_SECONDS


@dataclass(frozen=True)
class IntrospectionSettings:
    """Where opaque access tokens are checked (RFC 7662), and what their answers must say."""

    introspection_url: str
    client_id: str
    client_secret: str
    resource_url: str
    authorization_servers: tuple[str, ...]
    issuer: str | None = None  # compared with `iss` when the answer has one
    admin_scopes: tuple[str, ...] = ()
    cache_seconds: float = INTROSPECTION_CACHE_SECONDS
    leeway: float = LEEWAY_SECONDS


InboundSettings = JwtSettings | IntrospectionSettings


@dataclass(frozen=True)
class ServingSettings:
    """The HTTP serving settings: inbound auth (None: `<P>_AUTH=none`) and extra Host/Origin."""

    inbound: InboundSettings | None
    allowed_hosts: tuple[str, ...] = ()
    allowed_origins: tuple[str, ...] = ()

    @property
    def jwt(self) -> InboundSettings | None:
        """The inbound auth settings (the name predates introspection)."""
        return self.inbound


# ------------------------------------------------------------------------------- settings


def load_settings(env_prefix: str, environ: Mapping[str, str]) -> ServingSettings:
    """Read `<P>_AUTH`, `<P>_JWKS_URL`, `<P>_ISSUER`, `<P>_RESOURCE_URL`,
    `<P>_AUTHORIZATION_SERVERS`, `<P>_ALGORITHMS`, `<P>_ADMIN_SCOPES`, `<P>_ALLOWED_HOSTS` and
    `<P>_ALLOWED_ORIGINS`; with `<P>_AUTH=introspection`, `<P>_INTROSPECTION_URL`,
    `<P>_INTROSPECTION_CLIENT_ID`, `<P>_INTROSPECTION_CLIENT_SECRET` and
    `<P>_INTROSPECTION_CACHE_SECONDS` instead of the JWT ones.

    Raises:
        SettingsError: a setting is missing or invalid; the message names the variable.
    """
    p = env_prefix
    hosts = tuple(
        _host(item, f"{p}_ALLOWED_HOSTS") for item in _items(environ, f"{p}_ALLOWED_HOSTS")
    )
    origins = tuple(
        _origin(item, f"{p}_ALLOWED_ORIGINS") for item in _items(environ, f"{p}_ALLOWED_ORIGINS")
    )
    mode = environ.get(f"{p}_AUTH", "").strip().lower() or "none"
    if mode == "none":
        return ServingSettings(None, hosts, origins)
    if mode == "introspection":
        return ServingSettings(_introspection_settings(p, environ), hosts, origins)
    if mode != "jwt":
        raise SettingsError(f"{p}_AUTH must be 'none', 'jwt' or 'introspection'")
    issuer = _url(environ, f"{p}_ISSUER")
    resource = _resource_url(p, environ)
    servers = _authorization_servers(p, environ)
    algorithms = _items(environ, f"{p}_ALGORITHMS") or DEFAULT_ALGORITHMS
    for algorithm in algorithms:
        if algorithm.lower() == "none" or algorithm.upper().startswith("HS"):
            raise SettingsError(
                f"{p}_ALGORITHMS must never include 'none' or a shared-secret (HS*) algorithm"
            )
        if algorithm not in ALLOWED_ALGORITHMS:
            raise SettingsError(
                f"{p}_ALGORITHMS: unsupported algorithm; use some of "
                + ", ".join(sorted(ALLOWED_ALGORITHMS))
            )
    return ServingSettings(
        JwtSettings(
            jwks_url=_url(environ, f"{p}_JWKS_URL"),
            issuer=issuer,
            resource_url=resource,
            authorization_servers=servers or (issuer,),
            algorithms=tuple(dict.fromkeys(algorithms)),
            admin_scopes=_items(environ, f"{p}_ADMIN_SCOPES"),
        ),
        hosts,
        origins,
    )


def _resource_url(p: str, environ: Mapping[str, str], mode: str = "jwt") -> str:
    resource = _url(environ, f"{p}_RESOURCE_URL", mode)
    parts = urlsplit(resource)
    if parts.query or not parts.path or parts.path == "/":
        raise SettingsError(
            f"{p}_RESOURCE_URL must be the server's canonical URL with its path and no query, "
            "for example https://mcp.example.com/mcp"
        )
    return resource


def _authorization_servers(p: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    return tuple(
        _check_url(item, f"{p}_AUTHORIZATION_SERVERS")
        for item in _items(environ, f"{p}_AUTHORIZATION_SERVERS")
    )


def _introspection_settings(p: str, environ: Mapping[str, str]) -> IntrospectionSettings:
    url = _url(environ, f"{p}_INTROSPECTION_URL", "introspection")
    client_id = environ.get(f"{p}_INTROSPECTION_CLIENT_ID", "")
    secret = environ.get(f"{p}_INTROSPECTION_CLIENT_SECRET", "")
    for variable, value in (
        (f"{p}_INTROSPECTION_CLIENT_ID", client_id),
        (f"{p}_INTROSPECTION_CLIENT_SECRET", secret),
    ):
        if not value:
            raise SettingsError(f"{variable} must be set when inbound auth is introspection")
        if any(ord(c) < 0x20 or ord(c) >= 0x7F for c in value):
            raise SettingsError(f"{variable} must hold printable ASCII characters only")
    issuer = environ.get(f"{p}_ISSUER", "").strip()
    if issuer:
        _check_url(issuer, f"{p}_ISSUER")
    servers = _authorization_servers(p, environ) or ((issuer,) if issuer else ())
    if not servers:
        raise SettingsError(
            f"{p}_ISSUER or {p}_AUTHORIZATION_SERVERS must be set when inbound auth is "
            "introspection (clients find the authorization server through them)"
        )
    raw_ttl = environ.get(f"{p}_INTROSPECTION_CACHE_SECONDS", "").strip()
    try:
        ttl = float(raw_ttl) if raw_ttl else INTROSPECTION_CACHE_SECONDS
    except ValueError:
        ttl = -1.0
    if not 0 <= ttl <= MAX_INTROSPECTION_CACHE_SECONDS:
        raise SettingsError(
            f"{p}_INTROSPECTION_CACHE_SECONDS must be a number of seconds from 0 (no cache) "
            f"to {MAX_INTROSPECTION_CACHE_SECONDS:g}"
        )
    return IntrospectionSettings(
        introspection_url=url,
        client_id=client_id,
        client_secret=secret,
        resource_url=_resource_url(p, environ, "introspection"),
        authorization_servers=servers,
        issuer=issuer or None,
        admin_scopes=_items(environ, f"{p}_ADMIN_SCOPES"),
        cache_seconds=ttl,
    )


def admin_scopes(env_prefix: str, environ: Mapping[str, str]) -> tuple[str, ...]:
    """`<P>_ADMIN_SCOPES`: scopes that satisfy every tool's scope requirement."""
    return _items(environ, f"{env_prefix}_ADMIN_SCOPES")


def is_loopback_host(host: str) -> bool:
    """Whether `host` (a name or an address, IPv6 possibly in brackets) is this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _items(environ: Mapping[str, str], variable: str) -> tuple[str, ...]:
    return tuple(item.strip() for item in environ.get(variable, "").split(",") if item.strip())


def _url(environ: Mapping[str, str], variable: str, mode: str = "jwt") -> str:
    value = environ.get(variable, "").strip()
    if not value:
        raise SettingsError(f"{variable} must be set when inbound auth is {mode}")
    return _check_url(value, variable)


def _check_url(value: str, variable: str) -> str:
    """An absolute https URL (http only to a loopback host), without credentials or fragment."""
    try:
        parts = urlsplit(value)
        hostname = parts.hostname
        parts.port  # noqa: B018 - raises on a malformed port
    except ValueError:
        raise SettingsError(f"{variable} is not a valid URL") from None
    if parts.scheme not in ("https", "http") or not hostname:
        raise SettingsError(f"{variable} must be an absolute https URL")
    if parts.scheme == "http" and not is_loopback_host(hostname):
        raise SettingsError(f"{variable} must use https (plain http only to a loopback address)")
    if parts.username is not None or parts.password is not None or parts.fragment:
        raise SettingsError(f"{variable} must not contain credentials or a fragment")
    return value


def _host(value: str, variable: str) -> str:
    if any(c in value for c in "/@ \t\"'") or value.startswith(":"):
        raise SettingsError(f"{variable}: each entry is a host name, optionally with :port")
    return value


def _origin(value: str, variable: str) -> str:
    parts = urlsplit(value)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query:
        raise SettingsError(f"{variable}: each entry is an origin such as https://app.example.com")
    return value


# ------------------------------------------------------------------------------- JWT


@dataclass(frozen=True)
class _Key:
    kid: str | None
    kty: str
    crv: str | None
    alg: str | None
    key: Any


class JwtVerifier(TokenVerifier):
    """A `TokenVerifier` for JWT access tokens signed with keys from a JWKS URL.

    Keys are fetched on first use, kept for `max_age` seconds, and fetched again once when a
    token names an unknown `kid` (key rotation), at most once every `min_refresh` seconds. A
    failed fetch keeps the previous keys. Every failure gives `None`: the SDK answers 401.
    """

    def __init__(
        self,
        settings: JwtSettings,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
        max_age: float = JWKS_MAX_AGE_SECONDS,
        min_refresh: float = JWKS_MIN_REFRESH_SECONDS,
    ) -> None:
        self._settings = settings
        self._transport = transport
        self._clock = clock
        self._wall_clock = wall_clock
        self._max_age = max_age
        self._min_refresh = min_refresh
        self._keys: tuple[_Key, ...] = ()
        self._fetched_at: float | None = None
        self._attempted_at: float | None = None
        self._lock = anyio.Lock()
        self.fetches = 0
        """How many times the JWKS was requested (for tests and diagnostics)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        try:
            return await self._verify(token)
        except Exception as exc:  # a token is attacker input: any failure is a refusal (401)
            logger.info("bearer token refused: %s", type(exc).__name__)
            return None

    async def _verify(self, token: str) -> AccessToken | None:
        s = self._settings
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        header = jwt.get_unverified_header(token)
        algorithm = header.get("alg")
        if not isinstance(algorithm, str) or algorithm not in s.algorithms:
            logger.info("bearer token refused: algorithm not allowed")
            return None
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            return None
        candidates = await self._keys_for(kid, algorithm)
        if not candidates:
            logger.info("bearer token refused: no matching key in the JWKS")
            return None
        claims: dict[str, Any] | None = None
        for key in candidates:
            try:
                claims = jwt.decode(
                    token,
                    key=key.key,
                    algorithms=[algorithm],
                    audience=s.resource_url,
                    issuer=s.issuer,
                    leeway=s.leeway,
                    options={"require": ["exp", "iss", "aud"]},
                )
                break
            except jwt.InvalidSignatureError:
                continue
        if claims is None:
            logger.info("bearer token refused: bad signature")
            return None
        return _access_token(token, claims, s.resource_url)

    async def _keys_for(self, kid: str | None, algorithm: str) -> list[_Key]:
        now = self._clock()
        if self._fetched_at is None or now - self._fetched_at >= self._max_age:
            await self._refresh()
        found = self._matching(kid, algorithm)
        if not found and kid is not None:
            await self._refresh()  # a rotated key: look once more (rate-limited)
            found = self._matching(kid, algorithm)
        return found

    def _matching(self, kid: str | None, algorithm: str) -> list[_Key]:
        kty, crv = _KEY_TYPES[algorithm]
        return [
            k
            for k in self._keys
            if k.kid == kid
            and k.kty == kty
            and (crv is None or k.crv == crv)
            and (k.alg is None or k.alg == algorithm)
        ]

    async def _refresh(self) -> None:
        async with self._lock:
            now = self._clock()
            if self._attempted_at is not None and now - self._attempted_at < self._min_refresh:
                return
            self._attempted_at = now
            self.fetches += 1
            try:
                document = await self._fetch()
            except (httpx2.HTTPError, ValueError) as exc:
                logger.warning("could not fetch the JWKS: %s", type(exc).__name__)
                return
            self._keys = _parse_jwks(document)
            self._fetched_at = now

    async def _fetch(self) -> Any:
        async with (
            httpx2.AsyncClient(
                transport=self._transport, timeout=_JWKS_TIMEOUT, follow_redirects=False
            ) as client,
            client.stream(
                "GET", self._settings.jwks_url, headers={"Accept": "application/json"}
            ) as response,
        ):
            body = await _read_capped(response, MAX_JWKS_BYTES, "JWKS too large")
        return json.loads(body)


async def _read_capped(response: httpx2.Response, limit: int, too_large: str) -> bytes:
    """The body of a 200 answer, read no further than `limit` bytes (a hostile or broken
    server may send without end); anything else is a ValueError."""
    if response.status_code != 200:
        raise ValueError(f"HTTP {response.status_code}")
    body = bytearray()
    async for chunk in response.aiter_bytes():
        body.extend(chunk)
        if len(body) > limit:
            raise ValueError(too_large)
    return bytes(body)


def _parse_jwks(document: Any) -> tuple[_Key, ...]:
    keys: list[_Key] = []
    entries = document.get("keys") if isinstance(document, dict) else None
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
            continue
        if "d" in entry or entry.get("kty") == "oct":
            continue  # never a private or a symmetric key
        try:
            parsed = jwt.PyJWK(entry)
        except jwt.PyJWTError:
            continue
        kid, alg, crv = entry.get("kid"), entry.get("alg"), entry.get("crv")
        keys.append(
            _Key(
                kid=kid if isinstance(kid, str) else None,
                kty=str(entry.get("kty")),
                crv=crv if isinstance(crv, str) else None,
                alg=alg if isinstance(alg, str) else None,
                key=parsed.key,
            )
        )
    return tuple(keys)


class IntrospectionVerifier(TokenVerifier):
    """A `TokenVerifier` for opaque access tokens, asking the authorization server (RFC 7662).

    The server authenticates to the introspection endpoint with HTTP Basic (its own client id
    and secret). Only `"active": true` answers are accepted, then `exp`, `nbf`, `iss` (against
    `<P>_ISSUER`) and `aud` (against the resource URL) are checked where the answer has them.
    Active answers are cached by the token's SHA-256 for at most `cache_seconds` and never
    past `exp`; inactive answers and failures are not cached, and every failure is `None`
    (the SDK answers 401).
    """

    def __init__(
        self,
        settings: IntrospectionSettings,
        *,
        transport: httpx2.AsyncBaseTransport | None = None,
        clock: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._settings = settings
        self._transport = transport
        self._clock = clock
        self._wall_clock = wall_clock
        self._cache: dict[bytes, tuple[float, AccessToken]] = {}
        self.requests = 0
        """How many introspection requests were sent (for tests and diagnostics)."""

    async def verify_token(self, token: str) -> AccessToken | None:
        if not token or len(token) > MAX_TOKEN_CHARS:
            return None
        key = hashlib.sha256(token.encode()).digest()
        cached = self._cache.get(key)
        if cached is not None:
            if cached[0] > self._clock():
                return cached[1]
            del self._cache[key]
        try:
            answer = await self._introspect(token)
        except (httpx2.HTTPError, ValueError) as exc:
            logger.warning("token introspection failed: %s", type(exc).__name__)
            return None
        checked = self._check(token, answer)
        if checked is None:
            return None
        access, lifetime = checked
        if lifetime > 0:
            if len(self._cache) >= INTROSPECTION_CACHE_ENTRIES:
                self._evict()
            self._cache[key] = (self._clock() + lifetime, access)
        return access

    def _check(self, token: str, answer: Any) -> tuple[AccessToken, float] | None:
        """The access token and how long it may be cached, or None when refused."""
        s = self._settings
        if not isinstance(answer, dict) or answer.get("active") is not True:
            logger.info("bearer token refused: not active")
            return None
        now = self._wall_clock()
        exp, nbf = answer.get("exp"), answer.get("nbf")
        if exp is not None and (not _is_number(exp) or exp + s.leeway <= now):
            logger.info("bearer token refused: expired")
            return None
        if nbf is not None and (not _is_number(nbf) or nbf - s.leeway > now):
            logger.info("bearer token refused: not yet valid")
            return None
        if s.issuer is not None and "iss" in answer and answer["iss"] != s.issuer:
            logger.info("bearer token refused: another issuer")
            return None
        if "aud" in answer and not _audience_matches(answer["aud"], s.resource_url):
            logger.info("bearer token refused: another audience")
            return None
        lifetime = s.cache_seconds if exp is None else min(s.cache_seconds, float(exp) - now)
        return _access_token(token, answer, s.resource_url), lifetime

    def _evict(self) -> None:
        now = self._clock()
        for key in [k for k, (until, _) in self._cache.items() if until <= now]:
            del self._cache[key]
        while len(self._cache) >= INTROSPECTION_CACHE_ENTRIES:
            del self._cache[next(iter(self._cache))]  # the oldest entry

    async def _introspect(self, token: str) -> Any:
        s = self._settings
        self.requests += 1
        credentials = base64.b64encode(
            f"{quote(s.client_id, safe='')}:{quote(s.client_secret, safe='')}".encode()
        ).decode("ascii")
        async with (
            httpx2.AsyncClient(
                transport=self._transport, timeout=_JWKS_TIMEOUT, follow_redirects=False
            ) as client,
            client.stream(
                "POST",
                s.introspection_url,
                headers={
                    "Accept": "application/json",
                    "Authorization": f"Basic {credentials}",
                    "Content-Type": "application/x-www-form-urlencoded",
                },
                content=urlencode({"token": token, "token_type_hint": "access_token"}),
            ) as response,
        ):
            body = await _read_capped(
                response, MAX_INTROSPECTION_BYTES, "introspection answer too large"
            )
        return json.loads(body)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _audience_matches(aud: Any, resource: str) -> bool:
    if isinstance(aud, str):
        return aud == resource
    return isinstance(aud, list) and resource in aud


def _access_token(token: str, claims: dict[str, Any], resource: str) -> AccessToken:
    scope = claims.get("scope")
    scp = claims.get("scp")
    scopes: list[str] = []
    if isinstance(scope, str):
        scopes = scope.split()
    elif isinstance(scp, list):
        scopes = [s for s in scp if isinstance(s, str)]
    elif isinstance(scp, str):
        scopes = scp.split()
    client_id = next(
        (v for v in (claims.get("client_id"), claims.get("azp")) if isinstance(v, str)), ""
    )
    subject = claims.get("sub")
    exp = claims.get("exp")
    return AccessToken(
        token=token,
        client_id=client_id,
        scopes=list(dict.fromkeys(scopes)),
        expires_at=int(exp) if _is_number(exp) else None,
        resource=resource,
        subject=subject if isinstance(subject, str) else None,
        claims=claims,
    )


# ------------------------------------------------------------------------------- scopes


def scope_alternatives(tool: Tool) -> tuple[tuple[str, ...], ...]:
    """The scope sets that each allow calling `tool`: one per security alternative that names
    OAuth2 scopes (all the scopes of its schemes). Empty: the tool needs no inbound scope.

    Alternatives without scopes (an API key, no credentials at all) grant nothing here: a
    spec that asks for scopes on one of its paths marks the operation as privileged.
    """
    found: dict[tuple[str, ...], None] = {}
    for alternative in tool.security:
        scopes = tuple(sorted({s for requirement in alternative for s in requirement.scopes}))
        if scopes:
            found[scopes] = None
    if tool.scopes:  # a manifest's own `scopes` are needed whichever alternative is used
        own = set(tool.scopes)
        return tuple(tuple(sorted(own.union(alt))) for alt in found) or (tuple(sorted(own)),)
    return tuple(found)


def refused_scopes(
    alternatives: Sequence[tuple[str, ...]], granted: Iterable[str], admin: Iterable[str] = ()
) -> tuple[str, ...]:
    """`()` when `granted` satisfies one alternative (or holds an admin scope); otherwise the
    scopes to ask for: all the scopes of the alternative missing the fewest (first on a tie).
    """
    if not alternatives:
        return ()
    have = set(granted)
    if have & set(admin):
        return ()
    best: tuple[str, ...] = alternatives[0]
    fewest = len(alternatives[0]) + 1
    for scopes in alternatives:
        missing = len(set(scopes) - have)
        if missing == 0:
            return ()
        if missing < fewest:
            best, fewest = scopes, missing
    return best


def lists_permitted_only(env_prefix: str, environ: Mapping[str, str]) -> bool:
    """`<P>_LIST_TOOLS`: `all` (default) lists every tool; `permitted` lists to an
    authenticated caller only the tools its token's scopes allow.

    Raises:
        SettingsError: another value.
    """
    variable = f"{env_prefix}_LIST_TOOLS"
    value = environ.get(variable, "").strip().lower() or "all"
    if value not in ("all", "permitted"):
        raise SettingsError(f"{variable} must be 'all' or 'permitted'")
    return value == "permitted"


def permitted_tools(
    tools: Sequence[types.Tool],
    requirements: Mapping[str, tuple[tuple[str, ...], ...]],
    token: AccessToken | None,
    admin: Iterable[str] = (),
) -> list[types.Tool]:
    """The tools `token` may call (the same rule as `refused_scopes`); all of them when there
    is no verified caller (stdio, in memory). Hiding a tool is a convenience for the model,
    not a defence: calls are checked whatever was listed."""
    if token is None:
        return list(tools)
    admin = tuple(admin)
    return [
        tool
        for tool in tools
        if not refused_scopes(requirements.get(tool.name, ()), token.scopes, admin)
    ]


class ScopeGate:
    """ASGI middleware refusing a `tools/call` the caller's token has no scope for, with 403.

    It runs after the SDK's authentication middleware (it reads the verified token from
    `scope["user"]`) and peeks the JSON-RPC body: nothing reaches the MCP server when the
    tool's scopes are lacking. Unauthenticated requests pass on to the SDK's 401.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        requirements: Mapping[str, tuple[tuple[str, ...], ...]],
        admin: tuple[str, ...],
        resource_metadata_url: str,
        dispatcher: str | None = None,
        max_body: int = DEFAULT_MAX_REQUEST_BODY_SIZE,
        resources: Sequence[ResourceSpec] = (),
    ) -> None:
        self.app = app
        self._resources = tuple(resources)
        self._requirements = requirements
        self._dispatcher = dispatcher
        self._admin = admin
        self._metadata = resource_metadata_url
        self._max_body = max_body

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user")
        if (
            scope["type"] != "http"
            or scope.get("method") != "POST"
            or not isinstance(user, AuthenticatedUser)
        ):
            await self.app(scope, receive, send)
            return
        messages, body, complete = await _peek(receive, self._max_body)

        async def replay() -> Message:
            return messages.pop(0) if messages else await receive()

        if complete:
            try:
                message = json.loads(body, object_pairs_hook=_unique_keys)
                names = _called_tools(message, self._dispatcher, self._resources)
            except _DuplicateKeyError:
                await _plain(send, 400, b"Duplicate keys in the JSON-RPC message")
                return
            except ValueError:
                names = []  # not JSON: the SDK answers with a parse error
            granted = user.access_token.scopes
            for name in names:
                needed = refused_scopes(self._requirements.get(name, ()), granted, self._admin)
                if needed:
                    logger.info("tools/call %s refused: insufficient scope", name)
                    await self._insufficient_scope(send, needed)
                    return
        await self.app(scope, replay, send)

    async def _insufficient_scope(self, send: Send, scopes: tuple[str, ...]) -> None:
        wanted = " ".join(scopes)
        description = "The access token lacks the scope this tool requires"
        challenge = (
            f'Bearer error="insufficient_scope", scope={_quoted(wanted)}, '
            f"resource_metadata={_quoted(self._metadata)}, "
            f"error_description={_quoted(description)}"
        )
        body = json.dumps(
            {"error": "insufficient_scope", "error_description": description, "scope": wanted}
        ).encode()
        await send(
            {
                "type": "http.response.start",
                "status": 403,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode("latin-1", "replace")),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


class _DuplicateKeyError(ValueError):
    pass


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    # Two `name`s in one message could be read differently here and by the SDK's parser.
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise _DuplicateKeyError(key)
        result[key] = value
    return result


def _called_tools(
    message: Any, dispatcher: str | None = None, resources: Sequence[ResourceSpec] = ()
) -> list[str]:
    """The tools a JSON-RPC message (or batch) calls. A call of dynamic mode's `dispatcher`
    (`<ns>_call_tool`) calls the tool named in its arguments: that tool's scopes apply. A
    `resources/read` of an HTTP resource calls the tool of the resource's name (S18)."""
    items = message if isinstance(message, list) else [message]
    names: list[str] = []
    for item in items:
        if isinstance(item, dict) and item.get("method") == "resources/read":
            params = item.get("params")
            uri = params.get("uri") if isinstance(params, dict) else None
            if isinstance(uri, str):
                names += [r.name for r in resources if r.match(uri) is not None][:1]
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str):
                names.append(name)
            if dispatcher is not None and name == dispatcher and isinstance(params, dict):
                arguments = params.get("arguments")
                inner = arguments.get("name") if isinstance(arguments, dict) else None
                if isinstance(inner, str):
                    names.append(inner)
    return names


async def _peek(receive: Receive, limit: int) -> tuple[list[Message], bytes, bool]:
    """Read the request body up to `limit` bytes; the messages read, for replay."""
    messages: list[Message] = []
    body = bytearray()
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, bytes(body), False
        body.extend(message.get("body", b""))
        if not message.get("more_body", False):
            return messages, bytes(body), True
        if len(body) > limit:
            return messages, bytes(body), False


async def _plain(send: Send, status: int, text: bytes) -> None:
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"text/plain"),
                (b"content-length", str(len(text)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": text})


def _quoted(value: str) -> str:
    cleaned = "".join(c for c in value if " " <= c <= "~")
    return '"' + cleaned.replace("\\", "\\\\").replace('"', '\\"') + '"'


# ------------------------------------------------------------------------------- caller hooks


@dataclass(frozen=True)
class Caller:
    """The verified caller of a tool over HTTP with inbound auth, as the package's `auth.py`
    hooks see it: from the access token, after every check passed."""

    subject: str | None  # `sub`: unique per issuer
    client_id: str  # `client_id` or `azp`
    scopes: tuple[str, ...]
    claims: Mapping[str, Any]  # every claim of the JWT, or every field of the introspection
    token: str = field(repr=False)
    """The caller's own access token: only for a token exchange (RFC 8693) with your
    authorization server. Never send it upstream; a hook credential equal to it is refused."""

    @classmethod
    def from_access_token(cls, token: AccessToken) -> Caller:
        return cls(
            subject=token.subject,
            client_id=token.client_id,
            scopes=tuple(token.scopes),
            claims=dict(token.claims or {}),
            token=token.token,
        )


UpstreamCredentialsHook = Callable[[Caller, str, str], Awaitable[UpstreamCredential | None]]
"""`async (caller, tool_name, scheme_name) -> UpstreamCredential | None` (None: the
environment's credentials for that scheme)."""


async def caller_credentials(
    hook: UpstreamCredentialsHook | None, tool: Tool, token: AccessToken | None
) -> dict[str, UpstreamCredential]:
    """The hook's credentials for every scheme `tool` may use, by scheme name; empty without a
    hook or without a verified caller (stdio, in memory, `<P>_AUTH=none`).

    Raises:
        CredentialError: the hook failed or returned the caller's own token.
    """
    if hook is None or token is None:
        return {}
    caller = Caller.from_access_token(token)
    schemes = dict.fromkeys(req.scheme for alternative in tool.security for req in alternative)
    found: dict[str, UpstreamCredential] = {}
    for scheme in schemes:
        try:
            credential = await hook(caller, tool.name, scheme)
        except Exception as exc:
            logger.exception("the auth.py upstream_credentials hook failed")
            raise CredentialError(
                f"Could not choose upstream credentials for this caller (auth.py hook: "
                f"{type(exc).__name__}). No request was sent."
            ) from None
        if credential is None:
            continue
        if token.token in (credential.value, credential.password):
            # The caller's token is for this server only (RFC 8707 audience): never upstream.
            raise CredentialError(
                "Refused: the auth.py hook returned the caller's own access token as an "
                f"upstream credential for {scheme}. No request was sent."
            )
        found[scheme] = credential
    return found


# ------------------------------------------------------------------------------- wiring


class _Urls(BaseModel):
    # `AnyHttpUrl("https://as.example.com")` would add a trailing slash, and issuers are
    # compared as exact strings (RFC 8414): keep URLs exactly as configured.
    model_config = ConfigDict(url_preserve_empty_path=True)
    urls: list[AnyHttpUrl]


def _http_urls(*urls: str) -> list[AnyHttpUrl]:
    return _Urls.model_validate({"urls": list(urls)}).urls


class InboundAuth:
    """Inbound auth for one server (JWT or introspection): the verifier, the SDK settings,
    the scope gate."""

    def __init__(
        self,
        settings: InboundSettings,
        catalog: Catalog,
        *,
        verifier: TokenVerifier | None = None,
        transport: httpx2.AsyncBaseTransport | None = None,
    ) -> None:
        self.settings = settings
        if verifier is None:
            verifier = (
                JwtVerifier(settings, transport=transport)
                if isinstance(settings, JwtSettings)
                else IntrospectionVerifier(settings, transport=transport)
            )
        self.verifier: TokenVerifier = verifier
        self.requirements = {tool.name: scope_alternatives(tool) for tool in catalog.tools}
        # A resource read needs the scopes of the tool it is gated as (server._gate, S18).
        self.resources = tuple(r for r in catalog.resources if r.reader is not None)
        for resource in self.resources:
            assert resource.reader is not None
            self.requirements.setdefault(resource.name, scope_alternatives(resource.reader))
        # Dynamic mode calls tools through one dispatcher tool; the gate looks inside it.
        self.dispatcher = (
            meta_names(catalog.server.namespace)[2] if catalog.modes.mode == "dynamic" else None
        )
        self.resource_metadata_url = str(
            build_resource_metadata_url(_http_urls(settings.resource_url)[0])
        )

    @property
    def scopes_supported(self) -> list[str]:
        found = {s for alternatives in self.requirements.values() for a in alternatives for s in a}
        return sorted(found | set(self.settings.admin_scopes))

    def auth_settings(self) -> AuthSettings:
        return AuthSettings(
            issuer_url=_http_urls(self.settings.authorization_servers[0])[0],
            resource_server_url=_http_urls(self.settings.resource_url)[0],
            # The verifier checks `aud` itself; the SDK checks `resource` again.
            validate_token_resource=True,
            required_scopes=None,
        )

    def install(self, app: Starlette) -> None:
        """Serve our Protected Resource Metadata (every authorization server, the scopes the
        tools use) in place of the SDK's, and gate `tools/call` on scopes."""
        ours = create_protected_resource_routes(
            resource_url=_http_urls(self.settings.resource_url)[0],
            authorization_servers=_http_urls(*self.settings.authorization_servers),
            scopes_supported=self.scopes_supported or None,
        )
        paths = {route.path for route in ours}
        app.router.routes[:] = [
            r for r in app.router.routes if not (isinstance(r, Route) and r.path in paths)
        ] + list(ours)
        # Innermost of the app's middleware: after authentication has set `scope["user"]`.
        app.user_middleware.append(
            Middleware(
                ScopeGate,
                requirements=self.requirements,
                admin=self.settings.admin_scopes,
                resource_metadata_url=self.resource_metadata_url,
                dispatcher=self.dispatcher,
                resources=self.resources,
            )
        )
