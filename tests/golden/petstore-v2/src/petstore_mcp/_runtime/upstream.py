"""Sending prepared requests to the upstream API with `httpx2`.

One client per server, created on first use. Redirects are never followed (a 302 to an
internal address must not carry our credentials there), cookies from responses are never kept
(they would leak between calls), and the whole exchange has a deadline, not only each read.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
import weakref
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from http.cookiejar import CookieJar, DefaultCookiePolicy
from urllib.parse import quote, urlsplit

import anyio
import httpx2

from .addresses import forbidden_address
from .catalog import Catalog, Upstream
from .limits import RETRY_METHODS, RETRY_STATUSES, Limits, retry_delay
from .redaction import RedactingFilter
from .request import PreparedRequest
from .upstreams import BaseUrlError, expand_url_template, server_variable_env, split_base_url

__all__ = [
    "MAX_RESPONSE_BYTES",
    "UpstreamClient",
    "UpstreamError",
    "UpstreamResponse",
    "UpstreamTimeout",
    "header_text",
    "resolve_base_url",
    "server_variable_env",
]

# Past the configured cap a body is still counted (not kept) up to this many bytes, so that the
# truncation note can say how much was cut.
MAX_RESPONSE_BYTES = 10 * 1024 * 1024
_CONNECT_TIMEOUT = 10.0
_HTTPX_LOGGER = logging.getLogger("httpx2")
# A logger's filters see only the records logged on that very logger, not its children's: so
# the redacting filter goes on httpx2's logger and on each of this runtime's own loggers.
_REDACTED_LOGGERS = (
    _HTTPX_LOGGER,
    # uvicorn's access log prints request paths with their query strings.
    logging.getLogger("uvicorn.access"),
    logging.getLogger("uvicorn.error"),
    *(
        logging.getLogger(f"{__package__}.{name}")
        for name in (
            "server",
            "upstream",
            "credentials",
            "auth",
            "confirm",
            "results",
            "boundary",
            "hooks",
        )
    ),
)
logger = logging.getLogger(__name__)
# Every client alive in this process; the one redacting filter asks each for its secrets.
_LIVE: weakref.WeakSet[UpstreamClient] = weakref.WeakSet()


def _live_secrets() -> list[str]:
    return [secret for client in list(_LIVE) for secret in client.secrets()]


# Installed once, for the whole process: a filter per server would pile up on these loggers.
_LOG_FILTER = RedactingFilter(_live_secrets)
for _log in _REDACTED_LOGGERS:
    _log.addFilter(_LOG_FILTER)


_TCHAR = frozenset("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")


def header_text(text: str, *, name: bool = False) -> str:
    """`text` as a valid HTTP header value (or, `name=True`, field name) whatever it holds
    (S25): spec text (a title, a version with an ellipsis or a Greek letter, a media type)
    becomes headers here. Printable ASCII is kept, controls are dropped, any other character
    is percent-encoded as UTF-8 (`…` is `%E2%80%A6`); in a name, every non-token character
    is. Argument values are checked before this (request.py refuses what is not printable
    ASCII), so for them this changes nothing."""
    out: list[str] = []
    for ch in text:
        code = ord(ch)
        if (ch in _TCHAR) if name else (0x20 <= code < 0x7F or ch == "\t"):
            out.append(ch)
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            continue
        else:
            out.append(quote(ch, safe="", errors="backslashreplace"))
    return "".join(out).strip() or ("X" if name else "")


class UpstreamError(Exception):
    """The upstream could not be reached or used; the message is safe to show the model."""


class UpstreamTimeout(UpstreamError):
    """The upstream did not answer in time (told apart for metrics and the audit)."""


@dataclass(frozen=True)
class UpstreamResponse:
    """What came back, read whole (within `MAX_RESPONSE_BYTES`)."""

    status: int
    reason: str
    content_type: str
    body: bytes
    location: str = ""
    # Bytes cut after the cap: 0 when the body is whole; -1 when more than
    # MAX_RESPONSE_BYTES - len(body) were cut (the rest was not even counted).
    truncated: int = 0
    attempts: int = 1


def resolve_base_url(catalog: Catalog, environ: Mapping[str, str]) -> str:
    """The base URL to use: `<envPrefix>_BASE_URL` if set, else the spec's server URL.

    The spec's server URL may have variables (G16). Their values are operator settings, read
    only from `<envPrefix>_SERVER_<NAME>` (else the spec's default), never from a tool call;
    a variable with an `enum` takes only a value from it, and a free-form one only characters
    that cannot change the URL's structure (no `@`, `?`, `#`, `%`, spaces).

    Raises:
        UpstreamError: no absolute http(s) URL, or a server variable's value is refused; the
            message names the variable.
    """
    prefix = catalog.server.env_prefix
    variable = f"{prefix}_BASE_URL"
    configured = environ.get(variable, "")
    url = configured or catalog.upstream.base_url
    if not configured and catalog.upstream.url_template:
        url = _expand_template(catalog, environ)
    if not url:
        raise UpstreamError(
            f"The upstream API's base URL is not configured: set {variable} to its absolute "
            "http:// or https:// URL. No request was sent."
        )
    try:
        split_base_url(url)
    except ValueError as exc:
        source = variable if configured else "the spec's server URL"
        raise UpstreamError(
            f"{source} is not usable ({exc}); set {variable} to the API's absolute http:// or "
            "https:// URL. No request was sent."
        ) from None
    return url


def _expand_template(catalog: Catalog, environ: Mapping[str, str]) -> str:
    # The rules are upstreams.py's, shared with the other sources' upstreams.
    variables = {name: (v.default, v.enum) for name, v in catalog.upstream.variables.items()}
    prefix = catalog.server.env_prefix
    try:
        return expand_url_template(catalog.upstream.url_template, variables, prefix, environ)
    except BaseUrlError as exc:
        raise UpstreamError(str(exc)) from None


class UpstreamClient:
    """The server's HTTP client for the upstream API (and for OAuth2 token endpoints)."""

    def __init__(
        self,
        settings: Upstream,
        *,
        user_agent: str,
        transport: httpx2.AsyncBaseTransport | None = None,
        secrets: Callable[[], Iterable[str]] = frozenset,
        limits: Limits | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
    ) -> None:
        self._limits = Limits() if limits is None else limits
        self._sleep = sleep
        self._slots = anyio.CapacityLimiter(self._limits.max_concurrency)
        self._timeout = self._limits.timeout or settings.timeout_seconds  # <P>_TIMEOUT wins
        self.secrets = secrets  # for the process-wide redacting log filter
        _LIVE.add(self)
        self._user_agent = user_agent
        self._transport = transport
        self._client: httpx2.AsyncClient | None = None

    async def send(self, request: PreparedRequest, *, origin: str) -> UpstreamResponse:
        """Send `request`, which must stay on `origin` (`scheme://host[:port]`).

        GET, HEAD and OPTIONS are retried (at most `Limits.retries` times) after a connect
        error or a 502, 503 or 504, with exponential backoff that honours `Retry-After`; no
        other method is ever retried. At most `Limits.max_concurrency` requests are in flight.

        Raises:
            UpstreamError: network failure, timeout; no secrets in it.
        """
        retryable = request.method.upper() in RETRY_METHODS
        attempt = 0
        while True:
            try:
                async with self._slots:
                    response = await self._send_once(request, origin=origin)
            except _ConnectFailed as exc:
                if not retryable or attempt >= self._limits.retries:
                    raise UpstreamError(str(exc)) from None
                delay = retry_delay(attempt, "")
            else:
                if (
                    not retryable
                    or response.status not in RETRY_STATUSES
                    or attempt >= self._limits.retries
                ):
                    return _with_attempts(response, attempt + 1)
                delay = retry_delay(attempt, response.retry_after)
                if delay is None:  # the upstream asks for a longer pause than we wait
                    return _with_attempts(response, attempt + 1)
            attempt += 1
            logger.info("retrying %s in %.1f s (attempt %d)", request.method, delay, attempt + 1)
            await self._sleep(delay or 0.0)

    async def _send_once(self, request: PreparedRequest, *, origin: str) -> _Response:
        client = self._get_client()
        headers = [(header_text(k, name=True), header_text(v)) for k, v in request.headers]
        built = client.build_request(
            request.method, request.url, headers=headers, content=request.body
        )
        # httpx2 parses the URL again; refuse if its reading of the origin differs from ours.
        if _origin(built.url.scheme, built.url.host, built.url.port) != _origin_of(origin):
            raise UpstreamError("refused: the request URL does not stay on the upstream origin")
        where = f"{request.method} {origin}"
        if self._transport is None:  # the network: connect only to an address checked here
            await _pin_address(built, where)
        try:
            with anyio.fail_after(self._timeout):
                response = await client.send(built, stream=True)
                try:
                    body, truncated = await _read_capped(response, self._limits.max_response_bytes)
                finally:
                    await response.aclose()
        except (TimeoutError, httpx2.TimeoutException):
            raise UpstreamTimeout(
                f"The upstream API did not answer within {self._timeout:g} seconds ({where})."
            ) from None
        except httpx2.ConnectError:
            raise _ConnectFailed(f"Could not connect to the upstream API ({where}).") from None
        except httpx2.HTTPError as exc:
            raise UpstreamError(
                f"Network error talking to the upstream API ({where}): {type(exc).__name__}."
            ) from None
        return _Response(
            UpstreamResponse(
                status=response.status_code,
                reason=response.reason_phrase,
                content_type=response.headers.get("content-type", ""),
                body=body,
                location=response.headers.get("location", ""),
                truncated=truncated,
            ),
            response.headers.get("retry-after", ""),
        )

    async def aclose(self) -> None:
        """Close the connection pool; a later `send` opens a new one."""
        client, self._client = self._client, None
        if client is not None:
            await client.aclose()

    def _get_client(self) -> httpx2.AsyncClient:
        if self._client is None:
            # httpx2 logs every request URL at INFO, query-string API keys included: the
            # redacting filter (`_LOG_FILTER`) is on its logger.
            self._client = httpx2.AsyncClient(
                transport=self._transport,
                follow_redirects=False,
                timeout=httpx2.Timeout(self._timeout, connect=min(self._timeout, _CONNECT_TIMEOUT)),
                cookies=CookieJar(policy=DefaultCookiePolicy(allowed_domains=[])),
                headers={"User-Agent": header_text(self._user_agent)},
            )
        return self._client


async def _resolve(host: str, port: int) -> list[str]:
    """The addresses `host` resolves to (tests replace this to play DNS)."""
    found = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(sockaddr[0]) for *_, sockaddr in found]


