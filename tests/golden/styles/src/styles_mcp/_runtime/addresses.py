"""Upstream addresses (S23): what is never connected to, and IP literals in odd spellings.

- `forbidden_address`: cloud metadata services and link-local ranges (169.254.0.0/16,
  fe80::/10, `fd00:ec2::254`, `100.100.100.200`), also as IPv4-mapped or -compatible IPv6.
  The runtime checks the address it actually connects to against them, whatever name led
  there (upstream.py resolves the name once, checks, and connects to that address); the
  operator's `<P>_BASE_URL` may still name loopback and private addresses.
- `numeric_host`: the IPv4 address a host denotes when written as a number in any form a
  URL parser or `inet_aton` accepts (hex `0xa9fea9fe`, octal `0251.0376.0251.0376`, short
  dotted `169.254.43518`, integer `2852039166`, full-width digits, ideographic dots), with
  whether that spelling is canonical (dotted decimal). The generator refuses a spec server
  whose host is a non-canonical literal (servers_check.py).
"""

from __future__ import annotations

import ipaddress
import re
import unicodedata

__all__ = ["METADATA_ADDRESSES", "METADATA_NAMES", "forbidden_address", "numeric_host"]

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a)
    for a in ("169.254.169.254", "fd00:ec2::254", "169.254.170.2", "100.100.100.200")
)
METADATA_NAMES = frozenset({"metadata.google.internal", "metadata.goog"})
_DOTS = str.maketrans({"\u3002": ".", "\uff0e": ".", "\uff61": "."})
_PART = re.compile(r"0[xX][0-9a-fA-F]*|0[0-7]*|[1-9][0-9]*", re.ASCII)
_CANONICAL = re.compile(r"(?:0|[1-9][0-9]{0,2})(?:\.(?:0|[1-9][0-9]{0,2})){3}", re.ASCII)

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def forbidden_address(address: Address) -> bool:
    """A metadata service or a link-local address (IPv4 inside IPv6 included)."""
    if isinstance(address, ipaddress.IPv6Address):
        inner = address.ipv4_mapped or _compatible(address)
        if inner is not None and forbidden_address(inner):
            return True
    return address in METADATA_ADDRESSES or address.is_link_local


def _compatible(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    # ::a.b.c.d (deprecated IPv4-compatible) and the NAT64 prefix 64:ff9b::/96.
    value = int(address)
    if (value >> 32 == 0 and value > 0xFFFF) or value >> 32 == 0x64FF9B << 64:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    return None


def numeric_host(host: str) -> tuple[ipaddress.IPv4Address, bool] | None:
    """The IPv4 address `host` spells as numbers (see the module's docstring) and whether the
    spelling is canonical dotted decimal; None when it is not a numeric host."""
    text = unicodedata.normalize("NFKC", host).translate(_DOTS).rstrip(".").lower()
    parts = text.split(".")
    if not 1 <= len(parts) <= 4 or not all(_PART.fullmatch(p) for p in parts):
        return None
    values = [
        int(p, 16) if p[:2] == "0x" and len(p) > 2 else int(p, 8) if p[:1] == "0" else int(p)
        for p in (p if p != "0x" else "0" for p in parts)
    ]
    *head, last = values
    if any(v > 255 for v in head) or last >= 256 ** (5 - len(values)):
        return None
    number = last
    for i, v in enumerate(head):
        number += v << (8 * (3 - i))
    canonical = host == text and _CANONICAL.fullmatch(host) is not None
    return ipaddress.IPv4Address(number), canonical
