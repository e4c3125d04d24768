"""Checking tool arguments before anything is built or sent.

Two passes: a bounded walk that refuses values JSON Schema cannot see as wrong (non-finite
numbers, integers beyond 64 bits, huge strings, deep nesting, `true` where an integer is
expected) and then the tool's `inputSchema` (JSON Schema 2020-12). Every message starts with
the argument's path so the model knows what to fix.
"""

from __future__ import annotations

import datetime
import ipaddress
import math
import re
from collections.abc import Iterable, Mapping
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker, ValidationError, validators  # type: ignore[import-untyped, unused-ignore]
from jsonschema.protocols import Validator  # type: ignore[import-untyped, unused-ignore]
from referencing import Registry

from .catalog import Tool
from .patterns import pattern_search

__all__ = [
    "MAX_DEPTH",
    "MAX_ERRORS",
    "MAX_STRING",
    "ArgumentValidator",
    "coerce_variables",
    "format_path",
    "schema_validator",
    "spec_validator",
]

MAX_DEPTH = 64
MAX_STRING = 1_000_000
MAX_ERRORS = 10
_MAX_MESSAGE = 300
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


def _is_strict_integer(checker: object, instance: object) -> bool:
    # JSON Schema counts 1.0 as an integer, but the upstream would then receive "1.0" for a
    # parameter declared as an integer; clients never send integers as floats.
    return isinstance(instance, int) and not isinstance(instance, bool)


def _pattern(validator: Any, pattern: str, instance: Any, schema: Any) -> Iterable[ValidationError]:
    # A pattern the linear-time engine cannot read was dropped at generation (patterns.py).
    if isinstance(instance, str) and pattern_search(pattern, instance) is False:
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _matched_by(name: str, patterns: Iterable[str]) -> bool:
    return any(pattern_search(pattern, name) for pattern in patterns)


# jsonschema runs `patternProperties` names through Python's `re`, in these two keywords; the
# two below are theirs with the match made by `pattern_search` (S27).
def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Any
) -> Iterable[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if pattern_search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


def _additional_properties(
    validator: Any, additional: Any, instance: Any, schema: Any
) -> Iterable[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    known = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = [k for k in instance if k not in known and not _matched_by(k, patterns)]
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)
    elif additional is False and extras:
        yield ValidationError(f"unknown properties: {', '.join(map(repr, sorted(extras)))}")


# The input formats the server enforces (S24): a schema that promises one is checked.
_DATE = re.compile(r"(\d{4})-(\d{2})-(\d{2})", re.ASCII)
_DATE_TIME = re.compile(
    r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(\.\d+)?([Zz]|[+-]\d{2}:\d{2})", re.ASCII
)
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s.]+|[^@\s]+@\[[0-9A-Fa-f:.]+\]", re.ASCII)
_URI = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:[^\s<>\"{}|\\^`]*", re.ASCII)
_UUID = re.compile(r"[0-9A-Fa-f]{8}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{4}-[0-9A-Fa-f]{12}")
_IPV4 = re.compile(
    r"(?:(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)\.){3}(?:25[0-5]|2[0-4]\d|1\d\d|[1-9]?\d)", re.ASCII
)
_FORMATS = FormatChecker(formats=())


def _is_date(value: object) -> bool:
    if not isinstance(value, str):
        return True
    found = _DATE.fullmatch(value)
    return found is not None and _valid_date(value)


def _valid_date(text: str) -> bool:
    try:
        datetime.date.fromisoformat(text)
    except ValueError:
        return False
    return True


def _is_date_time(value: object) -> bool:
    if not isinstance(value, str):
        return True
    found = _DATE_TIME.fullmatch(value)
    if found is None or not _valid_date(found.group(1)):
        return False
    hour, minute, second = (int(found.group(n)) for n in (2, 3, 4))
    return hour <= 23 and minute <= 59 and second <= 60


def _is_email(value: object) -> bool:
    return not isinstance(value, str) or _EMAIL.fullmatch(value) is not None


