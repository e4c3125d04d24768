"""Load stage: read a spec and every file it references into one bundled document.

Untrusted input is read defensively: sizes are checked before reading, YAML is only *composed*
by PyYAML (no constructor runs, so no tag can execute code) and turned into plain values here,
under limits on aliases, depth and expanded size. Every `$ref` is resolved at load time, only
to files inside the spec's folder, never over the network, and rewritten to a local pointer:
external files are mounted whole under `x-mcpmint-files`, so later stages only ever see
`#/...` references (see `refs.py`).

A `$ref` that cannot be resolved (a remote URL, which is never fetched; a missing file; a
pointer to nothing) is not fatal: it is a located warning, and the reference is rewritten to a
placeholder under `x-mcpmint-unresolved` that reads as a permissive schema. Where the reference
had to be a parameter, a request body, an operation or a path item, the frontend leaves that
operation out with a warning naming it. A `$ref` that reaches outside the spec's
folder (G6) is never read, whether or not the file exists (no answer tells which): the same
warning and placeholder, with its own hint. A `$ref` to a file that is not YAML or JSON by
its name (a Markdown description, a code sample, an XML example) is replaced by the file's
text.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import posixpath
import re
import stat
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from .diagnostics import DiagnosticSink
from .refs import (
    UNRESOLVED_KEY,
    PointerError,
    escape_token,
    into_paths,
    resolve_pointer,
    split,
)
from .textindex import (
    Layout,
    MemberRange,
    TextIndex,
    changed_members,
    decode_indexed,
    index_of,
    object_members,
    read_partly,
    reindexed,
)

MOUNT_KEY = "x-mcpmint-files"
# A `$ref` that cannot be resolved points under UNRESOLVED_KEY instead (see
# `_Bundler._unresolved`): one permissive schema per problem, `{description, UNRESOLVED_KEY: why}`.

_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")

_NETWORK_HINT = (
    "mcpmint never fetches anything over the network: download the file into the spec "
    "folder and reference it by a relative path"
)
_OUTSIDE_HINT = (
    "only files inside the folder of the entry spec can be referenced: copy the file there "
    "and use a relative path"
)
_MISSING_HINT = "relative $refs are resolved from the folder of the file that contains them"
_POINTER_HINT = "the part after `#` must name an existing location, e.g. #/components/schemas/Pet"


@dataclass(frozen=True)
class Limits:
    """Bounds on what one load may read and build, so hostile input fails fast and clearly."""

    max_bytes: int = 25 * 1024 * 1024  # per file and in total
    # YAML alias nodes per file. Real specs use hundreds (one of the sweep's, 732); an alias
    # bomb is stopped by `max_nodes`, which counts every alias expanded.
    max_aliases: int = 100_000
    max_depth: int = 256  # nesting of mappings/sequences
    max_nodes: int = 5_000_000  # constructed values, counting alias expansions


@dataclass(frozen=True)
class _Source:
    """Where the values of one file came from, in that file's own pointer space."""

    display: str
    # Escaped pointer ("" or "/a/b") -> line << 32 | column, both 1-based; None for JSON,
    # whose locations are the pointers themselves.
    positions: Mapping[str, int] | None
    finite: bool = True  # no NaN or infinite number (JSON has none: `NaN`, `.inf`, `1e999`)
    # The index of a JSON file's text that passed every check of the quick load
    # (`load_json_quickly`, which can then read an edited copy by it); None otherwise.
    index: TextIndex | None = None

    def locate(self, pointer: str) -> str:
        if self.positions is None:
            return f"{self.display}#{pointer}" if pointer else self.display
        while True:
            packed = self.positions.get(pointer)
            if packed is not None:
                return f"{self.display}:{packed >> 32}:{packed & 0xFFFFFFFF}"
            if not pointer:
                return self.display
            pointer = pointer.rsplit("/", 1)[0]


@dataclass(frozen=True)
class RawDocument:
    """The bundled document and where each of its values came from."""

    path: Path  # the entry file as the user gave it (used for display)
    root: Path  # realpath of the folder no file outside of is ever read
    data: dict[str, Any]  # every $ref in it is local ("#/...")
    files: tuple[Path, ...]  # every file read, entry first, then sorted
    # No NaN or infinite number in `data`: what JSON text carries exactly (document shapes,
    # validateparts.py, digest the data as JSON).
    finite: bool = True
    # Mount key -> source; "" is the entry file.
    _sources: Mapping[str, _Source] = field(default_factory=dict, repr=False, compare=False)

    @property
    def text_index(self) -> TextIndex | None:
        """The index of the one JSON file's text, when it passed the quick load's checks
        (`_Source.index`), for the next load of an edited copy (`load_json_quickly`)."""
        source = self._sources.get("")
        return source.index if source is not None and len(self.files) == 1 else None

    def locate(self, pointer: str) -> str:
        """`file:line:col` (YAML) or `file#/pointer` (JSON) of the value at `pointer`.

        Pointers into `#/x-mcpmint-files/<file>/...` are mapped back to that file. For YAML
        the nearest ancestor with a known position is used.
        """
        try:
            tokens = split(pointer)
        except PointerError:
            tokens = []
        source = self._sources[""]
        if len(tokens) >= 2 and tokens[0] == MOUNT_KEY and tokens[1] in self._sources:
            source = self._sources[tokens[1]]
            tokens = tokens[2:]
        return source.locate("".join("/" + escape_token(t) for t in tokens))


