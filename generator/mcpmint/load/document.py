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

One module, over 600 lines: reading a file, its limits and resolving every `$ref` across
files are one walk with one set of rules about what may be read.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import stat
from collections import deque
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from mcpmint.diagnostics import DiagnosticSink
from mcpmint.load.common import (
    DEPTH_HINT,
    NODES_HINT,
    FileSource,
    Limits,
    Refused,
    depth_message,
    nodes_message,
)
from mcpmint.refs import UNRESOLVED_KEY, PointerError, escape_token, resolve_pointer, split

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
class RawDocument:
    """The bundled document and where each of its values came from."""

    path: Path  # the entry file as the user gave it (used for display)
    root: Path  # realpath of the folder no file outside of is ever read
    data: dict[str, Any]  # every $ref in it is local ("#/...")
    files: tuple[Path, ...]  # every file read, entry first, then sorted
    # Mount key -> source; "" is the entry file.
    _sources: Mapping[str, FileSource] = field(default_factory=dict, repr=False, compare=False)

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
    path: Path,
    sink: DiagnosticSink,
    limits: Limits | None = None,
    *,
    root: Path | None = None,
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
    bundler = _Bundler(path, root_real, sink, limits or Limits())
    document = bundler.run()
    if document is None or len(sink.errors) > errors_before:
        return None
    return document


class _Unresolvable(Refused):
    """A `$ref` whose target cannot be had (remote, or missing): degraded, not fatal."""


@dataclass
class _File:
    real: str
    key: str  # path relative to the root, POSIX; "" for the entry file
    display: str
    data: Any
    source: FileSource
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
        sources = {"": entry.source} | {f.key: f.source for f in mounted}
        return RawDocument(
            path=self.path,
            root=Path(self.root),
            data=entry.data,
            files=(self.path, *(Path(f.display) for f in mounted)),
            _sources=sources,
        )

    # ------------------------------------------------------------------ reading one file
    def _load(self, real: str, key: str, display: str, referrer: str | None) -> _File | None:
        if real in self.files:
            return self.files[real]
        self.files[real] = None
        try:
            data, source, refs = self._read(real, display, referrer)
        except Refused as exc:
            self.sink.error(exc.location, exc.message, exc.hint)
            return None
        file = _File(real, key, display, data, source, refs)
        self.files[real] = file
        self.queue.append(file)
        return file

    def _read(
        self, real: str, display: str, referrer: str | None
    ) -> tuple[Any, FileSource, list[tuple[dict[str, Any], _Place]] | None]:
        where = referrer or display
        try:
            info = os.stat(real)
        except OSError as exc:
            hint = _MISSING_HINT if referrer else ""
            raise Refused(where, f"cannot read {display}: {exc.strerror}", hint) from None
        if not stat.S_ISREG(info.st_mode):
            raise Refused(where, f"{display} is not a regular file")
        limit = self.limits.max_bytes
        if info.st_size > limit:
            raise Refused(
                display,
                f"file is {info.st_size} bytes, more than the limit of {limit} (max_bytes)",
                "split the spec into smaller files or raise the byte limit",
            )
        if self.bytes_read + info.st_size > limit:
            raise Refused(
                display,
                f"the spec's files together exceed {limit} bytes (max_bytes)",
                "reference fewer or smaller files",
            )
        try:
            with open(real, "rb") as handle:
                # One byte more than stat() promised tells us the file grew meanwhile.
                raw = handle.read(info.st_size + 1)
        except OSError as exc:
            raise Refused(where, f"cannot read {display}: {exc.strerror}") from None
        if len(raw) > info.st_size:
            raise Refused(display, f"{display} changed while it was being read")
        self.bytes_read += len(raw)
        text = decode_utf8(raw, display)
        refs: list[tuple[dict[str, Any], _Place]] = []
        if referrer is not None and _is_text_file(real):
            # A `$ref` to a Markdown description, a code sample, an XML example: its text,
            # as Redocly and Swagger UI read it (never parsed as YAML).
            return text, FileSource(display, None), []
        if real.lower().endswith(".json"):
            return (*parse_json(text, display, self.limits, self.sink, refs), refs)
        if text.lstrip().startswith("{"):
            try:
                return (*parse_json(text, display, self.limits, self.sink, refs), refs)
            except Refused:
                pass  # a YAML flow mapping is not necessarily JSON
        from mcpmint.load.yamlparse import parse_yaml

        if referrer is not None and not os.path.splitext(real)[1]:
            # A file named without a suffix (`examples/add-attachment`): data when it parses,
            # else its text (an HTTP request written out, a sample), as for `.md` files.
            try:
                return (*parse_yaml(text, display, self.limits, self.sink), None)
            except Refused as refused:
                if "syntax error" not in refused.message:
                    raise
                return text, FileSource(display, None), []
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
        except Refused as exc:
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
            raise Refused(where, f"invalid $ref path {ref!r}", _MISSING_HINT) from None
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


def decode_utf8(raw: bytes, display: str) -> str:
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw.count(b"\n", 0, exc.start) + 1
        column = exc.start - (raw.rfind(b"\n", 0, exc.start) + 1) + 1
        raise Refused(
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
def parse_json(
    text: str,
    display: str,
    limits: Limits,
    sink: DiagnosticSink,
    refs: list[tuple[dict[str, Any], _Place]] | None = None,
) -> tuple[Any, FileSource]:
    """The data of JSON `text` and its source; `refs`, when given, receives the objects that
    hold a string `$ref`, with their places, in document order."""
    duplicates: dict[int, list[str]] = {}

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

    decoder = json.JSONDecoder(object_pairs_hook=pairs_hook)
    try:
        data = decoder.decode(text)
    except json.JSONDecodeError as exc:
        raise Refused(
            f"{display}:{exc.lineno}:{exc.colno}",
            f"JSON syntax error: {exc.msg}",
            "fix the JSON at this position",
        ) from None
    except RecursionError:
        where = _too_deep_at(text, limits.max_depth)
        raise Refused(f"{display}:{where}", depth_message(limits), DEPTH_HINT) from None
    source = FileSource(display, None)
    _check_json(data, limits, duplicates, source, sink, refs)
    return data, source


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


def _check_json(
    data: Any,
    limits: Limits,
    duplicates: dict[int, list[str]],
    source: FileSource,
    sink: DiagnosticSink,
    refs: list[tuple[dict[str, Any], _Place]] | None,
) -> None:
    """The limits, and a warning for each duplicate key, in document order (depth first);
    the objects holding a string `$ref` into `refs` on the way (one walk instead of two).

    The parser makes plain dicts, lists and strings only, so `type(x) is` tests do, and are
    cheaper than `isinstance` on every container of a large spec."""
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
            raise Refused(source.locate(_pointer(place)), depth_message(limits), DEPTH_HINT)
        count += len(node)
        if count > max_nodes:
            raise Refused(source.locate(_pointer(place)), nodes_message(limits), NODES_HINT)
        below = depth + 1
        children = [(v, (place, k), below) for k, v in items if type(v) is dict or type(v) is list]
        if children:
            children.reverse()
            stack.extend(children)