def _is_uri(value: object) -> bool:
    return not isinstance(value, str) or _URI.fullmatch(value) is not None


def _is_uuid(value: object) -> bool:
    return not isinstance(value, str) or _UUID.fullmatch(value) is not None


def _is_ipv4(value: object) -> bool:
    return not isinstance(value, str) or _IPV4.fullmatch(value) is not None


def _is_ipv6(value: object) -> bool:
    if not isinstance(value, str):
        return True
    try:
        ipaddress.IPv6Address(value)
    except ValueError:
        return False
    return "%" not in value


# Registered by calls, not decorators: jsonschema may be untyped where this runtime is copied.
for _name, _check in (
    ("date", _is_date),
    ("date-time", _is_date_time),
    ("email", _is_email),
    ("uri", _is_uri),
    ("uuid", _is_uuid),
    ("ipv4", _is_ipv4),
    ("ipv6", _is_ipv6),
):
    _FORMATS.checks(_name)(_check)


_LinearValidator = validators.extend(  # type: ignore[no-untyped-call, unused-ignore]
    Draft202012Validator,
    validators={
        "pattern": _pattern,
        "patternProperties": _pattern_properties,
        "additionalProperties": _additional_properties,
    },
)
_StrictValidator = validators.extend(  # type: ignore[no-untyped-call, unused-ignore]
    _LinearValidator,
    type_checker=Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_strict_integer),
)


def coerce_variables(variables: Mapping[str, str], schema: Mapping[str, Any]) -> dict[str, Any]:
    """A resource URI's variables (strings) read as the types the tool's schema declares
    (`"42"` for an integer is 42), so that they are validated as the tool's arguments are;
    a text that does not read as the type stays a string (and the schema refuses it)."""
    properties = schema.get("properties", {})
    found: dict[str, Any] = {}
    for name, text in variables.items():
        declared = properties.get(name, {}) if isinstance(properties, Mapping) else {}
        kinds = declared.get("type", "string") if isinstance(declared, Mapping) else "string"
        kinds = [kinds] if isinstance(kinds, str) else list(kinds)
        found[name] = text
        if "string" in kinds:
            continue
        if "integer" in kinds and re.fullmatch(r"-?[0-9]{1,19}", text, re.ASCII):
            found[name] = int(text)
        elif "number" in kinds and re.fullmatch(r"-?[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?", text):
            found[name] = float(text)
        elif "boolean" in kinds and text in ("true", "false"):
            found[name] = text == "true"
    return found


class ArgumentValidator:
    """Validates the arguments of one tool; the schema is compiled on first use."""

    def __init__(self, tool: Tool) -> None:
        self._tool = tool
        self._validator: Validator | None = None

    def errors(self, arguments: object) -> list[str]:
        """Every problem with `arguments`, sorted and capped, each naming its argument path.

        An empty list means the arguments may be used to build the request.
        """
        if not isinstance(arguments, Mapping):
            return [f"arguments: must be an object, not {_json_type(arguments)}"]
        problems = list(_walk(arguments))
        # The walk stops what would make schema validation slow or unbounded; no point going on.
        if problems:
            return _cap(problems)
        known = self._tool.argument_names
        allowed = ", ".join(sorted(known)) or "none"
        # Checked here as well as by the schema so that S2 holds even if a schema is lax.
        problems = [
            f"{name}: unknown argument (allowed: {allowed})"
            for name in arguments
            if name not in known
        ]
        for error in self._compiled().iter_errors(dict(arguments)):
            if error.validator == "additionalProperties" and not error.absolute_path:
                continue
            problems.extend(_describe(error))
        return _cap(problems)

    def _compiled(self) -> Validator:
        if self._validator is None:
            schema = dict(self._tool.input_schema)
            _StrictValidator.check_schema(schema)
            # An empty registry: a `$ref` must resolve inside the schema, never over the network.
            self._validator = schema_validator(schema)
        return self._validator


