"""Where a spec's `servers` would send requests, checked at generation time (G16).

The base URL of a generated server comes from the spec unless the operator sets
`<PREFIX>_BASE_URL`, and every request carries the operator's credentials. So a spec must not
be able to point them somewhere dangerous by default:

- a cloud metadata address (`169.254.169.254`, `fd00:ec2::254`, `metadata.google.internal`)
  is an error: credentials and requests would go to the instance's metadata service;
- a host that is an IP literal in a non-canonical spelling (hex `0xa9fea9fe`, octal, short
  dotted `127.1`, a bare integer, full-width digits, IPv4 inside an IPv6 literal, percent
  escapes) is an error, whatever address it names (S23): there is no honest reason to write
  one, and it is how a check is dodged (`runtime/addresses.py`);
- another link-local address (169.254.0.0/16, fe80::/10) is a warning;
- plain `http://` to a host that is not loopback is a warning (credentials in clear text);
- a free-form variable (no `enum`) in the host part is a warning: only the operator can set it
  (`<PREFIX>_SERVER_<NAME>`), never a tool call, but an `enum` says which hosts are meant;
- a variable whose default is outside its own `enum` is a warning: the runtime refuses it.

Every value a variable can take from its `enum` is checked, not only its default.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any
from urllib.parse import urlsplit

from mcpmint import refs
from mcpmint.diagnostics import DiagnosticSink
from mcpmint.runtime.addresses import numeric_host

__all__ = ["METADATA_HOSTS", "check_server_list", "check_servers", "server_template"]

METADATA_HOSTS = frozenset(
    {
        "169.254.169.254",  # AWS, GCP, Azure, OpenStack, ...
        "fd00:ec2::254",  # AWS over IPv6
        "169.254.170.2",  # AWS ECS task metadata
        "100.100.100.200",  # Alibaba Cloud
        "metadata.google.internal",
        "metadata.goog",
    }
)
_LOOPBACK_NAMES = frozenset({"localhost", "localhost.localdomain"})
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")


def check_servers(
    data: Mapping[str, Any], locate: Callable[[str], str], sink: DiagnosticSink, env_prefix: str
) -> None:
    """Report dangerous server URLs of the (OpenAPI 3 shaped) document in `sink`; the
    `servers` of path items and operations are checked by `check_server_list` as the
    frontend reads them (they may sit in other files)."""
    check_server_list(data.get("servers"), "#/servers", locate, sink, env_prefix)


def check_server_list(
    servers: Any,
    at: str,
    locate: Callable[[str], str],
    sink: DiagnosticSink,
    env_prefix: str,
) -> None:
    """Report dangerous server URLs of one `servers` list (at the JSON pointer `at`)."""
    if not isinstance(servers, list):
        return
    for index, server in enumerate(servers):
        if not isinstance(server, Mapping) or not isinstance(server.get("url"), str):
            continue
        template = str(server["url"])
        pointer = refs.join(at, index, "url")
        variables = _variables(server)
        authority = template.split("://", 1)[-1].split("/", 1)[0]
        for name, (default, enum) in variables.items():
            var_pointer = refs.join(at, index, "variables", name)
            if enum and default not in enum:
                sink.warning(
                    locate(var_pointer),
                    f"server variable {name!r}: its default {default!r} is not in its enum; "
                    "the generated server refuses to use it",
                    "fix the default, or set the variable when running the server",
                )
            if not enum and "{" + name + "}" in authority:
                sink.warning(
                    locate(var_pointer),
                    f"server variable {name!r} is free-form and chooses the host; only the "
                    f"operator can set it ({env_prefix}_SERVER_{_env(name)}), never a tool call",
                    "give it an enum of the hosts it may name",
                )
        seen: set[str] = set()
        for url in _expansions(template, variables):
            if url in seen:
                continue
            seen.add(url)
            _check_url(url, locate(pointer), sink, env_prefix)


def server_template(
    data: Mapping[str, Any], base_url: str
) -> tuple[str, tuple[tuple[str, str, tuple[str, ...]], ...]]:
    """The template and variables of the server whose defaults give `base_url`, if it has any.

    Returns ("", ()) when the chosen server has no variables (the base URL is then fixed).
    """
    servers = data.get("servers")
    if not base_url or not isinstance(servers, list):
        return "", ()
    for server in servers:
        if not isinstance(server, Mapping) or not isinstance(server.get("url"), str):
            continue
        variables = _variables(server)
        template = str(server["url"])
        used = set(_PLACEHOLDER.findall(template))
        if not used or not used <= set(variables):
            continue
        defaults = {name: default for name, (default, _) in variables.items()}
        if _fill(template, defaults).rstrip("/") == base_url:
            return template.rstrip("/"), tuple(
                (name, variables[name][0], variables[name][1]) for name in sorted(used)
            )
    return "", ()


def _variables(server: Mapping[str, Any]) -> dict[str, tuple[str, tuple[str, ...]]]:
    raw = server.get("variables")
    result: dict[str, tuple[str, tuple[str, ...]]] = {}
    if not isinstance(raw, Mapping):
        return result
    for name, variable in raw.items():
        if not isinstance(variable, Mapping) or "default" not in variable:
            continue
        enum = variable.get("enum")
        values = tuple(str(v) for v in enum) if isinstance(enum, list) else ()
        result[str(name)] = (str(variable["default"]), values)
    return result


def _fill(template: str, values: Mapping[str, str]) -> str:
    return _PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), template)


def _expansions(template: str, variables: Mapping[str, tuple[str, tuple[str, ...]]]) -> list[str]:
    """The URL with defaults, then with each enum value of each variable (others at default)."""
    defaults = {name: default for name, (default, _) in variables.items()}
    urls = [_fill(template, defaults)]
    for name, (_, enum) in sorted(variables.items()):
        urls.extend(_fill(template, {**defaults, name: value}) for value in enum)
    return [url for url in urls if "{" not in url]


def _check_url(url: str, where: str, sink: DiagnosticSink, env_prefix: str) -> None:
    try:
        parts = urlsplit(url)
        host = (parts.hostname or "").lower().rstrip(".")
    except ValueError:
        return  # not a URL at all: the frontend says so when it matters
    if not host:
        return
    hint = (
        f"remove or replace this server in the spec; a generated server is pointed elsewhere "
        f"with {env_prefix}_BASE_URL"
    )
    address = _address(host)
    if host in METADATA_HOSTS or (address is not None and str(address) in METADATA_HOSTS):
        sink.error(
            where,
            f"server URL {url!r} points at a cloud metadata address ({host}): requests and "
            "credentials would go to the metadata service of the machine running the server",
            hint,
        )
        return
    odd = _non_canonical(host)
    if odd:
        sink.error(
            where,
            f"server URL {url!r}: its host {host!r} is an IP address written in a "
            f"non-canonical form ({odd}); such a spelling only serves to slip past address "
            "checks",
            "write the address in dotted decimal, or the host name",
        )
        return
    if address is not None and address.is_link_local:
        sink.warning(where, f"server URL {url!r} points at a link-local address ({host})", hint)
        return
    if parts.scheme == "http" and not _is_loopback(host, address):
        sink.warning(
            where,
            f"server URL {url!r} is plain http:// to a host that is not loopback: credentials "
            "and data would travel unencrypted",
            f"use https://, or set {env_prefix}_BASE_URL to an https:// URL when running",
        )


def _non_canonical(host: str) -> str:
    """How `host` spells an IP address non-canonically, or "" (a name, or a plain literal)."""
    if "%" in host:
        return "percent escapes"
    text = host.strip("[]")
    if ":" in text:  # an IPv6 literal (urlsplit drops its brackets)
        try:
            address = ipaddress.IPv6Address(text)
        except ValueError:
            return ""
        if address.ipv4_mapped is not None or "." in text:
            return "an IPv4 address inside IPv6"
        return ""
    numeric = numeric_host(host)
    if numeric is not None and not numeric[1]:
        return f"it is {numeric[0]}"
    return ""


def _address(host: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    text = host.strip("[]")
    try:
        address = ipaddress.ip_address(text)
    except ValueError:
        # A number in any spelling is an IPv4 address too (http://2852039166/, 0xa9fea9fe).
        numeric = numeric_host(text)
        return None if numeric is None else numeric[0]
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def _is_loopback(host: str, address: ipaddress.IPv4Address | ipaddress.IPv6Address | None) -> bool:
    if address is not None:
        return address.is_loopback
    return host in _LOOPBACK_NAMES or host.endswith(".localhost")


def _env(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "_", name.upper())
