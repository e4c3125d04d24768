"""jsontext.pretty and compact write exactly what json.dumps writes (indented, or compact with
sorted keys), through orjson where it writes the same and the standard library where not."""

from __future__ import annotations

import dataclasses
import datetime
import enum
import json
import math
import random
from pathlib import Path
from typing import Any

import pytest

from mcpmint.jsontext import compact, pretty

from .conftest import REPO


def reference(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


def compact_reference(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


@dataclasses.dataclass
class Point:
    x: int


class Colour(enum.IntEnum):
    RED = 1


VALUES: list[Any] = [
    {},
    [],
    "",
    0,
    -7,
    10**40,
    1.5,
    1e16,
    -0.0,
    # Below 1e-4 json.dumps writes an exponent and orjson may not: the standard library's text.
    1e-5,
    -1.5e-7,
    [0.00001234, {"a": 1e-300}],
    {"nested": {"deep": [1, 2, 5e-324]}},
    0.0001,  # and from 1e-4 up both write the same
    [10.00001, 123.000045, 1e22, 1.7976931348623157e308],
    2**63,  # orjson's largest integers, and beyond them
    2**64 - 1,
    -(2**63),
    -(2**63) - 1,
    True,
    False,
    None,
    {"b": 1, "a": [1, {"z": None, "y": []}, {}], "c": {"d": {"e": [[], [[]]]}}},
    ['tab\tquote"back\\slash', "nl\ncr\rnul\x00 esc\x1b", "ünïcødé ✓ \u2028 \U0001f600"],
    {"\x7f key": "é", "": ""},
    {"\uffff": 1, "\U0001f600": 2, "\u00e9": 3, "z": 4},  # code point order, not UTF-16's
    ["number-like text: 1e-5", "0.00001", "v2e-3", " 1e-5 "],  # strings, not numbers
    ("a", ("b",)),
    {"nested": (1, 2.25, [None])},
    [Colour.RED, {"k": Colour.RED}],  # an int subclass: json.dumps writes it
    {2: "two", 1: "one"},  # json.dumps turns the keys into strings
    {True: "bool key"},
]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:40] for v in VALUES])
def test_the_same_text_as_json_dumps(value: Any) -> None:
    assert pretty(value) == reference(value)
    assert compact(value) == compact_reference(value)


def test_random_floats_of_every_magnitude_are_written_as_json_dumps_writes_them() -> None:
    rng = random.Random(8)
    floats = [rng.uniform(1, 10) * 10.0 ** rng.randint(-320, 300) for _ in range(5000)]
    value = {"floats": floats, "negative": [-f for f in floats[:500]]}
    assert pretty(value) == reference(value)
    assert compact(value) == compact_reference(value)


def test_non_finite_numbers_are_written_as_null() -> None:
    # JSON cannot carry them and the builder never hands them over (jsontext's docstring);
    # orjson's null is the one difference from json.dumps's NaN and Infinity.
    assert pretty([math.nan, math.inf, -math.inf]) == reference([None, None, None])
    assert compact({"a": math.nan}) == '{"a":null}'


@pytest.mark.parametrize(
    "value", [datetime.date(2026, 12, 1), Point(1), {1, 2}, object()], ids=repr
)
def test_what_json_dumps_refuses_is_refused(value: Any) -> None:
    # orjson writes dates and dataclasses; json.dumps, and so pretty, does not.
    with pytest.raises(TypeError):
        reference(value)
    with pytest.raises(TypeError):
        pretty([value])
    with pytest.raises(TypeError):
        compact({"k": value})


def test_mixed_key_types_fail_as_in_json_dumps() -> None:
    with pytest.raises(TypeError):
        reference({1: "a", "b": 2})
    with pytest.raises(TypeError):
        pretty({1: "a", "b": 2})


def test_deep_nesting_falls_back_to_json_dumps() -> None:
    value: Any = []
    for _ in range(3000):
        value = [value]
    with pytest.raises(RecursionError):
        reference(value)
    with pytest.raises(RecursionError):
        pretty(value)


GOLDEN_JSON = sorted((REPO / "tests" / "golden").rglob("*.json"))


@pytest.mark.parametrize(
    "path", GOLDEN_JSON, ids=[p.relative_to(REPO).as_posix() for p in GOLDEN_JSON]
)
def test_every_golden_json_file_round_trips(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    value = json.loads(text)
    assert pretty(value) == reference(value)
    assert compact(value) == compact_reference(value)
