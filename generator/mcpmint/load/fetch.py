"""A spec given by URL: fetched once, under rules, into a file the pipeline then reads.

Rules (docs/safety.md's stance on network access, applied to the one fetch a user asks for):
`https://` only, except plain `http://` to a loopback host (a local dev server); every
redirect is checked against the same rules; at most $MCPMINT_FETCH_MAX_BYTES bytes (default
50 MiB) and $MCPMINT_FETCH_TIMEOUT seconds (default 30) for the whole transfer. Nothing else
is ever fetched: a `$ref` in the fetched spec that names another URL stays unresolved with a
warning (load.py), exactly as in a spec read from disk.
"""

from __future__ import annotations

import ipaddress
import os
import re
import time
import urllib.error
import urllib.request
from pathlib import Path, PurePosixPath
from urllib.parse import urlsplit

_URL = re.compile(r"^(https?):/+", re.IGNORECASE)
_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_MAX_REDIRECTS = 5


class FetchError(Exception):
    def __init__(self, message: str, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint


def as_url(text: str) -> str | None:
    """`text` as an http(s) URL, or None. (A URL given where a path is expected has been
    through `pathlib`, which folds `https://` into `https:/`: put back here.)"""
    match = _URL.match(text)
    if match is None:
        return None
    return f"{match.group(1).lower()}://{text[match.end() :]}"


def _limit(name: str, default: float) -> float:
    try:
        return float(os.environ.get(name, default))
    except ValueError:
        return default


def _loopback(host: str) -> bool:
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def check_url(url: str) -> None:
    """Raise FetchError unless `url` may be fetched."""
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return
    if parts.scheme == "http" and parts.hostname and _loopback(parts.hostname):
        return
    if parts.scheme == "http":
        raise FetchError(
            f"refusing to fetch {url}: plain http:// is allowed only to a loopback host",
            "use the spec's https:// URL, or download it and give the file",
        )
    raise FetchError(
        f"refusing to fetch {url}: only https:// URLs (and http:// to a loopback host)",
        "give an https:// URL or a file",
    )


class _Redirects(urllib.request.HTTPRedirectHandler):
    """Each redirect's target passes `check_url` before it is followed."""

    max_redirections = _MAX_REDIRECTS

    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: object,
        code: int,
        msg: str,
        headers: object,
        newurl: str,
    ) -> urllib.request.Request | None:
        try:
            check_url(newurl)
        except FetchError:
            close = getattr(fp, "close", None)
            if close is not None:
                close()  # the redirect's own response, not read further
            raise
        return super().redirect_request(req, fp, code, msg, headers, newurl)  # type: ignore[arg-type]


def file_name(url: str, content_type: str = "") -> str:
    """A file name for the fetched spec: the URL path's last part, made safe, else
    `openapi.json` / `openapi.yaml` by the content type."""
    name = _NAME.sub("_", PurePosixPath(urlsplit(url).path).name).strip("._")
    if name and "." in name:
        return name
    return "openapi.json" if "json" in content_type else "openapi.yaml"


def fetch(url: str) -> tuple[bytes, str]:
    """The bytes at `url` and a file name for them; FetchError on any refusal or failure."""
    check_url(url)
    max_bytes = int(_limit("MCPMINT_FETCH_MAX_BYTES", 50 * 1024 * 1024))
    timeout = _limit("MCPMINT_FETCH_TIMEOUT", 30.0)
    deadline = time.monotonic() + timeout
    opener = urllib.request.build_opener(_Redirects())
    request = urllib.request.Request(
        url, headers={"Accept": "application/json, application/yaml, text/yaml, */*"}
    )
    too_big = FetchError(
        f"{url}: larger than {max_bytes} bytes",
        "raise MCPMINT_FETCH_MAX_BYTES, or download the spec and give the file",
    )
    try:
        with opener.open(request, timeout=timeout) as response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise too_big
            chunks: list[bytes] = []
            size = 0
            while chunk := response.read(65536):
                size += len(chunk)
                if size > max_bytes:
                    raise too_big
                if time.monotonic() > deadline:
                    raise TimeoutError
                chunks.append(chunk)
            name = file_name(response.geturl(), response.headers.get("Content-Type", ""))
    except FetchError:
        raise
    except urllib.error.HTTPError as exc:
        exc.close()
        raise FetchError(f"{url}: HTTP {exc.code} {exc.reason}", "check the URL") from None
    except (TimeoutError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        if isinstance(exc, TimeoutError) or isinstance(reason, TimeoutError):
            raise FetchError(
                f"{url}: no complete answer within {timeout:g} s",
                "raise MCPMINT_FETCH_TIMEOUT, or download the spec and give the file",
            ) from None
        if isinstance(reason, FetchError):
            raise reason from None
        raise FetchError(f"{url}: {reason}", "check the URL and the network") from None
    return b"".join(chunks), name


def fetch_to(url: str, folder: Path) -> Path:
    """Fetch `url` into `folder` (created), replacing a previous copy; the file's path."""
    data, name = fetch(url)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / name
    target.write_bytes(data)
    return target