def spec_validator(schema: Mapping[str, Any]) -> Validator:
    """JSON Schema 2020-12 as a spec wrote it, its patterns matched in linear time (S27), no
    `$ref` outside the schema: for checking data against a spec's schema (an upstream
    result, a default) where the server's own strictness is not wanted."""
    validator: Validator = _LinearValidator(dict(schema), registry=Registry())
    return validator


def schema_validator(schema: Mapping[str, Any]) -> Validator:
    """The server's own check of a value against `schema`: strict integers, ECMA-262
    patterns, the enforced formats, no `$ref` outside the schema. The generator checks its
    examples and samples with it, so that none is one the server would refuse."""
    validator: Validator = _StrictValidator(
        dict(schema), registry=Registry(), format_checker=_FORMATS
    )
    return validator


def format_path(path: Iterable[str | int], root: str = "arguments") -> str:
    """`items[0].name` style text for a JSON path; `root` for the empty path."""
    text = ""
    for part in path:
        if isinstance(part, int):
            text += f"[{part}]"
        else:
            text += f".{part}" if text else str(part)
    return text or root


def _walk(value: Mapping[str, Any]) -> Iterable[str]:
    # Iterative so that a 10,000-deep array costs nothing and cannot exhaust the stack.
    stack: list[tuple[tuple[str | int, ...], object]] = [((), value)]
    while stack:
        path, item = stack.pop()
        if len(path) > MAX_DEPTH:
            yield f"{format_path(path)}: nested deeper than {MAX_DEPTH} levels"
            continue
        if isinstance(item, bool) or item is None:
            continue
        if isinstance(item, int):
            if not INT64_MIN <= item <= INT64_MAX:
                yield f"{format_path(path)}: integer outside the signed 64-bit range"
        elif isinstance(item, float):
            if not math.isfinite(item):
                yield f"{format_path(path)}: {item!r} is not a finite number"
        elif isinstance(item, str):
            if len(item) > MAX_STRING:
                yield f"{format_path(path)}: string longer than {MAX_STRING} characters"
        elif isinstance(item, Mapping):
            for key, child in item.items():
                if not isinstance(key, str) or len(key) > MAX_STRING:
                    yield f"{format_path(path)}: invalid property name"
                    continue
                stack.append(((*path, key), child))
        elif isinstance(item, list | tuple):
            stack.extend(((*path, i), child) for i, child in enumerate(item))
        else:
            yield f"{format_path(path)}: {_json_type(item)} is not a JSON value"


_MISSING = "required argument is missing"


def _describe(error: ValidationError) -> list[str]:
    path = list(error.absolute_path)
    instance, schema = error.instance, error.schema
    if error.validator == "required" and isinstance(instance, Mapping):
        required: Any = error.validator_value
        missing = [r for r in required if r not in instance]
        return [f"{format_path([*path, m])}: {_MISSING}" for m in missing]
    if (
        error.validator == "additionalProperties"
        and isinstance(instance, Mapping)
        and isinstance(schema, Mapping)
    ):
        known = schema.get("properties", {})
        patterns = schema.get("patternProperties", {})
        extra = [k for k in instance if k not in known and not _matched_by(k, patterns)]
        allowed = ", ".join(sorted(known)) or "none"
        return [f"{format_path([*path, k])}: unknown property (allowed: {allowed})" for k in extra]
    return [f"{format_path(path)}: {_trim(error.message)}"]


def _cap(problems: list[str]) -> list[str]:
    # What was given wrongly comes before what is missing: past the cap, an unknown or
    # misspelt argument is the problem that tells the caller what to change.
    flat = sorted(set(problems), key=lambda problem: (problem.endswith(_MISSING), problem))
    if len(flat) > MAX_ERRORS:
        return [*flat[:MAX_ERRORS], f"... and {len(flat) - MAX_ERRORS} more"]
    return flat


def _trim(text: str) -> str:
    return text if len(text) <= _MAX_MESSAGE else text[:_MAX_MESSAGE] + "..."


def _json_type(value: object) -> str:
    names = {
        bool: "a boolean",
        int: "a number",
        float: "a number",
        str: "a string",
        list: "an array",
        type(None): "null",
    }
    return names.get(type(value), type(value).__name__)
