"""Turning validated arguments into an HTTP request, as OpenAPI's `style` and `explode` say.

Pure: no environment, no network, no `mcp`. The generator imports it to compute the request a
generated test should expect. Every character an argument contributes to the URL is
percent-encoded, so only this module's own delimiters can shape the path and the query.
"""

from __future__ import annotations

import base64
import binascii
import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote, urlsplit

from .catalog import RESERVED_HEADERS, FormEncoding, Parameter, Tool
from .upstreams import DEFAULT_PORTS, split_base_url

__all__ = [
    "ArgumentError",
    "PreparedRequest",
    "build_request",
    "new_boundary",
    "split_base_url",
    "without_nulls",
]

# RFC 3986 pchar minus "%" (so that a literal "%" in a template cannot forge an escape), plus "/".
_TEMPLATE_SAFE = "/!$&'()*+,;=:@-._~"


class ArgumentError(ValueError):
    """An argument value cannot be sent; `argument` names it for the model."""

    def __init__(self, argument: str, message: str) -> None:
        super().__init__(f"{argument}: {message}")
        self.argument = argument
        self.message = message


@dataclass(frozen=True)
class PreparedRequest:
    """Everything the upstream will receive, before credentials are added."""

    method: str
    url: str
    headers: tuple[tuple[str, str], ...]
    body: bytes | None


def build_request(
    tool: Tool, arguments: Mapping[str, Any], base_url: str, *, boundary: str | None = None
) -> PreparedRequest:
    """Build the upstream request of `tool` for already-validated `arguments`.

    Args:
        tool: the catalog entry.
        arguments: the tool arguments, checked against the input schema.
        base_url: an absolute http(s) URL; its path is the prefix of every request path.
        boundary: a multipart body's boundary; a fresh random one when None (the generator
            fixes it, so that the recorded test cases are byte-identical run after run).

    Raises:
        ArgumentError: a value cannot be sent safely (a dot segment in a path parameter,
            CR/LF/NUL in a header, a missing required parameter...).
        ValueError: `base_url` is not an absolute http(s) URL without query or credentials.
    """
    origin, base_path = split_base_url(base_url)
    spec = tool.request
    if spec is None:
        raise ValueError(f"tool {tool.name} is a handler tool; it has no HTTP request")
    if tool.meta.get("nullsAbsent") is True:
        # Strict-mode schemas make every property required and the optional ones nullable:
        # an explicit null is how a client says "not given", at every level.
        arguments = without_nulls(arguments)
    path = _render_path(spec.path, spec.parameters, arguments)
    query: list[str] = []
    headers: list[tuple[str, str]] = []
    cookies: list[str] = []
    for param in spec.parameters:
        if param.argument not in arguments or arguments[param.argument] is None:
            if param.required:
                raise ArgumentError(param.argument, "required argument is missing")
            continue
        value = arguments[param.argument]
        if param.location == "query":
            query.extend(_query_pairs(param, value))
        elif param.location == "header":
            headers.append((param.name, _header_value(param, value)))
        elif param.location == "cookie":
            cookies.extend(_cookie_pairs(param, value))
    body, content_type = _body(tool, arguments, boundary)
    if spec.accept:
        headers.insert(0, ("Accept", spec.accept))
    if content_type:
        headers.insert(1 if spec.accept else 0, ("Content-Type", content_type))
    if cookies:
        headers.append(("Cookie", "; ".join(cookies)))
    for name, _ in headers:
        # Catalog loading refuses these already; this keeps the rule true for any Tool value.
        if name.lower() in RESERVED_HEADERS - {"accept", "content-type", "cookie"}:
            raise ArgumentError(name, f"a parameter cannot set the {name} header")
    url = origin + base_path + path + ("?" + "&".join(query) if query else "")
    _check_same_origin(url, base_url, base_path)
    return PreparedRequest(method=spec.method, url=url, headers=tuple(headers), body=body)


