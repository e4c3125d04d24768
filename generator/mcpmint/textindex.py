"""Where the path items of a one-file JSON spec lie in its text, so that a later load of an
edited copy checks only the path items that changed (issue #8: a one-operation change in a
1,000-operation spec).

A load that checks everything (no duplicate key, NaN or infinity, every `$ref` local and
resolving: the quick load, `load.load_json_quickly`, 0.2 s on GitHub's 10 MB, or the whole
load, `load.load_document`) keeps a `TextIndex` of a text that passed: the text cut into
chunks (the part before the first member of `paths`; one chunk a member of `paths`, its key,
value, comma and the white space after; the rest after the last member's value) and a digest
of each. The next load compares its text with those chunks from the front and, shifted by the
change in length, from the back (`changed_members`). When only some members of `paths` differ,
the new text is the old one with a run of members replaced: the parser reaches the replaced
run in the state the old text had there (same bytes before it) and, when the run parses as
members followed by a comma (or, at the end, by nothing), leaves it in the state the old text
had at the next unchanged member (same bytes after it). So the whole text is valid JSON, and
passes every check, as soon as the replaced members do, checked alone, and none of their keys
is an unchanged member's; the standard parser then reads the whole text without the checks'
hooks (0.09 against 0.22 s on GitHub's). Anything else (a change outside the members of
`paths`, an index of another text) is a miss, and the load checks everything as before.

Chunks are cut and compared as text (str offsets); digests are the sha256 of their UTF-8.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MemberRange",
    "TextIndex",
    "changed_members",
    "decode_indexed",
    "index_of",
    "object_members",
]

_SPACE = re.compile(r"[ \t\n\r]*")  # JSON's white space, as the standard parser skips it
_scanstring: Callable[[str, int, bool], tuple[str, int]] = json.decoder.scanstring  # type: ignore[attr-defined]


class _Irregular(ValueError):
    """Text this module's walk does not follow; the standard parser then reads it whole."""


@dataclass(frozen=True)
class TextIndex:
    """The chunks of a text (`bounds[i]` to `bounds[i + 1]`; the first is everything before
    the first member of `paths`, the last everything after its last member) and their
    digests; `into_paths`: some `$ref` of the text points into `#/paths` or at the whole
    document (a path item is then part of a schema: no chunk stands alone)."""

    bounds: tuple[int, ...]
    digests: tuple[str, ...]
    into_paths: bool
    sha256: str = ""  # of the bytes the text was decoded from ("": not known)

    @property
    def length(self) -> int:
        return self.bounds[-1]

    @property
    def members(self) -> int:
        """How many members `paths` had."""
        return len(self.digests) - 2

    def to_json(self) -> dict[str, Any]:
        return {
            "bounds": list(self.bounds),
            "digests": list(self.digests),
            "into": self.into_paths,
            "sha256": self.sha256,
        }

    @classmethod
    def from_json(cls, value: Any) -> TextIndex | None:
        """The index stored as `to_json` wrote it; None for anything else."""
        if not isinstance(value, dict):
            return None
        bounds, digests = value.get("bounds"), value.get("digests")
        if not (isinstance(bounds, list) and isinstance(digests, list)):
            return None
        if len(bounds) != len(digests) + 1 or len(digests) < 3:
            return None
        if not all(type(b) is int for b in bounds) or bounds[0] != 0:
            return None
        if any(later < earlier for earlier, later in itertools.pairwise(bounds)):
            return None
        if not all(isinstance(d, str) for d in digests) or not isinstance(value.get("into"), bool):
            return None
        sha256 = value.get("sha256")
        sha256 = sha256 if isinstance(sha256, str) else ""
        return cls(tuple(bounds), tuple(digests), value["into"], sha256)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def index_of(text: str, members: list[int], into_paths: bool, sha256: str = "") -> TextIndex:
    """The index of `text` (decoded from bytes whose sha256 is `sha256`), the bounds of whose
    `paths` members are `members` (`decode_indexed`)."""
    bounds = (0, *members, len(text))
    digests = tuple(_digest(text[a:b]) for a, b in itertools.pairwise(bounds))
    return TextIndex(bounds, digests, into_paths, sha256)


