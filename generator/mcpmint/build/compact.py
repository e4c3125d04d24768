"""Compaction of a finished JSON Schema root: the same meaning in fewer bytes.

Called once at the end of `SchemaRoot.finish`, on the schema exactly as clients will read it,
so it cannot change what the schema means (earlier, reference-level attempts lost `readOnly`
removal and `$ref` siblings). Two passes, done together in one walk:

- Redundant keywords are dropped: a `description` that repeats the same schema's `title`, and
  `properties: {}` below the root (it constrains nothing; the root keeps it, because clients
  expect a tool's input object to declare its properties).
- Repeated subschemas are hoisted: a subschema of at least `min_bytes` bytes of JSON that occurs
  two or more times in the root goes into the root's `$defs` once, and each occurrence becomes
  `{"$ref": "#/$defs/<Name>"}`. In JSON Schema 2020-12 a `$ref` with no siblings means exactly
  its target, and every `$ref` we emit is relative to the root, so moving a subschema that
  contains one keeps it valid. The root itself and existing `$defs` entries are never replaced.

Identical means identical as canonical JSON (sorted keys, `1` and `1.0` and `true` distinct).
Every distinct subschema gets an integer id bottom-up, once (hash-consing), so nothing is
re-serialised. Which subschemas to hoist is decided largest first: a subschema's number of
occurrences is the sum over its parents of (its occurrences in the parent) times (the parent's
occurrences, or one once the parent is hoisted), and a parent is always larger than its
children, so one pass in order of size gives the same answer as hoisting the largest and
counting again until nothing is left. Compacting a compacted root changes nothing.

Names are readable and deterministic: the subschema's `title`, else the property (plus `Item`,
`Value`, `Option` for what is below it) where it first occurs, in PascalCase; `_2`, `_3` on a
clash with existing or earlier names.

One module, over 600 lines, on purpose: the two passes share one walk and one measure of
each subschema's size, and splitting them would mean two walks that must agree on every node.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from json.encoder import encode_basestring  # what json.dumps(ensure_ascii=False) writes
from typing import Any, Final

from mcpmint import jsontext
from mcpmint.jsontext import SCALAR_TYPES

__all__ = [
    "HOIST_MIN_BYTES",
    "OUTPUT_SCHEMA_MAX_BYTES",
    "Interner",
    "compact",
    "compact_within",
    "inline_defs",
    "limit_depth",
]

HOIST_MIN_BYTES: Final = 120

_SINGLE: Final = frozenset(
    [
        "items",
        "additionalProperties",
        "unevaluatedProperties",
        "unevaluatedItems",
        "not",
        "if",
        "then",
        "else",
        "contains",
        "propertyNames",
        "contentSchema",
        "additionalItems",
    ]
)
_LISTS: Final = frozenset(["allOf", "anyOf", "oneOf", "prefixItems"])
_MAPS: Final = frozenset(["properties", "patternProperties", "dependentSchemas"])
_DEFS_PREFIX: Final = "#/$defs/"
_SUFFIX: Final = {
    "items": "Item",
    "prefixItems": "Item",
    "additionalProperties": "Value",
    "patternProperties": "Value",
    "unevaluatedProperties": "Value",
    "anyOf": "Option",
    "oneOf": "Option",
}
_NAME_LENGTH: Final = 60


def _is_mapping(value: Any) -> bool:
    # Schemas are plain dicts: the type test first spares the (slow) Mapping ABC check.
    return type(value) is dict or isinstance(value, Mapping)


def compact(
    root: Mapping[str, Any],
    *,
    min_bytes: int = HOIST_MIN_BYTES,
    interner: Interner | None = None,
) -> dict[str, Any]:
    """`root` with redundant keywords dropped and repeated subschemas moved into `$defs`.

    Pure: `root` is not modified; unchanged parts of the result may share objects with it.
    An `interner` shared by many roots identifies each subschema they share (the same
    object) once; those subschemas must not change while it is in use.
    """
    return _Compactor(min_bytes, interner).run(root)


class Interner:
    """Hash-consing of subschemas: an integer id for each distinct one (bottom-up, once), its
    size as JSON, its kept keywords and its schema children. What a subschema is does not
    depend on the root it is in (the root itself is marked `top`), so one interner may serve
    every root of a run: a subschema object met again, in any root, is not walked again."""

    def __init__(self) -> None:
        self._ids: dict[tuple[Any, ...], int] = {}
        self._memo: dict[tuple[int, bool], int] = {}  # (id(object), is schema) -> node id
        self._keep: list[Any] = []  # keeps memoised objects alive, so ids are not reused
        self._size: list[int] = []
        self._obj: list[Any] = []  # a representative object of each node id
        self._pairs: list[tuple[tuple[str, int], ...] | None] = []  # kept (key, child) pairs
        self._kids: list[tuple[int, ...]] = []  # schema children, with multiplicity
        self._key_sizes: dict[str, int] = {}
        self._dropping: set[int] = set()  # ids of kept objects that lose a keyword, or below
        self._top_dropped = False  # the same, for the root `_schema` last interned
        # Cuts of roots that are not planned (`compact_within`), shared by every root: views
        # of subschemas with nothing hoisted, and the sizes of their cuts per `$defs` (on
        # Stripe, 288 cut responses reach one 92-schema cycle through 3 different `$defs`).
        self._unplanned: _Compactor | None = None
        self._cut_sizes: dict[tuple[int, tuple[tuple[str, int], ...]], _CutSizes] = {}

    # -- ids ------------------------------------------------------------------------------

    def _new(
        self,
        key: tuple[Any, ...],
        obj: Any,
        size: int,
        pairs: tuple[tuple[str, int], ...] | None,
        kids: tuple[int, ...],
    ) -> int:
        found = self._ids.get(key)
        if found is not None:
            return found
        ident = len(self._size)
        self._ids[key] = ident
        self._size.append(size)
        self._obj.append(obj)
        self._pairs.append(pairs)
        self._kids.append(kids)
        return ident

    def _data(self, value: Any) -> int:
        """Data (enum values, defaults, examples) is identified, never changed."""
        if type(value) in SCALAR_TYPES:  # identified by value, not by object id
            return self._scalar(value)
        memo_key = (id(value), False)
        found = self._memo.get(memo_key)
        if found is not None:
            return found
        if _is_mapping(value):
            pairs = tuple((k, self._data(v)) for k, v in value.items())
            ordered = tuple(sorted(pairs))
            size = 1 + sum(self._key(k) + self._size[c] for k, c in pairs)
            ident = self._new(("D", ordered), value, max(size, 2), None, ())
        elif isinstance(value, list):
            items = tuple(self._data(v) for v in value)
            size = 1 + sum(self._size[c] + 1 for c in items)
            ident = self._new(("DL", items), value, max(size, 2), None, ())
        else:
            ident = self._scalar(value)
        self._memo[memo_key] = ident
        self._keep.append(value)
        return ident

    def _key(self, key: str) -> int:
        """Bytes of `"key":` plus one separator."""
        size = self._key_sizes.get(key)
        if size is None:
            size = self._key_sizes[key] = len(json.dumps(key, ensure_ascii=False)) + 2
        return size

    def _scalar(self, value: Any) -> int:
        key = ("V", type(value).__name__, value)
        found = self._ids.get(key)
        if found is not None:
            return found
        # The length of the text json.dumps writes, without its encoder for the usual types.
        kind = type(value)
        if kind is str:
            size = len(encode_basestring(value))
        elif kind is int:
            size = len(int.__repr__(value))
        elif kind is bool or value is None:
            size = 5 if value is False else 4
        else:
            size = len(json.dumps(value, ensure_ascii=False))
        return self._new(key, value, size, None, ())

    def _schema(self, node: Any, *, top: bool = False) -> int:
        if not _is_mapping(node):
            return self._scalar(node) if isinstance(node, bool) else self._data(node)
        memo_key = (id(node), True)
        found = None if top else self._memo.get(memo_key)
        if found is not None:
            return found
        pairs: list[tuple[str, int]] = []
        kids: list[int] = []
        subs: list[Any] = []  # the subschema objects, for `_dropping`
        title = node.get("title")
        for key, value in node.items():
            if key == "description" and isinstance(title, str) and value == title:
                continue
            if key in _MAPS and isinstance(value, Mapping):
                if not value and key == "properties" and not top:
                    continue
                members = tuple((name, self._schema(sub)) for name, sub in value.items())
                kids.extend(c for _, c in members)
                subs.extend(value.values())
                size = 1 + sum(self._key(n) + self._size[c] for n, c in members)
                child = self._new(("M", members), value, max(size, 2), members, ())
            elif key in _LISTS and isinstance(value, list):
                items = tuple(self._schema(sub) for sub in value)
                kids.extend(items)
                subs.extend(value)
                size = 1 + sum(self._size[c] + 1 for c in items)
                child = self._new(("L", items), value, max(size, 2), None, items)
            elif key in _SINGLE and isinstance(value, Mapping | bool):
                child = self._schema(value)
                kids.append(child)
                subs.append(value)
            else:
                child = self._data(value)
            pairs.append((key, child))
        size = 1 + sum(self._key(k) + self._size[c] for k, c in pairs)
        kept = tuple(pairs)
        schema_kids = tuple(c for c in kids if _is_mapping(self._obj[c]))
        ident = self._new(("S", top, tuple(sorted(kept))), node, max(size, 2), kept, schema_kids)
        dropping = self._dropping
        dropped = len(kept) != len(node) or any(id(sub) in dropping for sub in subs)
        if top:
            self._top_dropped = dropped
        else:
            self._memo[memo_key] = ident
            self._keep.append(node)
            if dropped:
                dropping.add(id(node))
        return ident

    def root(self, node: Mapping[str, Any]) -> tuple[int, bool]:
        """The id of `node` as a root (where `properties: {}` stays), and whether compaction
        drops a keyword in it or below."""
        ident = self._schema(node, top=True)
        return ident, self._top_dropped

    def unplanned_cut(
        self, root_id: int, def_ids: Mapping[str, int], max_bytes: int
    ) -> dict[str, Any]:
        """The deepest cut that fits in `max_bytes` of the interned root `root_id` with the
        `$defs` `def_ids`, compacted with nothing hoisted (a cut resolves every reference,
        so hoisting would change nothing in it). Views and measured sizes are kept for the
        next root: roots that share their `$defs` share most of what a cut reads."""
        if self._unplanned is None:
            self._unplanned = _Compactor(HOIST_MIN_BYTES, self)
        viewer = self._unplanned
        key = (max_bytes, tuple(sorted(def_ids.items())))
        sizes = self._cut_sizes.get(key)
        if sizes is None:
            sizes = self._cut_sizes[key] = _CutSizes(viewer.defs_views(def_ids), max_bytes)
        top = viewer.root_view(root_id, sizes.defs)
        return _deepest_cut(top, sizes.defs, max_bytes, sizes)

    def dropped(self, node: Any) -> bool:
        """Whether compaction drops a keyword in `node` (already interned, not a root) or
        below it. Per object, not per id: `{"type": "object"}` and `{"type": "object",
        "properties": {}}` are one subschema once compacted."""
        return id(node) in self._dropping


class _Compactor:
    """One root's pass: counts, hoists and names over the interner's ids, then builds."""

    def __init__(self, min_bytes: int, interner: Interner | None = None) -> None:
        self._min_bytes = min_bytes
        self._interner = interner if interner is not None else Interner()
        # The interner's tables, which it only ever appends to.
        self._size = self._interner._size
        self._obj = self._interner._obj
        self._pairs = self._interner._pairs
        self._kids = self._interner._kids
        self._names: dict[int, str] = {}
        self._built: dict[int, Any] = {}
        self._counts: dict[int, int] = {}
        self._views: dict[tuple[int, bool], Any] = {}
        self._root_id = -1
        self._def_ids: dict[str, int] = {}  # the root's own `$defs`: name -> node id
        self._changed = False  # interning dropped a keyword
        self._defs: dict[str, int] = {}  # the compacted root's `$defs`: name -> node id

    def run(self, root: Mapping[str, Any]) -> dict[str, Any]:
        if not self.plan(root):
            return dict(root)
        return self.build_root()

    def intern(self, root: Mapping[str, Any]) -> None:
        """Intern `root` and its `$defs` (what `plan` and `least_size` read)."""
        defs_in = root.get("$defs")
        defs: Mapping[str, Any] = defs_in if isinstance(defs_in, Mapping) else {}
        body = {k: v for k, v in root.items() if k != "$defs"} if defs else root
        self._root_id, changed = self._interner.root(body)
        self._def_ids = {name: self._interner._schema(sub) for name, sub in defs.items()}
        self._changed = changed or any(self._interner.dropped(sub) for sub in defs.values())

    def least_size(self, cap: int) -> int:
        """A lower bound of the compacted root's size, counted up to just past `cap` (after
        `intern`): every distinct subschema it reaches is written at least once, inline or
        as a `$defs` entry, and each time with its own bytes (all but its subschemas' text,
        which a reference may replace). A root that cannot fit is cut without being planned:
        a cut resolves every reference, so what was hoisted, and under which name, changes
        nothing in it; on Stripe's responses, which run through a 92-schema cycle, planning
        them was a third of the build."""
        size, kids = self._size, self._kids
        todo = [self._root_id, *self._def_ids.values()]
        seen = set(todo)
        total = 0
        while todo and total <= cap:
            ident = todo.pop()
            own = size[ident]
            for kid in kids[ident]:
                own -= size[kid]
                if kid not in seen:
                    seen.add(kid)
                    todo.append(kid)
            total += own
        return total

    def plan(self, root: Mapping[str, Any]) -> bool:
        """Intern `root`, choose what to hoist and name it; False when compaction changes
        nothing (nothing hoisted, nothing dropped): then the result is `root` as it is."""
        self.intern(root)
        return self.choose()

    def choose(self) -> bool:
        """`plan` for the root last interned."""
        root_id, def_ids, changed = self._root_id, self._def_ids, self._changed
        fixed = {root_id, *def_ids.values()}

        # Discovery order (pre-order, document order) and the label of each first occurrence,
        # of the subschemas that could be hoisted: a smaller one never is, and everything below
        # it is smaller still (a parent's text holds its children's), so leaving them out
        # changes no count, order or name that matters, and the pass walks a fraction of the
        # tree (GitHub's response schemas are mostly small leaves).
        size, least = self._size, self._min_bytes
        order: list[int] = []
        labels: dict[int, str] = {}
        seen: set[int] = set()
        stack: list[tuple[int, str]] = [(d, n) for n, d in reversed(list(def_ids.items()))]
        stack.append((root_id, ""))
        while stack:
            ident, label = stack.pop()
            if ident in seen:
                continue
            seen.add(ident)
            order.append(ident)
            labels[ident] = label
            kids = self._labelled_kids(ident, label)
            stack.extend(kid for kid in reversed(kids) if size[kid[0]] >= least)

        rank = {ident: i for i, ident in enumerate(order)}
        counts = dict.fromkeys(order, 0)
        counts[root_id] += 1
        for ident in def_ids.values():
            counts[ident] += 1
        hoisted: list[int] = []
        for ident in sorted(order, key=lambda i: (-self._size[i], rank[i])):
            count = counts[ident]
            hoist = (
                count >= 2
                and ident not in fixed
                and self._size[ident] >= self._min_bytes
                and _is_mapping(self._obj[ident])
            )
            if hoist:
                hoisted.append(ident)
            weight = 1 if hoist else count
            for kid in self._kids[ident]:
                if kid in counts:  # only the subschemas that could be hoisted are counted
                    counts[kid] += weight

        self._counts = counts
        if not hoisted and not changed:
            return False
        taken = set(def_ids)
        for ident in sorted(hoisted, key=rank.__getitem__):
            self._names[ident] = _unique(self._wanted_name(ident, labels[ident]), taken)
        self._defs = {**def_ids, **{name: ident for ident, name in self._names.items()}}
        return True

    def build_root(self) -> dict[str, Any]:
        """The compacted root (after `plan` said True)."""
        out: dict[str, Any] = self._build(self._root_id, top=True)
        if self._defs:
            out["$defs"] = {
                name: self._build(self._defs[name], top=True) for name in sorted(self._defs)
            }
        return out

    def root_size(self) -> int:
        """`_size(self.build_root())`, counted from the interner's table (nothing is built).

        Each output unit (the root, each `$defs` entry) is its interned text, which writes
        every subschema in full, less what its hoisted subschemas' references save; a hoisted
        subschema is referred to `counts` times in all (`plan`), each reference in exactly
        one unit.
        """
        size = self._size
        units = size[self._root_id] + sum(size[ident] for ident in self._defs.values())
        for ident, name in self._names.items():
            units -= self._counts[ident] * (size[ident] - self._ref_size(name))
        if not self._defs:
            return units
        members = sum(_key_size(name) + 1 for name in self._defs)  # `"name":` and a comma
        # `{...,"$defs":{"a":...,"b":...}}`: the root's closing brace becomes a comma.
        return units + _key_size("$defs") + 1 + members + (1 if size[self._root_id] > 2 else 0)

    @staticmethod
    def _ref_size(name: str) -> int:
        return 9 + len(encode_basestring(_DEFS_PREFIX + name))  # {"$ref":"#/$defs/<name>"}

    def root_views(self) -> tuple[dict[str, Any], dict[str, Any]]:
        """The compacted root and its `$defs`, as a depth cut reads them (`_View`)."""
        defs = self.defs_views(self._defs)
        return self.root_view(self._root_id, defs), defs

    def defs_views(self, named: Mapping[str, int]) -> dict[str, Any]:
        """Views of the `$defs` entries `named` (name -> node id), in name order."""
        return {name: self._view(named[name], top=True) for name in sorted(named)}

    def root_view(self, root_id: int, defs: Mapping[str, Any]) -> dict[str, Any]:
        """The root `root_id` as a cut reads it, with `defs` (views) as its `$defs`."""
        root = dict(self._view(root_id, top=True).items())
        if defs:
            root["$defs"] = defs
        return root

    def cut_unplanned(self, max_bytes: int) -> dict[str, Any]:
        """The deepest cut of the root last interned, nothing planned (`least_size`)."""
        return self._interner.unplanned_cut(self._root_id, self._def_ids, max_bytes)

    def _view(self, ident: int, *, top: bool = False) -> Any:
        """`_build(ident, top)`, or a `_View` of it that builds only what a cut reads; the
        same object each time it is asked for (`_CutSizes` knows parts by their ids)."""
        key = (ident, top)
        found = self._views.get(key)
        if found is None:
            obj, pairs = self._obj[ident], self._pairs[ident]
            if not top and ident in self._names:
                found = self._build(ident)  # {"$ref": "#/$defs/<name>"}
            elif isinstance(obj, Mapping) and pairs is not None:
                found = _View(self, ident)
            else:
                found = obj
            self._views[key] = found
        return found

    def _labelled_kids(self, ident: int, label: str) -> list[tuple[int, str]]:
        found: list[tuple[int, str]] = []
        for key, child in self._pairs[ident] or ():
            if key in _MAPS:
                members = self._pairs[child] or ()
                found.extend(
                    (c, name if key == "properties" else label + "Value") for name, c in members
                )
            elif key in _LISTS:
                sub = label + _SUFFIX.get(key, "")
                found.extend((c, sub) for c in self._kids[child])
            elif key in _SINGLE and _is_mapping(self._obj[child]):
                found.append((child, label + _SUFFIX.get(key, "")))
        return [(c, lab) for c, lab in found if _is_mapping(self._obj[c])]

    def _wanted_name(self, ident: int, label: str) -> str:
        title = self._obj[ident].get("title")
        text = title if isinstance(title, str) and title.strip() else label
        name = "".join(w[:1].upper() + w[1:] for w in re.findall(r"[A-Za-z0-9]+", text))
        name = name[:_NAME_LENGTH] or "Schema"
        return name

    def _build(self, ident: int, *, top: bool = False) -> Any:
        if not top:
            name = self._names.get(ident)
            if name is not None:
                return {"$ref": _DEFS_PREFIX + name}
            done = self._built.get(ident)
            if done is not None:
                return done
        obj = self._obj[ident]
        pairs = self._pairs[ident]
        if not isinstance(obj, Mapping) or pairs is None:
            return obj
        out: dict[str, Any] = {}
        for key, child in pairs:
            value = obj[key]
            if key in _MAPS and isinstance(value, Mapping):
                out[key] = {name: self._build(c) for name, c in self._pairs[child] or ()}
            elif key in _LISTS and isinstance(value, list):
                out[key] = [self._build(c) for c in self._kids[child]]
            elif key in _SINGLE and isinstance(value, Mapping):
                out[key] = self._build(child)
            else:
                out[key] = value
        if not top:
            self._built[ident] = out
        return out


# The members a depth cut (`_cut`) goes down through, and those it leaves out: every other
# subschema (a cut has no `$defs`, so what it copies must hold no `$ref`; leaving a keyword
# out only makes the schema more permissive). Data members are copied as they are.
_CUT_MAPS: Final = frozenset(["properties", "patternProperties"])
_CUT_LISTS: Final = frozenset(["anyOf", "oneOf", "allOf"])
_CUT_SINGLE: Final = frozenset(["items", "additionalProperties"])
_CUT_DROPPED: Final = (
    frozenset(["$defs", "$ref"])
    | (_MAPS - _CUT_MAPS)
    | (_LISTS - _CUT_LISTS)
    | (_SINGLE - _CUT_SINGLE)
)


class _View(Mapping[str, Any]):
    """A compacted subschema as `_Compactor._build` writes it, built only where it is read:
    the members a depth cut goes down through are views (or dicts and lists of views), the
    others are built when asked for. A cut of a large compacted schema reads a few levels of
    it; writing it whole first was most of Stripe's build."""

    def __init__(self, compactor: _Compactor, ident: int) -> None:
        self._compactor = compactor
        self._ident = ident
        self._members = dict(compactor._pairs[ident] or ())  # key -> child node id, in order

    def __getitem__(self, key: str) -> Any:
        child = self._members[key]
        compactor = self._compactor
        value = compactor._obj[self._ident][key]
        view, build = compactor._view, compactor._build
        if key in _MAPS and isinstance(value, Mapping):
            take = view if key in _CUT_MAPS else build
            return {name: take(kid) for name, kid in compactor._pairs[child] or ()}
        if key in _LISTS and isinstance(value, list):
            take = view if key in _CUT_LISTS else build
            return [take(kid) for kid in compactor._kids[child]]
        if key in _SINGLE and isinstance(value, Mapping):
            return view(child) if key in _CUT_SINGLE else build(child)
        return value

    def __iter__(self) -> Iterator[str]:
        return iter(self._members)

    def __len__(self) -> int:
        return len(self._members)


