"""Small valid instances of converted (JSON Schema 2020-12) schemas, for generated tests.

Generated tests need arguments a tool accepts and responses its `outputSchema` accepts. The
spec's own words come first (`examples`, `default`, `const`, `enum`); otherwise the smallest
plausible value is built: required properties only, `minItems` items, strings and numbers
inside their bounds. Nothing here is random, so generated tests are byte-identical between runs.

Every answer is checked against the whole schema before it is returned, with the runtime's
notion of an integer (a Python `int`, never `1.0` or `True`); when no valid instance is found
the answer is `(False, None)`, never a guess.
"""

from __future__ import annotations

import importlib
import math
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

from jsonschema.protocols import Validator  # type: ignore[import-untyped, unused-ignore]
from referencing.exceptions import Unresolvable

from mcpmint.runtime.arguments import schema_validator
from mcpmint.runtime.patterns import pattern_search

__all__ = ["drop_invalid_examples", "sample_instance", "teaching_instance"]

_MAX_DEPTH: Final = 32
# Recursive schemas with several branches could otherwise explore exponentially many trees.
_MAX_STEPS: Final = 20_000

_FORMATS: Final = {
    "date-time": "2024-01-01T00:00:00Z",
    "date": "2024-01-01",
    "time": "12:00:00Z",
    "email": "user@example.com",
    "idn-email": "user@example.com",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "uri": "https://example.com",
    "url": "https://example.com",
    "iri": "https://example.com",
    "uri-reference": "https://example.com",
    "hostname": "example.com",
    "idn-hostname": "example.com",
    "ipv4": "192.0.2.1",
    "ipv6": "2001:db8::1",
    "duration": "P1D",
    "byte": "c3RyaW5n",
    "binary": "string",
    "password": "string",
    "int64": "1",
    "decimal": "1",
}
# Tried in order when a string has a pattern; short, and covering the usual character classes.
_STRING_CANDIDATES: Final = ("string", "a", "A", "0", "abc", "ABC", "123", "a1", "example")


def sample_instance(
    schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None
) -> tuple[bool, Any]:
    """A small instance valid against `schema`, or `(False, None)` when none can be built.

    Args:
        schema: a converted schema (the output of `mcpmint.schema`), possibly with `$defs`.
        defs: the `$defs` its `#/$defs/...` references point into; defaults to its own.

    Returns:
        `(True, value)` with a value that validates, or `(False, None)`.
    """
    if defs is None:
        defs = schema.get("$defs") or {}
    sampler = _Sampler(defs)
    ok, value = sampler.sample(schema, 0, 0)
    if ok and sampler.valid(schema, value):
        return True, value
    return False, None