def load_document(
    path: Path, sink: DiagnosticSink, limits: Limits = Limits(), *, root: Path | None = None
) -> RawDocument | None:
    """Read `path` and every file it references into one bundled `RawDocument`.

    Args:
        path: the entry spec (YAML or JSON).
        sink: receives every problem found, each located at file:line:col or file#/pointer.
        limits: bounds on bytes, YAML aliases, nesting depth and expanded values.
        root: the folder that `$ref`s may read from; defaults to the entry file's folder.
            It must contain the entry file.

    Returns:
        The bundled document, or None if any error was reported.
    """
    errors_before = len(sink.errors)
    root_real = os.path.realpath(root if root is not None else path.parent)
    bundler = _Bundler(path, root_real, sink, limits)
    document = bundler.run()
    if document is None or len(sink.errors) > errors_before:
        return None
    return document


@dataclass(frozen=True)
class QuickLoad:
    """A one-file JSON spec read by `load_json_quickly`: the document `load_document` would
    make of it, the `$ref`s checked, and the index of its text for the next load."""

    document: RawDocument
    # Every distinct string `$ref`, each local and resolving; after a load by the previous
    # text's index, those of the changed path items only (the others are that text's).
    refs: frozenset[str]
    digest: str  # the sha256 of the bytes read
    into_paths: bool  # some `$ref` points into `#/paths` or is `#` (refs.into_paths)
    index: TextIndex | None = None  # of the text read (textindex.py), for the next load
    # Read by the previous text's index (`previous`): the members of `paths` it replaced.
    replaced: MemberRange | None = None
    # Read partly (`partly`): the document holds only the changed path items and the
    # components' entries they reach, for the changed items' tools; never the whole.
    partial: bool = False
    # The whole document of the very text read, made on demand (for a partial one).
    whole: Callable[[], RawDocument] | None = field(default=None, compare=False)