def compact_within(
    root: Mapping[str, Any],
    max_bytes: int,
    *,
    min_bytes: int = HOIST_MIN_BYTES,
    interner: Interner | None = None,
) -> tuple[dict[str, Any], bool]:
    """`limit_depth(compact(root, ...), max_bytes)`, and whether that cut it.

    The same result, without writing out a compacted root that does not fit: its size is
    counted from the interner's table, and its cut reads it through views (`_View`). A root
    whose least compacted size (`least_size`) is over the budget is not even planned.
    """
    compactor = _Compactor(min_bytes, interner)
    compactor.intern(root)
    if compactor.least_size(max_bytes) > max_bytes:  # a cut: nothing to plan (`least_size`)
        return compactor.cut_unplanned(max_bytes), True
    if not compactor.choose():
        whole = dict(root)
        if _size(whole) <= max_bytes:
            return whole, False
        return _deepest_cut(whole, whole.get("$defs", {}), max_bytes), True
    if compactor.root_size() <= max_bytes:
        return compactor.build_root(), False
    top, defs = compactor.root_views()
    return _deepest_cut(top, defs, max_bytes), True


def _unique(name: str, taken: set[str]) -> str:
    candidate, number = name, 1
    while candidate in taken:
        number += 1
        candidate = f"{name}_{number}"
    taken.add(candidate)
    return candidate