def without_nulls(value: Any) -> Any:
    """`value` without null object members, at every level (strict-mode "not given")."""
    if isinstance(value, Mapping):
        return {k: without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def _check_same_origin(url: str, base_url: str, base_path: str) -> None:
    final, base = urlsplit(url), urlsplit(base_url)
    same = (
        final.scheme == base.scheme
        and final.hostname == base.hostname
        and (final.port or DEFAULT_PORTS[final.scheme]) == (base.port or DEFAULT_PORTS[base.scheme])
        and final.path.startswith(base_path + "/")
        and not final.fragment
    )
    if not same:  # unreachable while every argument character is percent-encoded
        raise AssertionError("the request URL left the base URL's origin")


# ----------------------------------------------------------------------------- values


def _text(value: object) -> str:
    """A scalar as it appears on the wire: JSON's spelling for booleans, numbers and null."""
    if isinstance(value, str):
        return value
    if value is None or isinstance(value, bool | int | float):
        return json.dumps(value)
    # OpenAPI leaves nested values undefined; compact JSON keeps them lossless.
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def _enc(text: str) -> str:
    return quote(text, safe="")


def _items(value: object) -> list[str] | None:
    """Array items as text, or None when `value` is not an array."""
    if isinstance(value, list | tuple):
        return [_text(v) for v in value]
    return None


def _pairs(value: object) -> list[tuple[str, str]] | None:
    """Object members as text, or None when `value` is not an object."""
    if isinstance(value, Mapping):
        return [(str(k), _text(v)) for k, v in value.items()]
    return None


# ----------------------------------------------------------------------------- path


def _render_path(template: str, params: tuple[Parameter, ...], arguments: Mapping[str, Any]) -> str:
    rendered: dict[str, str] = {}
    for param in params:
        if param.location != "path":
            continue
        if param.argument not in arguments or arguments[param.argument] is None:
            raise ArgumentError(param.argument, "required argument is missing")
        rendered[param.name] = _path_segment(param, arguments[param.argument])
    out = []
    rest = template
    while "{" in rest:
        head, _, tail = rest.partition("{")
        name, _, rest = tail.partition("}")
        out.append(quote(head, safe=_TEMPLATE_SAFE))
        out.append(rendered[name])
    out.append(quote(rest, safe=_TEMPLATE_SAFE))
    return "".join(out)


def _path_segment(param: Parameter, value: object) -> str:
    if param.style == "json":  # a parameter described by `content`: its JSON text, encoded
        text = _json_text(value)
        _refuse_traversal(param.argument, text)
        return _enc(text)
    items, pairs = _items(value), _pairs(value)
    texts = items if items is not None else [t for kv in pairs or [] for t in kv]
    if items is None and pairs is None:
        texts = [_text(value)]
    if not texts:
        raise ArgumentError(param.argument, "must not be empty in a path")
    for text in texts:
        _refuse_traversal(param.argument, text)
    name, explode = _enc(param.name), param.explode
    if items is None and pairs is None:
        one = _enc(texts[0])
        segment = {"simple": one, "label": "." + one, "matrix": f";{name}={one}"}[param.style]
    elif items is not None:
        enc = [_enc(t) for t in items]
        if param.style == "simple":
            segment = ",".join(enc)
        elif param.style == "label":
            segment = "." + ("." if explode else ",").join(enc)
        else:
            segment = (
                "".join(f";{name}={t}" for t in enc) if explode else f";{name}=" + ",".join(enc)
            )
    else:
        kv = [(_enc(k), _enc(v)) for k, v in pairs or []]
        flat = ",".join(f"{k},{v}" for k, v in kv)
        if param.style == "simple":
            segment = ",".join(f"{k}={v}" for k, v in kv) if explode else flat
        elif param.style == "label":
            segment = "." + (".".join(f"{k}={v}" for k, v in kv) if explode else flat)
        else:
            segment = "".join(f";{k}={v}" for k, v in kv) if explode else f";{name}={flat}"
    _refuse_traversal(param.argument, segment)
    return segment


def _refuse_traversal(argument: str, text: str) -> None:
    if text == "":
        raise ArgumentError(argument, "must not be empty in a path")
    # Decode as often as an upstream chain might (proxy, framework, app) before looking for
    # "." or ".." segments; a backslash counts as a separator because some servers treat it so.
    seen = text
    for _ in range(4):
        for piece in seen.replace("\\", "/").split("/"):
            if piece in (".", ".."):
                raise ArgumentError(argument, f"{text!r} is not allowed in a path: dot segment")
        decoded = unquote(seen)
        if decoded == seen:
            break
        seen = decoded


# ----------------------------------------------------------------------------- query


def _query_pairs(param: Parameter, value: object) -> list[str]:
    name = _enc(param.name)
    items, pairs = _items(value), _pairs(value)
    style, explode = param.style, param.explode
    if style == "json":
        return [f"{name}={_enc(_json_text(value))}"]
    if style == "deepObject":
        if pairs is None or not isinstance(value, Mapping):
            return [f"{name}={_enc(_text(value))}"] if items is None else _repeat(name, items)
        return _deep(name, value)
    if items is None and pairs is None:
        return [f"{name}={_enc(_text(value))}"]
    if explode:
        # OpenAPI: spaceDelimited and pipeDelimited with explode=true are the same as form.
        if items is not None:
            return _repeat(name, items) or [f"{name}="]
        return [f"{_enc(k)}={_enc(v)}" for k, v in pairs or []] or [f"{name}="]
    sep = {"form": ",", "spaceDelimited": "%20", "pipeDelimited": "|"}[style]
    texts = items if items is not None else [t for kv in pairs or [] for t in kv]
    return [f"{name}=" + sep.join(_enc(t) for t in texts)]


def _repeat(name: str, items: list[str]) -> list[str]:
    return [f"{name}={_enc(item)}" for item in items]


def _deep(prefix: str, value: Mapping[str, Any]) -> list[str]:
    out: list[str] = []
    for key, child in value.items():
        name = f"{prefix}[{_enc(str(key))}]"
        if isinstance(child, Mapping):
            out.extend(_deep(name, child))
        elif isinstance(child, list | tuple):
            out.extend(_repeat(name, [_text(c) for c in child]))
        elif child is not None:
            out.append(f"{name}={_enc(_text(child))}")
    return out


# ----------------------------------------------------------------------------- headers


def _check_header_text(argument: str, text: str) -> None:
    for ch in text:
        if ch in "\r\n\0":
            raise ArgumentError(argument, "header and cookie values must not contain CR, LF or NUL")
        if (ord(ch) < 0x20 and ch != "\t") or ord(ch) >= 0x7F:
            raise ArgumentError(
                argument, "header and cookie values must be printable ASCII characters"
            )


def _json_text(value: object) -> str:
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def _header_value(param: Parameter, value: object) -> str:
    items, pairs = _items(value), _pairs(value)
    if param.style == "json":
        text = _json_text(value)
    elif items is not None:
        text = ",".join(items)
    elif pairs is not None:
        text = ",".join(f"{k}={v}" if param.explode else f"{k},{v}" for k, v in pairs)
    else:
        text = _text(value)
    _check_header_text(param.argument, text)
    return text


def _cookie_pairs(param: Parameter, value: object) -> list[str]:
    if param.style == "json":
        text = _json_text(value)
        _check_header_text(param.argument, text)
        return [f"{param.name}={_enc(text)}"]
    items, pairs = _items(value), _pairs(value)
    texts = items if items is not None else [t for kv in pairs or [] for t in kv]
    if items is None and pairs is None:
        texts = [_text(value)]
    for text in texts:
        _check_header_text(param.argument, text)
    name = param.name
    if items is None and pairs is None:
        return [f"{name}={_enc(texts[0])}"]
    if not param.explode:
        return [f"{name}=" + ",".join(_enc(t) for t in texts)]
    if items is not None:
        return [f"{name}={_enc(t)}" for t in items]
    return [f"{_enc(k)}={_enc(v)}" for k, v in pairs or []]


# ----------------------------------------------------------------------------- body

_TEXT_PLAIN = "text/plain"
_FORM = "application/x-www-form-urlencoded"
_MULTIPART = "multipart/form-data"
_JSON_ESSENCE = "application/json"
_FILE_KEYS = frozenset({"content_base64", "filename", "content_type"})


def new_boundary() -> str:
    """A fresh multipart boundary (tests replace this function for a fixed one)."""
    return "mcpmint-" + secrets.token_hex(16)


def _body(
    tool: Tool, arguments: Mapping[str, Any], boundary: str | None
) -> tuple[bytes | None, str]:
    body = None if tool.request is None else tool.request.body
    if body is None:
        return None, ""
    if body.argument is not None:
        if arguments.get(body.argument) is None:
            if body.required:
                raise ArgumentError(body.argument, "required argument is missing")
            return None, ""
        payload: Any = arguments[body.argument]
    else:
        present = [a for a in body.properties if a in arguments]
        if not present and not body.required:
            return None, ""
        payload = {body.properties[a]: arguments[a] for a in present}
    essence = body.media_type.split(";", 1)[0].strip().lower()
    name = body.argument or "body"
    if essence == _TEXT_PLAIN:
        if not isinstance(payload, str):
            raise ArgumentError(name, "a text/plain body must be a string")
        return payload.encode("utf-8"), body.media_type
    if essence == _FORM:
        if not isinstance(payload, Mapping):
            raise ArgumentError(name, "a form body must be an object")
        fields = [
            f
            for k, v in payload.items()
            if v is not None
            for f in _form_field(name, str(k), v, body.encoding.get(str(k)))
        ]
        return "&".join(fields).encode("ascii"), body.media_type
    if essence == _MULTIPART:
        if not isinstance(payload, Mapping):
            raise ArgumentError(name, "a multipart body must be an object")
        boundary = boundary or new_boundary()
        content = _multipart(name, payload, body.encoding, boundary)
        return content, f"{essence}; boundary={boundary}"
    if essence.endswith(("/json", "+json")):  # application/json, text/json, vnd...+json
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        return text.encode("utf-8"), body.media_type
    # Any other media type is raw bytes, carried base64-encoded by one argument.
    if not isinstance(payload, str):
        raise ArgumentError(name, f"a {essence} body must be a base64 string")
    return _base64(name, payload), body.media_type


def _base64(argument: str, text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, binascii.Error):
        raise ArgumentError(
            argument, "must be valid base64 (RFC 4648, standard alphabet)"
        ) from None


# --------------------------------------------------------------- application/x-www-form-urlencoded


def _form_field(argument: str, key: str, value: object, encoding: FormEncoding | None) -> list[str]:
    """The `name=value` pairs of one top-level form property.

    With no `encoding` for it, scalars and arrays of scalars follow OpenAPI's default for forms
    (`form`, exploded: `tag=a&tag=b`) and nested values use brackets, as Stripe and most form
    parsers (Rails, PHP, qs) read them: `metadata[key]=value`, `items[0][price]=price_123`.
    `deepObject` puts everything in brackets, arrays of scalars too: `expand[]=customer`.
    """
    name = _enc(key)
    style = encoding.style if encoding is not None else ""
    if style == "deepObject":
        return _bracketed(name, value, scalar_arrays="[]")
    if encoding is not None and not _nested(value):
        field = Parameter(
            argument=argument,
            name=key,
            location="query",
            style=style,
            explode=encoding.explode,
            required=True,
        )
        return _query_pairs(field, value)
    if isinstance(value, list | tuple) and not _nested(value):
        return _repeat(name, [_text(v) for v in value])
    return _bracketed(name, value, scalar_arrays="[]" if _nested(value) else "")


def _nested(value: object) -> bool:
    """An object, or an array holding an object or an array."""
    if isinstance(value, Mapping):
        return True
    return isinstance(value, list | tuple) and any(
        isinstance(v, Mapping | list | tuple) for v in value
    )


def _bracketed(name: str, value: object, scalar_arrays: str) -> list[str]:
    """`name[k]=v` for members, `name[i][k]=v` for arrays of objects, `name[]=v` for scalars."""
    if isinstance(value, Mapping):
        out: list[str] = []
        for key, child in value.items():
            if child is not None:
                out.extend(_bracketed(f"{name}[{_enc(str(key))}]", child, "[]"))
        return out
    if isinstance(value, list | tuple):
        if _nested(value):
            out = []
            for index, child in enumerate(value):
                if child is not None:
                    out.extend(_bracketed(f"{name}[{index}]", child, "[]"))
            return out
        return [f"{name}{scalar_arrays}={_enc(_text(v))}" for v in value if v is not None]
    return [f"{name}={_enc(_text(value))}"]


# ----------------------------------------------------------------------------- multipart/form-data


def _is_file(value: object) -> bool:
    return isinstance(value, Mapping) and "content_base64" in value and set(value) <= _FILE_KEYS


def _multipart(
    argument: str,
    payload: Mapping[str, Any],
    encoding: Mapping[str, FormEncoding],
    boundary: str,
) -> bytes:
    """RFC 7578: one part per field; an array is one part per item, under the same name."""
    out = bytearray()
    for key, value in payload.items():
        if value is None:
            continue
        items = list(value) if isinstance(value, list | tuple) else [value]
        enc = encoding.get(str(key))
        for item in items:
            if item is None:
                continue
            out += f"--{boundary}\r\n".encode("ascii")
            out += _part(argument, str(key), item, enc.content_type if enc else "")
            out += b"\r\n"
    out += f"--{boundary}--\r\n".encode("ascii")
    return bytes(out)


def _part(argument: str, name: str, value: object, content_type: str) -> bytes:
    disposition = f'form-data; name="{_quoted(name)}"'
    if _is_file(value):
        assert isinstance(value, Mapping)
        data = _base64(argument, str(value["content_base64"]))
        filename = str(value.get("filename") or name)
        disposition += f'; filename="{_quoted(filename)}"'
        part_type = str(value.get("content_type") or content_type or "application/octet-stream")
    elif isinstance(value, str):
        data, part_type = value.encode("utf-8"), content_type
    elif isinstance(value, Mapping | list | tuple):
        data, part_type = _json_text(value).encode("utf-8"), content_type or _JSON_ESSENCE
    else:
        data, part_type = _text(value).encode("utf-8"), content_type
    _check_header_text(argument, part_type)
    head = f"Content-Disposition: {disposition}\r\n"
    if part_type:
        head += f"Content-Type: {part_type}\r\n"
    return head.encode("utf-8") + b"\r\n" + data


def _quoted(text: str) -> str:
    """A name or filename inside a quoted-string of Content-Disposition (as browsers escape it)."""
    return text.replace("\r", "%0D").replace("\n", "%0A").replace('"', "%22")
