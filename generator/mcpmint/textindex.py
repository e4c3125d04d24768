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

from .refs import PointerError, split

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


Span = tuple[str, int, int]  # a member's key, where its value begins and where it ends
Entry = tuple[str, str, int, int]  # a component's section, name, and its value's bounds


@dataclass(frozen=True)
class Layout:
    """Where the walk of a text found its parts: the bounds of `paths`' members (where each
    key begins, then where the last value ends) and their keys, the top level's members and
    the entries of the components' sections (values' bounds)."""

    members: list[int]
    keys: list[str]
    top: list[Span]
    sections: list[Span]
    entries: list[Entry]


@dataclass(frozen=True)
class TextIndex:
    """The chunks of a text (`bounds[i]` to `bounds[i + 1]`; the first is everything before
    the first member of `paths`, the last everything after its last member) and their
    digests; `into_paths`: some `$ref` of the text points into `#/paths` or at the whole
    document (a path item is then part of a schema: no chunk stands alone). And where the
    rest lies: `paths`' keys, the top level's members and the components' entries
    (`Layout`), so that a load may read only some of them (`load.load_json_partly`)."""

    bounds: tuple[int, ...]
    digests: tuple[str, ...]
    into_paths: bool
    sha256: str = ""  # of the bytes the text was decoded from ("": not known)
    keys: tuple[str, ...] = ()
    top: tuple[Span, ...] = ()
    sections: tuple[Span, ...] = ()
    entries: tuple[Entry, ...] = ()

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
            "keys": list(self.keys),
            "top": [list(span) for span in self.top],
            "sections": [list(span) for span in self.sections],
            "entries": [list(entry) for entry in self.entries],
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
        sha256, keys = value.get("sha256"), value.get("keys")
        top, sections, entries = value.get("top"), value.get("sections"), value.get("entries")
        if not (
            isinstance(sha256, str) and isinstance(keys, list) and len(keys) == len(digests) - 2
        ):
            return None
        if not all(isinstance(key, str) for key in keys):
            return None
        if not (isinstance(top, list) and isinstance(sections, list)):
            return None
        if not all(_is(span, (str, int, int)) for span in [*top, *sections]):
            return None
        if not (isinstance(entries, list) and all(_is(e, (str, str, int, int)) for e in entries)):
            return None
        return cls(
            tuple(bounds),
            tuple(digests),
            value["into"],
            sha256,
            tuple(keys),
            tuple((k, a, b) for k, a, b in top),
            tuple((k, a, b) for k, a, b in sections),
            tuple((section, name, a, b) for section, name, a, b in entries),
        )


def _is(value: Any, types: tuple[type, ...]) -> bool:
    return (
        isinstance(value, list)
        and len(value) == len(types)
        and all(type(item) is kind for item, kind in zip(value, types, strict=True))
    )


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def index_of(text: str, layout: Layout, into_paths: bool, sha256: str = "") -> TextIndex:
    """The index of `text` (decoded from bytes whose sha256 is `sha256`), laid out as
    `layout` says (`decode_indexed`)."""
    bounds = (0, *layout.members, len(text))
    digests = tuple(_digest(text[a:b]) for a, b in itertools.pairwise(bounds))
    return TextIndex(
        bounds,
        digests,
        into_paths,
        sha256,
        tuple(layout.keys),
        tuple(layout.top),
        tuple(layout.sections),
        tuple(layout.entries),
    )


def decode_indexed(text: str, decoder: json.JSONDecoder) -> tuple[Any, Layout | None] | None:
    """`decoder.decode(text)`, and where its parts lie (None when the text is an object
    without a `paths` object of at least one member). None instead when the walk stops (a
    syntax error, text it does not follow): the caller then parses the text again with hooks
    of a fresh state (these ran on part of it), the standard parser saying what is wrong."""
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
        data, end, starts, _, _ = _object(text, at, decoder, _plain)
        if _space(text, end) != len(text):
            return None
        return data, starts
    except (_Irregular, json.JSONDecodeError, IndexError):
        return None