async def _pin_address(built: httpx2.Request, where: str) -> None:
    """Resolve the request's host once, refuse a metadata or link-local address among what it
    resolves to (S23), and send to that very address: the name stays in the Host header and
    in TLS (SNI and certificate checks), so a second lookup cannot lead elsewhere."""
    host = built.url.host
    port = built.url.port or (443 if built.url.scheme == "https" else 80)
    try:
        addresses = await _resolve(host, port)
    except OSError:
        raise _ConnectFailed(f"Could not resolve the upstream API's host ({where}).") from None
    parsed = []
    for text in addresses:
        try:
            parsed.append(ipaddress.ip_address(text.split("%", 1)[0]))
        except ValueError:
            continue
    refused = [a for a in parsed if forbidden_address(a)]
    if refused or not parsed:
        what = f"{refused[0]}, a metadata or link-local address" if refused else "no address"
        raise UpstreamError(
            f"refused: the upstream host resolves to {what}; nothing was sent ({where})."
        )
    address = str(parsed[0])
    if address != host.strip("[]"):
        if built.url.scheme == "https":
            built.extensions = {**built.extensions, "sni_hostname": host}
        built.url = built.url.copy_with(host=address)


class _ConnectFailed(Exception):
    """A connect error (nothing reached the upstream): safe to retry for any retryable method."""