class _Sampler:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self._defs = defs
        self._steps = 0
        # id(schema) -> (schema, its validator): each candidate of one schema is checked by
        # the same validator. The schema is held, so its id is not reused while this lives.
        self._validators: dict[int, tuple[Any, Validator]] = {}

    def valid(self, schema: Any, value: Any) -> bool:
        if isinstance(schema, bool):
            return schema
        found = self._validators.get(id(schema))
        if found is None:
            document = {**schema, "$defs": self._defs} if self._defs else dict(schema)
            found = self._validators[id(schema)] = (schema, schema_validator(document))
        try:
            return bool(found[1].is_valid(value))
        except Unresolvable:
            return False

    def sample(self, schema: Any, depth: int, variant: int) -> tuple[bool, Any]:
        """`variant` > 0 asks for a different value, for arrays whose items must be unique."""
        self._steps += 1
        if schema is True:
            return True, _plain_string(variant)
        if not isinstance(schema, Mapping) or depth > _MAX_DEPTH or self._steps > _MAX_STEPS:
            return False, None
        for candidate in _rotate(_spec_values(schema), variant):
            if self.valid(schema, candidate):
                return True, candidate
        for value in self._built(schema, depth, variant):
            if self.valid(schema, value):
                return True, value
        return False, None

    def _built(self, schema: Mapping[str, Any], depth: int, variant: int) -> Iterator[Any]:
        """Candidates built from the schema's structure, best first, lazily: the first valid
        one ends the search."""
        ref = schema.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            ok, value = self.sample(self._defs.get(ref[len("#/$defs/") :]), depth + 1, variant)
            if ok:
                yield value
        for key in ("oneOf", "anyOf", "allOf"):
            for branch in schema.get(key, []):
                ok, value = self.sample(_with_branch(schema, key, branch), depth + 1, variant)
                if ok:
                    yield value
        for name in _types(schema):
            ok, value = self._typed(name, schema, depth, variant)
            if ok:
                yield value

    def _typed(
        self, name: str, schema: Mapping[str, Any], depth: int, variant: int
    ) -> tuple[bool, Any]:
        if name == "object":
            return self._object(schema, depth)
        if name == "array":
            return self._array(schema, depth)
        if name == "string":
            return _string(schema, variant)
        if name == "integer":
            return _integer(schema, variant)
        if name == "number":
            return _number(schema, variant)
        if name == "boolean":
            return True, variant % 2 == 0
        return True, None

    def _object(self, schema: Mapping[str, Any], depth: int) -> tuple[bool, Any]:
        properties = schema.get("properties", {})
        names = list(schema.get("required", []))
        # minProperties: the declared optional properties first, then made-up keys.
        optional = [name for name in properties if name not in names]
        while len(names) < schema.get("minProperties", 0) and optional:
            names.append(optional.pop(0))
        out: dict[str, Any] = {}
        for name in names:
            ok, value = self.sample(_property_schema(schema, name), depth + 1, 0)
            if not ok:
                return False, None
            out[name] = value
        extra = schema.get("additionalProperties", True)
        index = 0
        while len(out) < schema.get("minProperties", 0) and extra is not False:
            index += 1
            ok, value = self.sample(extra, depth + 1, 0)
            if not ok:
                return False, None
            out[f"key{index}"] = value
        return True, out

    def _array(self, schema: Mapping[str, Any], depth: int) -> tuple[bool, Any]:
        prefix = schema.get("prefixItems", [])
        items = schema.get("items", True)
        count = schema.get("minItems", 0)
        if "contains" in schema:
            count = max(count, schema.get("minContains", 1))
        out: list[Any] = []
        for index in range(count):
            item = prefix[index] if index < len(prefix) else schema.get("contains", items)
            # Different values only where they must differ: formats stay intact otherwise.
            variant = index if schema.get("uniqueItems") is True else 0
            ok, value = self.sample(item, depth + 1, variant)
            if not ok:
                return False, None
            out.append(value)
        return True, out


def _with_branch(schema: Mapping[str, Any], key: str, branch: Any) -> Any:
    """The branch together with what the schema says next to the union: in
    `{required: [a], anyOf: [{required: [b]}, ...]}` a sample needs both `a` and `b`."""
    if not isinstance(branch, Mapping):
        return branch
    rest = {k: v for k, v in schema.items() if k != key}
    if not rest:
        return branch
    combined = {**rest, **branch}
    if "required" in rest and "required" in branch:
        combined["required"] = [*rest["required"], *branch["required"]]
    if "properties" in rest and "properties" in branch:
        combined["properties"] = {**rest["properties"], **branch["properties"]}
    return combined


def _spec_values(schema: Mapping[str, Any]) -> list[Any]:
    """The values the spec itself offers, in order of preference."""
    values: list[Any] = []
    examples = schema.get("examples")
    if isinstance(examples, list):
        values.extend(examples)
    for key in ("default", "const"):
        if key in schema:
            values.append(schema[key])
    enum = schema.get("enum")
    if isinstance(enum, list):
        values.extend(enum)
    return values


def _rotate(values: list[Any], variant: int) -> list[Any]:
    if not values:
        return values
    shift = variant % len(values)
    return values[shift:] + values[:shift]