def inline_defs(root: Mapping[str, Any], names: set[str] | frozenset[str]) -> dict[str, Any]:
    """The inverse of hoisting: `root` with every `$ref` to one of `names` replaced by its
    target (recursively) and those entries taken out of `$defs`. The named entries must not
    be recursive, which hoisted ones never are. For tests and for readers that want one tree.
    """
    defs_in = root.get("$defs")
    defs: Mapping[str, Any] = defs_in if isinstance(defs_in, Mapping) else {}
    done: dict[str, Any] = {}

    def expand(node: Any) -> Any:
        if isinstance(node, list):
            return [expand(item) for item in node]
        if not isinstance(node, Mapping):
            return node
        ref = node.get("$ref")
        if len(node) == 1 and isinstance(ref, str) and ref.startswith(_DEFS_PREFIX):
            name = ref[len(_DEFS_PREFIX) :]
            if name in names and name in defs:
                if name not in done:
                    done[name] = expand(defs[name])
                return done[name]
        return {key: expand(value) for key, value in node.items()}

    out: dict[str, Any] = {k: expand(v) for k, v in root.items() if k != "$defs"}
    kept = {name: expand(sub) for name, sub in defs.items() if name not in names}
    if kept:
        out["$defs"] = kept
    return out


OUTPUT_SCHEMA_MAX_BYTES: Final = 32 * 1024