def _plain(key: str, where: int) -> None:
    """Every member's value read by the decoder itself."""


def _space(text: str, at: int) -> int:
    """Where the white space at `at` ends (the pattern matches anywhere, even nothing)."""
    return _SPACE.match(text, at).end()  # type: ignore[union-attr]


def _walk(text: str, decoder: json.JSONDecoder) -> tuple[Any, Layout | None]:
    at = _space(text, 0)
    if text[at : at + 1] != "{":
        raise _Irregular
    members: list[int] | None = None
    keys: list[str] = []
    top: list[Span] = []
    sections: list[Span] = []
    entries: list[Entry] = []
    seen: set[str] = set()

    def member(key: str, where: int) -> tuple[Any, int]:
        nonlocal members
        first = key not in seen  # (a key given twice: the load refuses the text anyway)
        seen.add(key)
        is_object = text[where : where + 1] == "{"
        if first and key == "paths" and is_object:
            value, end, starts, names, last_end = _object(text, where, decoder, _plain)
            members = [*starts, last_end] if starts else []
            keys.extend(names)
        elif first and key == "components" and is_object:
            value, end = _object(text, where, decoder, section)[:2]
        else:
            value, end = decoder.raw_decode(text, where)
        top.append((key, where, end))
        return value, end

    def section(name: str, where: int) -> tuple[Any, int]:
        if text[where : where + 1] != "{":
            value, end = decoder.raw_decode(text, where)
        else:

            def entry(key: str, start: int) -> tuple[Any, int]:
                value, end = decoder.raw_decode(text, start)
                entries.append((name, key, start, end))
                return value, end

            value, end = _object(text, where, decoder, entry)[:2]
        sections.append((name, where, end))
        return value, end

    data, end, _, _, _ = _object(text, at, decoder, member)
    if _space(text, end) != len(text):
        raise _Irregular  # extra data: the standard parser says where
    if not members:
        return data, None
    return data, Layout(members, keys, top, sections, entries)


def _object(
    text: str,
    at: int,
    decoder: json.JSONDecoder,
    special: Callable[[str, int], tuple[Any, int] | None],
) -> tuple[Any, int, list[int], list[str], int]:
    """The object whose `{` is at `at` as `decoder` makes it (a member's value by `special`
    when it answers), the index just past its `}`, where each member's key begins, the keys,
    and where the last member's value ends."""
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
    return result, at + 1, starts, [key for key, _ in pairs], value_end


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


def reindexed(
    index: TextIndex,
    text: str,
    changed: MemberRange,
    starts: list[int],
    keys: list[str],
    sha256: str,
) -> TextIndex:
    """The index of `text`, which is the text of `index` with the members `changed` replaced
    by members whose keys are `keys` and begin at `starts` (in `text`)."""
    bounds, shift = index.bounds, changed.shift
    members = [
        *bounds[1 : changed.first],
        *starts,
        *(bound + shift for bound in bounds[changed.last + 1 : -1]),
    ]
    digests = (
        *index.digests[: changed.first],
        *(_digest(text[a:b]) for a, b in itertools.pairwise([*starts, changed.stop])),
        *index.digests[changed.last + 1 :],
    )
    moved = _Moved(index, shift)
    return TextIndex(
        (0, *members, len(text)),
        digests,
        index.into_paths,
        sha256,
        (*index.keys[: changed.first - 1], *keys, *index.keys[changed.last :]),
        tuple((key, moved.start(a), moved.end(b)) for key, a, b in index.top),
        tuple((key, moved.start(a), moved.end(b)) for key, a, b in index.sections),
        tuple((s, n, moved.start(a), moved.end(b)) for s, n, a, b in index.entries),
    )


