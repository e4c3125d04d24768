"""jsontext.pretty writes exactly what json.dumps(indent=2, sort_keys=True) writes."""

from __future__ import annotations

import enum
import json
import math
from pathlib import Path
from typing import Any

import pytest

from mcpmint.jsontext import pretty

from .conftest import REPO


def reference(value: Any) -> str:
    return json.dumps(value, indent=2, sort_keys=True, ensure_ascii=False)


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
    math.inf,
    -math.inf,
    True,
    False,
    None,
    {"b": 1, "a": [1, {"z": None, "y": []}, {}], "c": {"d": {"e": [[], [[]]]}}},
    ['tab\tquote"back\\slash', "nl\ncr\rnul\x00 esc\x1b", "ünïcødé ✓ \u2028 \U0001f600"],
    {"\x7f key": "é", "": ""},
    ("a", ("b",)),
    {"nested": (1, 2.25, [None])},
    [Colour.RED, {"k": Colour.RED}],  # an int subclass: json.dumps writes it
    {2: "two", 1: "one"},  # json.dumps turns the keys into strings
    {True: "bool key"},
]


@pytest.mark.parametrize("value", VALUES, ids=[repr(v)[:40] for v in VALUES])
def test_the_same_text_as_json_dumps(value: Any) -> None:
    assert pretty(value) == reference(value)


def test_nan_is_written_as_json_dumps_writes_it() -> None:
    assert pretty([math.nan]) == reference([math.nan])


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