def limit_depth(
    root: Mapping[str, Any], max_bytes: int = OUTPUT_SCHEMA_MAX_BYTES
) -> dict[str, Any]:
    """`root` if its JSON fits in `max_bytes`, else the deepest cut of it that does.

    A cut keeps the structure down to some depth and, below it, only each value's type: the
    shape a model needs stays, and the schema can only become more permissive, which an output
    schema may always be (results are checked against it). Used for output schemas, which for
    some APIs (Stripe: 450 KB per operation through one 92-schema reference cycle) would
    otherwise dwarf everything else a model is shown. References are resolved while cutting, so
    the result has no `$defs`; the cut follows properties, items, additional properties and
    `anyOf`/`oneOf`/`allOf`, and leaves out every other subschema (`if`, `contains`, ...).
    """
    if _size(root) <= max_bytes:
        return dict(root)
    return _deepest_cut(root, root.get("$defs", {}), max_bytes)


def _deepest_cut(
    root: Mapping[str, Any],
    defs: Mapping[str, Any],
    max_bytes: int,
    sizes: _CutSizes | None = None,
) -> dict[str, Any]:
    """The cut of `root` at the greatest depth (4 at most) whose JSON fits in `max_bytes`
    (`sizes`: the measures of earlier cuts with the same `defs` and `max_bytes`)."""
    if sizes is None:
        sizes = _CutSizes(defs, max_bytes)
    for depth in range(4, -1, -1):
        # Measured before it is made: a cut that does not fit can be megabytes (Stripe's
        # go through a reference cycle at every level), and only the one that fits is needed.
        if sizes.of(root, depth) <= max_bytes:
            cut: dict[str, Any] = _cut(root, defs, depth)
            return cut
    return {"type": "object"}