class _Moved:
    """Where an offset of the indexed text is in a text whose members of `paths` changed
    (the part before them in place, the part after them moved by `shift`)."""

    def __init__(self, index: TextIndex, shift: int) -> None:
        self.head_end, self.tail_start, self.shift = index.bounds[1], index.bounds[-2], shift

    def start(self, at: int) -> int:
        return at + self.shift if at >= self.tail_start else at

    def end(self, at: int) -> int:
        return at if at <= self.head_end else at + self.shift

    def span(self, start: int, end: int) -> tuple[int, int] | None:
        """The span, when it lies wholly before or wholly after the members."""
        if end <= self.head_end or start >= self.tail_start:
            return self.start(start), self.end(end)
        return None


# The sections of `components` whose entries are reached only by `$ref` (never by name, as
# security schemes are): a partial read takes only the entries the changed path items reach.
BY_REFERENCE = frozenset(
    {"schemas", "parameters", "responses", "requestBodies", "headers", "examples"}
)


def read_partly(
    text: str, index: TextIndex, changed: MemberRange, paths: dict[str, Any], roots: set[str]
) -> dict[str, Any] | None:
    """The document of `text` (the text of `index` with the members `changed` replaced by
    `paths`, already read) with only those path items, and of the entries of the `BY_REFERENCE`
    sections of `components` only those that `$ref`s reach from `roots` (the changed path
    items' own `$ref`s), through each other; every other part whole, in the text's order.
    Read by the standard parser without hooks (the text was checked: see the module). None
    when a `$ref` leads where the index does not say (the caller then reads it all)."""
    moved = _Moved(index, changed.shift)

    def read(start: int, end: int) -> Any:
        span = moved.span(start, end)
        if span is None:
            raise _Irregular
        return json.loads(text[span[0] : span[1]])

    entries = {(section, name): (a, b) for section, name, a, b in index.entries}
    pruned = {name for name, _, _ in index.sections if name in BY_REFERENCE}
    pruned &= {section for section, _ in entries}
    try:
        data: dict[str, Any] = {}
        for key, start, end in index.top:
            if key == "paths":
                data[key] = paths
            elif key == "components" and index.sections:
                data[key] = {
                    name: {} if name in pruned else read(a, b) for name, a, b in index.sections
                }
            else:
                data[key] = read(start, end)
        components = data.get("components", {})
        todo = list(roots)
        for name in components:
            if name not in pruned:
                todo.extend(_refs_in(components[name]))
        wanted: dict[tuple[str, str], Any] = {}
        while todo:
            tokens = _target(todo.pop())
            if tokens is None:
                return None
            if tokens in wanted or tokens[0] not in pruned:
                continue  # read already, or not an entry of a pruned section
            if tokens not in entries:
                return None  # an entry the text does not have: the caller says so
            wanted[tokens] = value = read(*entries[tokens])
            todo.extend(_refs_in(value))
    except (_Irregular, ValueError, RecursionError):
        return None
    for section, name, _, _ in index.entries:  # in the text's order
        if (section, name) in wanted:
            components[section][name] = wanted[section, name]
    return data


def _target(ref: str) -> tuple[str, str] | None:
    """The (section, name) of the components' entry a local `$ref` points into, ("", "") for
    one that points elsewhere; None for one this module does not follow (not local, not a
    pointer, or at a whole section)."""
    if not ref.startswith("#"):
        return None
    try:
        tokens = split(ref)
    except PointerError:
        return None
    if tokens[:1] != ["components"]:
        return "", ""
    return (tokens[1], tokens[2]) if len(tokens) >= 3 else None


def _refs_in(value: Any) -> list[str]:
    found: list[str] = []
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) is dict:
            ref = node.get("$ref")
            if type(ref) is str:
                found.append(ref)
            stack.extend(v for v in node.values() if type(v) is dict or type(v) is list)
        elif type(node) is list:
            stack.extend(v for v in node if type(v) is dict or type(v) is list)
    return found