@dataclass(frozen=True)
class _Response:
    response: UpstreamResponse
    retry_after: str

    @property
    def status(self) -> int:
        return self.response.status


def _with_attempts(sent: _Response, attempts: int) -> UpstreamResponse:
    r = sent.response
    return UpstreamResponse(
        r.status, r.reason, r.content_type, r.body, r.location, r.truncated, attempts
    )


async def _read_capped(response: httpx2.Response, cap: int) -> tuple[bytes, int]:
    """The body's first `cap` bytes, and how many bytes were cut after them (-1: uncounted)."""
    chunks: list[bytes] = []
    kept = 0
    seen = 0
    # Counting decoded bytes also bounds a compressed body that would expand without limit.
    async for chunk in response.aiter_bytes():
        seen += len(chunk)
        if kept < cap:
            part = chunk[: cap - kept]
            chunks.append(part)
            kept += len(part)
        if seen > max(cap, MAX_RESPONSE_BYTES):
            return b"".join(chunks), -1
    return b"".join(chunks), seen - kept


def _origin(scheme: str, host: str, port: int | None) -> tuple[str, str, int]:
    default = 443 if scheme == "https" else 80
    return scheme, host.lower(), port or default


def _origin_of(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    return _origin(parts.scheme, parts.hostname or "", parts.port)
