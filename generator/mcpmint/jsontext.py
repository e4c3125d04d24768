"""Pretty JSON, fast: the exact text of `json.dumps(value, indent=2, sort_keys=True,
ensure_ascii=False)`, in a third of the time.

The standard library encodes indented JSON in pure Python, a generator per container; a large
server's tools.json, generated_cases.json and tools.lock.json are ~16 MB each (GitHub), and
writing them was a second of every run. This is one recursive function appending to a list,
with the C string encoder. Anything it is not sure to write the same way (a non-string key, a
type it does not know, nesting too deep) is handed to `json.dumps` itself.
"""

from __future__ import annotations

import json
from json.encoder import encode_basestring  # the C encoder `ensure_ascii=False` uses
from typing import Any

__all__ = ["pretty"]


class _Unusual(Exception):
    """Something `json.dumps` should write itself."""


def pretty(value: Any) -> str:
    """`json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)`, byte for byte."""
    try:
        return _pretty(value)
    except (_Unusual, RecursionError):
        return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


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