def _size(schema: Any) -> int:
    # The length of compact JSON does not depend on key order: sorted, orjson writes it.
    return len(jsontext.compact(schema))


def _resolve(node: Mapping[str, Any], defs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The `$defs` target of a local reference, else `node`; siblings are kept (the nearer
    ones win). A target that is itself a reference is followed too: a hoisted subschema may
    be a reference with siblings, and a cut has no `$defs` to leave one in."""
    followed: list[str] = []
    ref = node.get("$ref")
    while isinstance(ref, str) and ref.startswith(_DEFS_PREFIX) and ref not in followed:
        followed.append(ref)
        siblings = {k: v for k, v in node.items() if k != "$ref"}
        target = defs.get(ref[len(_DEFS_PREFIX) :])
        node = {**target, **siblings} if isinstance(target, Mapping) else siblings
        ref = node.get("$ref")
    return node


def _cut(node: Any, defs: Mapping[str, Any], depth: int) -> Any:
    if not isinstance(node, Mapping):
        return node
    node = _resolve(node, defs)
    if depth <= 0:
        return _shape(node, defs)
    out: dict[str, Any] = {}
    for key, value in node.items():
        if key in _CUT_DROPPED:
            continue
        if key in _CUT_MAPS and isinstance(value, Mapping):
            out[key] = {name: _cut(sub, defs, depth - 1) for name, sub in value.items()}
        elif key in _CUT_SINGLE and isinstance(value, Mapping):
            out[key] = _cut(value, defs, depth - 1)
        elif key in _CUT_LISTS and isinstance(value, list):
            out[key] = [_cut(branch, defs, depth) for branch in value]
        else:
            out[key] = value
    return out


def _shape(node: Mapping[str, Any], defs: Mapping[str, Any]) -> dict[str, Any]:
    """Only what kind of value this is: its type, or the types of its alternatives."""
    if "type" in node:
        return {"type": node["type"]}
    for key in ("anyOf", "oneOf"):
        branches = node.get(key)
        if isinstance(branches, list):
            kinds = []
            for branch in branches:
                resolved = _resolve(branch, defs) if isinstance(branch, Mapping) else {}
                kinds.append({"type": resolved["type"]} if "type" in resolved else {})
            if all(kinds) and kinds:
                unique = [dict(t) for t in {_kind_key(k): k for k in kinds}.values()]
                return {"anyOf": unique} if len(unique) > 1 else unique[0]
            return {}
    return {}


class _CutSizes:
    """`min(_size(_cut(node, defs, depth)), cap + 1)` without making the cut: the length of
    its compact JSON from the lengths of its parts, each part measured once per depth (a
    `$defs` entry is reached from many places, at the same few depths), and no further than
    `cap`: what is longer only needs to be known to be. Key order changes no length."""

    def __init__(self, defs: Mapping[str, Any], cap: int) -> None:
        self.defs = defs
        self._over = cap + 1
        self._known: dict[tuple[int, int], int] = {}
        self._keep: list[Any] = []  # what `_known` is keyed by stays alive: ids stay unique

    def of(self, node: Any, depth: int) -> int:
        if not isinstance(node, Mapping):
            return min(_leaf_size(node), self._over)
        key = (id(node), depth)
        found = self._known.get(key)
        if found is not None:
            return found
        size = min(self._measure(node, depth), self._over)
        self._known[key] = size
        self._keep.append(node)
        return size

    def _measure(self, node: Mapping[str, Any], depth: int) -> int:
        node = _resolve(node, self.defs)
        if depth <= 0:
            return _size(_shape(node, self.defs))
        over = self._over
        total = 1  # "{", and "," or "}" after each member
        for key, value in node.items():  # as `_cut` goes through them
            if key in _CUT_DROPPED:
                continue
            if key in _CUT_MAPS and isinstance(value, Mapping):
                size = 1 + sum(_key_size(name) + 1 for name in value) if value else 2
                for sub in value.values():
                    size += self.of(sub, depth - 1)
                    if size > over:
                        break
            elif key in _CUT_SINGLE and isinstance(value, Mapping):
                size = self.of(value, depth - 1)
            elif key in _CUT_LISTS and isinstance(value, list):
                size = 1 + len(value) if value else 2
                for branch in value:
                    size += self.of(branch, depth)
                    if size > over:
                        break
            else:
                size = _leaf_size(value)
            total += _key_size(key) + size + 1
            if total > over:
                return over
        return total if total > 1 else 2  # an empty object is "{}"


_KEY_SIZES: dict[str, int] = {}


def _key_size(key: str) -> int:
    """Characters of `"key":` in compact JSON."""
    size = _KEY_SIZES.get(key)
    if size is None:
        size = len(encode_basestring(key)) + 1
        if len(_KEY_SIZES) < 100_000:  # keywords and property names: a bounded vocabulary
            _KEY_SIZES[key] = size
    return size


def _leaf_size(value: Any) -> int:
    """`_size(value)`, without writing the text for the most common values."""
    kind = type(value)
    if kind is str:
        return len(encode_basestring(value))
    if kind is bool or value is None:
        return 5 if value is False else 4
    if kind is int:
        return len(int.__repr__(value))
    return _size(value)


def _kind_key(kind: Mapping[str, Any]) -> tuple[str, str]:
    """Equal for two `{"type": ...}` kinds exactly when their JSON is (a plain string type,
    by far the most common, without encoding it: this runs ~900,000 times on Stripe)."""
    value = kind["type"]
    if isinstance(value, str):
        return "s", value
    return "j", json.dumps(value, sort_keys=True)