def _types(schema: Mapping[str, Any]) -> list[str]:
    """The types to try: the declared ones (null last), or guessed from the keywords."""
    declared = schema.get("type")
    if declared is not None:
        names = declared if isinstance(declared, list) else [declared]
        return [n for n in names if n != "null"] + [n for n in names if n == "null"]
    if any(key in schema for key in ("properties", "required", "additionalProperties")):
        return ["object"]
    if any(key in schema for key in ("items", "prefixItems", "minItems", "contains")):
        return ["array"]
    if any(key in schema for key in ("minimum", "maximum", "multipleOf")):
        return ["number"]
    if any(key in schema for key in ("$ref", "oneOf", "anyOf", "allOf")):
        return []  # the branches decide
    return ["string"]


def _property_schema(schema: Mapping[str, Any], name: str) -> Any:
    properties = schema.get("properties", {})
    if name in properties:
        return properties[name]
    for pattern, sub in schema.get("patternProperties", {}).items():
        if pattern_search(pattern, name):
            return sub
    return schema.get("additionalProperties", True)


def _plain_string(variant: int) -> str:
    return "string" if variant == 0 else f"string{variant}"


def _string(schema: Mapping[str, Any], variant: int) -> tuple[bool, Any]:
    low = schema.get("minLength", 0)
    high = schema.get("maxLength")
    pattern = schema.get("pattern")
    bases = [_FORMATS[schema["format"]]] if schema.get("format") in _FORMATS else []
    if pattern is not None:
        # A pattern that is mostly literal (`^/v1/accounts`) is its own best sample.
        bases.append(re.sub(r"\\(.)", r"\1", pattern.removeprefix("^").removesuffix("$")))
    # Last, a text read from the pattern, which none of those may meet (an ID's
    # `^[0-9A-Fa-f]{8}-([0-9A-Fa-f]{4}-){3}[0-9A-Fa-f]{12}$`).
    made = [text for text in [_pattern_text(pattern) if pattern is not None else None] if text]
    for base in [*bases, *_STRING_CANDIDATES, *made]:
        if variant:
            base = f"{base}{variant}"
        text = _fit(base, low, high)
        if text is not None and (pattern is None or pattern_search(pattern, text)):
            return True, text
    return False, None


# Python's own reading of a regular expression (`sre_parse`, private since 3.11): a tree of
# opcodes. A pattern is ECMA-262's, mostly Python's too; what it reads otherwise, or cannot
# read, gives no text, and every text is checked against the pattern itself after.
try:
    _REGEX: Any = importlib.import_module("re._parser")
except ImportError:  # a later Python may move it: then no text from patterns, as for look-arounds
    _REGEX = None
# A character class's member, tried in this order.
_CLASS_CANDIDATES: Final = "a0A-_ .xb1B"
# `\d`, `\w`, `\s` and their complements, by the characters they hold.
_CATEGORIES: Final[dict[str, Callable[[str], bool]]] = {
    "CATEGORY_DIGIT": str.isdigit,
    "CATEGORY_NOT_DIGIT": lambda c: not c.isdigit(),
    "CATEGORY_WORD": lambda c: c.isalnum() or c == "_",
    "CATEGORY_NOT_WORD": lambda c: not (c.isalnum() or c == "_"),
    "CATEGORY_SPACE": str.isspace,
    "CATEGORY_NOT_SPACE": lambda c: not c.isspace(),
}


def _pattern_text(pattern: str) -> str | None:
    """A short text `pattern` matches: each repetition its fewest times, each alternation
    its first branch, each class its first member of `_CLASS_CANDIDATES` (or of its own);
    None for what this does not read (lookarounds, backreferences)."""
    if _REGEX is None:
        return None
    try:
        tree = _REGEX.parse(pattern)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    out: list[str] = []
    return "".join(out) if _emit(tree, out, 0) else None


