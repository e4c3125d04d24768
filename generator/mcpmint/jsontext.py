"""JSON text, fast: exactly what `json.dumps` writes, from orjson's encoder in C.

A large server's tools.json, generated_cases.json and tools.lock.json are megabytes each,
and the standard library's encoder is pure Python once it indents. orjson writes the same
text in C, byte for byte, except in ways this module checks for:

- a float below 1e-4 in magnitude, which `json.dumps` writes with an exponent (`1e-05`) and
  orjson may not (`0.00001`, `1e-5`): the text is searched for such a number;
- what orjson refuses (an integer beyond 64 bits, a non-string key, nesting deeper than 255,
  a lone surrogate) and what it would write where `json.dumps` does not (subclasses such as
  an `IntEnum`, dates, dataclasses, which are handed to `default`, which refuses them).

Both go to the standard library's encoder (through `_pretty` when indented). One difference
is left: a NaN or an infinity, which JSON cannot carry, orjson writes as `null` where
`json.dumps` writes `NaN`. The builder never hands one over (schema.py drops non-finite
numbers and data that holds them), and neither text would be JSON.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C encoder `ensure_ascii=False` uses
from typing import Any, Final

import orjson

__all__ = ["SCALAR_TYPES", "compact", "exact", "pretty"]

# The types of JSON scalars as json.loads and the YAML loader make them: a `type(x) in` test
# on this set is much faster than the `Mapping` ABC check that tree walks would do first.
SCALAR_TYPES: Final = frozenset([str, int, float, bool, type(None)])

_PASS_ON = (
    orjson.OPT_SORT_KEYS
    | orjson.OPT_PASSTHROUGH_SUBCLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_DATACLASS
)
_DIGITS = frozenset("0123456789")
_NUMBER = frozenset("0123456789.-+eE")


class _Unusual(Exception):
    """Something `json.dumps` should write itself."""


def _refuse(value: Any) -> Any:
    raise TypeError  # orjson's `default`: the standard library decides instead


def pretty(value: Any) -> str:
    """`json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)`, byte for byte (but
    for NaN and infinities: the module's docstring)."""
    text = _orjson(value, _PASS_ON | orjson.OPT_INDENT_2)
    if text is not None:
        return text
    try:
        return _pretty(value)
    except (_Unusual, RecursionError):
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def compact(value: Any) -> str:
    """`json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, byte
    for byte (but for NaN and infinities: the module's docstring)."""
    text = _orjson(value, _PASS_ON)
    if text is not None:
        return text
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def exact(value: Any) -> bytes:
    """Compact JSON of `value` in its own key order (orjson's, not `json.dumps`'s text), for
    digests and memo entries that must stand for exactly this value. TypeError when orjson
    refuses it (an integer beyond 64 bits, a non-string key, a set); ValueError when the text
    reads back as something else (NaN as null, a tuple as an array, a date as a string)."""
    text = orjson.dumps(value)  # orjson.JSONEncodeError is a TypeError
    if orjson.loads(text) != value:
        raise ValueError("not JSON data that reads back the same")
    return text


def _orjson(value: Any, option: int) -> str | None:
    """orjson's text of `value`, or None where it may differ from `json.dumps`."""
    try:
        text = orjson.dumps(value, default=_refuse, option=option).decode()
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    return None if _small_float_in(text) else text


def _small_float_in(text: str) -> bool:
    """Whether `text` may hold a number below 1e-4 in magnitude: `1e-5` or `0.00001` outside
    a string. str.find is what makes this cheap (ms on 16 MB); a string holding such a number
    as text (`"in 1e-5 s"`) is taken for one, which only costs the slower encoder."""
    for needle in ("e-", "0.0000"):
        at = text.find(needle)
        while at != -1:
            if _in_number(text, at, needle):
                return True
            at = text.find(needle, at + 1)
    return False


def _in_number(text: str, at: int, needle: str) -> bool:
    """Whether `needle` at `at` can be part of a number token: digits around it, and before
    the token the start of the text or what JSON puts before a value."""
    if needle == "e-" and (at == 0 or text[at - 1] not in _DIGITS):
        return False
    start = at
    while start > 0 and text[start - 1] in _NUMBER:
        start -= 1
    if needle == "0.0000" and text[start:at] not in ("", "-"):
        return False  # 10.00001 is written alike by both
    return start == 0 or text[start - 1] in " \n:,["


def _pretty(value: Any) -> str:
    out: list[str] = []
    append = out.append

    def collapse(start: int, indent: str) -> None:
        # Millions of small strings would cost a few hundred MB on a large server: the
        # members of the two outer levels (a tool each, in tools.json and the lock) are joined
        # as soon as they are written.
        if len(indent) <= 2:
            out[start:] = ["".join(out[start:])]

    def node(item: Any, indent: str) -> None:
        if isinstance(item, str):
            append(encode_basestring(item))
        elif isinstance(item, dict):
            if not item:
                append("{}")
                return
            inner = indent + "  "
            separator = "{\n" + inner
            try:
                keys = sorted(item)
            except TypeError:  # mixed key types: json.dumps decides (and may raise)
                raise _Unusual from None
            for key in keys:
                if type(key) is not str:
                    raise _Unusual
                append(separator)
                start = len(out)
                append(encode_basestring(key))
                append(": ")
                node(item[key], inner)
                collapse(start, indent)
                separator = ",\n" + inner
            append("\n" + indent + "}")
        elif isinstance(item, list | tuple):
            if not item:
                append("[]")
                return
            inner = indent + "  "
            separator = "[\n" + inner
            for element in item:
                append(separator)
                start = len(out)
                node(element, inner)
                collapse(start, indent)
                separator = ",\n" + inner
            append("\n" + indent + "]")
        elif item is True:
            append("true")
        elif item is False:
            append("false")
        elif item is None:
            append("null")
        elif type(item) is int:
            append(int.__repr__(item))
        elif type(item) is float:
            append(json.dumps(item))  # repr, or NaN / Infinity
        else:  # int and float subclasses (bool is handled above), and everything else
            raise _Unusual

    node(value, "")
    return "".join(out)