class _Checks:
    """The quick load's checks, made by the parser's hooks as it makes each value: the
    values counted as `_check_json` counts them (when `counting`), duplicate keys, NaN and
    the infinities refused, every string `$ref` collected."""

    def __init__(self, counting: bool) -> None:
        self.counting, self.values, self.duplicated = counting, 1, False
        self.refs: set[str] = set()

    def decoder(self) -> json.JSONDecoder:
        return json.JSONDecoder(
            object_pairs_hook=self.pairs, parse_float=_finite, parse_constant=_finite
        )

    def pairs(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        # Counts the values as `_check_json` does (each container's length), objects here
        # and lists through the objects that hold them.
        result = dict(pairs)
        self.values += len(pairs)
        self.duplicated = self.duplicated or len(result) != len(pairs)
        ref = result.get("$ref")
        if type(ref) is str:
            self.refs.add(ref)
        if self.counting:
            for value in result.values():
                if type(value) is list:
                    self.values += _in_list(value)
        return result

    def resolving(self, data: Any) -> bool:
        """Every `$ref` collected is local and resolves in `data`."""
        for ref in self.refs:
            if not ref.startswith("#"):  # a file's (`/x` too), or a URL
                return False
            try:  # and a fragment that is not a JSON pointer is a PointerError
                resolve_pointer(data, ref)
            except PointerError:
                return False
        return True


def _in_list(items: list[Any]) -> int:
    count = len(items)
    for item in items:
        if type(item) is list:
            count += _in_list(item)
    return count


def _finite(literal: str) -> float:  # NaN or an infinity: the whole load marks it
    value = float(literal)
    if not math.isfinite(value):
        raise ValueError(literal)
    return value


def load_json_quickly(
    path: Path,
    limits: Limits = Limits(),
    *,
    root: Path | None = None,
    previous: TextIndex | None = None,
    partly: bool = False,
) -> QuickLoad | None:
    """The one-file JSON spec at `path` as `load_document` bundles it, without its walk over
    every container (GitHub: 0.25 -> 0.1 s), for a caller that knows the nesting of all but
    some parts (a patched run, patch.py: the path items that changed) and checks those with
    `too_deep`. The rest of the load's checks are made on the way: the limits on bytes and
    values, no duplicate key, the top level an object without mcpmint's reserved keys, every
    `$ref` local and resolving (so that nothing is rewritten: the data is the bundle).

    `previous`: the index of a text a load checked (`QuickLoad.index`, or the whole load's:
    `RawDocument.text_index`); when this text differs from it only in members of `paths`,
    only those are checked, and the standard parser reads the text without the checks
    (textindex.py: 0.2 -> 0.1 s on GitHub's). `partly`, then: the document holds only the
    changed path items and the components' entries they reach (`textindex.read_partly`,
    `QuickLoad.partial`: 0.01-0.02 s on GitHub's), for a caller that builds those items'
    tools only.

    None, with nothing reported, for anything else (YAML, a `$ref` to another file or to
    nothing, a duplicate key, a limit passed): `load_document` then says what it is."""
    real = os.path.realpath(path)
    if not real.lower().endswith(".json"):  # the whole load reads the file it names as JSON
        return None
    root_real = _root_of(path, root)
    try:
        if not _inside(os.path.realpath(path.parent), root_real):
            return None
        if not stat.S_ISREG(os.stat(real).st_mode):
            return None
        raw = path.read_bytes()
        if len(raw) > limits.max_bytes:
            return None
        text = raw.decode("utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    # Each value takes a character that is not white space, and so does the comma, colon or
    # bracket that follows it: a text with no more than twice the limit of those holds too
    # few values to count them (GitHub's, pretty-printed: 0.03 s less). Spaces and newlines
    # are enough to tell (tabs and returns, rare, would only make the bound looser).
    dense = len(text) - text.count(" ") - text.count("\n")
    counting = dense >= 2 * limits.max_nodes  # at most (dense + 1) / 2 values
    digest = hashlib.sha256(raw).hexdigest()  # in memory: the file is not read again for it
    made: _Made | None = None
    if previous is not None and not counting:
        made = _by_index(text, previous, digest, partly)
    if made is None:
        made = _checked(text, counting, limits, digest)
    if made is None:
        return None
    data, refs, index, replaced, partial = made
    document = json_document(path, root, data)
    whole = (lambda: json_document(path, root, json.loads(text))) if partial else None
    pointing = into_paths(refs)
    return QuickLoad(document, frozenset(refs), digest, pointing, index, replaced, partial, whole)


# What a quick load read: the data, the `$ref`s checked, the index, the members of `paths`
# read by the previous index (None: all of the text was checked) and whether the data is
# partial (`QuickLoad`).
_Made = tuple[dict[str, Any], set[str], TextIndex | None, MemberRange | None, bool]


def _checked(text: str, counting: bool, limits: Limits, sha256: str) -> _Made | None:
    """The data of `text`, its `$ref`s and its index, every check made on the way."""
    checks = _Checks(counting)
    try:
        walked = decode_indexed(text, checks.decoder())
        if walked is None:  # the standard parser alone, with checks of a fresh state
            checks = _Checks(counting)
            walked = checks.decoder().decode(text), None
    except (ValueError, RecursionError):
        return None
    data, layout = walked
    if (
        type(data) is not dict
        or checks.duplicated
        or checks.values > limits.max_nodes
        or MOUNT_KEY in data
        or UNRESOLVED_KEY in data
        or not checks.resolving(data)
    ):
        return None
    index = index_of(text, layout, into_paths(checks.refs), sha256) if layout else None
    return data, checks.refs, index, None, False


def _by_index(text: str, previous: TextIndex, sha256: str, partly: bool) -> _Made | None:
    """The data of `text` (`partly`: `textindex.read_partly`'s), the `$ref`s of the members
    of `paths` that differ from the text of `previous`, the new index and the members
    replaced, when nothing else differs and those members pass the checks (then so does the
    whole text: textindex.py); None otherwise."""
    if previous.into_paths:
        return None  # a path item is part of a schema: an edit of one is one of the rest
    changed = changed_members(text, previous)
    if changed is None:
        return None
    body = text[changed.start : changed.stop].rstrip(" \t\n\r")
    if changed.last < previous.members:  # a member of `paths` follows them
        if body and not body.endswith(","):
            return None
        body = body[:-1]  # (nothing at all: they were removed)
    elif not body or body.endswith(","):
        return None
    checks = _Checks(counting=False)
    try:
        walked = object_members("{" + body + "}", checks.decoder())
    except (ValueError, RecursionError):
        return None
    if walked is None or checks.duplicated or into_paths(checks.refs):
        return None
    members, starts = walked
    kept = {*previous.keys[: changed.first - 1], *previous.keys[changed.last :]}
    if not kept.isdisjoint(members):
        return None  # a changed member's key is an unchanged one's too
    data: dict[str, Any] | None
    try:  # the standard parser, without hooks: the rest was checked
        data = read_partly(text, previous, changed, members, checks.refs) if partly else None
        partial = data is not None
        if data is None:
            data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if type(data) is not dict or MOUNT_KEY in data or UNRESOLVED_KEY in data:
        return None
    if not checks.resolving(data):
        return None
    starts = [changed.start + start - 1 for start in starts]
    index = reindexed(previous, text, changed, starts, list(members), sha256)
    return data, checks.refs, index, changed, partial


def json_document(path: Path, root: Path | None, data: dict[str, Any]) -> RawDocument:
    """The document `load_json_quickly` makes of the one-file JSON spec at `path` (`root`
    as given to it) whose data is `data`."""
    return RawDocument(
        path=path,
        root=Path(_root_of(path, root)),
        data=data,
        files=(path,),
        _sources={"": _Source(path.as_posix(), None)},
    )


def _root_of(path: Path, root: Path | None) -> str:
    return os.path.realpath(root if root is not None else path.parent)


def too_deep(value: Any, depth: int, limits: Limits = Limits()) -> bool:
    """Whether `value`, a part of a document at `depth` (the top level is 0), holds a
    container the load refuses as nested too deep (`Limits.max_depth`)."""
    stack = [(value, depth)]
    while stack:
        node, level = stack.pop()
        if type(node) is dict:
            children: Any = node.values()
        elif type(node) is list:
            children = node
        else:
            continue
        if level >= limits.max_depth:
            return True
        stack.extend((child, level + 1) for child in children)
    return False


class _Refused(Exception):
    """One located problem that stops reading the current file."""

    def __init__(self, location: str, message: str, hint: str = "") -> None:
        super().__init__(message)
        self.location = location
        self.message = message
        self.hint = hint


class _Unresolvable(_Refused):
    """A `$ref` whose target cannot be had (remote, or missing): degraded, not fatal."""


@dataclass
class _File:
    real: str
    key: str  # path relative to the root, POSIX; "" for the entry file
    display: str
    data: Any
    source: _Source
    # The objects holding a string `$ref`, with their places, in document order, when the
    # parse collected them (JSON); None: `_resolve_refs` walks the data to find them.
    refs: list[tuple[dict[str, Any], _Place]] | None = None


def _inside(path: str, root: str) -> bool:
    return path == root or os.path.commonpath([root, path]) == root


def _mount_pointer(file: _File) -> str:
    if not file.key:
        return "#"
    # refs.split() percent-decodes tokens, so a literal % in a file name must be encoded.
    return f"#/{MOUNT_KEY}/" + escape_token(file.key).replace("%", "%25")


class _Bundler:
    def __init__(self, path: Path, root: str, sink: DiagnosticSink, limits: Limits) -> None:
        self.path = path
        self.root = root
        self.sink = sink
        self.limits = limits
        self.entry_dir = os.path.realpath(path.parent)
        self.display_dir = path.parent.as_posix()
        self.files: dict[str, _File | None] = {}  # realpath -> file; None if it failed
        self.queue: deque[_File] = deque()
        self.bytes_read = 0
        self.unresolved: dict[str, str] = {}  # problem -> placeholder key
        self.root_reads: set[str] = set()  # local refs of other files read in the entry
        self.placeholders: dict[str, dict[str, Any]] = {}

    def run(self) -> RawDocument | None:
        display = self.path.as_posix()
        real = os.path.realpath(self.path)
        if not _inside(self.entry_dir, self.root):
            self.sink.error(display, f"the spec is outside its root folder {self.root}")
            return None
        entry = self._load(real, "", display, None)
        if entry is None:
            return None
        if not isinstance(entry.data, dict):
            self.sink.error(
                entry.source.locate(""),
                f"not an OpenAPI document: {_describe_top_level(entry.data)}",
                "expected a top-level `openapi: 3.x` key",
            )
            return None
        for reserved in (MOUNT_KEY, UNRESOLVED_KEY):
            if reserved in entry.data:
                self.sink.error(
                    entry.source.locate("/" + reserved),
                    f"`{reserved}` is reserved for files mcpmint bundles",
                    "rename or remove this key",
                )
        while self.queue:
            self._resolve_refs(self.queue.popleft())
        mounted = sorted(
            (f for f in self.files.values() if f is not None and f.key), key=lambda f: f.key
        )
        if mounted:
            entry.data[MOUNT_KEY] = {f.key: f.data for f in mounted}
        if self.placeholders:
            entry.data[UNRESOLVED_KEY] = self.placeholders
        source = entry.source
        if mounted or self.placeholders or MOUNT_KEY in entry.data:  # not what it indexed
            source = replace(source, index=None)
        sources = {"": source} | {f.key: f.source for f in mounted}
        return RawDocument(
            path=self.path,
            root=Path(self.root),
            data=entry.data,
            files=(self.path, *(Path(f.display) for f in mounted)),
            finite=all(source.finite for source in sources.values()),
            _sources=sources,
        )

    # ------------------------------------------------------------------ reading one file
    def _load(self, real: str, key: str, display: str, referrer: str | None) -> _File | None:
        if real in self.files:
            return self.files[real]
        self.files[real] = None
        try:
            data, source, refs = self._read(real, display, referrer)
        except _Refused as exc:
            self.sink.error(exc.location, exc.message, exc.hint)
            return None
        file = _File(real, key, display, data, source, refs)
        self.files[real] = file
        self.queue.append(file)
        return file

    def _read(
        self, real: str, display: str, referrer: str | None
    ) -> tuple[Any, _Source, list[tuple[dict[str, Any], _Place]] | None]:
        where = referrer or display
        try:
            info = os.stat(real)
        except OSError as exc:
            hint = _MISSING_HINT if referrer else ""
            raise _Refused(where, f"cannot read {display}: {exc.strerror}", hint) from None
        if not stat.S_ISREG(info.st_mode):
            raise _Refused(where, f"{display} is not a regular file")
        limit = self.limits.max_bytes
        if info.st_size > limit:
            raise _Refused(
                display,
                f"file is {info.st_size} bytes, more than the limit of {limit} (max_bytes)",
                "split the spec into smaller files or raise the byte limit",
            )
        if self.bytes_read + info.st_size > limit:
            raise _Refused(
                display,
                f"the spec's files together exceed {limit} bytes (max_bytes)",
                "reference fewer or smaller files",
            )
        try:
            with open(real, "rb") as handle:
                # One byte more than stat() promised tells us the file grew meanwhile.
                raw = handle.read(info.st_size + 1)
        except OSError as exc:
            raise _Refused(where, f"cannot read {display}: {exc.strerror}") from None
        if len(raw) > info.st_size:
            raise _Refused(display, f"{display} changed while it was being read")
        self.bytes_read += len(raw)
        text = _decode(raw, display)
        refs: list[tuple[dict[str, Any], _Place]] = []
        # The entry file's text is indexed when it is JSON, with the sha256 of its bytes.
        indexed = (lambda: hashlib.sha256(raw).hexdigest()) if referrer is None else None
        if referrer is not None and _is_text_file(real):
            # A `$ref` to a Markdown description, a code sample, an XML example: its text,
            # as Redocly and Swagger UI read it (never parsed as YAML).
            return text, _Source(display, None), []
        if real.lower().endswith(".json"):
            return (*_parse_json(text, display, self.limits, self.sink, refs, indexed), refs)
        if text.lstrip().startswith("{"):
            try:
                return (*_parse_json(text, display, self.limits, self.sink, refs, indexed), refs)
            except _Refused:
                pass  # a YAML flow mapping is not necessarily JSON
        from .yamlload import parse_yaml  # PyYAML is imported for YAML files only

        if referrer is not None and not os.path.splitext(real)[1]:
            # A file named without a suffix (`examples/add-attachment`): data when it parses,
            # else its text (an HTTP request written out, a sample), as for `.md` files.
            try:
                return (*parse_yaml(text, display, self.limits, self.sink), None)
            except _Refused as refused:
                if "syntax error" not in refused.message:
                    raise
                return text, _Source(display, None), []
        return (*parse_yaml(text, display, self.limits, self.sink), None)

    def _display(self, real: str) -> str:
        relative = Path(os.path.relpath(real, self.entry_dir)).as_posix()
        return posixpath.normpath(posixpath.join(self.display_dir, relative))

    # ------------------------------------------------------------------ $ref resolution
    def _resolve_refs(self, file: _File) -> None:
        # A ref that resolved without a word is the same pointer wherever it appears (GitHub:
        # 10,460 refs, 1,413 distinct): resolved once. One that warned or failed is resolved
        # at each place, so that each place gets its own diagnostic.
        clean: dict[str, str] = {}
        for node, place in _ref_holders(file):
            ref = node["$ref"]
            text = self._text_of(file, ref)
            if text is not None and place is not None:
                parent = _at(file.data, place[0])
                if isinstance(parent, (dict, list)):
                    parent[place[1]] = text  # type: ignore[index]
                    continue
            new = clean.get(ref)
            if new is None:
                reported = len(self.sink.items)
                new = self._resolve(file, ref, _pointer((place, "$ref")))
                if new is not None and len(self.sink.items) == reported:
                    clean[ref] = new
            if new is not None:
                node["$ref"] = new

    def _text_of(self, file: _File, ref: str) -> str | None:
        """The text of the file `ref` names whole, when it is read as text (`_is_text_file`,
        or no suffix and no YAML): the `$ref` is replaced by it (a description, a code
        sample's source)."""
        location, _, fragment = ref.partition("#")
        if not location or fragment or _SCHEME.match(location) or location.startswith("//"):
            return None
        try:
            real = os.path.realpath(os.path.join(os.path.dirname(file.real), unquote(location)))
        except (OSError, ValueError):
            return None
        if not _inside(real, self.root) or not os.path.isfile(real):
            return None
        key = Path(os.path.relpath(real, self.root)).as_posix()
        target = self._load(real, key, self._display(real), file.display)
        if target is None or not isinstance(target.data, str):
            return None
        return target.data

    def _resolve(self, file: _File, ref: str, pointer: str) -> str | None:
        """The local pointer that replaces `ref`, or None (error reported)."""
        where = file.source.locate(pointer)
        try:
            target, fragment = self._target(file, ref, where)
        except _Unresolvable as exc:
            return self._unresolved(where, ref, exc.message, exc.hint, pointer)
        except _Refused as exc:
            self.sink.error(exc.location, exc.message, exc.hint)
            return None
        if target is None:
            return None
        if fragment and not fragment.startswith("/"):
            self.sink.error(
                where,
                f"unsupported $ref {ref!r}: the part after `#` must be a JSON pointer",
                _POINTER_HINT,
            )
            return None
        try:
            resolve_pointer(target.data, "#" + fragment)
        except PointerError:
            if target is not file or not file.key:
                pass
            elif (meant := self._in_entry(fragment)) is not None:
                # `#/definitions/X` in a file of paths, meaning the entry's definitions (as
                # json-refs and swagger-cli read such specs): the entry's, said once a ref.
                if ref not in self.root_reads:
                    self.root_reads.add(ref)
                    self.sink.warning(
                        where,
                        f"$ref {ref!r} names nothing in {file.display}; read in the entry "
                        f"spec {self.path.as_posix()}, where it is",
                        "write the path to the file that holds it (e.g. ../swagger.yaml#/...)",
                    )
                return meant
            return self._unresolved(
                where,
                ref,
                f"broken $ref {ref!r}: nothing at #{fragment} in {target.display}",
                _POINTER_HINT,
                pointer,
            )
        return _mount_pointer(target) + fragment

    def _in_entry(self, fragment: str) -> str | None:
        """The bundle pointer of `#fragment` read in the entry file, where a section given
        as a list of `$ref`s (`definitions: [{$ref: defs/a.yaml}, ...]`) is read as the
        mapping they make together; None if nothing is there."""
        entry = self.files.get(os.path.realpath(self.path))
        if entry is None:
            return None
        try:
            tokens = split("#" + fragment)
        except PointerError:
            return None
        node: Any = entry.data
        pointer = "#"
        for token in tokens:
            if isinstance(node, dict) and token in node:
                node, pointer = node[token], pointer + "/" + escape_token(token)
                continue
            if not isinstance(node, list):
                return None
            for element in node:
                found = self._bundled(element)
                if found is not None and isinstance(found[0], dict) and token in found[0]:
                    node = found[0][token]
                    pointer = found[1] + "/" + escape_token(token)
                    break
            else:
                return None
        return pointer

    def _bundled(self, element: Any) -> tuple[Any, str] | None:
        """The value and bundle pointer a rewritten `{$ref: "#/x-mcpmint-files/..."}` names."""
        if not isinstance(element, dict) or not isinstance(element.get("$ref"), str):
            return None
        ref = element["$ref"]
        try:
            tokens = split(ref)
        except PointerError:
            return None
        if len(tokens) < 2 or tokens[0] != MOUNT_KEY:
            return None
        file = next((f for f in self.files.values() if f is not None and f.key == tokens[1]), None)
        if file is None:
            return None
        try:
            rest = "".join("/" + escape_token(t) for t in tokens[2:])
            return resolve_pointer(file.data, "#" + rest), ref
        except PointerError:
            return None

    def _unresolved(self, where: str, ref: str, message: str, hint: str, pointer: str) -> str:
        """A warning, and the pointer to a permissive placeholder that stands in for `ref`.

        One placeholder per distinct problem and kind, so the same broken reference used in
        many places is one schema. Its `description` tells the model (and the reader of
        tools.json) why the value is not described. Where the `$ref` (at `pointer`) stands for
        a parameter, the placeholder also has a `name` and `in`, so that the OpenAPI validator
        can still check the rest of the document; the frontend never uses them (refs.unresolved).
        """
        tokens = pointer.split("/")[:-1]  # without the final `$ref`
        as_parameter = len(tokens) >= 2 and (
            (tokens[-2] == "parameters" and tokens[-1].isdigit())
            or tokens[-3:-1] == ["components", "parameters"]
        )
        if as_parameter:
            self.sink.warning(where, f"{message}; the parameter it names is unknown", hint)
        else:
            reason = f"{message}; read as an unknown schema that accepts any value"
            self.sink.warning(where, reason, hint)
        kind = "parameter" if as_parameter else "schema"
        key = self.unresolved.setdefault(f"{kind} {message}", str(len(self.unresolved)))
        placeholder: dict[str, Any] = {
            "description": f"Not described: the spec's $ref {ref!r} could not be resolved.",
            UNRESOLVED_KEY: message,
        }
        if as_parameter:
            placeholder |= {"name": f"{UNRESOLVED_KEY}-{key}", "in": "query", "schema": {}}
        self.placeholders[key] = placeholder
        return f"#/{UNRESOLVED_KEY}/{key}"

    def _target(self, file: _File, ref: str, where: str) -> tuple[_File | None, str]:
        location, _, fragment = ref.partition("#")
        if not location:
            return file, fragment
        scheme = _SCHEME.match(location)
        if scheme is not None and scheme.group().lower() == "file:":
            raise _Unresolvable(where, _outside(ref), _OUTSIDE_HINT)
        if scheme is not None or location.startswith("//"):
            # Any other scheme names a resource we would have to fetch: never done.
            raise _Unresolvable(where, f"network $ref not fetched: {ref!r}", _NETWORK_HINT)
        try:
            real = os.path.realpath(os.path.join(os.path.dirname(file.real), unquote(location)))
        except (OSError, ValueError):
            raise _Refused(where, f"invalid $ref path {ref!r}", _MISSING_HINT) from None
        if not _inside(real, self.root):
            raise _Unresolvable(where, _outside(ref), _OUTSIDE_HINT)
        display = self._display(real)
        if not os.path.exists(real):
            raise _Unresolvable(
                where, f"$ref {ref!r}: file {display} does not exist", _MISSING_HINT
            )
        key = Path(os.path.relpath(real, self.root)).as_posix()
        return self._load(real, key, display, where), fragment


# Files a `$ref` may name whose content is data (parsed); any other file is read as text.
_DATA_SUFFIXES = (".yaml", ".yml", ".json")


def _is_text_file(real: str) -> bool:
    """A file that is not YAML or JSON by its name: `.md`, `.txt`, `.xml`, `.py`, `.sh`...
    A name without a suffix is read as data, or as text when it does not parse (`_read`)."""
    suffix = os.path.splitext(real)[1].lower()
    return bool(suffix) and suffix not in _DATA_SUFFIXES


def _outside(ref: str) -> str:
    return f"$ref {ref!r} points outside the spec folder; not read"


def _describe_top_level(value: Any) -> str:
    if value is None:
        return "the file is empty"
    if isinstance(value, list):
        return "the top level is a list"
    return f"the top level is a {type(value).__name__} value"


def _decode(raw: bytes, display: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise _Refused(
            f"{display}:{line}:{column}",
            f"the file is not valid UTF-8 (byte 0x{raw[exc.start]:02x})",
            "save the file as UTF-8",
        ) from None


# A container's place in its file: (the parent's place, its key or index), None at the top.
# Walks over every container of a large spec keep this instead of its JSON pointer, which
# is spelled out only for the few places a message or a `$ref` needs (`_pointer`).
_Place = tuple[Any, "str | int"] | None


def _ref_holders(file: _File) -> Iterator[tuple[dict[str, Any], _Place]]:
    """The objects of `file` holding a string `$ref`, with their places, in document order
    (depth first): the ones its JSON parse collected, or found by a walk (YAML)."""
    if file.refs is not None:
        yield from file.refs
        return
    # YAML aliases can share one container between places: visit each container once, or a
    # ref would be rewritten twice.
    seen: set[int] = set()
    stack: list[tuple[Any, _Place]] = [(file.data, None)]
    while stack:
        node, place = stack.pop()
        if id(node) in seen:
            continue
        seen.add(id(node))
        if isinstance(node, dict):
            if isinstance(node.get("$ref"), str):
                yield node, place
            children = [(v, (place, k)) for k, v in node.items() if isinstance(v, (dict, list))]
        elif isinstance(node, list):
            children = [(v, (place, i)) for i, v in enumerate(node) if isinstance(v, (dict, list))]
        else:
            continue
        stack.extend(reversed(children))


def _at(data: Any, place: _Place) -> Any:
    """The container at `place` in `data`."""
    keys: list[str | int] = []
    while place is not None:
        place, key = place
        keys.append(key)
    node = data
    for key in reversed(keys):
        node = node[key]
    return node


def _pointer(place: _Place) -> str:
    """The JSON pointer (without `#`) of `place`."""
    tokens: list[str] = []
    while place is not None:
        place, key = place
        tokens.append(escape_token(str(key)))
    return "".join("/" + token for token in reversed(tokens))


# ---------------------------------------------------------------------- JSON
def _parse_json(
    text: str,
    display: str,
    limits: Limits,
    sink: DiagnosticSink,
    refs: list[tuple[dict[str, Any], _Place]] | None = None,
    indexed: Callable[[], str] | None = None,
) -> tuple[Any, _Source]:
    """The data of JSON `text` and its source; `refs`, when given, receives the objects that
    hold a string `$ref`, with their places, in document order. `indexed`: the source keeps
    the text's index (textindex.py) when the text passes the quick load's checks, with the
    sha256 of its bytes that `indexed` gives."""
    duplicates: dict[int, list[str]] = {}
    finite = True

    def pairs_hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        result = dict(pairs)
        if len(result) != len(pairs):
            seen: set[str] = set()
            repeated = duplicates.setdefault(id(result), [])
            for key, _ in pairs:
                if key in seen:
                    repeated.append(key)
                seen.add(key)
        return result

    def number(literal: str) -> float:  # `NaN`, `Infinity`, and floats (`1e999` is one)
        nonlocal finite
        value = float(literal)
        finite = finite and math.isfinite(value)
        return value

    decoder = json.JSONDecoder(
        object_pairs_hook=pairs_hook, parse_float=number, parse_constant=number
    )
    layout: Layout | None = None
    try:
        walked = decode_indexed(text, decoder) if indexed is not None else None
        if walked is None:  # the standard parser alone, with hooks of a fresh state
            duplicates.clear()
            finite = True
            data = decoder.decode(text)
        else:
            data, layout = walked
    except json.JSONDecodeError as exc:
        raise _Refused(
            f"{display}:{exc.lineno}:{exc.colno}",
            f"JSON syntax error: {exc.msg}",
            "fix the JSON at this position",
        ) from None
    except RecursionError:
        where = _too_deep_at(text, limits.max_depth)
        raise _Refused(f"{display}:{where}", _depth_message(limits), _DEPTH_HINT) from None
    source = _Source(display, None, finite)
    _check_json(data, limits, duplicates, source, sink, refs)
    if layout and finite and not duplicates and refs is not None and indexed is not None:
        pointing = into_paths(holder["$ref"] for holder, _ in refs)
        source = replace(source, index=index_of(text, layout, pointing, indexed()))
    return data, source


_DEPTH_HINT = "flatten the structure with $ref to named components"


def _too_deep_at(text: str, max_depth: int) -> str:
    """`line:col` of the first bracket that opens level `max_depth` + 1 of JSON `text`.

    Only for the error path: the parser itself ran out of stack before it could say where.
    """
    depth, line, column, in_string, escaped = 0, 1, 0, False, False
    for char in text:
        column += 1
        if char == "\n":
            line, column = line + 1, 0
        elif in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > max_depth:
                return f"{line}:{column}"
        elif char in "]}":
            depth -= 1
    return "1:1"


def _depth_message(limits: Limits) -> str:
    return f"nested deeper than {limits.max_depth} levels (max_depth)"


def _check_json(
    data: Any,
    limits: Limits,
    duplicates: dict[int, list[str]],
    source: _Source,
    sink: DiagnosticSink,
    refs: list[tuple[dict[str, Any], _Place]] | None,
) -> None:
    """The limits, and a warning for each duplicate key, in document order (depth first);
    the objects holding a string `$ref` into `refs` on the way (one walk instead of two).

    The parser makes plain dicts, lists and strings only, so `type(x) is` tests do (a third
    of the walk's time went to `isinstance`: 0.15 -> 0.07 s on GitHub's 90,000 containers)."""
    count = 1
    stack: list[tuple[Any, _Place, int]] = [(data, None, 0)]
    max_depth, max_nodes = limits.max_depth, limits.max_nodes
    while stack:
        node, place, depth = stack.pop()
        if type(node) is dict:
            items: Any = node.items()
            if refs is not None and type(node.get("$ref")) is str:
                refs.append((node, place))
            if duplicates:  # most documents have none
                for key in duplicates.get(id(node), ()):
                    sink.warning(
                        source.locate(_pointer((place, key))),
                        f"duplicate key {key!r}: the last value wins",
                        "remove one of the duplicate keys",
                    )
        elif type(node) is list:
            items = enumerate(node)
        else:
            continue
        if depth >= max_depth:
            raise _Refused(source.locate(_pointer(place)), _depth_message(limits), _DEPTH_HINT)
        count += len(node)
        if count > max_nodes:
            raise _Refused(source.locate(_pointer(place)), _nodes_message(limits), _NODES_HINT)
        below = depth + 1
        children = [(v, (place, k), below) for k, v in items if type(v) is dict or type(v) is list]
        if children:
            children.reverse()
            stack.extend(children)


_NODES_HINT = "the document is too large to process safely"


def _nodes_message(limits: Limits) -> str:
    return f"more than {limits.max_nodes} values, counting alias expansions (max_nodes)"