def _emit(items: Any, out: list[str], depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    for op, value in items:
        name = str(op)
        if name == "LITERAL":
            out.append(chr(value))
        elif name in ("NOT_LITERAL", "ANY"):
            out.append(next(c for c in _CLASS_CANDIDATES if name == "ANY" or ord(c) != value))
        elif name == "IN":
            found = _member(value)
            if found is None:
                return False
            out.append(found)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            low, _, sub = value
            if low > 64:
                return False
            for _ in range(low):
                if not _emit(sub, out, depth + 1):
                    return False
        elif name == "SUBPATTERN":
            if not _emit(value[-1], out, depth + 1):
                return False
        elif name == "ATOMIC_GROUP":
            if not _emit(value, out, depth + 1):
                return False
        elif name == "BRANCH":
            if not _emit(value[1][0], out, depth + 1):
                return False
        elif name != "AT":  # anchors give no text; lookarounds, backreferences: not read
            return False
    return True


def _member(items: Any) -> str | None:
    """The first character of `_CLASS_CANDIDATES` (or else of the class's own) a character
    class (`[0-9A-Fa-f]`, `[^,]`, `\\d`) holds."""
    negated = bool(items) and str(items[0][0]) == "NEGATE"
    own = [
        chr(v if str(op) == "LITERAL" else v[0])
        for op, v in items
        if str(op) in ("LITERAL", "RANGE")
    ]
    candidates: list[str] = [*_CLASS_CANDIDATES, *own]
    for c in candidates:
        held: bool = False
        for op, value in items:
            kind = str(op)
            if kind == "LITERAL":
                held = held or ord(c) == value
            elif kind == "RANGE":
                held = held or value[0] <= ord(c) <= value[1]
            elif kind == "CATEGORY":
                test = _CATEGORIES.get(str(value))
                held = held or (test is not None and test(c))
        if held != negated:
            return c
    return None


def _fit(text: str, low: int, high: int | None) -> str | None:
    if len(text) < low:
        text += text[-1] * (low - len(text))
    if high is not None and len(text) > high:
        text = text[:high]
    return text if len(text) >= low else None


def _integer(schema: Mapping[str, Any], variant: int) -> tuple[bool, Any]:
    low, high = _integer_bounds(schema)
    # 1 when allowed: 0 and negative numbers are often special to APIs.
    value = 1 if low is None else max(1, low)
    value = value if high is None else min(value, high)
    value += variant
    step = schema.get("multipleOf")
    if step is not None:
        multiple = math.ceil(value / step) * step
        if not float(multiple).is_integer():
            return False, None
        value = int(multiple)
    if (low is not None and value < low) or (high is not None and value > high):
        return False, None
    return True, value


def _integer_bounds(schema: Mapping[str, Any]) -> tuple[int | None, int | None]:
    lows: list[int] = []
    highs: list[int] = []
    if "minimum" in schema:
        lows.append(math.ceil(schema["minimum"]))
    if "exclusiveMinimum" in schema:
        lows.append(math.floor(schema["exclusiveMinimum"]) + 1)
    if "maximum" in schema:
        highs.append(math.floor(schema["maximum"]))
    if "exclusiveMaximum" in schema:
        highs.append(math.ceil(schema["exclusiveMaximum"]) - 1)
    return (max(lows) if lows else None), (min(highs) if highs else None)


def _number(schema: Mapping[str, Any], variant: int) -> tuple[bool, Any]:
    ok, value = _integer(schema, variant)
    if ok:
        return True, value
    # No integer fits (a narrow range, or a fractional multipleOf): try the middle of the range
    # and the first multiple above its lower end; validation decides.
    lows = [schema[k] for k in ("minimum", "exclusiveMinimum") if k in schema]
    highs = [schema[k] for k in ("maximum", "exclusiveMaximum") if k in schema]
    low = max(lows) if lows else None
    high = min(highs) if highs else None
    if low is None or high is None:
        middle = (low + 1) if low is not None else (high - 1 if high is not None else 1)
    else:
        middle = (low + high) / 2
    step = schema.get("multipleOf")
    if step is not None and low is not None:
        return _multiple_in_range(step, low, high)
    return True, middle


def _multiple_in_range(step: float, low: float, high: float | None) -> tuple[bool, Any]:
    """A multiple of a fractional `step` that JSON Schema's float check accepts: k * step is
    not always an exact multiple in floating point (3 * 0.05), so a few are tried."""
    first = math.floor(low / step)
    for k in range(first, first + 10):
        value = k * step
        if value < low or (high is not None and value > high):
            continue
        if float(value / step).is_integer():
            return True, value
    return False, None


# ---------------------------------------------------------------------- examples that teach
# Formats whose sample is a real-looking value; "binary" and "password" give only "string".
_TEACHING_FORMATS: Final = frozenset(_FORMATS) - {"binary", "password", "int64", "decimal"}


def teaching_instance(
    schema: Mapping[str, Any], defs: Mapping[str, Any] | None = None
) -> tuple[bool, Any]:
    """A valid value for an example a model learns from, or `(False, None)`: only where the
    schema says what a real value looks like (its own examples, default, const or enum, a
    format, a pattern; an object whose required properties all do). A bare string gets no
    `"string"` placeholder: better no example than one that teaches a wrong value."""
    if defs is None:
        defs = schema.get("$defs") or {}
    if not _teaches(schema, defs, 0):
        return False, None
    return sample_instance(schema, defs)


def _teaches(schema: Any, defs: Mapping[str, Any], depth: int) -> bool:
    if not isinstance(schema, Mapping) or depth > 8:
        return False
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return _teaches(defs.get(ref[len("#/$defs/") :]), defs, depth + 1)
    if _spec_values(schema):
        return True
    if schema.get("format") in _TEACHING_FORMATS or "pattern" in schema:
        return True
    if "object" in _types(schema) and isinstance(schema.get("properties"), Mapping):
        required = schema.get("required", [])
        properties = schema["properties"]
        return bool(required) and all(
            _teaches(properties.get(name), defs, depth + 1) for name in required
        )
    return False


def drop_invalid_examples(schema: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`schema` without the property-level `examples` values that their own subschema
    refuses (checked like a whole call's: with the root's `$defs`, integers strict), and
    where each one was ("properties/digest: 'sha256:0ec…' is too short")."""
    defs = schema.get("$defs") or {}
    dropped: list[str] = []

    def walk(node: Any, path: tuple[str, ...]) -> Any:
        """A schema: its subschemas walked, its own examples checked (not the root's)."""
        if not isinstance(node, Mapping):
            return node
        out: dict[str, Any] = {}
        for key, value in node.items():
            if key in _SCHEMA_MAPS and isinstance(value, Mapping):
                out[key] = {n: walk(v, (*path, key, str(n))) for n, v in value.items()}
            elif key in _SCHEMA_LISTS and isinstance(value, list):
                out[key] = [walk(v, (*path, key, str(i))) for i, v in enumerate(value)]
            elif key in _SCHEMA_VALUES and isinstance(value, Mapping):
                out[key] = walk(value, (*path, key))
            else:
                out[key] = value
        examples = node.get("examples")
        if path and isinstance(examples, list):
            subschema = {k: v for k, v in out.items() if k != "examples"}
            if defs and "$defs" not in subschema:
                subschema["$defs"] = defs
            kept = []
            for value in examples:
                error = _first_error(subschema, value)
                if error is None:
                    kept.append(value)
                else:
                    dropped.append(f"{'/'.join(path)}: {error}")
            if kept:
                out["examples"] = kept
            else:
                out.pop("examples")
        return out

    return walk(schema, ()), dropped


_SCHEMA_MAPS: Final = ("properties", "patternProperties", "$defs", "dependentSchemas")
_SCHEMA_LISTS: Final = ("allOf", "anyOf", "oneOf", "prefixItems")
_SCHEMA_VALUES: Final = (
    "items",
    "additionalProperties",
    "not",
    "if",
    "then",
    "else",
    "contains",
    "propertyNames",
    "unevaluatedProperties",
    "unevaluatedItems",
)


def _first_error(schema: Mapping[str, Any], value: Any) -> str | None:
    try:
        error = next(iter(schema_validator(schema).iter_errors(value)), None)
    except (Unresolvable, RecursionError) as exc:
        return f"cannot be checked ({type(exc).__name__})"
    if error is None:
        return None
    shown = repr(value)
    shown = shown if len(shown) <= 40 else shown[:39] + "…"
    message = error.message if len(error.message) <= 120 else error.message[:119] + "…"
    return f"{shown}: {message}" if shown not in message else message