def decode_indexed(text: str, decoder: json.JSONDecoder) -> tuple[Any, list[int] | None] | None:
    """`decoder.decode(text)`, and the bounds of the members of its top-level `paths` object:
    where each member's key begins, then where the last member's value ends (None when the
    text is an object without a `paths` object of at least one member). None instead when
    the walk stops (a syntax error, text it does not follow): the caller then parses the
    text again with hooks of a fresh state (these ran on part of it), the standard parser
    saying what is wrong."""
    try:
        return _walk(text, decoder)
    except (_Irregular, json.JSONDecodeError, IndexError):
        return None


def object_members(text: str, decoder: json.JSONDecoder) -> tuple[Any, list[int]] | None:
    """`decoder.decode(text)` of a text that is one object, and where each member's key
    begins; None when the walk stops (as `decode_indexed`)."""
    try:
        at = _space(text, 0)
        if text[at : at + 1] != "{":
            return None
        data, end, starts, _ = _object(text, at, decoder, lambda key, where: None)
        if _space(text, end) != len(text):
            return None
        return data, starts
    except (_Irregular, json.JSONDecodeError, IndexError):
        return None


def _space(text: str, at: int) -> int:
    """Where the white space at `at` ends (the pattern matches anywhere, even nothing)."""
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]


def _walk(text: str, decoder: json.JSONDecoder) -> tuple[Any, list[int] | None]:
    at = _space(text, 0)
    if text[at : at + 1] != "{":
        raise _Irregular
    bounds: list[int] | None = None

    def paths_members(key: str, where: int) -> tuple[Any, int] | None:
        nonlocal bounds
        if key != "paths" or bounds is not None or text[where : where + 1] != "{":
            return None
        value, end, starts, last_end = _object(text, where, decoder, lambda k, w: None)
        bounds = [*starts, last_end] if starts else []
        return value, end

    data, end, _, _ = _object(text, at, decoder, paths_members)
    if _space(text, end) != len(text):
        raise _Irregular  # extra data: the standard parser says where
    return data, bounds or None


def _object(
    text: str,
    at: int,
    decoder: json.JSONDecoder,
    special: Callable[[str, int], tuple[Any, int] | None],
) -> tuple[Any, int, list[int], int]:
    """The object whose `{` is at `at` as `decoder` makes it (a member's value by `special`
    when it answers), the index just past its `}`, where each member's key begins and where
    the last member's value ends."""
    pairs: list[tuple[str, Any]] = []
    starts: list[int] = []
    value_end = at + 1
    at = _space(text, at + 1)
    if text[at] != "}":
        while True:
            if text[at] != '"':
                raise _Irregular
            starts.append(at)
            key, at = _scanstring(text, at + 1, decoder.strict)
            at = _space(text, at)
            if text[at] != ":":
                raise _Irregular
            at = _space(text, at + 1)
            made = special(key, at)
            value, at = made if made is not None else decoder.raw_decode(text, at)
            pairs.append((key, value))
            value_end = at
            at = _space(text, at)
            if text[at] == "}":
                break
            if text[at] != ",":
                raise _Irregular
            at = _space(text, at + 1)
    if decoder.object_pairs_hook is not None:
        result = decoder.object_pairs_hook(pairs)
    else:
        result = dict(pairs)
        if decoder.object_hook is not None:
            result = decoder.object_hook(result)
    return result, at + 1, starts, value_end


@dataclass(frozen=True)
class MemberRange:
    """Members `first` to `last` of `paths` (chunk numbers: 1 is its first member) differ;
    the new text from `start` to `stop` replaces them; `shift` is the change in length."""

    first: int
    last: int
    start: int
    stop: int
    shift: int


def changed_members(text: str, index: TextIndex) -> MemberRange | None:
    """The members of `paths` that differ between the indexed text and `text`, when nothing
    else does; None otherwise (or when nothing differs)."""
    bounds, digests = index.bounds, index.digests
    chunks = len(digests)
    shift = len(text) - index.length
    first = 0
    while first < chunks and _digest(text[bounds[first] : bounds[first + 1]]) == digests[first]:
        first += 1
    if first == chunks:
        return None  # the same text
    if first == 0:
        return None  # the part before `paths`' members differs
    last = chunks - 1
    while (
        last > first
        and bounds[last] + shift >= bounds[first]
        and _digest(text[bounds[last] + shift : bounds[last + 1] + shift]) == digests[last]
    ):
        last -= 1
    if last == chunks - 1:
        return None  # the part after `paths`' members differs
    return MemberRange(first, last, bounds[first], bounds[last + 1] + shift, shift)
